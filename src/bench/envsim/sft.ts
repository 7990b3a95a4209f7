import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { same } from "../../core/json-diff.js";
import { createRandom, type Random } from "../../core/random.js";
import {
  mdpSystemPrompt,
  mdpUserPrompt,
  type PredictedChange,
  type SimulationOutput,
  type SimulationReasoning,
} from "./prompts/simulation.js";
import type { EnvSimSample } from "./types.js";

/**
 * Supervised fine-tuning data from EnvSimBench samples: chat records in two layouts, data composition
 * (the paper's Change-only, Balance and Balance2 mixtures), and an environment-level holdout split.
 *
 * Record formats (one JSON object per JSONL line):
 * - OpenAI chat fine-tuning: `{"messages": [{"role": "system", ...}, {"role": "user", ...},
 *   {"role": "assistant", "content": "<JSON answer>"}]}`.
 * - LLaMA-Factory ShareGPT: `{"system": "<system prompt>", "conversations": [{"from": "human", "value":
 *   ...}, {"from": "gpt", "value": "<JSON answer>"}]}`: the system prompt in the separate `system`
 *   column LLaMA-Factory documents for sharegpt (see `llamaFactoryDatasetInfo`), human and gpt turns
 *   alternating in `conversations`.
 *
 * Prompts are the MDP prompts of `./prompts/simulation.ts`. The answer is compact JSON
 * `{"observation": <observationText>, "changes": [{"path", "type", "after"}]}` (no `after` on removals).
 * With reasoning, the same object starts with a `reasoning` field (`SimulationReasoning`), derived
 * deterministically from the sample: outcome, the branch of the tool's code that produced the observation
 * (the source line whose string literal appears in the observation, with the `if` guarding it), the
 * effect, and for each changed field why it changes (the argument naming the entry or supplying the value,
 * the numeric step, list growth, clock values). Finding 4 of the paper saw traces hurt Simple samples
 * and help Difficult ones, so `reasoning: "complex"` adds them only when Δ ≥ 3.
 */

export type ReasoningOption = boolean | "complex";

export interface RecordOptions {
  /** true: every answer starts with a reasoning trace; "complex": only answers with Δ ≥ 3; default false. */
  reasoning?: ReasoningOption;
}

export interface ChatRecord {
  messages: [
    { role: "system"; content: string },
    { role: "user"; content: string },
    { role: "assistant"; content: string },
  ];
}

export interface ShareGptRecord {
  system: string;
  conversations: [{ from: "human"; value: string }, { from: "gpt"; value: string }];
}

/** OpenAI chat fine-tuning record of one sample (MDP prompts; the answer as a JSON string). */
export function toChatRecord(sample: EnvSimSample, options: RecordOptions = {}): ChatRecord {
  const parts = recordParts(sample, options);
  return {
    messages: [
      { role: "system", content: parts.system },
      { role: "user", content: parts.user },
      { role: "assistant", content: parts.answer },
    ],
  };
}

/** LLaMA-Factory ShareGPT record of one sample (system prompt in the `system` column). */
export function toShareGptRecord(sample: EnvSimSample, options: RecordOptions = {}): ShareGptRecord {
  const parts = recordParts(sample, options);
  return {
    system: parts.system,
    conversations: [
      { from: "human", value: parts.user },
      { from: "gpt", value: parts.answer },
    ],
  };
}

/** The `dataset_info.json` entry LLaMA-Factory needs for a JSONL file of `toShareGptRecord` records. */
export function llamaFactoryDatasetInfo(fileName: string): {
  file_name: string;
  formatting: "sharegpt";
  columns: { messages: "conversations"; system: "system" };
} {
  return {
    file_name: fileName,
    formatting: "sharegpt",
    columns: { messages: "conversations", system: "system" },
  };
}

function recordParts(
  sample: EnvSimSample,
  options: RecordOptions,
): { system: string; user: string; answer: string } {
  const mode = options.reasoning ?? false;
  const withTrace = mode === true || (mode === "complex" && sample.delta >= 3);
  return {
    system: mdpSystemPrompt({ reasoning: mode === "complex" ? "optional" : mode }),
    user: mdpUserPrompt(sample),
    answer: JSON.stringify(expectedOutput(sample, { reasoning: withTrace })),
  };
}

