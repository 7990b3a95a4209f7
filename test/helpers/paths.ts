import { join } from "node:path";

export const FIXTURES = join(import.meta.dirname, "..", "fixtures");
export const TOOL_FIXTURES = join(FIXTURES, "tools");

export function toolFixture(name: string): string {
  return join(TOOL_FIXTURES, name);
}
