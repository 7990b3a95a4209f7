/**
 * Goal success of a user-simulation run with terrarium's checklist and judge (`task/feedback.ts`): the
 * checklist is the scenario's own (`expected.checklist`) or, when it has none, one a model writes from the
 * goal and the expected behaviour; the judge marks each item from the agent's tool calls, the conversation
 * and the final state. The task the judge sees is the user's goal.
 *
 * The judge's call carries the run's seed. The checklist writer's does not: one checklist is written per
 * scenario and shared by all its runs, so that they are judged against the same items.
 */
import type { Models } from "../../models/hub.js";
import {
  ChecklistWriter,
  type ChecklistItem as JudgeChecklistItem,
  type JudgedItem,
  judgeAttempt,
} from "../../task/feedback.js";
import type { AgentToolCallRecord, TurnRecord } from "../conversation.js";
import type { Scenario } from "../scenario/index.js";
import { clip, clipValue, JUDGE_LIMITS, transcriptText } from "./shared.js";

export interface GoalVerdict {
  success: boolean;
  /** Fraction of checklist items judged a success. */
  score: number;
  items: JudgedItem[];
  checklistSource: "scenario" | "generated";
}

export interface GoalJudgeOptions {
  /** Role of the checklist writer (default "checklist"). */
  checklistRole?: string;
  /** Role of the judge (default "judge"). */
  judgeRole?: string;
  scope?: string;
  /** The judge call's seed (the run's). */
  seed?: number;
  /**
   * A writer to reuse: share one across the runs of an evaluation so that every run of a scenario is
   * judged against the same generated checklist (the writer caches by task).
   */
  checklistWriter?: ChecklistWriter;
}

/** Most agent tool calls shown to the goal judge (the latest ones). */
export const GOAL_MAX_CALLS = 100;

/** The task a checklist is written for: the goal, and the expected behaviour when the scenario has one. */
export function checklistTask(scenario: Pick<Scenario, "goal" | "expected">): string {
  const goal = clip(scenario.goal, JUDGE_LIMITS.scenarioFieldChars);
  const behaviour = scenario.expected.behaviour?.trim();
  return behaviour
    ? `${goal}\n\nWhat the agent is expected to do: ${clip(behaviour, JUDGE_LIMITS.scenarioFieldChars)}`
    : goal;
}

export async function judgeGoal(
  models: Models,
  input: {
    scenario: Scenario;
    turns: ReadonlyArray<TurnRecord>;
    agentToolCalls: ReadonlyArray<AgentToolCallRecord>;
    finalState?: unknown;
  },
  options: GoalJudgeOptions = {},
): Promise<GoalVerdict> {
  const { scenario } = input;
  const fromScenario = scenario.expected.checklist.filter((item) => item.text.trim());
  let checklist: JudgeChecklistItem[];
  let checklistSource: GoalVerdict["checklistSource"];
  if (fromScenario.length) {
    checklist = fromScenario.map((item) => ({ description: item.text }));
    checklistSource = "scenario";
  } else {
    const writer =
      options.checklistWriter ?? new ChecklistWriter(models, options.checklistRole ?? "checklist");
    checklist = await writer.write(checklistTask(scenario), [], options.scope);
    checklistSource = "generated";
  }
  const omittedCalls = Math.max(0, input.agentToolCalls.length - GOAL_MAX_CALLS);
  const calls = input.agentToolCalls.slice(omittedCalls).map((call) => ({
    name: call.tool,
    arguments: clipValue(call.arguments, JUDGE_LIMITS.toolValueChars),
    status: call.status,
    result: clipValue(call.result, JUDGE_LIMITS.toolValueChars),
  }));
  const judgement = await judgeAttempt(
    models,
    {
      task: clip(scenario.goal, JUDGE_LIMITS.scenarioFieldChars),
      checklist,
      state: clipValue(input.finalState ?? null, JUDGE_LIMITS.stateChars),
      calls,
      agentMessage: omittedCalls
        ? `[the agent's first ${omittedCalls} tool calls are not shown]\n${transcriptText(input.turns)}`
        : transcriptText(input.turns),
    },
    {
      role: options.judgeRole ?? "judge",
      ...(options.scope ? { scope: options.scope } : {}),
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
    },
  );
  return {
    success: judgement.success,
    score: judgement.score,
    items: judgement.items,
    checklistSource,
  };
}
