import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { TerrariumError } from "../../core/errors.js";
import type { Engine } from "../../sim/engine.js";
import type { AgentSession, AgentTarget } from "../agents/types.js";
import { SCENARIO_SCHEMA_VERSION } from "../scenario/schema.js";
import { ScriptedShopAgent } from "./scripted-agent.js";

/** Longest user message the chat accepts, in characters. */
export const MAX_MESSAGE_CHARS = 4000;
/** Messages (user and agent) one conversation may hold. */
export const MAX_CONVERSATION_MESSAGES = 200;
/** Live conversations at most; past this a new one is refused politely until one closes or idles out. */
export const DEFAULT_MAX_CHAT_SESSIONS = 500;
/** A conversation nobody wrote to for this long is closed, its engine session with it (30 minutes). */
export const DEFAULT_CHAT_IDLE_MS = 30 * 60_000;
/** setTimeout's longest delay; a longer idle timeout is checked at least this often. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface ChatMessage {
  role: "user" | "agent";
  text: string;
  at: string;
}

/** A turn that failed, with the conversation it belongs to (which goes on: the next message may work). */
export class ChatTurnError extends Error {
  constructor(
    readonly sessionId: string,
    override readonly cause: unknown,
  ) {
    super((cause as Error)?.message ?? String(cause));
  }
}

/** Who answers a conversation: the planner agent (a model) or the scripted rules. */
export type ChatResponder = { kind: "planner"; target: AgentTarget } | { kind: "scripted" };

/** Why a conversation ended: the visitor closed it, nobody wrote for the idle timeout, or the shop stopped. */
export type ChatCloseReason = "closed" | "idle" | "shutdown";

export interface ChatSessionsOptions {
  /** Seeds the agent's sessions (their tools and model calls), never the chat ids. */
  seed?: string;
  /** Live conversations at most (default 500). */
  maxSessions?: number;
  /** Milliseconds without a message after which a conversation is closed (default 30 minutes). */
  idleMs?: number;
}

interface Conversation {
  /** The chat's id: random, what the outside world addresses the conversation by. */
  id: string;
  /** The engine session of the agent's tools (seeded with the shop; never shown outside). */
  engineSession: string;
  messages: ChatMessage[];
  answer: (message: string) => Promise<string>;
  /** The previous message's turn: turns of one conversation run one after the other. */
  queue: Promise<unknown>;
  /** Turns accepted and not finished: a conversation with one is never idle. */
  pending: number;
  lastUsed: number;
  closed: boolean;
  close: () => Promise<void>;
}

/** The cap and idle timeout of `options` with their defaults, or a clear refusal of a bad one. */
export function chatLimits(options: ChatSessionsOptions): { maxSessions: number; idleMs: number } {
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_CHAT_SESSIONS;
  const idleMs = options.idleMs ?? DEFAULT_CHAT_IDLE_MS;
  if (!Number.isInteger(maxSessions) || maxSessions < 1)
    throw new TerrariumError(
      "INVALID_INPUT",
      `the most live chats must be a whole number of at least 1 (got ${maxSessions})`,
    );
  if (!Number.isFinite(idleMs) || idleMs <= 0)
    throw new TerrariumError(
      "INVALID_INPUT",
      `the chat idle timeout must be a positive number of milliseconds (got ${idleMs})`,
    );
  return { maxSessions, idleMs };
}

/** A chat id: 128 random bits, base64url (22 characters), whatever the seed. */
export function newChatId(): string {
  return randomBytes(16).toString("base64url");
}

/** A scenario for the planner's session context: the demo has no scenario, only a name for the metadata. */
const DEMO_SCENARIO = {
  schemaVersion: SCENARIO_SCHEMA_VERSION,
  id: "shop-demo",
  source: { pointer: "" },
  tags: [],
  profile: { text: "a visitor of the demo shop" },
  goal: "chat with the shop's support agent",
  knowledge: [],
  userTools: [],
  maxTurns: MAX_CONVERSATION_MESSAGES,
  stop: { tokens: [], when: [], onRepeat: "end" as const },
  expected: { checklist: [] },
};

/**
 * The shop's conversations. Each one has its own engine session (so its own copy of the store's state)
 * and its own agent session; nothing mutable is shared between conversations. A conversation ends when
 * the visitor closes it, when nobody writes to it for the idle timeout, or when the shop stops; its
 * engine session is deleted then, so the engine holds at most one session per live conversation.
 * Emits `closed` with `{ id, reason }` once a conversation's engine session is gone.
 */
