import {
  type CostSummary,
  costPerTurn,
  type MeanStd,
  meanStd,
  passHatKOfRuns,
  type ThresholdCheck,
  toolDistributionEntropy,
  trajectoryDiversity,
  transitionEntropy,
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
  te: number;
  tde: number;
  td: number;
  /** Unique agent failures after consolidation (null when the judges did not run). */
  failures: number | null;
  realism: { goal: number | null; profile: number | null; knowledge: number | null };
  cost: CostSummary;
  tokensPerTurn: number;
  actionsPerTurn: number;
  /** Mean goal success over judged runs, 0..1 (null when none was judged). */
  success: number | null;
  /** Mean over scenarios of pass^k, for k = 1..runs. */
  passHatK: Record<string, number>;
}

export interface UsersSummary {
  schemaVersion: number;
  kind: "terrarium.users.summary";
  settings: UsersRunSettings;
  metrics: UsersMetrics;
  runs: { total: number; completed: number; errors: number; endReasons: Record<string, number> };
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
  const trajectories = stored.map((run) =>
    (run.end?.agentToolCalls ?? []).map((call) => ({ tool: call.tool, arguments: call.arguments })),
  );
  // TD compares runs with the same goal (a Map: goals are free text).
  const groups = new Map<string, typeof trajectories>();
  stored.forEach((run, index) => {
    const goal = settings.scenarios.find((s) => s.id === run.scenarioId)?.goal ?? run.scenarioId;
    groups.set(goal, [...(groups.get(goal) ?? []), trajectories[index] ?? []]);
  });
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
  const judged = (run: StoredRun) =>
    run.judgement?.goal !== undefined && !ERROR_REASONS.has(run.end?.endReason ?? "");
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
  const allOutcomes = scenarioRows.flatMap((row) =>
    row.runs
      .filter((run) => run.success !== null && !ERROR_REASONS.has(run.endReason))
      .map((run) => run.success),
  );
  const passHatK: Record<string, number> = {};
  for (let k = 1; k <= settings.runs; k++) {
    const values = scenarioRows.map((row) => row.passHatK[k]).filter((v): v is number => v !== undefined);
    if (values.length > 0) passHatK[k] = values.reduce((a, b) => a + b, 0) / values.length;
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
      te: transitionEntropy(trajectories, settings.agentToolNames),
      tde: toolDistributionEntropy(trajectories.flat(), settings.agentToolNames),
      td: trajectoryDiversity(groups),
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
      passHatK,
    },
    runs: { total: stored.length, completed: stored.length - errors, errors, endReasons },
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
