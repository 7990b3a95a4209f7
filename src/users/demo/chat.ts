import { TerrariumError } from "../../core/errors.js";
import type { Engine } from "../../sim/engine.js";
import type { AgentSession, AgentTarget } from "../agents/types.js";
import { SCENARIO_SCHEMA_VERSION } from "../scenario/schema.js";
import { ScriptedShopAgent } from "./scripted-agent.js";

/** Longest user message the chat accepts, in characters. */
export const MAX_MESSAGE_CHARS = 4000;
/** Messages (user and agent) one conversation may hold. */
export const MAX_CONVERSATION_MESSAGES = 200;
/** Conversations kept; past this the least recently used one is forgotten (its engine session stays). */
export const DEFAULT_MAX_CHAT_SESSIONS = 500;

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

interface Conversation {
  /** The engine session of the agent's tools; also the chat's id. */
  id: string;
  messages: ChatMessage[];
  answer: (message: string) => Promise<string>;
  /** The previous message's turn: turns of one conversation run one after the other. */
  queue: Promise<unknown>;
  close: () => Promise<void>;
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
 * and its own agent session; nothing mutable is shared between conversations.
 */
export class ChatSessions {
  private readonly conversations = new Map<string, Conversation>();
  private opened = 0;

  constructor(
    private readonly engine: Engine,
    private readonly responder: ChatResponder,
    private readonly options: { seed?: string; maxSessions?: number } = {},
  ) {}

  get mode(): ChatResponder["kind"] {
    return this.responder.kind;
  }

  /** The conversation's messages, or undefined when there is no such conversation. */
  messages(id: string): ChatMessage[] | undefined {
    const conversation = this.conversations.get(id);
    return conversation ? conversation.messages.map((message) => ({ ...message })) : undefined;
  }

  has(id: string): boolean {
    return this.conversations.has(id);
  }

  /** Answers one message: in the given conversation, or in a new one when `id` is absent. */
  async send(id: string | undefined, message: string): Promise<{ sessionId: string; reply: string }> {
    const conversation = id === undefined ? await this.open() : this.conversations.get(id);
    if (!conversation) throw new TerrariumError("UNKNOWN_SESSION", `no chat session ${id}`);
    // Most recently used last, so eviction drops the oldest.
    this.conversations.delete(conversation.id);
    this.conversations.set(conversation.id, conversation);
    const turn = conversation.queue.then(async () => {
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
    }
  }

  async close(): Promise<void> {
    const all = [...this.conversations.values()];
    this.conversations.clear();
    await Promise.allSettled(all.map((conversation) => conversation.close()));
  }

  private async open(): Promise<Conversation> {
    this.opened++;
    let conversation: Conversation;
    if (this.responder.kind === "planner") {
      const session: AgentSession = await this.responder.target.open({
        runId: `shop-demo/${this.opened}`,
        seed: `${this.options.seed ?? "shop-demo"}/${this.opened}`,
        scenario: DEMO_SCENARIO,
      });
      conversation = {
        id: session.sessionId,
        messages: [],
        answer: async (message) => (await session.send(message)).message,
        queue: Promise.resolve(),
        close: () => session.close(),
      };
    } else {
      const record = await this.engine.createSession({ metadata: { demo: "shop", agent: "scripted" } });
      const agent = new ScriptedShopAgent(this.engine, record.id);
      conversation = {
        id: record.id,
        messages: [],
        answer: (message) => agent.reply(message),
        queue: Promise.resolve(),
        close: async () => undefined,
      };
    }
    this.conversations.set(conversation.id, conversation);
    const max = this.options.maxSessions ?? DEFAULT_MAX_CHAT_SESSIONS;
    while (this.conversations.size > max) {
      const oldest = this.conversations.keys().next().value as string;
      const dropped = this.conversations.get(oldest);
      this.conversations.delete(oldest);
      void dropped?.close();
    }
    return conversation;
  }
}