export class ChatSessions extends EventEmitter<{
  closed: [{ id: string; reason: ChatCloseReason }];
}> {
  /** Least recently used first: the idle sweep reads from the front. */
  private readonly conversations = new Map<string, Conversation>();
  private opened = 0;
  /** Conversations being opened (counted against the cap before they exist). */
  private opening = 0;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly maxSessions: number;
  private readonly idleMs: number;

  constructor(
    private readonly engine: Engine,
    private readonly responder: ChatResponder,
    private readonly options: ChatSessionsOptions = {},
  ) {
    super();
    ({ maxSessions: this.maxSessions, idleMs: this.idleMs } = chatLimits(options));
  }

  get mode(): ChatResponder["kind"] {
    return this.responder.kind;
  }

  /** Live conversations. */
  get size(): number {
    return this.conversations.size;
  }

  /** The conversation's messages, or undefined when there is no such conversation. */
  messages(id: string): ChatMessage[] | undefined {
    const conversation = this.conversations.get(id);
    return conversation ? conversation.messages.map((message) => ({ ...message })) : undefined;
  }

  has(id: string): boolean {
    return this.conversations.has(id);
  }

  /** The engine session behind a live conversation (the agent's tool calls and state). */
  engineSession(id: string): string | undefined {
    return this.conversations.get(id)?.engineSession;
  }

  /** Answers one message: in the given conversation, or in a new one when `id` is absent. */
  async send(id: string | undefined, message: string): Promise<{ sessionId: string; reply: string }> {
    const conversation = id === undefined ? await this.open() : this.conversations.get(id);
    if (!conversation) throw new TerrariumError("UNKNOWN_SESSION", `no chat session ${id}`);
    this.touch(conversation);
    conversation.pending++;
    const turn = conversation.queue.then(async () => {
      // Closed while this turn waited for the one before it: its engine session is going away.
      if (conversation.closed)
        throw new TerrariumError("UNKNOWN_SESSION", `the chat session ${conversation.id} was closed`);
      if (conversation.messages.length + 2 > MAX_CONVERSATION_MESSAGES)
        throw new TerrariumError(
          "INVALID_INPUT",
          `this conversation has reached its limit of ${MAX_CONVERSATION_MESSAGES} messages; start a new one`,
        );
      conversation.messages.push({ role: "user", text: message, at: new Date().toISOString() });
      const reply = await conversation.answer(message);
      conversation.messages.push({ role: "agent", text: reply, at: new Date().toISOString() });
      return reply;
    });
    conversation.queue = turn.catch(() => undefined);
    try {
      return { sessionId: conversation.id, reply: await turn };
    } catch (error) {
      throw new ChatTurnError(conversation.id, error);
    } finally {
      conversation.pending--;
      if (!conversation.closed) this.touch(conversation);
    }
  }

  /** Ends a conversation (after its turn in flight) and deletes its engine session; false when unknown. */
  async end(id: string): Promise<boolean> {
    const conversation = this.conversations.get(id);
    if (!conversation) return false;
    await this.retire(conversation, "closed");
    return true;
  }

  /** Ends every conversation (deleting their engine sessions); no conversation opens after this. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const all = [...this.conversations.values()];
    await Promise.allSettled(all.map((conversation) => this.retire(conversation, "shutdown")));
  }

  private async open(): Promise<Conversation> {
    if (this.stopped) throw new TerrariumError("SHUTTING_DOWN", "the shop is closing; no new chats");
    if (this.conversations.size + this.opening >= this.maxSessions)
      throw new TerrariumError(
        "QUOTA_EXCEEDED",
        "Our assistant is talking with too many customers right now. Please try again in a few minutes.",
        { details: { maxSessions: this.maxSessions } },
      );
    this.opening++;
    let conversation: Conversation;
    try {
      conversation = await this.start();
    } finally {
      this.opening--;
    }
    if (this.stopped) {
      await this.retire(conversation, "shutdown");
      throw new TerrariumError("SHUTTING_DOWN", "the shop is closing; no new chats");
    }
    this.conversations.set(conversation.id, conversation);
    this.touch(conversation);
    return conversation;
  }

  /** A new conversation: its agent session on a fresh engine session. */
  private async start(): Promise<Conversation> {
    this.opened++;
    const base = { id: newChatId(), messages: [], queue: Promise.resolve(), pending: 0, closed: false };
    if (this.responder.kind === "planner") {
      const session: AgentSession = await this.responder.target.open({
        runId: `shop-demo/${this.opened}`,
        seed: `${this.options.seed ?? "shop-demo"}/${this.opened}`,
        scenario: DEMO_SCENARIO,
      });
      return {
        ...base,
        engineSession: session.sessionId,
        answer: async (message) => (await session.send(message)).message,
        lastUsed: Date.now(),
        close: () => session.close(),
      };
    }
    const record = await this.engine.createSession({ metadata: { demo: "shop", agent: "scripted" } });
    const agent = new ScriptedShopAgent(this.engine, record.id);
    return {
      ...base,
      engineSession: record.id,
      answer: (message) => agent.reply(message),
      lastUsed: Date.now(),
      close: async () => undefined,
    };
  }

  /** Most recently used last, so the idle sweep finds the oldest first. */
  private touch(conversation: Conversation): void {
    conversation.lastUsed = Date.now();
    this.conversations.delete(conversation.id);
    this.conversations.set(conversation.id, conversation);
    this.schedule();
  }

  /** Forgets the conversation now; its agent and engine sessions go once the turn in flight is done. */
  private async retire(conversation: Conversation, reason: ChatCloseReason): Promise<void> {
    if (conversation.closed) return;
    conversation.closed = true;
    this.conversations.delete(conversation.id);
    // At shutdown a turn in flight is not waited for: the engine closes under it anyway.
    if (reason !== "shutdown") await conversation.queue;
    await conversation.close().catch(() => undefined);
    await this.engine.deleteSession(conversation.engineSession).catch(() => false);
    this.emit("closed", { id: conversation.id, reason });
  }

  /** One timer, due when the least recently used idle conversation times out. */
  private schedule(): void {
    if (this.timer || this.stopped) return;
    let due: number | undefined;
    for (const conversation of this.conversations.values()) {
      if (conversation.pending > 0) continue;
      due = conversation.lastUsed + this.idleMs;
      break;
    }
    if (due === undefined) return;
    const delay = Math.min(Math.max(due - Date.now(), 0), MAX_TIMER_MS);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sweep();
    }, delay);
    this.timer.unref();
  }

  private sweep(): void {
    const now = Date.now();
    const idle: Conversation[] = [];
    for (const conversation of this.conversations.values()) {
      if (conversation.pending > 0) continue;
      if (now - conversation.lastUsed < this.idleMs) break;
      idle.push(conversation);
    }
    for (const conversation of idle) void this.retire(conversation, "idle");
    this.schedule();
  }
}
