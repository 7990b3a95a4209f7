import { TerrariumError } from "../../core/errors.js";
import type { Models } from "../../models/hub.js";
import type { ConversationMessage } from "../../users/conversation.js";
import { DEFAULT_STOP_TOKENS, type Scenario } from "../../users/scenario/index.js";
import { SimulatedUser } from "../../users/simulator/index.js";
import { UserToolbox } from "../../users/tools/index.js";
import type { StopReason } from "../../users/turns/index.js";

/** One message of a conversational episode, as the agent and the scorer see it. */
export interface EpisodeTurn {
  role: "assistant" | "user";
  content: string;
}

/** The simulated user's answer: its message, and whether it ended the conversation with a stop token. */
export interface EpisodeUserReply {
  message: string;
  stop?: StopReason;
}

/** The simulated user of one episode. It keeps no state: it is handed the conversation each turn. */
export interface EpisodeUserSimulator {
  /** The user's next message after `conversation` (empty: the user speaks first). */
  reply(conversation: readonly EpisodeTurn[]): Promise<EpisodeUserReply>;
}

/** Builds an episode's simulated user from the task's user instructions and the reset's seed. */
export type EpisodeUserFactory = (instructions: string, seed?: number) => EpisodeUserSimulator;

/** Longest user instructions taken (tau2's are a few hundred characters). */
export const MAX_USER_INSTRUCTIONS_CHARS = 64 * 1024;

export interface EpisodeUserOptions {
  /** Sampling temperature of the user model (default: the simulated user's, 0.7). */
  temperature?: number;
  /** Usage scope in the models ledger (default "openenv-user"). */
  scope?: string;
}

/**
 * Episode users backed by terrarium's simulated user (`users run`'s) on `modelName` (`provider:model`): the
 * task's user instructions become the scenario's goal, with no knowledge and no tools of its own. The
 * reset's seed reaches the model and the response cache, so the same seed gives the same replies from a
 * deterministic backend.
 */
export function createEpisodeUser(
  models: Models,
  modelName: string,
  options: EpisodeUserOptions = {},
): EpisodeUserFactory {
  if (typeof modelName !== "string" || !modelName.includes(":"))
    throw new TerrariumError(
      "CONFIG_INVALID",
      `the user model is named "provider:model" (got "${modelName}")`,
    );
  if (
    options.temperature !== undefined &&
    (!Number.isFinite(options.temperature) || options.temperature < 0 || options.temperature > 2)
  )
    throw new TerrariumError(
      "CONFIG_INVALID",
      `the user model's temperature must be 0 to 2 (got ${options.temperature})`,
    );
  return (instructions, seed) => {
    const goal = instructions.trim();
    if (goal === "") throw new TerrariumError("INVALID_INPUT", "the task's user instructions are empty");
    if (goal.length > MAX_USER_INSTRUCTIONS_CHARS)
      throw new TerrariumError(
        "INVALID_INPUT",
        `the task's user instructions are longer than ${MAX_USER_INSTRUCTIONS_CHARS} characters`,
      );
    const user = new SimulatedUser({
      models,
      scenario: taskScenario(goal),
      toolbox: new UserToolbox(),
      seed: `openenv/${seed ?? "unseeded"}`,
      model: modelName,
      scope: options.scope ?? "openenv-user",
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    });
    return {
      async reply(conversation) {
        const thread: ConversationMessage[] = conversation.map((turn) => ({
          role: turn.role === "assistant" ? "agent" : "user",
          content: turn.content,
        }));
        const turn = conversation.filter((message) => message.role === "user").length + 1;
        const output = await user.turn(thread, { turn, last: false });
        if (output.parsed.empty)
          throw new TerrariumError("MODEL_OUTPUT_INVALID", "the simulated user gave an empty message");
        return {
          message: output.parsed.message,
          ...(output.parsed.stop ? { stop: output.parsed.stop } : {}),
        };
      },
    };
  };
}

/** A tau2 user scenario as a terrarium scenario: the instructions are what the user wants. */
function taskScenario(goal: string): Scenario {
  return {
    schemaVersion: 1,
    id: "openenv-task",
    source: { pointer: "" },
    tags: [],
    profile: { text: "You are the customer the instructions below describe." },
    goal,
    knowledge: [],
    userTools: [],
    maxTurns: 1000,
    stop: { tokens: [...DEFAULT_STOP_TOKENS], when: [], onRepeat: "end" },
    expected: { checklist: [] },
  };
}
