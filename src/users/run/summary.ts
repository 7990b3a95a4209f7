import { ErrorTally } from "../../core/error-tally.js";
import {
  type CostSummary,
  type CoverageSummary,
  costPerTurn,
  coverageOf,
  type MeanStd,
  meanStd,
  passHatKOfRuns,
  type ThresholdCheck,
} from "../metrics/index.js";
import { type StoredRun, USERS_RUN_SCHEMA_VERSION } from "./transcript.js";

/** A unique agent failure after consolidation, with where it happened. */
export interface UniqueFailureRecord {
  id: string;
  type: string;
  title: string;
  description: string;
  severity: string;
  occurrences: Array<{ runId: string; scenarioId: string; turn: number; dimension: string }>;
}

/** How the simulated user reaches the agent: its API, its web page, or both (VISTA's hybrid). */
export type UsersMode = "api-only" | "hybrid" | "ui-only";

/** What `users run` was asked to do (kept in `run.json`, checked on `--resume`). */
export interface UsersRunSettings {
  schemaVersion: number;
  agent: string;
  agentTools: string[];
  /** Every tool the agent has (TDE's N). */
  agentToolNames: string[];
  mode: UsersMode;
  seed: string;
  runs: number;
  scenarios: Array<{ id: string; goal: string }>;
  userModel: string;
  judges: boolean;
}

/** The paper's Table 1 row, plus goal success: the numbers `--fail-under` reads. */
export interface UsersMetrics {
  /** Transition entropy; null when no run had two consecutive tool calls, or N <= 1 (see `coverageOf`). */
  te: number | null;
  /** Tool distribution entropy; null when no conversation happened, or N <= 1. */
  tde: number | null;
  /** Trajectory distance; null when no goal has two played conversations to compare. */
  td: number | null;
  /** What TE, TDE and TD were computed over: N (`toolCount`) and where it came from, the samples. */
  coverage: Omit<CoverageSummary, "te" | "tde" | "td">;
  /** Unique agent failures after consolidation (null when the judges did not run). */
  failures: number | null;
  realism: { goal: number | null; profile: number | null; knowledge: number | null };
  cost: CostSummary;
  tokensPerTurn: number;
  actionsPerTurn: number;
  /**
   * Goal success over played runs, 0..1: the share of runs that ended normally, were judged, and met their
   * goal (null when no such run). `successRuns` is how many runs it is over, `errored` how many runs are
   * left out because of an error.
   */
  success: number | null;
  /** The runs `success` is computed over: played (no agent or user error) and given a goal verdict. */
  successRuns: number;
  /**
   * Runs left out of `success` because of an error: ended by `agent_error` or `user_error`, or (with the
   * judges) played but without a goal verdict because a judge failed.
   */
  errored: number;
  /** Mean over scenarios of pass^k, for k = 1..runs (a scenario counts for k when it has k judged runs). */
  passHatK: Record<string, number>;
  /** How many scenarios each `passHatK` value is the mean of. */
  passHatKScenarios: Record<string, number>;
}

/** The kinds of error a run can end with or be judged with, as the exit lines name them. */
export type ErrorKind = "agent_error" | "user_error" | "judge_error";

/** Runs with one kind of error: how many, and the first one's message and run. */
export interface ErrorKindCount {
  kind: ErrorKind;
  /** Runs with at least one error of this kind. */
  count: number;
  firstMessage: string;
  firstRunId: string;
}

export interface UsersSummary {
  schemaVersion: number;
  kind: "terrarium.users.summary";
  settings: UsersRunSettings;
  metrics: UsersMetrics;
  runs: {
    total: number;
    completed: number;
    /** Runs ended by `agent_error` or `user_error`. */
    errors: number;
    endReasons: Record<string, number>;
    /** Each kind of error with its count and first message (judge errors only when the judges ran). */
    errorKinds: ErrorKindCount[];
  };
  scenarios: Array<{
    id: string;
    goal: string;
    success: MeanStd | null;
    passHatK: Record<string, number>;
    runs: Array<{
      runId: string;
      index: number;
      seed: string;
      endReason: string;
      error?: string;
      turns: number;
      userActions: number;
      agentToolCalls: number;
      success: boolean | null;
      score: number | null;
      judgeErrors: Record<string, string>;
      transcript: string;
    }>;
  }>;
  failures: UniqueFailureRecord[];
  thresholds?: ThresholdCheck;
}

