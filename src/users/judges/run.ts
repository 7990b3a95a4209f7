/**
 * The three per-run judges together: realism, per-answer failures and goal success. They run side by
 * side; a judge that throws costs only its own part, which becomes `{ error }` (also listed in `errors`),
 * so a run is never lost to one judge. Consolidation spans runs and is called separately.
 */
import type { Models } from "../../models/hub.js";
import type { AgentToolCallRecord, TurnRecord } from "../conversation.js";
import type { Scenario } from "../scenario/index.js";
import { type FailureJudgeOptions, judgeFailures, type ResponseScore } from "./failures.js";
import { type GoalJudgeOptions, type GoalVerdict, judgeGoal } from "./goal.js";
import { judgeRealism, type RealismOptions, type RealismVerdict } from "./realism.js";
import { errorMessage } from "./shared.js";

export const RUN_JUDGES = ["realism", "failures", "goal"] as const;
export type RunJudgeName = (typeof RUN_JUDGES)[number];

/** What a judge that failed leaves in its place. */
export interface JudgeError {
  error: string;
}

export function isJudgeError(value: unknown): value is JudgeError {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { error?: unknown }).error === "string"
  );
}

export interface RunJudgement {
  realism: RealismVerdict[] | JudgeError;
  failures: ResponseScore[] | JudgeError;
  goal: GoalVerdict | JudgeError;
  /** The message of each judge that failed. */
  errors: Partial<Record<RunJudgeName, string>>;
}

export interface RunJudgeOptions {
  /** Passed to every judge unless its own options say otherwise. */
  scope?: string;
  seed?: number;
  concurrency?: number;
  realism?: RealismOptions;
  failures?: FailureJudgeOptions;
  goal?: GoalJudgeOptions;
}

export async function judgeRun(
  models: Models,
  input: {
    scenario: Scenario;
    turns: ReadonlyArray<TurnRecord>;
    agentToolCalls: ReadonlyArray<AgentToolCallRecord>;
    finalState?: unknown;
  },
  options: RunJudgeOptions = {},
): Promise<RunJudgement> {
  const shared = {
    ...(options.scope ? { scope: options.scope } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
  };
  const { concurrency: _concurrency, ...goalShared } = shared;
  const conversation = { scenario: input.scenario, turns: input.turns };
  const [realism, failures, goal] = await Promise.allSettled([
    judgeRealism(models, conversation, { ...shared, ...options.realism }),
    judgeFailures(models, conversation, { ...shared, ...options.failures }),
    judgeGoal(
      models,
      {
        ...conversation,
        agentToolCalls: input.agentToolCalls,
        ...(input.finalState !== undefined ? { finalState: input.finalState } : {}),
      },
      { ...goalShared, ...options.goal },
    ),
  ]);
  const errors: RunJudgement["errors"] = {};
  const settle = <T>(name: RunJudgeName, outcome: PromiseSettledResult<T>): T | JudgeError => {
    if (outcome.status === "fulfilled") return outcome.value;
    const error = errorMessage(outcome.reason);
    errors[name] = error;
    return { error };
  };
  return {
    realism: settle("realism", realism),
    failures: settle("failures", failures),
    goal: settle("goal", goal),
    errors,
  };
}
