/**
 * VISTA's per-answer failure judge (seed 003, section 3.1.4, after SAGE): every agent answer is scored
 * 0–4 on helpfulness, coherence, verbosity, relevance and faithfulness, each with a justification.
 *
 * One model call per answer returns all five scores (the paper does not say whether it used one call per
 * dimension; one call sees the same material five times cheaper and keeps the scores mutually aware).
 * Faithfulness is judged against the scenario's knowledge and the results of the agent's tool calls, this
 * answer's and earlier ones (shown with each agent message of the conversation).
 *
 * As in SAGE, a dimension counts as a failure only when its score is below 60% of the maximum: with a
 * 0–4 scale that is a score of 2 or less.
 */
import type { Models } from "../../models/hub.js";
import type { TurnRecord } from "../conversation.js";
import { knowledgeText, type Scenario } from "../scenario/index.js";
import { failuresSystemPrompt } from "./prompts.js";
import {
  agentMessageView,
  boundConversation,
  callSettings,
  clip,
  dataBlock,
  JUDGE_LIMITS,
  type JudgeCallOptions,
  type MessageView,
  mapLimit,
  transcriptView,
  userMessageView,
} from "./shared.js";

export const FAILURE_DIMENSIONS = [
  "helpfulness",
  "coherence",
  "verbosity",
  "relevance",
  "faithfulness",
] as const;
export type FailureDimension = (typeof FAILURE_DIMENSIONS)[number];

/** The best score of a dimension (scores run 0..4, higher is better). */
export const FAILURE_MAX_SCORE = 4;
/** A dimension is a failure when its score is below this: 60% of the maximum (SAGE's rule), so 2 or less. */
export const FAILURE_THRESHOLD = 0.6 * FAILURE_MAX_SCORE;

export interface DimensionScore {
  score: number;
  justification: string;
}

/** The five scores of one agent answer (`turn` is the turn's number). */
export interface ResponseScore {
  turn: number;
  scores: Record<FailureDimension, DimensionScore>;
}

export interface FailureJudgeOptions extends JudgeCallOptions {
  /** Calls in flight at once (default 4; the model layer's own limits still apply). */
  concurrency?: number;
}

const DIMENSION_SCHEMA = {
  type: "object",
  properties: {
    score: { type: "integer", minimum: 0, maximum: FAILURE_MAX_SCORE },
    justification: { type: "string" },
  },
  required: ["score", "justification"],
  additionalProperties: false,
} as const;

const FAILURES_SCHEMA = {
  type: "object",
  properties: Object.fromEntries(FAILURE_DIMENSIONS.map((dimension) => [dimension, DIMENSION_SCHEMA])),
  required: [...FAILURE_DIMENSIONS],
  additionalProperties: false,
};

/** The dimensions of an answer whose score is a failure (below {@link FAILURE_THRESHOLD}), in the fixed order. */
export function flaggedDimensions(score: Pick<ResponseScore, "scores">): FailureDimension[] {
  return FAILURE_DIMENSIONS.filter((dimension) => score.scores[dimension].score < FAILURE_THRESHOLD);
}

/** Scores every agent answer of a run: one model call per answer. */
export async function judgeFailures(
  models: Models,
  input: { scenario: Scenario; turns: ReadonlyArray<TurnRecord> },
  options: FailureJudgeOptions = {},
): Promise<ResponseScore[]> {
  const { scenario, turns } = input;
  const answered = turns.flatMap((turn, index) => (turn.agent ? [index] : []));
  const knowledge = knowledgeText(scenario);
  const settings = callSettings(options, "failures");
  return mapLimit(answered, options.concurrency ?? 4, async (index) => {
    const turn = turns[index] as TurnRecord;
    const earlier = transcriptView(turns.slice(0, index), { agentToolCalls: true });
    const userMessage: MessageView[] = turn.user.trim() ? [userMessageView(turn)] : [];
    const response = agentMessageView(turn, { agentToolCalls: true }) as MessageView;
    // The judged answer is shown apart (the conversation is context); the budget keeps the latest messages,
    // so the user message it answers is always there.
    const { messages, omitted_earlier_messages } = boundConversation([...earlier, ...userMessage]);
    const data = {
      user_goal: clip(scenario.goal, JUDGE_LIMITS.scenarioFieldChars),
      ...(scenario.agentContext
        ? { agent_context: clip(scenario.agentContext, JUDGE_LIMITS.scenarioFieldChars) }
        : {}),
      knowledge: knowledge.trim()
        ? clip(knowledge, JUDGE_LIMITS.knowledgeChars)
        : "(no knowledge was given for this scenario)",
      conversation: messages,
      ...(omitted_earlier_messages ? { omitted_earlier_messages } : {}),
      judged_response: response,
    };
    const result = await models.generateObject<Record<FailureDimension, DimensionScore>>({
      ...settings,
      schemaName: "response_scores",
      schema: FAILURES_SCHEMA,
      messages: [
        { role: "system", content: failuresSystemPrompt() },
        { role: "user", content: dataBlock(data) },
      ],
    });
    const scores = Object.fromEntries(
      FAILURE_DIMENSIONS.map((dimension) => {
        const { score, justification } = result.object[dimension];
        return [dimension, { score, justification }];
      }),
    ) as Record<FailureDimension, DimensionScore>;
    return { turn: turn.turn, scores };
  });
}

/** One flagged (answer, dimension): the input of {@link consolidateFailures}. */
export interface FailureItem {
  runId: string;
  scenarioId: string;
  turn: number;
  dimension: FailureDimension;
  score: number;
  justification: string;
  userMessage: string;
  agentMessage: string;
}

/** The flagged dimensions of a run's scores as consolidation items, in turn then dimension order. */
export function failureItems(input: {
  runId: string;
  scenarioId: string;
  turns: ReadonlyArray<TurnRecord>;
  scores: ReadonlyArray<ResponseScore>;
}): FailureItem[] {
  const byTurn = new Map(input.turns.map((turn) => [turn.turn, turn]));
  return input.scores.flatMap((score) =>
    flaggedDimensions(score).map((dimension) => {
      const turn = byTurn.get(score.turn);
      return {
        runId: input.runId,
        scenarioId: input.scenarioId,
        turn: score.turn,
        dimension,
        score: score.scores[dimension].score,
        justification: score.scores[dimension].justification,
        userMessage: turn?.user ?? "",
        agentMessage: turn?.agent?.message ?? "",
      };
    }),
  );
}
