import { readFileSync } from "node:fs";
import { join } from "node:path";

/** A scenario file's text: the smallest valid scenario, told apart by its id. */
export function minimalScenario(id: string): string {
  return [
    `id: ${id}`,
    "profile: You are a customer of an online shop.",
    "goal: You want to return the headphones from order #W2378156.",
    "knowledge: Your email is yusuf.rossi7301@example.com.",
    "max_turns: 3",
  ].join("\n");
}

/** What differs between two plays of the same run: clocks. */
const CLOCKS = ["startedAt", "durationMs", "timing", "latencyMs"];
const withoutClocks = (key: string, value: unknown) => (CLOCKS.includes(key) ? undefined : value);

/** A transcript's lines without their clocks, to compare two plays of one run. */
export function comparableTranscript(file: string): unknown[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line, withoutClocks));
}

/** A run folder's summary without its clocks: metrics, runs, scenarios and failures. */
export function comparableSummary(folder: string) {
  const { metrics, runs, scenarios, failures } = JSON.parse(
    readFileSync(join(folder, "summary.json"), "utf8"),
    withoutClocks,
  );
  return { metrics, runs, scenarios, failures };
}