/** Runs that ended because a side failed: recorded, left out of success rates. */
const ERROR_REASONS = new Set(["agent_error", "user_error"]);

/** The kinds of error in the order the exit lines list them. */
const ERROR_KINDS: readonly ErrorKind[] = ["agent_error", "user_error", "judge_error"];

/**
 * The errors of one run: its own end (`agent_error`, `user_error`), then, when the judges ran, each judge
 * that failed (or the whole judgement missing). A run without turns is not judged, so it has no judge error.
 */
export function errorsOfRun(run: StoredRun, judges: boolean): Array<{ kind: ErrorKind; message: string }> {
  const errors: Array<{ kind: ErrorKind; message: string }> = [];
  const reason = run.end?.endReason;
  if (reason === "agent_error" || reason === "user_error")
    errors.push({ kind: reason, message: run.end?.error ?? reason });
  if (judges && run.turns.length > 0) {
    if (!run.judgement) errors.push({ kind: "judge_error", message: "the run was not judged" });
    for (const [judge, message] of Object.entries(run.judgement?.errors ?? {}))
      errors.push({ kind: "judge_error", message: `${judge}: ${message}` });
  }
  return errors;
}

/**
 * Each kind of error among `runs` (in the order given), with the number of runs that have it and the
 * first such run's message: what `users run` prints, one line per kind, before exiting 1.
 */
export function errorKindsOf(runs: readonly StoredRun[], options: { judges: boolean }): ErrorKindCount[] {
  const tally = new ErrorTally();
  for (const run of runs)
    for (const { kind, message } of errorsOfRun(run, options.judges)) tally.add(run.runId, kind, message);
  const kinds = tally.kinds();
  return ERROR_KINDS.flatMap((kind) => {
    const entry = kinds.find((candidate) => candidate.kind === kind);
    return entry
      ? [{ kind, count: entry.count, firstMessage: entry.firstMessage, firstRunId: entry.firstId }]
      : [];
  });
}

/** The agent answered at least once in this run. */
function hadConversation(run: StoredRun): boolean {
  return run.turns.some((turn) => turn.agent !== undefined);
}

