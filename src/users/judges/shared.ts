/**
 * What every judge of a user-simulation run shares: how big the material sent to a model may get, how a
 * transcript becomes data, how calls are issued (temperature 0, seed and scope passed through), and a
 * small worker pool.
 */
import type { AgentToolCallRecord, TurnRecord } from "../conversation.js";

/** Options every judge takes. */
export interface JudgeCallOptions {
  /** The model role (each judge has its own default). */
  role?: string;
  /** Groups the usage of the calls (a run, a scenario). */
  scope?: string;
  /** Passed to every model call, so a seeded evaluation repeats. */
  seed?: number;
}

/**
 * Character limits on what reaches a judge. Longer texts are cut with a marker saying how much was cut;
 * a conversation over its budget keeps its most recent messages and says how many earlier ones it left out.
 */
export const JUDGE_LIMITS = {
  /** One user or agent message. */
  messageChars: 4_000,
  /** All messages of a conversation together. */
  conversationChars: 40_000,
  /** One tool call's arguments or result (as JSON). */
  toolValueChars: 2_000,
  /** Tool calls shown with one agent message. */
  toolCallsPerMessage: 20,
  /** The scenario's knowledge text. */
  knowledgeChars: 20_000,
  /** The profile, the goal, the expected behaviour, the agent's context. */
  scenarioFieldChars: 6_000,
  /** A justification written by an earlier judge. */
  justificationChars: 800,
  /** The final state shown to the goal judge (as JSON). */
  stateChars: 60_000,
} as const;

/** `text` cut to `max` characters, with a marker saying how many were left out. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.length - max;
  return `${text.slice(0, max)}…[${cut} more characters cut]`;
}

/** A JSON value kept as it is when its JSON is short, else its JSON text cut with a marker. */
export function clipValue(value: unknown, max: number): unknown {
  if (value === undefined) return null;
  let json: string;
  try {
    json = JSON.stringify(value) ?? "null";
  } catch {
    return "[a value that cannot be written as JSON]";
  }
  return json.length <= max ? value : clip(json, max);
}

/**
 * Data for a model: JSON between `<data>` and `</data>`. A string that contains `</data` is written with
 * JSON's `\/` escape, so untrusted text cannot close the block early and pass for instructions.
 */
export function dataBlock(data: unknown): string {
  const json = JSON.stringify(data, null, 1).replace(/<\/(data)/gi, "<\\/$1");
  return ["<data>", json, "</data>"].join("\n");
}

/** One tool call as a judge sees it. */
export interface ToolCallView {
  tool: string;
  arguments: unknown;
  status: string;
  result: unknown;
}

export function toolCallView(call: AgentToolCallRecord): ToolCallView {
  return {
    tool: call.tool,
    arguments: clipValue(call.arguments, JUDGE_LIMITS.toolValueChars),
    status: call.status,
    result: clipValue(call.result, JUDGE_LIMITS.toolValueChars),
  };
}

/** A bounded list of tool calls: the first ones up to the limit, then a note of how many were left out. */
export function toolCallsView(calls: ReadonlyArray<AgentToolCallRecord>): {
  calls: ToolCallView[];
  omitted?: number;
} {
  const shown = calls.slice(0, JUDGE_LIMITS.toolCallsPerMessage).map(toolCallView);
  const omitted = calls.length - shown.length;
  return omitted > 0 ? { calls: shown, omitted } : { calls: shown };
}

/** One message of a conversation as judges see it. */
export interface MessageView {
  turn: number;
  role: "user" | "agent";
  content: string;
  /** What the user did besides writing (its own tool calls and what they returned). */
  user_actions?: Array<{ tool: string; status: string; message: string; data: unknown }>;
  /** The agent's tool calls for this answer, with their results. */
  tool_calls?: ToolCallView[];
  tool_calls_omitted?: number;
}

