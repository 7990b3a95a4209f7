/**
 * The shapes every part of user simulation shares: what the agent under test answers, what the simulated
 * user did, and the transcript of one run. The agent targets, the simulated user, the judges and the
 * report all read and write these, so they live apart from each of them.
 */

/** One tool call the agent under test made while answering, with what the tool returned. */
export interface AgentToolCallRecord {
  tool: string;
  arguments: unknown;
  /** "ok", "invalid", "tool_error", "error", or what the agent's own server reported. */
  status: string;
  result: unknown;
}

/** Tokens a model call used (0 when the target does not report them). */
export interface TokenCount {
  inputTokens: number;
  outputTokens: number;
}

/** The agent's answer to one user message. */
export interface AgentReply {
  message: string;
  toolCalls: AgentToolCallRecord[];
  /** The agent's own model usage for this reply, when the target can see it. */
  usage?: TokenCount;
}

/** A message of the conversation as the user and the agent see it. */
export interface ConversationMessage {
  role: "user" | "agent";
  content: string;
}

/**
 * One thing the simulated user did besides writing its message: an API tool call (`tool` is its name), or
 * a UI action on the agent's page (`tool` is the action type, `arguments` the whole action, `status` ok or
 * error, `screenshot` the page it acted on when screenshots are kept).
 */
export interface UserAction {
  kind: "tool" | "ui";
  tool: string;
  arguments: unknown;
  status: string;
  message: string;
  data: unknown;
  screenshot?: string;
}

/** Why a conversation ended. */
export type EndReason =
  | "stop"
  | "transfer"
  | "out_of_scope"
  | "max_turns"
  | "repetition"
  | "empty_output"
  /** Browser modes: `--max-steps` observe → act steps were spent. */
  | "max_steps"
  | "agent_error"
  | "user_error";

/** One user turn: the plan, the actions, the message; and the agent's reply to it (absent on a stop). */
export interface TurnRecord {
  turn: number;
  plan?: { known: string[]; needed: string[]; nextStep: string };
  actions: UserAction[];
  /** The user's message (for a stop, the text written before the token; may be empty). */
  user: string;
  /** Set when the user ended the conversation with this turn. */
  stop?: "stop" | "transfer" | "out_of_scope";
  /** The user's first message repeated an earlier one and it was asked for another. */
  redirected?: boolean;
  /** The message repeated an earlier one again: it was not sent and the conversation ended. */
  repeated?: boolean;
  /** The agent failed on this message (the run ends with `agent_error`). */
  agentError?: string;
  /** The user model's tokens for this turn (every call: plan, tool rounds, message, retries). */
  userUsage: TokenCount & { calls: number };
  agent?: AgentReply & { latencyMs: number };
  /** Milliseconds spent in the user model, the user's tools and the agent this turn. */
  timing: { userModelMs: number; toolsMs: number; agentMs: number };
}
