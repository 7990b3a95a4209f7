/**
 * VISTA's failure consolidation (seed 003, section 3.1.4 and appendix C; SAGE's unique errors): the
 * flagged (answer, dimension) items of all runs go to one model, which groups those with the same root
 * cause into unique failures, each typed with the paper's taxonomy (table 4), titled, described, given a
 * severity and the items it covers. The count of unique failures is the failure-identification metric.
 *
 * Each item reaches the model with its dimension, score and justification and the user message and agent
 * answer it is about (written once per answer), not the whole conversation: the justifications already
 * say what went wrong, and this keeps a call's size proportional to the items.
 *
 * The model answers with item indexes; they are checked here: an index that is not an item, or an item
 * already claimed by an earlier failure, is dropped; a failure left with no item is dropped; an item no
 * failure claims becomes a failure of its own. So every item belongs to exactly one failure.
 *
 * Bounded: up to `batchSize` items (default 60) go in one call. More items are consolidated batch by batch,
 * then the batches' failures (short: a title, a description, a count) are merged by one more call. Should
 * there be more than `mergeBatchSize` of them (default 200), the merge works in rounds over chunks of that
 * size until one call holds them all, a round merges nothing, or `maxMergeRounds` (default 4) are done.
 */
import type { Models } from "../../models/hub.js";
import type { FailureDimension, FailureItem } from "./failures.js";
import { consolidationSystemPrompt, mergeSystemPrompt } from "./prompts.js";
import { callSettings, clip, dataBlock, JUDGE_LIMITS, type JudgeCallOptions, mapLimit } from "./shared.js";

/** Table 4's failure types, plus "other". */
export const FAILURE_TYPES = [
  "false_information",
  "disobey_user_request",
  "lack_of_specific_information",
  "repetition",
  "failure_to_ask_for_clarification",
  "other",
] as const;
export type FailureType = (typeof FAILURE_TYPES)[number];

export const FAILURE_SEVERITIES = ["low", "medium", "high"] as const;
export type FailureSeverity = (typeof FAILURE_SEVERITIES)[number];

export interface FailureOccurrence {
  runId: string;
  scenarioId: string;
  turn: number;
  dimension: FailureDimension;
}

export interface UniqueFailure {
  /** "F1", "F2", … in the order returned. */
  id: string;
  type: FailureType;
  title: string;
  description: string;
  severity: FailureSeverity;
  occurrences: FailureOccurrence[];
}

export interface ConsolidationOptions extends JudgeCallOptions {
  /** Most items in one consolidation call (default 60). */
  batchSize?: number;
  /** Most failures in one merge call (default 200). */
  mergeBatchSize?: number;
  /** Most merge rounds after batching (default 4). */
  maxMergeRounds?: number;
  /** Batch calls in flight at once (default 4). */
  concurrency?: number;
}

const GROUPS_SCHEMA = {
  type: "object",
  properties: {
    failures: {
      type: "array",
      items: {
        type: "object",
        properties: {
          type: { enum: [...FAILURE_TYPES] },
          title: { type: "string", minLength: 1 },
          description: { type: "string" },
          severity: { enum: [...FAILURE_SEVERITIES] },
          items: { type: "array", items: { type: "integer" } },
        },
        required: ["type", "title", "description", "severity", "items"],
        additionalProperties: false,
      },
    },
  },
  required: ["failures"],
  additionalProperties: false,
} as const;

interface Group {
  type: FailureType;
  title: string;
  description: string;
  severity: FailureSeverity;
  items: number[];
}

/** A failure before ids are given: its members are indexes into the full item list. */
interface Draft {
  type: FailureType;
  title: string;
  description: string;
  severity: FailureSeverity;
  members: number[];
}

/** Groups flagged items into unique failures. No items: no model call, no failures. */
export async function consolidateFailures(
  models: Models,
  input: { items: ReadonlyArray<FailureItem> },
  options: ConsolidationOptions = {},
): Promise<UniqueFailure[]> {
  const items = input.items;
  if (items.length === 0) return [];
  const batchSize = Math.max(2, Math.floor(options.batchSize ?? 60));
  const batches: number[][] = [];
  for (let start = 0; start < items.length; start += batchSize)
    batches.push(Array.from({ length: Math.min(batchSize, items.length - start) }, (_, i) => start + i));
  let drafts = (
    await mapLimit(batches, options.concurrency ?? 4, (batch) => groupItems(models, items, batch, options))
  ).flat();
  if (batches.length > 1) {
    const mergeBatchSize = Math.max(2, Math.floor(options.mergeBatchSize ?? 200));
    drafts = await mergeRounds(models, drafts, mergeBatchSize, options);
  }
  return drafts.map((draft, index) => ({
    id: `F${index + 1}`,
    type: draft.type,
    title: draft.title,
    description: draft.description,
    severity: draft.severity,
    occurrences: draft.members.map((member) => {
      const item = items[member] as FailureItem;
      return { runId: item.runId, scenarioId: item.scenarioId, turn: item.turn, dimension: item.dimension };
    }),
  }));
}

