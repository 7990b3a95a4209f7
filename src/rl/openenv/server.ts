import { randomUUID } from "node:crypto";
import type { Tool } from "../../catalog/tool.js";
import { parseJsonText } from "../../core/checked-json.js";
import { TerrariumError } from "../../core/errors.js";
import { DEFAULT_MAX_JSON_DEPTH } from "../../core/json-limits.js";
import type { CallOutcome, Engine } from "../../sim/engine.js";
import type { EpisodeEnd, EpisodeScore, EpisodeSource, EpisodeStart, OpenEnvErrorCode } from "./types.js";
import type { EpisodeTurn, EpisodeUserFactory, EpisodeUserSimulator } from "./user.js";

export const DEFAULT_MAX_EPISODES = 64;
export const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_MAX_MESSAGE_BYTES = 1_000_000;
/** The longest `message` action's content (characters): each one is sent to the user model with the whole conversation. */
export const MAX_AGENT_MESSAGE_CHARS = 64 * 1024;

export interface OpenEnvOptions {
  source: EpisodeSource;
  /** Open episode slots at once (WebSocket connections and HTTP episodes together); past it: CAPACITY_REACHED. */
  maxEpisodes?: number;
  /** A slot with no message for this long is closed and its engine session deleted (0: never). */
  idleTimeoutMs?: number;
  /** The largest message (its text, in bytes); larger: VALIDATION_ERROR. */
  maxMessageBytes?: number;
  /** How deeply a message may nest (the server's body limit). */
  maxJsonDepth?: number;
  /** Ends every episode after this many steps, unless its source says otherwise. */
  maxSteps?: number;
  /**
   * Builds the simulated user of an episode whose task has user instructions (see `createEpisodeUser`);
   * without it, `message` actions are refused and such tasks run without a user.
   */
  user?: EpisodeUserFactory;
  /** Environment name for /metadata. */
  name?: string;
  version?: string;
  /** For reading time in tests. */
  now?: () => number;
}

