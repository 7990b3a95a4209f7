import type { JsonSchema } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import type { Models } from "../../models/hub.js";
import type { EpisodeMessage, Judge } from "./index.js";

/** Limits on what the judge is shown: a hostile or runaway conversation cannot grow its prompt without bound. */
export const JUDGE_LIMITS = {
  /** Characters of one message shown (the rest is cut with a marker). */
  messageChars: 8_000,
  /** Characters of the whole conversation shown (the latest messages are kept). */
  conversationChars: 200_000,
  /** Assertions judged in one task. */
  assertions: 64,
  /** Characters of one assertion. */
  assertionChars: 2_000,
} as const;

export interface RewardJudgeOptions {
  /** Usage scope in the models ledger (default "rl-judge"). */
  scope?: string;
  /** Called when the model fails (the check is then left out of the reward, as `null`). */
  onError?: (error: unknown) => void;
}

interface AssertionVerdict {
  index: number;
  met: boolean;
  reason: string;
}

const VERDICT_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    verdicts: {
      type: "array",
      items: {
        type: "object",
        properties: {
          index: { type: "integer" },
          met: { type: "boolean" },
          reason: { type: "string" },
        },
        required: ["index", "met", "reason"],
        additionalProperties: false,
      },
    },
  },
  required: ["verdicts"],
  additionalProperties: false,
} as JsonSchema;

const SYSTEM = [
  "You grade a conversation between a customer-service agent (assistant) and a customer (user).",
  "For each numbered expectation, decide from the conversation alone whether the agent's behaviour meets it.",
  "An expectation the conversation gives no evidence for is not met. Answer every expectation, once, by its number,",
  "with a one-sentence reason.",
].join(" ");

/**
 * The `Judge` of the reward's `nl_assertions` check on `modelName` (`provider:model`): one structured call
 * judges every assertion of the task against the conversation; the check is 1 only when all of them hold
 * (tau2's rule), 0 when any does not, and null when the model fails or answers off the schema after its
 * repairs. Deterministic settings (temperature 0, a fixed seed) so a rescore gives the same verdict.
 */
export function createRewardJudge(
  models: Models,
  modelName: string,
  options: RewardJudgeOptions = {},
): Judge {
  if (typeof modelName !== "string" || !modelName.includes(":"))
    throw new TerrariumError(
      "CONFIG_INVALID",
      `the judge model is named "provider:model" (got "${modelName}")`,
    );
  return async (_check, task, messages) => {
    const assertions = task.nlAssertions.slice(0, JUDGE_LIMITS.assertions);
    if (assertions.length === 0) return 1;
    const prompt = [
      "<conversation>",
      conversationText(messages),
      "</conversation>",
      "",
      "Expectations:",
      ...assertions.map((text, index) => `${index + 1}. ${clip(text, JUDGE_LIMITS.assertionChars)}`),
    ].join("\n");
    try {
      const result = await models.generateObject<{ verdicts: AssertionVerdict[] }>({
        model: modelName,
        messages: [
          { role: "system", content: SYSTEM },
          { role: "user", content: prompt },
        ],
        schema: VERDICT_SCHEMA,
        schemaName: "nl_assertion_verdicts",
        temperature: 0,
        seed: 0,
        scope: options.scope ?? "rl-judge",
        accept: (value) => missing(value.verdicts, assertions.length),
      });
      const byIndex = new Map(result.object.verdicts.map((verdict) => [verdict.index, verdict.met]));
      return assertions.every((_, index) => byIndex.get(index + 1) === true) ? 1 : 0;
    } catch (error) {
      options.onError?.(error);
      return null;
    }
  };
}

/** Problems with a verdict list: an expectation left unanswered or a number out of range. */
function missing(verdicts: AssertionVerdict[], count: number): string[] | undefined {
  const problems: string[] = [];
  const seen = new Set(verdicts.map((verdict) => verdict.index));
  for (const verdict of verdicts)
    if (!Number.isInteger(verdict.index) || verdict.index < 1 || verdict.index > count)
      problems.push(`verdict index ${verdict.index} is not an expectation number (1 to ${count})`);
  for (let index = 1; index <= count; index++)
    if (!seen.has(index)) problems.push(`expectation ${index} has no verdict`);
  return problems.length > 0 ? problems : undefined;
}

/** The conversation as text, each message clipped, the latest messages kept within the total limit. */
function conversationText(messages: readonly EpisodeMessage[]): string {
  const lines: string[] = [];
  let total = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (!message || typeof message.content !== "string") continue;
    const line = `${message.role}: ${clip(message.content, JUDGE_LIMITS.messageChars)}`;
    if (total + line.length > JUDGE_LIMITS.conversationChars) {
      lines.push("[… earlier messages cut]");
      break;
    }
    total += line.length + 1;
    lines.push(line);
  }
  return lines.length > 0 ? lines.reverse().join("\n") : "(no messages)";
}

function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)} [… cut]`;
}