/** One consolidation call over some items (`batch` holds their indexes in the full list). */
async function groupItems(
  models: Models,
  items: ReadonlyArray<FailureItem>,
  batch: number[],
  options: ConsolidationOptions,
): Promise<Draft[]> {
  // Answers that several items share (several dimensions of one answer) are written once.
  const responseRefs = new Map<string, string>();
  const responses: Array<Record<string, unknown>> = [];
  const shown = batch.map((member, position) => {
    const item = items[member] as FailureItem;
    const key = JSON.stringify([item.runId, item.scenarioId, item.turn]);
    let ref = responseRefs.get(key);
    if (!ref) {
      ref = `R${responses.length + 1}`;
      responseRefs.set(key, ref);
      responses.push({
        ref,
        run: item.runId,
        scenario: item.scenarioId,
        turn: item.turn,
        user_message: clip(item.userMessage, JUDGE_LIMITS.justificationChars),
        agent_message: clip(item.agentMessage, 2 * JUDGE_LIMITS.justificationChars),
      });
    }
    return {
      index: position,
      response: ref,
      dimension: item.dimension,
      score: item.score,
      justification: clip(item.justification, JUDGE_LIMITS.justificationChars),
    };
  });
  const result = await models.generateObject<{ failures: Group[] }>({
    ...callSettings(options, "consolidation"),
    schemaName: "unique_failures",
    schema: GROUPS_SCHEMA,
    messages: [
      { role: "system", content: consolidationSystemPrompt() },
      { role: "user", content: dataBlock({ items: shown, responses }) },
    ],
  });
  const leftover = (position: number): Draft => {
    const item = items[batch[position] as number] as FailureItem;
    return {
      type: "other",
      title: `Low ${item.dimension} (${item.score}/4)`,
      description: item.justification,
      severity: severityOfScore(item.score),
      members: [batch[position] as number],
    };
  };
  return assign(result.object.failures, batch.length, leftover).map(({ group, positions }) => ({
    type: group.type,
    title: group.title,
    description: group.description,
    severity: group.severity,
    members: positions.map((position) => batch[position] as number),
  }));
}

/** Merges drafts whose root cause is the same, in rounds of calls over at most `chunkSize` drafts. */
async function mergeRounds(
  models: Models,
  drafts: Draft[],
  chunkSize: number,
  options: ConsolidationOptions,
): Promise<Draft[]> {
  const maxRounds = Math.max(1, Math.floor(options.maxMergeRounds ?? 4));
  let current = drafts;
  for (let round = 0; round < maxRounds && current.length > 1; round++) {
    const chunks: Draft[][] = [];
    for (let start = 0; start < current.length; start += chunkSize)
      chunks.push(current.slice(start, start + chunkSize));
    const merged = (
      await mapLimit(chunks, options.concurrency ?? 4, (chunk) =>
        chunk.length > 1 ? mergeDrafts(models, chunk, options) : Promise.resolve(chunk),
      )
    ).flat();
    const done = chunks.length === 1 || merged.length === current.length;
    current = merged;
    if (done) break;
  }
  return current;
}

/** One merge call over some drafts. */
async function mergeDrafts(models: Models, drafts: Draft[], options: ConsolidationOptions): Promise<Draft[]> {
  const shown = drafts.map((draft, index) => ({
    index,
    type: draft.type,
    title: clip(draft.title, JUDGE_LIMITS.justificationChars),
    description: clip(draft.description, JUDGE_LIMITS.justificationChars),
    severity: draft.severity,
    occurrences: draft.members.length,
  }));
  const result = await models.generateObject<{ failures: Group[] }>({
    ...callSettings(options, "consolidation"),
    schemaName: "merged_failures",
    schema: GROUPS_SCHEMA,
    messages: [
      { role: "system", content: mergeSystemPrompt() },
      { role: "user", content: dataBlock({ failures: shown }) },
    ],
  });
  return assign(result.object.failures, drafts.length, (index) => drafts[index] as Draft).map(
    ({ group, positions }) => ({
      type: group.type,
      title: group.title,
      description: group.description,
      severity: group.severity,
      members: positions.flatMap((position) => (drafts[position] as Draft).members),
    }),
  );
}

/**
 * The model's groups made into a partition of `0..count-1`: invalid and already claimed indexes are
 * dropped, empty groups removed, and every unclaimed index returned as its own group (`alone`).
 */
function assign(
  groups: ReadonlyArray<Group>,
  count: number,
  alone: (index: number) => Omit<Group, "items"> & { members?: number[] },
): Array<{ group: Omit<Group, "items">; positions: number[] }> {
  const claimed = new Set<number>();
  const out: Array<{ group: Omit<Group, "items">; positions: number[] }> = [];
  for (const group of groups) {
    const positions: number[] = [];
    for (const index of group.items) {
      if (!Number.isInteger(index) || index < 0 || index >= count || claimed.has(index)) continue;
      claimed.add(index);
      positions.push(index);
    }
    if (positions.length) out.push({ group, positions });
  }
  for (let index = 0; index < count; index++) {
    if (!claimed.has(index)) out.push({ group: alone(index), positions: [index] });
  }
  return out;
}

/** A leftover item's severity from its score: 0 is high, 1 medium, 2 low. */
function severityOfScore(score: number): FailureSeverity {
  return score <= 0 ? "high" : score <= 1 ? "medium" : "low";
}