/** A protocol failure, answered as `{"type":"error","data":{"message","code"}}`. */
export class OpenEnvError extends Error {
  constructor(
    readonly code: OpenEnvErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export type OpenEnvMessageOut =
  | { type: "observation"; data: StepResult }
  | { type: "state"; data: Record<string, unknown> }
  | { type: "mcp"; data: Record<string, unknown> }
  | { type: "error"; data: { message: string; code: OpenEnvErrorCode } & Record<string, unknown> };

/** OpenEnv's StepResponse / ResetResponse: the observation, and reward and done beside it. */
export interface StepResult {
  observation: Record<string, unknown>;
  reward: number | null;
  done: boolean;
}

type Action =
  | { type: "list_tools" }
  | { type: "call_tool"; tool_name: string; arguments: Record<string, unknown> }
  | { type: "message"; content: string };

interface Episode {
  id: string;
  sessionId: string;
  /** Where its calls run: the source's engine for it, else the server's. */
  engine: Engine;
  start: EpisodeStart;
  released?: boolean;
  tools: Map<string, Tool>;
  toolList: Tool[];
  finishTool?: Tool;
  maxSteps?: number;
  taskId?: string;
  stepCount: number;
  done: boolean;
  reward: number | null;
  score?: EpisodeScore;
  endReason?: EpisodeEnd["reason"];
  /** The simulated user, in conversational episodes. */
  user?: EpisodeUserSimulator;
  /** The conversation so far (agent messages and the user's replies), in conversational episodes. */
  messages?: EpisodeTurn[];
}

/** A tool as OpenEnv's ListToolsObservation lists it. */
function listed(tool: Tool): { name: string; description: string; input_schema: unknown } {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function own(value: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(value, key) ? value[key] : undefined;
}

/**
 * The OpenEnv server over one engine: the episode slots (capacity, idle reaping) and what every transport
 * shares. A slot is a WebSocket connection or an HTTP episode; each holds at most one episode at a time, and
 * each episode is its own engine session, so episodes never see each other's state.
 */
export class OpenEnvServer {
  readonly source: EpisodeSource;
  readonly maxEpisodes: number;
  readonly idleTimeoutMs: number;
  readonly maxMessageBytes: number;
  readonly maxJsonDepth: number;
  readonly maxSteps: number | undefined;
  readonly user: EpisodeUserFactory | undefined;
  readonly name: string;
  readonly version: string;
  readonly now: () => number;
  private readonly slots = new Set<OpenEnvSession>();
  /** HTTP episodes by episode id (WebSocket ones live with their connection). */
  readonly httpEpisodes = new Map<string, OpenEnvSession>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly engine: Engine,
    options: OpenEnvOptions,
  ) {
    this.source = options.source;
    this.maxEpisodes = positive("maxEpisodes", options.maxEpisodes ?? DEFAULT_MAX_EPISODES);
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    if (!Number.isFinite(this.idleTimeoutMs) || this.idleTimeoutMs < 0)
      throw new TerrariumError(
        "CONFIG_INVALID",
        `idleTimeoutMs must be 0 or more (got ${this.idleTimeoutMs})`,
      );
    this.maxMessageBytes = positive("maxMessageBytes", options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
    this.maxJsonDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
    this.maxSteps = options.maxSteps === undefined ? undefined : positive("maxSteps", options.maxSteps);
    this.user = options.user;
    this.name = options.name ?? "terrarium";
    this.version = options.version ?? "0.1.0";
    this.now = options.now ?? Date.now;
    if (this.idleTimeoutMs > 0) {
      const every = Math.max(10, Math.min(this.idleTimeoutMs / 4, 30_000));
      this.timer = setInterval(() => void this.reap(), every);
      this.timer.unref();
    }
  }

  /** Open slots (connections and HTTP episodes). */
  get active(): number {
    return this.slots.size;
  }

  /**
   * A new slot, or CAPACITY_REACHED. `onReaped` is told when the slot is closed for idleness (a WebSocket
   * closes its connection then).
   */
  open(owner: string | undefined, onReaped?: () => void): OpenEnvSession {
    if (this.slots.size >= this.maxEpisodes)
      throw new OpenEnvError(
        "CAPACITY_REACHED",
        `the server holds ${this.slots.size} of ${this.maxEpisodes} episodes at once; close one or try again later`,
        { active_sessions: this.slots.size, max_sessions: this.maxEpisodes },
      );
    const session = new OpenEnvSession(this, owner, onReaped);
    this.slots.add(session);
    return session;
  }

  /** @internal */
  release(session: OpenEnvSession): void {
    this.slots.delete(session);
    for (const [id, held] of this.httpEpisodes) if (held === session) this.httpEpisodes.delete(id);
  }

  /** Closes slots idle past the timeout and deletes their engine sessions; returns how many. */
  async reap(): Promise<number> {
    if (this.idleTimeoutMs <= 0) return 0;
    const cutoff = this.now() - this.idleTimeoutMs;
    const idle = [...this.slots].filter((slot) => slot.lastActivity <= cutoff && !slot.busy);
    for (const slot of idle) await slot.reaped();
    return idle.length;
  }

  /** Stops the reaper and closes every slot (their engine sessions stay). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const slot of [...this.slots]) await slot.close();
  }

  /** GET /schema: OpenEnv's SchemaResponse. */
  schema(): Record<string, unknown> {
    return {
      action: {
        title: "MCPAction",
        oneOf: [
          {
            title: "ListToolsAction",
            type: "object",
            properties: { type: { const: "list_tools" }, metadata: { type: "object" } },
            required: ["type"],
            additionalProperties: false,
          },
          {
            title: "CallToolAction",
            type: "object",
            properties: {
              type: { const: "call_tool" },
              tool_name: { type: "string" },
              arguments: { type: "object" },
              metadata: { type: "object" },
            },
            required: ["type", "tool_name"],
            additionalProperties: false,
          },
          {
            title: "MessageAction",
            description:
              "A message to the simulated user (conversational episodes only); its reply is observed",
            type: "object",
            properties: {
              type: { const: "message" },
              content: { type: "string", minLength: 1 },
              metadata: { type: "object" },
            },
            required: ["type", "content"],
            additionalProperties: false,
          },
        ],
      },
      observation: {
        title: "MCPObservation",
        type: "object",
        properties: {
          tools: { type: "array", items: { type: "object" } },
          tool_name: { type: "string" },
          message: {
            type: "object",
            properties: { role: { const: "user" }, content: { type: "string" } },
            required: ["role", "content"],
          },
          result: {},
          error: {
            anyOf: [
              {
                type: "object",
                properties: {
                  error_type: {
                    enum: ["execution_error", "invalid_args", "transport_error", "tool_not_found", "timeout"],
                  },
                  message: { type: "string" },
                },
                required: ["error_type", "message"],
              },
              { type: "null" },
            ],
          },
          metadata: { type: "object" },
        },
      },
      state: {
        title: "State",
        type: "object",
        properties: {
          episode_id: { type: ["string", "null"] },
          step_count: { type: "integer", minimum: 0 },
          session_id: { type: ["string", "null"] },
          done: { type: "boolean" },
        },
        additionalProperties: true,
      },
    };
  }

  /** GET /metadata: OpenEnv's EnvironmentMetadata. */
  metadata(): Record<string, unknown> {
    return {
      name: this.name,
      description: `terrarium: ${this.source.defaultTools().length} simulated tools, one engine session per episode${this.source.taskIds ? `; ${this.source.taskIds.length} tasks (reset with task_id)` : ""}`,
      readme_content: null,
      version: this.version,
      author: null,
      documentation_url: null,
    };
  }
}

/** Refuses a message with fields besides `type` (and `data`, when it may have one). */
function onlyFields(message: Record<string, unknown>, withData: boolean): void {
  for (const key of Object.keys(message))
    if (key !== "type" && !(withData && key === "data"))
      throw new OpenEnvError("VALIDATION_ERROR", `Invalid message: unexpected field ${JSON.stringify(key)}`);
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new TerrariumError("CONFIG_INVALID", `${name} must be a positive integer (got ${value})`);
  return value;
}

/**
 * One slot: what a WebSocket connection (or an HTTP episode) talks to. Transport-independent: text in,
 * messages out. Messages are answered in the order they come; the transport must wait for one answer
 * before handing in the next message (see `handleText`, which queues).
 */
export class OpenEnvSession {
  private episode: Episode | undefined;
  /** The last message's answer, which the next message waits for while `waiting` > 0. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Messages handed in and not answered yet. */
  private waiting = 0;
  private closed = false;
  lastActivity: number;
  busy = false;

  constructor(
    private readonly server: OpenEnvServer,
    readonly owner: string | undefined,
    private readonly onReaped?: () => void,
  ) {
    this.lastActivity = server.now();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get episodeId(): string | undefined {
    return this.episode?.id;
  }

  get sessionId(): string | undefined {
    return this.episode?.sessionId;
  }

  /** One message as text; the answer, or undefined for `close` (the transport closes then). */
  handleText(text: string): Promise<OpenEnvMessageOut | undefined> {
    // handleNow never rejects (failures are answered), so the queue needs no catch; with nothing waiting
    // (a client that waits for each answer) the message runs at once, without a hop through the queue.
    const run = this.waiting++ === 0 ? this.handleNow(text) : this.queue.then(() => this.handleNow(text));
    this.queue = run;
    return run;
  }

  private async handleNow(text: string): Promise<OpenEnvMessageOut | undefined> {
    this.lastActivity = this.server.now();
    this.busy = true;
    try {
      if (this.closed) throw new OpenEnvError("EXECUTION_ERROR", "the session is closed");
      // A UTF-16 unit is 1 to 3 bytes of UTF-8: only a text over a third of the limit needs counting.
      const limit = this.server.maxMessageBytes;
      if (text.length * 3 > limit && Buffer.byteLength(text, "utf8") > limit)
        throw new OpenEnvError(
          "VALIDATION_ERROR",
          `the message is larger than ${this.server.maxMessageBytes} bytes`,
        );
      let message: unknown;
      try {
        message = parseJsonText(text, this.server.maxJsonDepth, "the message");
      } catch (error) {
        throw new OpenEnvError("INVALID_JSON", `Invalid JSON: ${(error as Error).message}`);
      }
      return await this.handleMessage(message);
    } catch (error) {
      return errorMessage(error);
    } finally {
      this.busy = false;
      this.lastActivity = this.server.now();
      this.waiting--;
    }
  }

  /** One parsed message (throws OpenEnvError; `handleText` turns it into an error message). */
  async handleMessage(message: unknown): Promise<OpenEnvMessageOut | undefined> {
    if (!isObject(message))
      throw new OpenEnvError("VALIDATION_ERROR", "a message is a JSON object with a type");
    const type = own(message, "type");
    const data = own(message, "data");
    switch (type) {
      case "reset": {
        onlyFields(message, true);
        if (data !== undefined && !isObject(data))
          throw new OpenEnvError("VALIDATION_ERROR", "Invalid message: reset's data must be an object");
        return { type: "observation", data: await this.reset(data ?? {}) };
      }
      case "step": {
        onlyFields(message, true);
        return { type: "observation", data: await this.step(data) };
      }
      case "state":
        onlyFields(message, false);
        return { type: "state", data: this.state() };
      case "close":
        onlyFields(message, false);
        await this.close();
        return undefined;
      case "mcp": {
        onlyFields(message, true);
        if (!isObject(data))
          throw new OpenEnvError("VALIDATION_ERROR", "Invalid message: mcp's data must be a JSON-RPC object");
        return { type: "mcp", data: await this.mcp(data) };
      }
      default:
        throw new OpenEnvError(
          "UNKNOWN_TYPE",
          `Unknown message type: ${typeof type === "string" ? type.slice(0, 80) : JSON.stringify(type ?? null)}`,
        );
    }
  }

  /** Starts a new episode (the previous one ends; its engine session stays, for export and scoring). */
  async reset(data: Record<string, unknown>): Promise<StepResult> {
    const seed = own(data, "seed");
    const episodeId = own(data, "episode_id");
    const taskId = own(data, "task_id");
    if (seed !== undefined && seed !== null && (!Number.isSafeInteger(seed) || (seed as number) < 0))
      throw new OpenEnvError("VALIDATION_ERROR", "Invalid reset: seed must be an integer of 0 or more");
    if (
      episodeId !== undefined &&
      episodeId !== null &&
      (typeof episodeId !== "string" || episodeId.length === 0 || episodeId.length > 255)
    )
      throw new OpenEnvError(
        "VALIDATION_ERROR",
        "Invalid reset: episode_id must be a string of 1 to 255 characters",
      );
    if (taskId !== undefined && taskId !== null && typeof taskId !== "string")
      throw new OpenEnvError("VALIDATION_ERROR", "Invalid reset: task_id must be a string");
    const id = typeof episodeId === "string" ? episodeId : randomUUID();
    let start: Awaited<ReturnType<EpisodeSource["reset"]>>;
    try {
      start = await this.server.source.reset({
        episodeId: id,
        ...(typeof seed === "number" ? { seed } : {}),
        ...(typeof taskId === "string" ? { taskId } : {}),
        ...(this.owner ? { owner: this.owner } : {}),
      });
    } catch (error) {
      if (
        error instanceof TerrariumError &&
        (error.code === "INVALID_INPUT" || error.code === "UNKNOWN_TOOL")
      )
        throw new OpenEnvError("VALIDATION_ERROR", error.message);
      throw error;
    }
    const tools = new Map(start.tools.map((tool) => [tool.name, tool]));
    const toolList = [...start.tools];
    if (start.finishTool) {
      tools.set(start.finishTool.name, start.finishTool);
      toolList.push(start.finishTool);
    }
    const maxSteps = start.maxSteps ?? this.server.maxSteps;
    // The user speaks first (as in tau2): its opening message is part of the reset observation.
    let user: EpisodeUserSimulator | undefined;
    let opening: { message: string; stop?: string } | undefined;
    if (start.userInstructions !== undefined && this.server.user) {
      try {
        user = this.server.user(start.userInstructions, typeof seed === "number" ? seed : undefined);
        opening = await user.reply([]);
      } catch (error) {
        await start.release?.().catch(() => undefined);
        if (error instanceof TerrariumError && error.code === "INVALID_INPUT")
          throw new OpenEnvError("VALIDATION_ERROR", error.message);
        throw error;
      }
    }
    await this.releaseEpisode();
    this.episode = {
      id,
      sessionId: start.sessionId,
      engine: start.engine ?? this.server.engine,
      start,
      tools,
      toolList,
      ...(start.finishTool ? { finishTool: start.finishTool } : {}),
      ...(maxSteps !== undefined ? { maxSteps } : {}),
      ...(typeof taskId === "string" ? { taskId } : {}),
      stepCount: 0,
      done: false,
      reward: null,
      ...(user
        ? { user, messages: opening?.message ? [{ role: "user" as const, content: opening.message }] : [] }
        : {}),
    };
    const episode = this.episode;
    // A user who stops before the agent said anything ends the episode at once.
    if (opening?.stop) {
      episode.done = true;
      await this.end(episode, { reason: "user_stop" });
    }
    return {
      observation: {
        ...(start.observation ?? {}),
        ...(opening ? { message: { role: "user", content: opening.message } } : {}),
        tools: toolList.map(listed),
        metadata: {
          status: "ready",
          ...(start.metadata ?? {}),
          episode_id: id,
          session_id: start.sessionId,
          ...(typeof taskId === "string" ? { task_id: taskId } : {}),
          ...(maxSteps !== undefined ? { max_steps: maxSteps } : {}),
          ...(user ? { conversational: true } : {}),
          ...(episode.done ? this.endMetadata(episode) : {}),
        },
      },
      reward: episode.done ? episode.reward : null,
      done: episode.done,
    };
  }

  /** One action: `list_tools`, `call_tool` or `message`. */
  async step(data: unknown): Promise<StepResult> {
    const action = parseAction(data);
    const episode = this.episode;
    if (action.type === "list_tools") {
      const tools = episode ? episode.toolList : this.server.source.defaultTools();
      if (episode) await this.count(episode);
      return {
        observation: {
          tools: tools.map(listed),
          metadata: episode ? this.episodeMetadata(episode) : {},
        },
        reward: episode?.done ? episode.reward : null,
        done: episode?.done ?? false,
      };
    }
    if (!episode) throw new OpenEnvError("EXECUTION_ERROR", "no episode is running: send reset first");
    if (episode.done)
      throw new OpenEnvError("EXECUTION_ERROR", "the episode is done: send reset to start another");
    if (action.type === "message") return this.say(episode, action.content);
    const tool = episode.tools.get(action.tool_name);
    if (!tool) {
      await this.count(episode);
      return this.callResult(episode, action.tool_name, {
        result: null,
        error: {
          error_type: "tool_not_found",
          message: `there is no tool "${action.tool_name.slice(0, 80)}" in this episode (list_tools lists them)`,
        },
        metadata: {},
      });
    }
    if (episode.finishTool && tool === episode.finishTool) {
      const next = episode.start.onFinish ? await episode.start.onFinish(action.arguments) : { done: true };
      if (!next.done) {
        for (const added of next.tools ?? [])
          if (!episode.tools.has(added.name)) {
            episode.tools.set(added.name, added);
            episode.toolList.splice(episode.toolList.length - 1, 0, added); // the finish tool stays last
          }
        await this.count(episode);
        return this.callResult(episode, tool.name, {
          result: { finished: false, ...(next.result ?? {}) },
          error: null,
          metadata: {},
        });
      }
      episode.done = true;
      await this.count(episode, { reason: "finish", finishArguments: action.arguments });
      return this.callResult(episode, tool.name, { result: { finished: true }, error: null, metadata: {} });
    }
    const outcome = await episode.engine.call(episode.sessionId, {
      name: tool.name,
      arguments: action.arguments,
    });
    const ending = this.count(episode);
    if (ending) await ending;
    return this.callResult(episode, tool.name, fromOutcome(outcome));
  }

  /** A `message` action: the agent's text goes to the simulated user; its reply is the observation. */
  private async say(episode: Episode, content: string): Promise<StepResult> {
    if (!episode.user || !episode.messages)
      throw new OpenEnvError(
        "VALIDATION_ERROR",
        episode.start.userInstructions === undefined
          ? "Invalid action: this episode's task has no simulated user, so there is no one to message"
          : "Invalid action: message needs a simulated user, and the server has no user model (serve --user-model)",
      );
    const conversation: EpisodeTurn[] = [...episode.messages, { role: "assistant", content }];
    const reply = await episode.user.reply(conversation);
    // The agent's message is kept only once the user answered it, so a failed reply can be retried.
    episode.messages.push({ role: "assistant", content });
    if (reply.message) episode.messages.push({ role: "user", content: reply.message });
    if (reply.stop) episode.done = true;
    await this.count(episode, reply.stop ? { reason: "user_stop" } : undefined);
    return {
      observation: {
        message: { role: "user", content: reply.message },
        metadata: {
          ...(reply.stop ? { stop_reason: reply.stop } : {}),
          ...this.episodeMetadata(episode),
        },
      },
      reward: episode.done ? episode.reward : null,
      done: episode.done,
    };
  }

  /**
   * Counts a step; ends the episode at its step limit (or as `ended` says) and scores it then. Returns
   * the ending to wait for, if the episode ends (most steps end nothing, and allocate no promise).
   */
  private count(episode: Episode, ended?: EpisodeEnd): Promise<void> | undefined {
    episode.stepCount++;
    let why = ended;
    if (!why && episode.maxSteps !== undefined && episode.stepCount >= episode.maxSteps) {
      episode.done = true;
      why = { reason: "max_steps" };
    }
    return why ? this.end(episode, why) : undefined;
  }

  /** Scores an ended episode (with its conversation, when it has one) and frees what it holds. */
  private async end(episode: Episode, ended: EpisodeEnd): Promise<void> {
    const why: EpisodeEnd = episode.messages ? { ...ended, messages: [...episode.messages] } : ended;
    const score = episode.start.score
      ? await episode.start.score(why)
      : await this.server.source.score?.(episode.sessionId, why);
    if (score) {
      episode.reward = score.reward;
      episode.score = score;
    }
    episode.endReason = why.reason;
    await this.releaseEpisode();
  }

  private episodeMetadata(episode: Episode): Record<string, unknown> {
    return {
      episode_id: episode.id,
      session_id: episode.sessionId,
      step_count: episode.stepCount,
      ...this.endMetadata(episode),
    };
  }

  /** Whether `endMetadata` has anything to add. */
  private hasEndMetadata(episode: Episode): boolean {
    return (episode.done && episode.endReason !== undefined) || episode.score !== undefined;
  }

  private endMetadata(episode: Episode): Record<string, unknown> {
    return {
      ...(episode.done && episode.endReason ? { end_reason: episode.endReason } : {}),
      ...(episode.score
        ? { reward_breakdown: episode.score.breakdown, ...(episode.score.metadata ?? {}) }
        : {}),
    };
  }

  private callResult(
    episode: Episode,
    toolName: string,
    parts: {
      result: unknown;
      error: { error_type: string; message: string } | null;
      metadata: Record<string, unknown>;
    },
  ): StepResult {
    // parts.metadata is the step's own: the episode's fields are added to it (as a spread would add them).
    const metadata = parts.metadata;
    metadata.episode_id = episode.id;
    metadata.session_id = episode.sessionId;
    metadata.step_count = episode.stepCount;
    if (this.hasEndMetadata(episode)) Object.assign(metadata, this.endMetadata(episode));
    return {
      observation: {
        tool_name: toolName,
        result: parts.result,
        error: parts.error,
        metadata,
      },
      reward: episode.done ? episode.reward : null,
      done: episode.done,
    };
  }

  /** OpenEnv's State: episode_id and step_count, with terrarium's session_id and done. */
  state(): Record<string, unknown> {
    const episode = this.episode;
    if (!episode) return { episode_id: null, step_count: 0, session_id: null, done: false };
    return {
      episode_id: episode.id,
      step_count: episode.stepCount,
      session_id: episode.sessionId,
      done: episode.done,
      ...(episode.taskId !== undefined ? { task_id: episode.taskId } : {}),
      ...(episode.maxSteps !== undefined ? { max_steps: episode.maxSteps } : {}),
      ...(episode.done ? { reward: episode.reward } : {}),
    };
  }

  /** A JSON-RPC request (`tools/list`, `tools/call`), answered as JSON-RPC; tool calls count as steps. */
  async mcp(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const rawId = own(request, "id");
    const id = typeof rawId === "string" || typeof rawId === "number" ? rawId : null;
    const fail = (code: number, message: string) => ({
      jsonrpc: "2.0",
      id,
      error: { code, message, data: null },
    });
    if (own(request, "jsonrpc") !== "2.0" || typeof own(request, "method") !== "string")
      return fail(-32600, 'Invalid Request: jsonrpc must be "2.0" and method a string');
    const params = own(request, "params") ?? {};
    if (!isObject(params)) return fail(-32602, "Params must be an object");
    const method = own(request, "method") as string;
    if (method === "tools/list") {
      const tools = this.episode ? this.episode.toolList : this.server.source.defaultTools();
      return {
        jsonrpc: "2.0",
        id,
        result: {
          tools: tools.map((tool) => ({
            name: tool.name,
            description: tool.description,
            inputSchema: tool.inputSchema,
          })),
        },
      };
    }
    if (method === "tools/call") {
      const name = own(params, "name");
      if (typeof name !== "string" || name === "") return fail(-32602, "Missing 'name' in params");
      const args = own(params, "arguments") ?? {};
      if (!isObject(args)) return fail(-32602, "'arguments' must be an object");
      if (!this.episode) return fail(-32000, "no episode is running: send reset first");
      try {
        const step = await this.step({ type: "call_tool", tool_name: name, arguments: args });
        const observation = step.observation;
        const error = observation.error as { message: string } | null;
        const result = observation.result;
        const text = error ? error.message : JSON.stringify(result ?? null);
        return {
          jsonrpc: "2.0",
          id,
          result: {
            content: [{ type: "text", text }],
            ...(isObject(result) ? { structuredContent: result } : {}),
            isError: error !== null || (observation.metadata as { status?: string }).status === "tool_error",
          },
        };
      } catch (error) {
        return fail(-32000, error instanceof Error ? error.message : String(error));
      }
    }
    return fail(-32601, `Method not found: ${method.slice(0, 80)}`);
  }

  /** Frees the slot; the engine session stays (export it, score it). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.server.release(this);
    await this.releaseEpisode();
  }

  /** Lets the current episode free what it holds besides its session (once). */
  private async releaseEpisode(): Promise<void> {
    const episode = this.episode;
    if (!episode?.start.release || episode.released) return;
    episode.released = true;
    await episode.start.release().catch(() => undefined);
  }

  /** Closed for idleness: the slot is freed and the current episode's engine session deleted. */
  async reaped(): Promise<void> {
    if (this.closed) return;
    const episode = this.episode;
    await this.close();
    if (episode) await episode.engine.deleteSession(episode.sessionId).catch(() => false);
    this.onReaped?.();
  }
}

const LIST_TOOLS_FIELDS: readonly string[] = ["type", "metadata"];
const CALL_TOOL_FIELDS: readonly string[] = ["type", "tool_name", "arguments", "metadata"];
const MESSAGE_FIELDS: readonly string[] = ["type", "content", "metadata"];

/** Refuses an action with fields its type does not have, or a metadata that is not an object. */
function checkActionFields(data: Record<string, unknown>, type: string, fields: readonly string[]): void {
  for (const key of Object.keys(data))
    if (!fields.includes(key))
      throw new OpenEnvError(
        "VALIDATION_ERROR",
        `Invalid action: unexpected field ${JSON.stringify(key.slice(0, 80))} for ${type}`,
      );
  const metadata = own(data, "metadata");
  if (metadata !== undefined && !isObject(metadata))
    throw new OpenEnvError("VALIDATION_ERROR", "Invalid action: metadata must be an object");
}

function parseAction(data: unknown): Action {
  if (!isObject(data))
    throw new OpenEnvError("VALIDATION_ERROR", "Invalid action: step's data must be an action object");
  const type = own(data, "type");
  if (type === "list_tools") {
    checkActionFields(data, type, LIST_TOOLS_FIELDS);
    return { type };
  }
  if (type === "call_tool") {
    checkActionFields(data, type, CALL_TOOL_FIELDS);
    const toolName = own(data, "tool_name");
    if (typeof toolName !== "string" || toolName === "")
      throw new OpenEnvError("VALIDATION_ERROR", "Invalid action: call_tool needs a tool_name string");
    const args = own(data, "arguments") ?? {};
    if (!isObject(args))
      throw new OpenEnvError("VALIDATION_ERROR", "Invalid action: arguments must be an object");
    return { type, tool_name: toolName, arguments: args };
  }
  if (type === "message") {
    checkActionFields(data, type, MESSAGE_FIELDS);
    const content = own(data, "content");
    if (typeof content !== "string" || content.trim() === "")
      throw new OpenEnvError("VALIDATION_ERROR", "Invalid action: message needs a non-empty content string");
    if (content.length > MAX_AGENT_MESSAGE_CHARS)
      throw new OpenEnvError(
        "VALIDATION_ERROR",
        `Invalid action: a message's content is longer than ${MAX_AGENT_MESSAGE_CHARS} characters`,
      );
    return { type, content };
  }
  throw new OpenEnvError(
    "VALIDATION_ERROR",
    `Invalid action: type must be "list_tools", "call_tool" or "message" (got ${JSON.stringify(type ?? null)?.slice(0, 80)})`,
  );
}

/** An engine outcome as OpenEnv's CallToolObservation parts: tools' own errors stay in the result. */
function fromOutcome(outcome: CallOutcome): {
  result: unknown;
  error: { error_type: string; message: string } | null;
  metadata: Record<string, unknown>;
} {
  const metadata: Record<string, unknown> = {
    status: outcome.status,
    step: outcome.step,
    simulator: outcome.simulator,
  };
  if (outcome.status === "invalid") {
    const violations = outcome.errors;
    const text = violations.map((v) => `${"path" in v && v.path ? v.path : "/"}: ${v.message}`).join("; ");
    return {
      result: outcome.observation,
      error: { error_type: "invalid_args", message: `invalid arguments: ${text}` },
      metadata: { ...metadata, violations },
    };
  }
  if (outcome.status === "error") {
    const message = outcome.errors.map((e) => e.message).join("; ") || "the simulator failed";
    return { result: null, error: { error_type: "execution_error", message }, metadata };
  }
  return { result: outcome.observation, error: null, metadata };
}

/** Any failure as an error message: OpenEnvError keeps its code, anything else is EXECUTION_ERROR. */
export function errorMessage(error: unknown): OpenEnvMessageOut {
  if (error instanceof OpenEnvError)
    return { type: "error", data: { message: error.message, code: error.code, ...error.extra } };
  const message = error instanceof Error ? error.message : String(error);
  return {
    type: "error",
    data: {
      message,
      code: "EXECUTION_ERROR",
      ...(error instanceof TerrariumError ? { terrarium_code: error.code } : {}),
    },
  };
}