/** The answer a perfect simulator gives for `sample`, optionally with its reasoning trace first. */
export function expectedOutput(
  sample: EnvSimSample,
  options: { reasoning?: boolean } = {},
): SimulationOutput {
  const changes: PredictedChange[] = sample.changes.map((change) =>
    change.type === "removed"
      ? { path: change.path, type: change.type }
      : { path: change.path, type: change.type, after: change.after ?? null },
  );
  const output: SimulationOutput = { observation: sample.observationText, changes };
  return options.reasoning ? { reasoning: reasoningTrace(sample), ...output } : output;
}

/** The deterministic reasoning trace of a sample (see the module comment). */
export function reasoningTrace(sample: EnvSimSample): SimulationReasoning {
  const count = sample.changes.length;
  const effect = !sample.success
    ? count === 0
      ? "The call is rejected, so the state stays as it was."
      : `The call is rejected after the code has already written ${plural(count, "field")}.`
    : count === 0
      ? "The call succeeds without writing anything, so the state stays as it was."
      : `The call succeeds and changes ${plural(count, "field")}.`;
  return {
    outcome: sample.success ? "success" : "failure",
    branch: describeBranch(sample),
    effect,
    fields: sample.changes.map((change) => ({
      path: change.path,
      type: change.type,
      why: explainChange(change, sample.call.arguments),
    })),
  };
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function describeBranch(sample: EnvSimSample): string {
  const tool = sample.call.name;
  const located = locateBranch(sample.envCode, tool, sample.observationText);
  if (!sample.success) {
    if (!located) return `A check in ${tool} rejects the call; its error message is the observation.`;
    return located.guard
      ? `In ${tool}, the check \`${located.guard}\` holds, so it returns through \`${located.line}\`.`
      : `In ${tool}, the call is rejected through \`${located.line}\`.`;
  }
  if (!located) return `The call passes every check in ${tool} and takes its success path.`;
  return `The call passes the checks in ${tool} and returns through \`${located.line}\`.`;
}

const MAX_LINE = 120;

function clip(text: string, limit = MAX_LINE): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The lines of the tool's method or function in the source (Python `def`, JS/TS methods and properties). */
function methodLines(code: string, tool: string): string[] | undefined {
  const lines = code.split(/\r?\n/);
  const name = escapeRegExp(tool);
  const start = new RegExp(
    `^\\s*(?:(?:async|static|public|private|protected)\\s+)*(?:def\\s+${name}\\s*\\(|function\\s*\\*?\\s*${name}\\s*\\(|["']?${name}["']?\\s*(?:\\(|:|=))`,
  );
  const first = lines.findIndex((line) => start.test(line));
  if (first < 0) return undefined;
  const base = indentOf(lines[first] as string);
  const body: string[] = [];
  for (let i = first + 1; i < lines.length && body.length < 400; i++) {
    const line = lines[i] as string;
    if (line.trim() !== "" && indentOf(line) <= base) break;
    body.push(line);
  }
  return body;
}

/**
 * The fixed text pieces of a line: string literals (f-string and template holes removed, pieces of at
 * least 4 characters) and boolean literals, which tell a success return from an error return.
 */
function linePieces(line: string): string[] {
  const pieces: string[] = [];
  for (const match of line.matchAll(/(["'`])((?:\\.|(?!\1).)*)\1/g)) {
    for (const piece of (match[2] as string).split(/\$?\{[^}]*\}/)) {
      const trimmed = piece.trim();
      if (trimmed.length >= 4) pieces.push(trimmed);
    }
  }
  const code = line.replace(/(["'`])(?:\\.|(?!\1).)*\1/g, "");
  for (const match of code.matchAll(/\b(?:True|False|true|false)\b/g)) pieces.push(match[0]);
  return pieces;
}

/**
 * The source line that produced the observation, and the `if` guarding it: the line of the tool's body
 * whose pieces best explain the observation (characters of pieces found in it minus those not found).
 */
function locateBranch(
  code: string,
  tool: string,
  observation: string,
): { line: string; guard?: string } | undefined {
  const body = methodLines(code, tool);
  if (!body) return undefined;
  let best: { index: number; score: number } | undefined;
  body.forEach((line, index) => {
    const pieces = linePieces(line);
    const found = pieces.filter((piece) => observation.includes(piece));
    if (found.length === 0) return;
    const score = pieces.reduce(
      (sum, piece) => sum + (found.includes(piece) ? piece.length : -piece.length),
      0,
    );
    if (score > 0 && (!best || score > best.score)) best = { index, score };
  });
  if (!best) return undefined;
  const found = best.index;
  const line = clip((body[found] as string).trim());
  // The guard: the nearest line above with less indentation that opens a condition.
  const indent = indentOf(body[found] as string);
  for (let i = found - 1; i >= 0 && i >= found - 8; i--) {
    const candidate = body[i] as string;
    if (candidate.trim() === "" || indentOf(candidate) >= indent) continue;
    const text = candidate.trim();
    return /^(?:if|elif|else if|\}\s*else if)\b/.test(text) ? { line, guard: clip(text) } : { line };
  }
  return { line };
}

function short(value: unknown): string {
  const text = JSON.stringify(value) ?? "undefined";
  return clip(text, 40);
}

const CLOCK_FIELD = /(time|date|timestamp|_at$|At$|updated|created|last_)/i;

function explainChange(change: EnvSimSample["changes"][number], args: Record<string, unknown>): string {
  const reasons: string[] = [];
  const segments = change.path.split(".");
  const leaf = segments[segments.length - 1] ?? "";
  const entries = Object.entries(args);

  for (const segment of segments.slice(0, -1).concat(change.type === "modified" ? [] : [leaf])) {
    const named = entries.find(
      ([, value]) => (typeof value === "string" || typeof value === "number") && String(value) === segment,
    );
    if (named) {
      reasons.push(`"${segment}" is the entry named by argument ${named[0]}`);
      break;
    }
  }

  if (change.type === "removed") {
    reasons.push("the call deletes it");
    return reasons.join("; ");
  }
  const after = change.after;
  const fromArgument = entries.find(([, value]) => same(value, after));
  if (change.type === "added") {
    if (fromArgument) reasons.push(`created with the value of argument ${fromArgument[0]}`);
    else if (after !== null && typeof after === "object" && !Array.isArray(after)) {
      const used = entries
        .filter(([, value]) =>
          Object.values(after as Record<string, unknown>).some((field) => same(field, value)),
        )
        .map(([name]) => name);
      reasons.push(
        used.length > 0
          ? `a new record built from argument${used.length === 1 ? "" : "s"} ${used.join(", ")}`
          : "a new record created by the call",
      );
    } else reasons.push(`created with ${short(after)}`);
  } else {
    const before = change.before;
    if (fromArgument) reasons.push(`set to the value of argument ${fromArgument[0]}`);
    else if (CLOCK_FIELD.test(leaf) && (typeof after === "number" || typeof after === "string"))
      reasons.push("set to the clock time when the call runs");
    else if (typeof before === "number" && typeof after === "number") {
      const step = after - before;
      const byArgument = entries.find(
        ([, value]) => typeof value === "number" && Math.abs(value) === Math.abs(step),
      );
      reasons.push(
        `goes from ${before} to ${after} (${step >= 0 ? "+" : ""}${step}${byArgument ? `, by argument ${byArgument[0]}` : ""})`,
      );
    } else if (Array.isArray(before) && Array.isArray(after)) {
      reasons.push(
        after.length === before.length
          ? `the list keeps ${plural(after.length, "item")} but its content changes`
          : `the list goes from ${plural(before.length, "item")} to ${after.length}`,
      );
      const newItems = after.filter((item) => !before.some((old) => same(old, item)));
      const appended = entries
        .filter(([, value]) => newItems.some((item) => same(item, value)))
        .map(([name]) => name);
      if (appended.length > 0) reasons.push(`it gains the value of argument ${appended.join(", ")}`);
    } else reasons.push(`goes from ${short(before)} to ${short(after)}`);
  }
  return reasons.join("; ");
}

// ---------------------------------------------------------------------------------------------------
// Data composition

export type Composition = "change-only" | "balance" | "balance2";

/** Difficulty buckets of training data: failures, successful no-change calls, Δ 1–2, Δ ≥ 3. */
export type Bucket = "failure" | "no_change" | "simple" | "complex";

export const BUCKETS: readonly Bucket[] = ["failure", "no_change", "simple", "complex"];

/** The Balance2 mixture of the paper (6,230 samples), usable as `distribution` to reproduce its shares. */
export const PAPER_BALANCE2: Readonly<Record<Bucket, number>> = {
  failure: 1000,
  no_change: 1000,
  simple: 2000,
  complex: 2230,
};

export function bucketOf(sample: Pick<EnvSimSample, "success" | "delta">): Bucket {
  if (!sample.success) return "failure";
  if (sample.delta === 0) return "no_change";
  return sample.delta <= 2 ? "simple" : "complex";
}

export interface ComposeOptions {
  /** Total number of samples wanted; see `compose` for the default of each composition. */
  size?: number;
  seed: string | number;
  /** balance2 only: the bucket shares to mirror instead of the source's (e.g. `PAPER_BALANCE2`). */
  distribution?: Partial<Record<Bucket, number>>;
}

export interface CompositionReport {
  composition: Composition;
  seed: string;
  /** The size asked for, when one was. */
  requested?: number;
  /** How many samples were selected. */
  selected: number;
  /** Per bucket: eligible samples, how many the composition wanted, how many were taken. */
  buckets: Record<Bucket, { available: number; target: number; taken: number }>;
  /** Buckets that had fewer eligible samples than their target (all of them were taken). */
  short: Bucket[];
  /** One sentence per noteworthy event (short buckets, samples left out by the composition). */
  notes: string[];
}

/**
 * Selects training samples by composition, sampling each bucket without replacement with a seeded
 * random source (per-bucket streams; inputs are ordered by id first, so the same set and seed give the
 * same selection whatever the input order). The result is shuffled with the same seed.
 *
 * - change-only: samples with Δ ≥ 1 only (whatever their outcome). Without `size`, all of them; with it,
 *   a stratified sample keeping the buckets' shares among those samples.
 * - balance: equal counts in the four buckets: `size / 4` each (the remainder to the first buckets in
 *   `BUCKETS` order); without `size`, the count of the smallest non-empty bucket.
 * - balance2: counts proportional to the source's bucket distribution (or to `distribution`), allocated
 *   by largest remainder so they sum to `size`; without `size`, all samples, or the sum of `distribution`.
 *
 * A bucket with fewer eligible samples than its target gives all it has and is listed in `report.short`;
 * the missing count is not moved to other buckets, so the result is then smaller than asked.
 */
export function compose(
  samples: readonly EnvSimSample[],
  composition: Composition,
  options: ComposeOptions,
): { samples: EnvSimSample[]; report: CompositionReport } {
  if (options.size !== undefined && (!Number.isInteger(options.size) || options.size < 0))
    throw new RangeError(`compose: size must be a non-negative integer, got ${options.size}`);
  const random = createRandom(options.seed);
  const notes: string[] = [];

  const pools = Object.fromEntries(BUCKETS.map((bucket) => [bucket, [] as EnvSimSample[]])) as Record<
    Bucket,
    EnvSimSample[]
  >;
  let excluded = 0;
  for (const sample of [...samples].sort(byId)) {
    if (composition === "change-only" && sample.delta < 1) {
      excluded++;
      continue;
    }
    pools[bucketOf(sample)].push(sample);
  }
  if (excluded > 0) notes.push(`change-only left out ${plural(excluded, "sample")} with Δ = 0.`);
  const available = countsOf(pools);
  const eligible = BUCKETS.reduce((total, bucket) => total + available[bucket], 0);

  let targets: Record<Bucket, number>;
  if (composition === "balance") {
    const size = options.size;
    if (size !== undefined) {
      targets = mapBuckets((_, index) => Math.floor(size / 4) + (index < size % 4 ? 1 : 0));
    } else {
      const nonEmpty = BUCKETS.map((bucket) => available[bucket]).filter((count) => count > 0);
      const smallest = nonEmpty.length > 0 ? Math.min(...nonEmpty) : 0;
      targets = mapBuckets(() => smallest);
    }
  } else {
    const shares =
      composition === "balance2" && options.distribution
        ? mapBuckets((bucket) => options.distribution?.[bucket] ?? 0)
        : available;
    for (const bucket of BUCKETS) {
      if (!Number.isFinite(shares[bucket]) || shares[bucket] < 0)
        throw new RangeError(`compose: distribution.${bucket} must be a non-negative number`);
    }
    const total =
      options.size ??
      (composition === "balance2" && options.distribution
        ? Math.round(BUCKETS.reduce((sum, bucket) => sum + shares[bucket], 0))
        : eligible);
    targets = allocate(shares, total);
  }

  const chosen: EnvSimSample[] = [];
  const taken = mapBuckets(() => 0);
  const short: Bucket[] = [];
  for (const bucket of BUCKETS) {
    const pool = pools[bucket];
    const target = targets[bucket];
    if (pool.length < target) {
      short.push(bucket);
      notes.push(`${bucket}: wanted ${target}, only ${pool.length} eligible; took all of them.`);
    }
    const picked = sampleWithoutReplacement(
      pool,
      Math.min(target, pool.length),
      random.derive(`bucket:${bucket}`),
    );
    taken[bucket] = picked.length;
    chosen.push(...picked);
  }
  const selected = shuffle(chosen, random.derive("order"));

  const report: CompositionReport = {
    composition,
    seed: random.seed,
    ...(options.size !== undefined ? { requested: options.size } : {}),
    selected: selected.length,
    buckets: mapBuckets((bucket) => ({
      available: available[bucket],
      target: targets[bucket],
      taken: taken[bucket],
    })),
    short,
    notes,
  };
  return { samples: selected, report };
}

function byId(a: EnvSimSample, b: EnvSimSample): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function mapBuckets<T>(make: (bucket: Bucket, index: number) => T): Record<Bucket, T> {
  return Object.fromEntries(BUCKETS.map((bucket, index) => [bucket, make(bucket, index)])) as Record<
    Bucket,
    T
  >;
}

function countsOf(pools: Record<Bucket, EnvSimSample[]>): Record<Bucket, number> {
  return mapBuckets((bucket) => pools[bucket].length);
}

/** Splits `total` in proportion to `shares` by largest remainder (ties to the earlier bucket). */
function allocate(shares: Record<Bucket, number>, total: number): Record<Bucket, number> {
  const sum = BUCKETS.reduce((acc, bucket) => acc + shares[bucket], 0);
  if (sum === 0) return mapBuckets(() => 0);
  const exact = mapBuckets((bucket) => (shares[bucket] * total) / sum);
  const result = mapBuckets((bucket) => Math.floor(exact[bucket]));
  let left = total - BUCKETS.reduce((acc, bucket) => acc + result[bucket], 0);
  const order = BUCKETS.map((bucket, index) => ({
    bucket,
    index,
    rest: exact[bucket] - result[bucket],
  })).sort((a, b) => b.rest - a.rest || a.index - b.index);
  for (const { bucket } of order) {
    if (left <= 0) break;
    if (shares[bucket] === 0) continue;
    result[bucket]++;
    left--;
  }
  return result;
}

/** `count` distinct items chosen uniformly (partial Fisher–Yates), in the order drawn. */
function sampleWithoutReplacement<T>(items: readonly T[], count: number, random: Random): T[] {
  const copy = [...items];
  for (let i = 0; i < count; i++) {
    const j = random.int(i, copy.length - 1);
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy.slice(0, count);
}

function shuffle<T>(items: readonly T[], random: Random): T[] {
  return sampleWithoutReplacement(items, items.length, random);
}

// ---------------------------------------------------------------------------------------------------
// Holdout

export interface HoldoutOptions {
  /** Environments that must be in the test side (e.g. every environment of the benchmark). */
  holdoutEnvIds?: readonly string[];
  /**
   * Share of the distinct environments to put in the test side, drawn at random (after `holdoutEnvIds`,
   * which count towards it). Default 0.1 without `holdoutEnvIds`, 0 with them.
   */
  fraction?: number;
  seed: string | number;
}

/**
 * Splits samples by environment so that no environment is on both sides (the paper's env_id holdout).
 * Sample order is kept within each side; `testEnvIds` lists the test environments found in `samples`.
 */
export function holdoutSplit(
  samples: readonly EnvSimSample[],
  options: HoldoutOptions,
): { train: EnvSimSample[]; test: EnvSimSample[]; testEnvIds: string[] } {
  const fraction = options.fraction ?? (options.holdoutEnvIds ? 0 : 0.1);
  if (!(fraction >= 0 && fraction <= 1))
    throw new RangeError(`holdoutSplit: fraction must be in [0, 1], got ${options.fraction}`);
  const envIds = [...new Set(samples.map((sample) => sample.envId))].sort();
  const test = new Set((options.holdoutEnvIds ?? []).filter((envId) => envIds.includes(envId)));
  const wanted =
    fraction > 0 ? Math.min(envIds.length, Math.max(1, Math.round(fraction * envIds.length))) : 0;
  const rest = envIds.filter((envId) => !test.has(envId));
  const extra = Math.max(0, wanted - test.size);
  for (const envId of sampleWithoutReplacement(
    rest,
    Math.min(extra, rest.length),
    createRandom(options.seed),
  ))
    test.add(envId);
  return {
    train: samples.filter((sample) => !test.has(sample.envId)),
    test: samples.filter((sample) => test.has(sample.envId)),
    testEnvIds: envIds.filter((envId) => test.has(envId)),
  };
}

// ---------------------------------------------------------------------------------------------------
// Output

/** Writes records as JSON Lines (one compact JSON object per line), creating the folder; returns the count. */
export function writeJsonl(records: Iterable<unknown>, file: string): number {
  let count = 0;
  let text = "";
  for (const record of records) {
    text += `${JSON.stringify(record)}\n`;
    count++;
  }
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return count;
}