export interface TranscriptOptions {
  /** Show the user's own actions (the realism judge needs them: what the user learnt counts as known). */
  userActions?: boolean;
  /** Show the agent's tool calls (the failure judge checks faithfulness against their results). */
  agentToolCalls?: boolean;
}

/** A user message as judges see it. */
export function userMessageView(turn: TurnRecord, options: TranscriptOptions = {}): MessageView {
  const view: MessageView = {
    turn: turn.turn,
    role: "user",
    content: clip(turn.user, JUDGE_LIMITS.messageChars),
  };
  if (options.userActions && turn.actions.length) {
    view.user_actions = turn.actions.slice(0, JUDGE_LIMITS.toolCallsPerMessage).map((action) => ({
      tool: action.tool,
      status: action.status,
      message: clip(action.message, JUDGE_LIMITS.toolValueChars),
      data: clipValue(action.data, JUDGE_LIMITS.toolValueChars),
    }));
  }
  return view;
}

/** An agent answer as judges see it (undefined when the turn has none). */
export function agentMessageView(turn: TurnRecord, options: TranscriptOptions = {}): MessageView | undefined {
  if (!turn.agent) return undefined;
  const view: MessageView = {
    turn: turn.turn,
    role: "agent",
    content: clip(turn.agent.message, JUDGE_LIMITS.messageChars),
  };
  if (options.agentToolCalls && turn.agent.toolCalls.length) {
    const { calls, omitted } = toolCallsView(turn.agent.toolCalls);
    view.tool_calls = calls;
    if (omitted) view.tool_calls_omitted = omitted;
  }
  return view;
}

/** The messages of some turns in order: each turn's user message (when not empty), then the agent's answer. */
export function transcriptView(
  turns: ReadonlyArray<TurnRecord>,
  options: TranscriptOptions = {},
): MessageView[] {
  const messages: MessageView[] = [];
  for (const turn of turns) {
    if (turn.user.trim() || (options.userActions && turn.actions.length))
      messages.push(userMessageView(turn, options));
    const agent = agentMessageView(turn, options);
    if (agent) messages.push(agent);
  }
  return messages;
}

/**
 * A conversation within `maxChars` (of JSON): the most recent messages are kept, the earlier ones dropped,
 * and `omitted` says how many. The last message is always kept (it is the one being judged).
 */
export function boundConversation(
  messages: ReadonlyArray<MessageView>,
  maxChars: number = JUDGE_LIMITS.conversationChars,
): { messages: MessageView[]; omitted_earlier_messages?: number } {
  let total = 0;
  let start = messages.length;
  while (start > 0) {
    const size = JSON.stringify(messages[start - 1]).length;
    if (start < messages.length && total + size > maxChars) break;
    total += size;
    start--;
  }
  const kept = messages.slice(start);
  return start > 0 ? { messages: kept, omitted_earlier_messages: start } : { messages: kept };
}

/** The conversation as plain text ("User: …" / "Agent: …"), bounded the same way. */
export function transcriptText(turns: ReadonlyArray<TurnRecord>): string {
  const { messages, omitted_earlier_messages } = boundConversation(transcriptView(turns));
  const lines = messages.map(
    (message) => `[turn ${message.turn}] ${message.role === "user" ? "User" : "Agent"}: ${message.content}`,
  );
  if (omitted_earlier_messages) lines.unshift(`[${omitted_earlier_messages} earlier messages left out]`);
  return lines.join("\n");
}

/** The sampling settings every judge call uses. */
export function callSettings(
  options: JudgeCallOptions,
  defaultRole: string,
): { role: string; temperature: 0; seed?: number; scope?: string } {
  return {
    role: options.role ?? defaultRole,
    temperature: 0,
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.scope ? { scope: options.scope } : {}),
  };
}

/** `fn` over `items` with at most `limit` running at once; results in the items' order. */
export async function mapLimit<T, R>(
  items: ReadonlyArray<T>,
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const width = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

/** The message of an error, whatever was thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
