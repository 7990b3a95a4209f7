/**
 * VISTA's realism judge (seed 003, section 3.1.2 and appendix D.2): every message the simulated user
 * wrote is judged for consistency with the scenario's goal, profile and knowledge, one model call per
 * (message, aspect), on the conversation up to and including that message. The percentages come from
 * `consistencyRate` in `metrics/realism.ts`.
 */
import type { Models } from "../../models/hub.js";
import type { TurnRecord } from "../conversation.js";
import { consistencyRate } from "../metrics/realism.js";
import { knowledgeText, type Scenario } from "../scenario/index.js";
import { type RealismAspect, realismSystemPrompt } from "./prompts.js";
import {
  boundConversation,
  callSettings,
  clip,
  dataBlock,
  JUDGE_LIMITS,
  type JudgeCallOptions,
  mapLimit,
  transcriptView,
  userMessageView,
} from "./shared.js";

export type { RealismAspect } from "./prompts.js";

export const REALISM_ASPECTS: readonly RealismAspect[] = ["goal", "profile", "knowledge"];

/** One aspect's verdict on one user message. */
export interface RealismJudgement {
  consistent: boolean;
  reason: string;
}

/** The three verdicts on one user message (`turn` is the turn's number). */
export interface RealismVerdict {
  turn: number;
  goal: RealismJudgement;
  profile: RealismJudgement;
  knowledge: RealismJudgement;
}

export interface RealismOptions extends JudgeCallOptions {
  /** Calls in flight at once (default 4; the model layer's own limits still apply). */
  concurrency?: number;
}

const REALISM_SCHEMA = {
  type: "object",
  properties: {
    consistent: { type: "boolean" },
    reason: { type: "string" },
  },
  required: ["consistent", "reason"],
  additionalProperties: false,
} as const;

/** What each aspect is judged against: the scenario's text for it (bounded). */
export function realismReference(
  scenario: Pick<Scenario, "goal" | "profile" | "knowledge">,
  aspect: RealismAspect,
): string {
  switch (aspect) {
    case "goal":
      return clip(scenario.goal, JUDGE_LIMITS.scenarioFieldChars);
    case "profile":
      return clip(scenario.profile.text, JUDGE_LIMITS.scenarioFieldChars);
    case "knowledge": {
      const text = knowledgeText(scenario);
      return text.trim() ? clip(text, JUDGE_LIMITS.knowledgeChars) : "(the user was given no knowledge)";
    }
  }
}

/** Judges every user message of a run on the three aspects: 3 model calls per message. */
export async function judgeRealism(
  models: Models,
  input: { scenario: Scenario; turns: ReadonlyArray<TurnRecord> },
  options: RealismOptions = {},
): Promise<RealismVerdict[]> {
  const { scenario, turns } = input;
  const judged = turns.flatMap((turn, index) => (turn.user.trim() ? [index] : []));
  const tasks = judged.flatMap((index) => REALISM_ASPECTS.map((aspect) => ({ index, aspect })));
  const settings = callSettings(options, "realism");
  const answers = await mapLimit(tasks, options.concurrency ?? 4, async ({ index, aspect }) => {
    const turn = turns[index] as TurnRecord;
    // The conversation up to this message: earlier turns whole, then this turn's user message alone.
    const earlier = transcriptView(turns.slice(0, index), { userActions: true });
    const current = userMessageView(turn, { userActions: true });
    const { messages, omitted_earlier_messages } = boundConversation([...earlier, current]);
    const data = {
      aspect,
      reference: realismReference(scenario, aspect),
      conversation: messages,
      ...(omitted_earlier_messages ? { omitted_earlier_messages } : {}),
      judged_message: { turn: turn.turn, content: current.content },
    };
    const result = await models.generateObject<RealismJudgement>({
      ...settings,
      schemaName: `realism_${aspect}`,
      schema: REALISM_SCHEMA,
      messages: [
        { role: "system", content: realismSystemPrompt(aspect) },
        { role: "user", content: dataBlock(data) },
      ],
    });
    return { consistent: result.object.consistent, reason: result.object.reason };
  });
  return judged.map((index, position) => {
    const of = (aspect: number) => answers[position * REALISM_ASPECTS.length + aspect] as RealismJudgement;
    return { turn: (turns[index] as TurnRecord).turn, goal: of(0), profile: of(1), knowledge: of(2) };
  });
}

export interface RealismSummary {
  /** User messages judged. */
  utterances: number;
  /** Percentage (0..100) of messages consistent with each aspect; null when none was judged. */
  goal: number | null;
  profile: number | null;
  knowledge: number | null;
  /** How many messages were consistent with each aspect. */
  consistent: { goal: number; profile: number; knowledge: number };
}

/** The percentages and counts of a set of verdicts (pool several runs' verdicts to summarise them together). */
export function realismSummary(verdicts: ReadonlyArray<RealismVerdict>): RealismSummary {
  const flags = (aspect: RealismAspect) => verdicts.map((verdict) => verdict[aspect].consistent);
  const count = (aspect: RealismAspect) => flags(aspect).filter(Boolean).length;
  return {
    utterances: verdicts.length,
    goal: consistencyRate(flags("goal")),
    profile: consistencyRate(flags("profile")),
    knowledge: consistencyRate(flags("knowledge")),
    consistent: { goal: count("goal"), profile: count("profile"), knowledge: count("knowledge") },
  };
}

/** The verdicts as the booleans `metrics/realism.ts` (`realismRates`) takes. */
export function realismFlags(
  verdicts: ReadonlyArray<RealismVerdict>,
): Array<{ goal: boolean; profile: boolean; knowledge: boolean }> {
  return verdicts.map((verdict) => ({
    goal: verdict.goal.consistent,
    profile: verdict.profile.consistent,
    knowledge: verdict.knowledge.consistent,
  }));
}
