import { canonicalJson } from "../../core/canonical-json.js";

/**
 * VISTA's coverage metrics (seed 003, section 3.1.1), computed over the product agent's tool calls.
 *
 * - TE, TransitionEntropy: adjacent tool-call pairs of every trajectory are aggregated into an N x N
 *   transition matrix (N = the agent's tools). For every row with at least one outgoing transition, the
 *   Shannon entropy (log base 2) of the next-tool distribution is divided by log2 N; TE is the mean of
 *   these over those rows.
 * - TDE, ToolDistrEntropy: Shannon entropy (log base 2) of the frequency of each tool among all the
 *   agent's calls, divided by log2 N, N = all the tools the agent has (called or not).
 * - TD, TrajDist: within a goal group, the mean over all C(|T|, 2) trajectory pairs of
 *   Lev(s_a, s_b) / max(|s_a|, |s_b|), where a trajectory is the sequence of (tool_name, input_repr) pairs.
 *
 * Pure functions: no model calls, no I/O.
 */

/** One tool call by the agent under test. `arguments` is serialised as canonical JSON for TD. */
export interface AgentToolCall {
  tool: string;
  arguments?: unknown;
}

/** A tool call given either as a bare tool name or as a call with arguments. */
export type ToolCallLike = string | AgentToolCall;

/** The agent's tool calls in one run, in order. */
export type Trajectory = ReadonlyArray<ToolCallLike>;

function toolOf(call: ToolCallLike): string {
  return typeof call === "string" ? call : call.tool;
}

/** Shannon entropy, log base 2, of the distribution given by non-negative counts (zero counts skipped). */
export function shannonEntropy(counts: Iterable<number>): number {
  const values = [...counts].filter((count) => count > 0);
  const total = values.reduce((sum, count) => sum + count, 0);
  if (total === 0) return 0;
  let entropy = 0;
  for (const count of values) {
    const p = count / total;
    entropy -= p * Math.log2(p);
  }
  // -0 and tiny negative rounding errors (a single outcome) read as 0.
  return Math.max(entropy, 0);
}

/** The set of tools N counts: the declared tools plus any tool that was called but not declared. */
function toolUniverse(called: Iterable<string>, declared?: Iterable<string>): Set<string> {
  const tools = new Set<string>(declared ?? []);
  for (const tool of called) tools.add(tool);
  return tools;
}

export interface TransitionEntropyDetail {
  /** The metric, 0..1. */
  value: number;
  /** N: the number of agent tools the normalisation uses. */
  toolCount: number;
  /** Per tool with at least one outgoing transition (the set R): its counts of next tools and its normalised entropy. */
  rows: Array<{ tool: string; transitions: Record<string, number>; total: number; entropy: number }>;
}

/**
 * TE with its transition matrix. `tools` is the agent's full tool list (N); without it, N is the number of
 * distinct tools seen in the trajectories. A called tool missing from `tools` still counts in N.
 *
 * Transitions are adjacent pairs inside one trajectory; no pair spans two trajectories.
 *
 * Edge cases (the formula divides by zero there; both give the score's floor, 0; a run folder's summary
 * reports them as null instead, see {@link coverageOf}):
 * - N <= 1 (one tool): log2 N = 0; there is only one possible next tool, so TE = 0.
 * - no transitions (every trajectory has fewer than two calls): R is empty, so TE = 0.
 */
export function transitionEntropyDetail(
  trajectories: ReadonlyArray<Trajectory>,
  tools?: Iterable<string>,
): TransitionEntropyDetail {
  const names = trajectories.map((trajectory) => trajectory.map(toolOf));
  const toolCount = toolUniverse(names.flat(), tools).size;
  const matrix = new Map<string, Map<string, number>>();
  for (const sequence of names) {
    for (let index = 0; index + 1 < sequence.length; index++) {
      const from = sequence[index] as string;
      const to = sequence[index + 1] as string;
      let row = matrix.get(from);
      if (!row) {
        row = new Map();
        matrix.set(from, row);
      }
      row.set(to, (row.get(to) ?? 0) + 1);
    }
  }
  const rows: TransitionEntropyDetail["rows"] = [];
  for (const [tool, row] of [...matrix].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const total = [...row.values()].reduce((sum, count) => sum + count, 0);
    const entropy = toolCount > 1 ? shannonEntropy(row.values()) / Math.log2(toolCount) : 0;
    rows.push({ tool, transitions: Object.fromEntries(row), total, entropy });
  }
  const value = rows.length === 0 ? 0 : rows.reduce((sum, row) => sum + row.entropy, 0) / rows.length;
  return { value, toolCount, rows };
}

