import type { CallAnswer, CallResult, Models, Verdict } from "../../models/hub.js";
import type { Message, ToolSpec } from "../../models/types.js";
import type { ConversationMessage, TokenCount, UserAction } from "../conversation.js";
import type { Scenario } from "../scenario/index.js";
import type { UserToolbox } from "../tools/index.js";
import {
  formatUserTurnPlan,
  LAST_TURN_NOTICE,
  type ParsedUserTurn,
  parseUserTurn,
  shouldRetryEmpty,
  USER_TURN_PLAN_SCHEMA,
  type UserTurnPlan,
} from "../turns/index.js";
import { messageInstruction, planInstruction, userSystemPrompt } from "./prompts.js";

export interface SimulatedUserOptions {
  models: Models;
  scenario: Scenario;
  toolbox: UserToolbox;
  /** The run's seed: reaches the model and separates repeated runs in the response cache. */
  seed: string;
  /** Model role (default `user`, which falls back to `roles.default`). */
  role?: string;
  model?: string;
  temperature?: number;
  /** Most rounds of tool calls in one turn before the user must write its message (default 4). */
  maxToolRounds?: number;
  /** Retries of an empty answer before the run ends with `empty_output` (default 2). */
  emptyRetries?: number;
  /** Usage scope in the ledger (the run id). */
  scope?: string;
}

/** What the user produced in one turn. */
export interface UserTurnOutput {
  plan: UserTurnPlan;
  actions: UserAction[];
  /** The message read against the stop contract; `empty` when every attempt came back empty. */
  parsed: ParsedUserTurn;
  usage: TokenCount & { calls: number };
  /** Milliseconds in model calls and in the user's tools. */
  modelMs: number;
  toolsMs: number;
}

/**
 * The simulated user (VISTA's API user): each turn it plans (what it knows, what it still needs, the next
 * step), may call its own tools — several calls, each an action — and then writes one message in
 * character. It holds no conversation state of its own: the caller passes the conversation each turn, so
 * one user can be replayed from a transcript.
 */
export class SimulatedUser {
  private readonly system: string;
  private readonly tools: ToolSpec[];

  constructor(private readonly options: SimulatedUserOptions) {
    const specs = options.toolbox.specs();
    this.tools = specs.map((spec) => ({
      name: spec.name,
      description: spec.description,
      inputSchema: spec.parameters as ToolSpec["inputSchema"],
    }));
    this.system = userSystemPrompt(options.scenario, {
      hasTools: specs.length > 0,
      hasRetrieval: options.scenario.userTools.some((tool) => tool.kind === "retrieval"),
    });
  }

  /**
   * One turn. `notes` are extra instructions for this turn only (the last-turn notice, a redirect after a
   * repeated message); `attemptTag` separates a regenerated turn from the first one in the cache.
   */
  async turn(
    conversation: readonly ConversationMessage[],
    context: { turn: number; last: boolean; notes?: string[]; attemptTag?: string },
  ): Promise<UserTurnOutput> {
    const notes = [...(context.notes ?? []), ...(context.last ? [LAST_TURN_NOTICE] : [])];
    const usage = { inputTokens: 0, outputTokens: 0, calls: 0 };
    let modelMs = 0;
    let toolsMs = 0;
    const variant = `${this.options.seed}#turn${context.turn}${context.attemptTag ?? ""}`;
    const account = (result: CallResult) => {
      usage.inputTokens += result.usage.inputTokens;
      usage.outputTokens += result.usage.outputTokens;
      usage.calls += 1;
      modelMs += result.latencyMs;
    };
    const thread: Message[] = [{ role: "system", content: this.system }, ...asUserThread(conversation)];

    const planned = await this.options.models.generateObject<UserTurnPlan>({
      ...this.who(),
      messages: [...thread, { role: "user", content: planInstruction(notes) }],
      schema: USER_TURN_PLAN_SCHEMA,
      schemaName: "user_turn_plan",
      variant: `${variant}/plan`,
    });
    account(planned);
    const plan = planned.object;

    const messages: Message[] = [
      ...thread,
      { role: "user", content: messageInstruction(formatUserTurnPlan(plan), notes) },
    ];
    const actions: UserAction[] = [];
    const maxRounds = this.options.maxToolRounds ?? 4;
    const emptyRetries = this.options.emptyRetries ?? 2;
    let round = 0;
    let attempt = 1;
    for (;;) {
      const offerTools = this.tools.length > 0 && round < maxRounds;
      // An empty message is not a usable answer: it is never cached, so a rerun asks the model again.
      const accept = (answer: CallAnswer): Verdict =>
        (offerTools && answer.toolCalls.length > 0) || !parseUserTurn(answer.text).empty
          ? undefined
          : ["the message is empty"];
      const result = offerTools
        ? await this.options.models.generateWithTools({
            ...this.who(),
            messages,
            tools: this.tools,
            variant: `${variant}/act${round}.${attempt}`,
            accept,
          })
        : await this.options.models.generateText({
            ...this.who(),
            messages,
            variant: `${variant}/say.${attempt}`,
            accept,
          });
      account(result);
      if (result.toolCalls.length > 0 && offerTools) {
        round += 1;
        messages.push({ role: "assistant", content: result.text, toolCalls: result.toolCalls });
        for (const call of result.toolCalls) {
          const started = performance.now();
          const answer = await this.options.toolbox.call(call.name, call.arguments);
          toolsMs += performance.now() - started;
          actions.push({ kind: "tool", tool: call.name, arguments: call.arguments, ...answer });
          messages.push({
            role: "tool",
            toolCallId: call.id,
            name: call.name,
            content: JSON.stringify({ status: answer.status, message: answer.message, data: answer.data }),
          });
        }
        continue;
      }
      const parsed = parseUserTurn(result.text);
      if (parsed.empty && shouldRetryEmpty(attempt, emptyRetries)) {
        attempt += 1;
        continue;
      }
      return { plan, actions, parsed, usage, modelMs, toolsMs };
    }
  }

  private who() {
    return {
      ...(this.options.model ? { model: this.options.model } : { role: this.options.role ?? "user" }),
      temperature: this.options.temperature ?? 0.7,
      seed: seedNumber(this.options.seed),
      ...(this.options.scope ? { scope: this.options.scope } : {}),
    };
  }
}

/** The conversation from the user model's side: the agent speaks as "user", the simulated user as "assistant". */
function asUserThread(conversation: readonly ConversationMessage[]): Message[] {
  return [
    { role: "user", content: "[the chat window is open; you write first]" },
    ...conversation.map(
      (message): Message =>
        message.role === "agent"
          ? { role: "user", content: `[agent] ${message.content}` }
          : { role: "assistant", content: message.content },
    ),
  ];
}

/** A 31-bit number from the run's seed, for providers that take an integer seed. */
export function seedNumber(seed: string): number {
  let hash = 2166136261;
  for (let i = 0; i < seed.length; i++) {
    hash ^= seed.charCodeAt(i);
    hash = Math.imul(hash, 16777619);
  }
  return (hash >>> 0) & 0x7fffffff;
}
