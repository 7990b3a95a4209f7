import type { AgentReply, ConversationMessage, EndReason, TurnRecord } from "../conversation.js";
import type { Scenario } from "../scenario/index.js";
import { checkTurnBudget, RepetitionGuard } from "../turns/index.js";
import type { SimulatedUser } from "./user.js";

/** The agent side of one conversation: what the loop needs of an agent session. */
export interface AgentEndpoint {
  send(userMessage: string): Promise<AgentReply>;
}

export interface ConversationResult {
  turns: TurnRecord[];
  endReason: EndReason;
  /** Set when the user's model or the agent failed; the turns before it are kept. */
  error?: string;
}

/** One user turn after the repetition guard: the message to send, or `repeated` when the run must end. */
export interface GuardedUserTurn {
  output: Awaited<ReturnType<SimulatedUser["turn"]>>;
  redirected: boolean;
  repeated: boolean;
}

/**
 * Asks the user for its next message. A repeated message is not sent: the user is asked once for another
 * one (its usage and actions added to the retry's), or, past the guard's redirects, the turn is `repeated`.
 */
export async function guardedUserTurn(
  user: SimulatedUser,
  conversation: ConversationMessage[],
  budget: { turn: number; last: boolean },
  guard: RepetitionGuard,
): Promise<GuardedUserTurn> {
  let output = await user.turn(conversation, { turn: budget.turn, last: budget.last });
  let check = output.parsed.empty || output.parsed.stop ? undefined : guard.check(output.parsed.message);
  let redirected = false;
  if (check?.action === "redirect") {
    redirected = true;
    const again = await user.turn(conversation, {
      turn: budget.turn,
      last: budget.last,
      notes: [check.instruction ?? ""],
      attemptTag: "/redirect",
    });
    again.usage.inputTokens += output.usage.inputTokens;
    again.usage.outputTokens += output.usage.outputTokens;
    again.usage.calls += output.usage.calls;
    again.actions.unshift(...output.actions);
    output = again;
    check = output.parsed.empty || output.parsed.stop ? undefined : guard.check(output.parsed.message);
  }
  return { output, redirected, repeated: check?.action === "end" };
}

/**
 * Plays one conversation: the user writes, the agent answers, until the user ends it with a token, the
 * same message comes twice (after one redirect when the scenario says `on_repeat: redirect`), the turn
 * budget is spent, the user's model keeps answering nothing, or a side fails. Each finished turn is handed
 * to `onTurn` at once, so a transcript is written as the conversation goes.
 */
export async function simulateConversation(options: {
  scenario: Scenario;
  user: SimulatedUser;
  agent: AgentEndpoint;
  onTurn?: (turn: TurnRecord) => void | Promise<void>;
}): Promise<ConversationResult> {
  const { scenario, user, agent } = options;
  const conversation: ConversationMessage[] = [];
  const turns: TurnRecord[] = [];
  const guard = new RepetitionGuard({ maxRedirects: scenario.stop.onRepeat === "redirect" ? 1 : 0 });
  const finish = async (turn: TurnRecord) => {
    turns.push(turn);
    await options.onTurn?.(turn);
  };
  for (;;) {
    const budget = checkTurnBudget(turns.length, scenario.maxTurns);
    if (budget.done) return { turns, endReason: "max_turns" };
    let output: Awaited<ReturnType<SimulatedUser["turn"]>>;
    let redirected = false;
    let repeated = false;
    const userStarted = performance.now();
    try {
      ({ output, redirected, repeated } = await guardedUserTurn(user, conversation, budget, guard));
    } catch (error) {
      return { turns, endReason: "user_error", error: `the user's model failed: ${errorMessage(error)}` };
    }
    const userMs = performance.now() - userStarted;
    const record: TurnRecord = {
      turn: budget.turn,
      plan: output.plan,
      actions: output.actions,
      user: output.parsed.message,
      userUsage: output.usage,
      timing: { userModelMs: round(userMs - output.toolsMs), toolsMs: round(output.toolsMs), agentMs: 0 },
      ...(output.parsed.stop ? { stop: output.parsed.stop } : {}),
      ...(redirected ? { redirected: true } : {}),
    };
    if (output.parsed.empty) {
      await finish(record);
      return { turns, endReason: "empty_output" };
    }
    if (repeated) {
      await finish({ ...record, repeated: true });
      return { turns, endReason: "repetition" };
    }
    if (output.parsed.stop) {
      await finish(record);
      return { turns, endReason: output.parsed.stop };
    }
    conversation.push({ role: "user", content: output.parsed.message });
    const agentStarted = performance.now();
    try {
      const reply = await agent.send(output.parsed.message);
      const latencyMs = round(performance.now() - agentStarted);
      record.agent = { ...reply, latencyMs };
      record.timing.agentMs = latencyMs;
      conversation.push({ role: "agent", content: reply.message });
      await finish(record);
    } catch (error) {
      record.timing.agentMs = round(performance.now() - agentStarted);
      record.agentError = errorMessage(error);
      await finish(record);
      return { turns, endReason: "agent_error", error: `the agent failed: ${errorMessage(error)}` };
    }
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