/** TE, 0..1: see {@link transitionEntropyDetail}. */
export function transitionEntropy(trajectories: ReadonlyArray<Trajectory>, tools?: Iterable<string>): number {
  return transitionEntropyDetail(trajectories, tools).value;
}

/**
 * TDE, 0..1: normalised Shannon entropy (log2) of the tool distribution over all the agent's calls, with
 * N = every tool the agent has (`allTools`, plus any called tool missing from it), called or not.
 *
 * Edge cases: no calls, or N <= 1 (one tool), give 0 (see {@link coverageOf} for what a summary reports).
 */
export function toolDistributionEntropy(calls: Iterable<ToolCallLike>, allTools: Iterable<string>): number {
  const counts = new Map<string, number>();
  for (const call of calls) {
    const tool = toolOf(call);
    counts.set(tool, (counts.get(tool) ?? 0) + 1);
  }
  const toolCount = toolUniverse(counts.keys(), allTools).size;
  if (toolCount <= 1) return 0;
  return shannonEntropy(counts.values()) / Math.log2(toolCount);
}

/**
 * Levenshtein distance between two sequences (insertions, deletions and substitutions cost 1), elements
 * compared with `equal` (=== by default).
 */
export function levenshtein<T>(
  a: ReadonlyArray<T>,
  b: ReadonlyArray<T>,
  equal: (x: T, y: T) => boolean = (x, y) => x === y,
): number {
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = equal(a[i - 1] as T, b[j - 1] as T) ? 0 : 1;
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/**
 * The (tool_name, input_repr) token of a call: input_repr is the canonical JSON of its arguments (keys
 * sorted, so argument order does not count as a difference); missing arguments serialise as `{}`.
 */
export function callToken(call: ToolCallLike): string {
  if (typeof call === "string") return JSON.stringify([call, "{}"]);
  return JSON.stringify([call.tool, canonicalJson(call.arguments ?? {})]);
}

/** Lev(s_a, s_b) / max(|s_a|, |s_b|) over (tool, input_repr) tokens; two empty trajectories are at distance 0. */
export function normalisedTrajectoryDistance(a: Trajectory, b: Trajectory): number {
  const longest = Math.max(a.length, b.length);
  if (longest === 0) return 0;
  return levenshtein(a.map(callToken), b.map(callToken)) / longest;
}

/** Trajectories grouped by user goal: an array of groups, a record or a map keyed by goal. */
export type GoalGroups =
  | ReadonlyArray<ReadonlyArray<Trajectory>>
  | Readonly<Record<string, ReadonlyArray<Trajectory>>>
  | ReadonlyMap<string, ReadonlyArray<Trajectory>>;

export interface TrajectoryDiversityDetail {
  /** The metric, 0..1: the mean of the groups' scores over the groups that have at least one pair. */
  value: number;
  /** Every group, in input order; `score` is null for a group with fewer than two trajectories. */
  groups: Array<{ goal: string; trajectories: number; pairs: number; score: number | null }>;
}

function entriesOf(groups: GoalGroups): Array<[string, ReadonlyArray<Trajectory>]> {
  if (Array.isArray(groups)) {
    return (groups as ReadonlyArray<ReadonlyArray<Trajectory>>).map((group, index) => [String(index), group]);
  }
  if (groups instanceof Map) return [...(groups as ReadonlyMap<string, ReadonlyArray<Trajectory>>)];
  return Object.entries(groups as Readonly<Record<string, ReadonlyArray<Trajectory>>>);
}

/**
 * TD with each group's score. Within a goal group of |T| trajectories, the score is the mean of the
 * normalised Levenshtein distance over all C(|T|, 2) pairs a < b.
 *
 * A group with one trajectory (or none) has C(|T|, 2) = 0 pairs, so the paper's 1/N is undefined: the
 * group has no within-goal diversity to measure and is left out (score null), rather than counted as 0,
 * which would read as "identical repeats". TD is the unweighted mean over the groups that have pairs
 * (each goal counts once, whatever its number of runs); with no such group, TD is 0.
 */
export function trajectoryDiversityDetail(groups: GoalGroups): TrajectoryDiversityDetail {
  const results: TrajectoryDiversityDetail["groups"] = [];
  for (const [goal, trajectories] of entriesOf(groups)) {
    const count = trajectories.length;
    const pairs = (count * (count - 1)) / 2;
    if (pairs === 0) {
      results.push({ goal, trajectories: count, pairs, score: null });
      continue;
    }
    let sum = 0;
    for (let a = 0; a < count; a++) {
      for (let b = a + 1; b < count; b++) {
        sum += normalisedTrajectoryDistance(trajectories[a] as Trajectory, trajectories[b] as Trajectory);
      }
    }
    results.push({ goal, trajectories: count, pairs, score: sum / pairs });
  }
  const scored = results.flatMap((group) => (group.score === null ? [] : [group.score]));
  const value = scored.length === 0 ? 0 : scored.reduce((sum, score) => sum + score, 0) / scored.length;
  return { value, groups: results };
}

/** TD, 0..1: see {@link trajectoryDiversityDetail}. */
export function trajectoryDiversity(groups: GoalGroups): number {
  return trajectoryDiversityDetail(groups).value;
}

/** Where N, the tool count TE and TDE are normalised by, came from. */
export type ToolCountSource =
  /** The agent's declared tools (`--agent-tools`, or the tools of the terrarium server behind it). */
  | "declared"
  /** The declared tools plus tools the agent called without declaring them. */
  | "declared+called"
  /** No tool was declared: N is the number of distinct tools seen called, a lower bound. */
  | "called"
  /** No tool is known: none was declared and none was called. */
  | "none";

/** One run as coverage sees it. */
export interface CoverageRun {
  /** TD's group: runs with the same goal are compared. */
  goal: string;
  /** The agent's tool calls, in order. */
  calls: Trajectory;
  /** The agent answered at least once: a conversation happened. */
  conversation: boolean;
  /** The run ended normally (not cut short by an agent or user error). */
  played: boolean;
}

/** TE, TDE and TD of a run folder, each null where it measures nothing, with what they were computed over. */
export interface CoverageSummary {
  te: number | null;
  tde: number | null;
  td: number | null;
  /** N: the tools TE and TDE are normalised by. */
  toolCount: number;
  toolCountSource: ToolCountSource;
  /** How many tools the agent declared. */
  declaredTools: number;
  /** Tools the agent called that it did not declare (they count in N). */
  undeclaredCalled: string[];
  /** Runs in which the agent answered at least once. */
  conversations: number;
  /** The agent's tool calls over those runs (TDE's sample). */
  calls: number;
  /** Adjacent call pairs within a run (TE's sample). */
  transitions: number;
  /** Goals with at least two played conversations (TD's groups). */
  tdGroups: number;
}

/**
 * Coverage of a run folder for people reading its summary: 0 only when it was measured and is 0, null
 * (shown n/a) when there was nothing to measure.
 *
 * - TE is null when no run has two consecutive tool calls (no outgoing transition: R is empty), which
 *   includes "no conversation happened", or when N <= 1 (log2 N = 0).
 * - TDE is null when no conversation happened (every run ended before the agent answered), or when
 *   N <= 1 (no tool known, or a single one: there is no distribution to spread). When conversations
 *   happened and N >= 2, an agent that called no tool has TDE 0: a measured absence of diversity.
 * - TD is null when no goal has two played conversations to compare (e.g. `--runs 1`). It compares played
 *   runs only: a run cut short by an error would count its truncation as diversity.
 *
 * TE and TDE count every call of every run, errored ones included (a call made is a call made). N is the
 * declared tools plus any tool called without being declared; with no tool declared, the tools called.
 */
export function coverageOf(runs: ReadonlyArray<CoverageRun>, declared: Iterable<string>): CoverageSummary {
  const declaredSet = new Set(declared);
  const talked = runs.filter((run) => run.conversation);
  const trajectories = talked.map((run) => run.calls);
  const called = new Set(trajectories.flat().map(toolOf));
  const undeclaredCalled = [...called].filter((tool) => !declaredSet.has(tool)).sort();
  const toolCount = toolUniverse(called, declaredSet).size;
  const toolCountSource: ToolCountSource =
    declaredSet.size > 0
      ? undeclaredCalled.length > 0
        ? "declared+called"
        : "declared"
      : called.size > 0
        ? "called"
        : "none";
  const transitions = trajectories.reduce((sum, calls) => sum + Math.max(0, calls.length - 1), 0);
  const groups = new Map<string, Trajectory[]>();
  for (const run of talked) {
    if (!run.played) continue;
    groups.set(run.goal, [...(groups.get(run.goal) ?? []), run.calls]);
  }
  const td = trajectoryDiversityDetail(groups);
  const tdGroups = td.groups.filter((group) => group.score !== null).length;
  return {
    te: transitions === 0 || toolCount <= 1 ? null : transitionEntropy(trajectories, declaredSet),
    tde:
      talked.length === 0 || toolCount <= 1
        ? null
        : toolDistributionEntropy(trajectories.flat(), declaredSet),
    td: tdGroups === 0 ? null : td.value,
    toolCount,
    toolCountSource,
    declaredTools: declaredSet.size,
    undeclaredCalled,
    conversations: talked.length,
    calls: trajectories.reduce((sum, calls) => sum + calls.length, 0),
    transitions,
    tdGroups,
  };
}