/** Every metric of a users run folder, from its transcripts and the consolidated failures. */
export function summarizeRuns(
  settings: UsersRunSettings,
  stored: readonly StoredRun[],
  failures: UniqueFailureRecord[] | null,
): UsersSummary {
  const byScenario = new Map<string, StoredRun[]>();
  for (const run of stored) {
    const list = byScenario.get(run.scenarioId) ?? [];
    list.push(run);
    byScenario.set(run.scenarioId, list);
  }
  const played = (run: StoredRun) => !ERROR_REASONS.has(run.end?.endReason ?? "");
  // TD compares runs with the same goal (goals are free text).
  const { te, tde, td, ...coverage } = coverageOf(
    stored.map((run) => ({
      goal: settings.scenarios.find((s) => s.id === run.scenarioId)?.goal ?? run.scenarioId,
      calls: (run.end?.agentToolCalls ?? []).map((call) => ({ tool: call.tool, arguments: call.arguments })),
      conversation: hadConversation(run),
      played: played(run),
    })),
    settings.agentToolNames,
  );
  const verdicts = stored.flatMap((run) => run.judgement?.realism ?? []);
  const rate = (pick: (v: (typeof verdicts)[number]) => boolean) =>
    verdicts.length === 0 ? null : (100 * verdicts.filter(pick).length) / verdicts.length;
  const cost = costPerTurn(
    stored.flatMap((run) =>
      run.turns.map((turn) => ({
        promptTokens: turn.userUsage.inputTokens,
        completionTokens: turn.userUsage.outputTokens,
        actions: turn.actions.length,
      })),
    ),
  );
  const judged = (run: StoredRun) => run.judgement?.goal !== undefined && played(run);
  const scenarioRows = settings.scenarios.map(({ id, goal }) => {
    const runs = (byScenario.get(id) ?? []).sort((a, b) => a.index - b.index);
    const outcomes = runs.filter(judged).map((run) => run.judgement?.goal?.success === true);
    return {
      id,
      goal,
      success: outcomes.length === 0 ? null : meanStd(outcomes.map((ok) => (ok ? 1 : 0))),
      passHatK: passHatKs(outcomes),
      runs: runs.map((run) => ({
        runId: run.runId,
        index: run.index,
        seed: run.seed,
        endReason: run.end?.endReason ?? "unfinished",
        ...(run.end?.error ? { error: run.end.error } : {}),
        turns: run.turns.length,
        userActions: run.turns.reduce((sum, turn) => sum + turn.actions.length, 0),
        agentToolCalls: run.end?.agentToolCalls.length ?? 0,
        success: run.judgement?.goal?.success ?? null,
        score: run.judgement?.goal?.score ?? null,
        judgeErrors: run.judgement?.errors ?? {},
        transcript: `transcripts/${run.runId}.jsonl`,
      })),
    };
  });
  const allOutcomes = settings.scenarios.flatMap(({ id }) =>
    (byScenario.get(id) ?? []).filter(judged).map((run) => run.judgement?.goal?.success === true),
  );
  // Left out of success for an error: the run's own, or (judges on) a played run whose goal went unjudged.
  const errored = stored.filter(
    (run) => !played(run) || (settings.judges && run.turns.length > 0 && run.judgement?.goal === undefined),
  ).length;
  const passHatK: Record<string, number> = {};
  const passHatKScenarios: Record<string, number> = {};
  for (let k = 1; k <= settings.runs; k++) {
    const values = scenarioRows.map((row) => row.passHatK[k]).filter((v): v is number => v !== undefined);
    if (values.length > 0) {
      passHatK[k] = values.reduce((a, b) => a + b, 0) / values.length;
      passHatKScenarios[k] = values.length;
    }
  }
  const endReasons: Record<string, number> = {};
  for (const run of stored) {
    const reason = run.end?.endReason ?? "unfinished";
    endReasons[reason] = (endReasons[reason] ?? 0) + 1;
  }
  const errors = stored.filter((run) => ERROR_REASONS.has(run.end?.endReason ?? "")).length;
  return {
    schemaVersion: USERS_RUN_SCHEMA_VERSION,
    kind: "terrarium.users.summary",
    settings,
    metrics: {
      te,
      tde,
      td,
      coverage,
      failures: failures ? failures.length : null,
      realism: {
        goal: rate((v) => v.goal.consistent),
        profile: rate((v) => v.profile.consistent),
        knowledge: rate((v) => v.knowledge.consistent),
      },
      cost,
      tokensPerTurn: cost.tokensPerTurn,
      actionsPerTurn: cost.actionsPerTurn,
      success: allOutcomes.length === 0 ? null : allOutcomes.filter(Boolean).length / allOutcomes.length,
      successRuns: allOutcomes.length,
      errored,
      passHatK,
      passHatKScenarios,
    },
    runs: {
      total: stored.length,
      completed: stored.length - errors,
      errors,
      endReasons,
      errorKinds: errorKindsOf(stored, { judges: settings.judges }),
    },
    scenarios: scenarioRows,
    failures: failures ?? [],
  };
}

/** pass^k of one scenario for every k its judged runs allow. */
function passHatKs(outcomes: boolean[]): Record<string, number> {
  const result: Record<string, number> = {};
  for (let k = 1; k <= outcomes.length; k++) result[k] = passHatKOfRuns(outcomes, k);
  return result;
}
