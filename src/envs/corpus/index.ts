import type { Environment } from "../types.js";
import { bank } from "./bank.js";

/** The built-in environments, by name. */
export const BUILTIN_ENVIRONMENTS: Record<string, Environment> = Object.fromEntries(
  [bank].map((environment) => [environment.name, environment]),
);
