import { WebSocket } from "ws";
import { type ErrorCode, TerrariumError } from "../../core/errors.js";

/** What the server answers to reset and step: OpenEnv's StepResponse. */
export interface OpenEnvStepResult<O extends Record<string, unknown> = Record<string, unknown>> {
  observation: O;
  reward: number | null;
  done: boolean;
}

/** A tool as `list_tools` lists it (MCP's shape). */
export interface OpenEnvToolInfo {
  name: string;
  description?: string;
  input_schema?: unknown;
  [key: string]: unknown;
}

/** The observation of a `call_tool` action. */
export interface OpenEnvCallObservation extends Record<string, unknown> {
  tool_name: string;
  result: unknown;
  /** A failed call (bad arguments, a tool error): data for the agent, not a protocol error. */
  error: { error_type: string; message: string } | null;
  metadata: Record<string, unknown>;
}

/** OpenEnv's action objects (the MCP actions) or any other an environment accepts. */
export type OpenEnvAction =
  | { type: "list_tools" }
  | { type: "call_tool"; tool_name: string; arguments: Record<string, unknown> }
  | Record<string, unknown>;

export interface OpenEnvResetOptions {
  seed?: number;
  episodeId?: string;
  taskId?: string;
  /** Any further reset fields the server takes, sent as they are. */
  extra?: Record<string, unknown>;
}

export interface OpenEnvClientOptions {
  /** Sent as `Authorization: Bearer <token>` on the WebSocket upgrade. */
  token?: string;
  /** How long one request may wait for its answer (default 60 s); a timeout closes the connection. */
  timeoutMs?: number;
  /** How long opening the connection may take (default 30 s). */
  connectTimeoutMs?: number;
  /** Largest answer accepted, in bytes (default 64 MiB). */
  maxMessageBytes?: number;
}

export const DEFAULT_CLIENT_TIMEOUT_MS = 60_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
const DEFAULT_CLIENT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/**
 * A failure the client reports: `openenvCode` is the server's OpenEnv code (VALIDATION_ERROR,
 * EXECUTION_ERROR, CAPACITY_REACHED, …) or the client's own (TIMEOUT, CONNECTION_CLOSED, CONNECT_FAILED,
 * BAD_ANSWER).
 */
export class OpenEnvClientError extends TerrariumError {
  readonly openenvCode: string;
  constructor(openenvCode: string, message: string, details?: Record<string, unknown>) {
    super(terrariumCode(openenvCode), message, details ? { details } : {});
    this.openenvCode = openenvCode;
  }
}

function terrariumCode(code: string): ErrorCode {
  switch (code) {
    case "INVALID_JSON":
    case "UNKNOWN_TYPE":
    case "VALIDATION_ERROR":
      return "INVALID_INPUT";
    case "CAPACITY_REACHED":
      return "QUOTA_EXCEEDED";
    case "CONNECT_FAILED":
    case "CONNECTION_CLOSED":
    case "TIMEOUT":
      return "STORE_UNAVAILABLE";
    default:
      return "INTERNAL";
  }
}

interface Pending {
  resolve(message: { type: string; data: unknown }): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * A client of OpenEnv's WebSocket protocol (terrarium's `/openenv/ws` or any OpenEnv server's `/ws`): one
 * environment session per connection. Requests go one at a time in the order they were made (the protocol
 * carries no request ids), so calls made together simply queue.
 */
export class OpenEnvClient {
  private readonly ws: WebSocket;
  private readonly timeoutMs: number;
  private pending: Pending | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private closedError: OpenEnvClientError | undefined;
  private unsolicited: OpenEnvClientError | undefined;

  private constructor(ws: WebSocket, timeoutMs: number) {
    this.ws = ws;
    this.timeoutMs = timeoutMs;
    ws.on("message", (raw, isBinary) => {
      const text = isBinary ? Buffer.from(raw as Buffer).toString("utf8") : raw.toString();
      const pending = this.pending;
      if (!pending) {
        // Nobody asked: a server refusing the connection (CAPACITY_REACHED) says why before it closes.
        this.unsolicited = unsolicitedError(text) ?? this.unsolicited;
        return;
      }
      this.pending = undefined;
      clearTimeout(pending.timer);
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch {
        pending.reject(
          new OpenEnvClientError("BAD_ANSWER", "the server answered something that is not JSON"),
        );
        return;
      }
      if (
        typeof message !== "object" ||
        message === null ||
        typeof (message as { type?: unknown }).type !== "string"
      ) {
        pending.reject(new OpenEnvClientError("BAD_ANSWER", "the server's answer has no message type"));
        return;
      }
      pending.resolve(message as { type: string; data: unknown });
    });
    ws.on("close", (code, reason) => {
      this.closedError ??= this.unsolicited;
      this.closedError ??= new OpenEnvClientError(
        "CONNECTION_CLOSED",
        `the connection is closed (${code}${reason.length > 0 ? ` ${reason.toString().slice(0, 200)}` : ""})`,
      );
      this.failPending(this.closedError);
    });
    ws.on("error", () => {
      // "close" follows and fails whatever waits.
    });
  }

  /**
   * Connects to an OpenEnv server. `baseUrl` is what OpenEnv's Python clients take (`http://host:port/openenv`
   * for terrarium): http becomes ws and `/ws` is appended. A `ws://…/ws` URL is used as it is.
   */
  static async connect(baseUrl: string, options: OpenEnvClientOptions = {}): Promise<OpenEnvClient> {
    const url = webSocketUrl(baseUrl);
    const timeoutMs = positive(options.timeoutMs, DEFAULT_CLIENT_TIMEOUT_MS, "timeoutMs");
    const connectTimeoutMs = positive(
      options.connectTimeoutMs,
      DEFAULT_CONNECT_TIMEOUT_MS,
      "connectTimeoutMs",
    );
    const maxPayload = positive(options.maxMessageBytes, DEFAULT_CLIENT_MAX_MESSAGE_BYTES, "maxMessageBytes");
    const ws = new WebSocket(url, {
      maxPayload,
      handshakeTimeout: connectTimeoutMs,
      ...(options.token !== undefined ? { headers: { authorization: `Bearer ${options.token}` } } : {}),
    });
    const client = new OpenEnvClient(ws, timeoutMs);
    return new Promise((resolve, reject) => {
      const onOpen = () => {
        ws.off("unexpected-response", onRefused);
        ws.off("error", onError);
        resolve(client);
      };
      const onError = (error: Error) => {
        ws.off("open", onOpen);
        reject(new OpenEnvClientError("CONNECT_FAILED", `cannot connect to ${url}: ${error.message}`));
      };
      const onRefused = (_request: unknown, response: { statusCode?: number; resume(): void }) => {
        ws.off("open", onOpen);
        ws.off("error", onError);
        response.resume();
        ws.terminate();
        const status = response.statusCode ?? 0;
        reject(
          new OpenEnvClientError(
            status === 401 ? "UNAUTHORIZED" : "CONNECT_FAILED",
            `${url} refused the WebSocket upgrade with HTTP ${status}${status === 401 ? " (send a token the server accepts)" : ""}`,
          ),
        );
      };
      ws.once("open", onOpen);
      ws.once("error", onError);
      ws.once("unexpected-response", onRefused);
    });
  }

  /** Starts an episode; the observation holds the instruction (task episodes) and the tools. */
  async reset(options: OpenEnvResetOptions = {}): Promise<OpenEnvStepResult> {
    const data: Record<string, unknown> = { ...(options.extra ?? {}) };
    if (options.seed !== undefined) data.seed = options.seed;
    if (options.episodeId !== undefined) data.episode_id = options.episodeId;
    if (options.taskId !== undefined) data.task_id = options.taskId;
    return this.observation(await this.request({ type: "reset", data }));
  }

  /** One action (OpenEnv's `step`). */
  async step<O extends Record<string, unknown> = Record<string, unknown>>(
    action: OpenEnvAction,
  ): Promise<OpenEnvStepResult<O>> {
    return this.observation(await this.request({ type: "step", data: action })) as OpenEnvStepResult<O>;
  }

  /** Calls a tool: a failed call comes back in `observation.error`, not as a thrown error. */
  callTool(
    name: string,
    args: Record<string, unknown> = {},
  ): Promise<OpenEnvStepResult<OpenEnvCallObservation>> {
    return this.step<OpenEnvCallObservation>({ type: "call_tool", tool_name: name, arguments: args });
  }

  /** The episode's tools (or the server's, before a reset). */
  async listTools(): Promise<OpenEnvToolInfo[]> {
    const answer = await this.step({ type: "list_tools" });
    const tools = answer.observation.tools;
    if (!Array.isArray(tools))
      throw new OpenEnvClientError("BAD_ANSWER", "list_tools answered no tools array");
    return tools as OpenEnvToolInfo[];
  }

  /** OpenEnv's State: `episode_id`, `step_count` and what the server adds (terrarium: `session_id`, `done`). */
  async state(): Promise<Record<string, unknown> & { episode_id: string | null; step_count: number }> {
    const answer = await this.request({ type: "state" });
    if (answer.type !== "state" || typeof answer.data !== "object" || answer.data === null)
      throw new OpenEnvClientError(
        "BAD_ANSWER",
        `expected a state message, got "${answer.type.slice(0, 40)}"`,
      );
    return answer.data as Record<string, unknown> & { episode_id: string | null; step_count: number };
  }

  /** A JSON-RPC request through the `mcp` message (`tools/list`, `tools/call`); the JSON-RPC answer as sent. */
  async mcp(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const answer = await this.request({ type: "mcp", data: request });
    if (answer.type !== "mcp" || typeof answer.data !== "object" || answer.data === null)
      throw new OpenEnvClientError(
        "BAD_ANSWER",
        `expected an mcp message, got "${answer.type.slice(0, 40)}"`,
      );
    return answer.data as Record<string, unknown>;
  }

  /** Ends the session: sends `close` (the server frees the episode) and closes the connection. */
  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => this.ws.once("close", () => resolve()));
    if (this.ws.readyState === WebSocket.OPEN) {
      await this.tail.catch(() => undefined);
      if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: "close" }));
      // Servers close after `close`; one that does not is closed from this side after a while.
      const timer = setTimeout(() => this.ws.close(1000, "closed"), 5000);
      timer.unref();
      await closed;
      clearTimeout(timer);
      return;
    }
    this.ws.terminate();
    await closed;
  }

  private observation(answer: { type: string; data: unknown }): OpenEnvStepResult {
    const data = answer.data as Partial<OpenEnvStepResult> | null;
    if (answer.type !== "observation" || typeof data !== "object" || data === null)
      throw new OpenEnvClientError(
        "BAD_ANSWER",
        `expected an observation message, got "${answer.type.slice(0, 40)}"`,
      );
    const observation =
      typeof data.observation === "object" && data.observation !== null ? data.observation : {};
    return {
      observation: observation as Record<string, unknown>,
      reward: typeof data.reward === "number" ? data.reward : null,
      done: data.done === true,
    };
  }

  /** Sends one message once the one before it is answered; a server error message is thrown. */
  private request(message: Record<string, unknown>): Promise<{ type: string; data: unknown }> {
    const run = async () => {
      if (this.closedError) throw this.closedError;
      if (this.ws.readyState !== WebSocket.OPEN)
        throw this.unsolicited ?? new OpenEnvClientError("CONNECTION_CLOSED", "the connection is not open");
      const answer = await new Promise<{ type: string; data: unknown }>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending = undefined;
          // The answer may still come and would be taken for the next one's: the connection cannot go on.
          this.closedError = new OpenEnvClientError(
            "TIMEOUT",
            `no answer to "${String(message.type)}" within ${this.timeoutMs} ms (the connection was closed)`,
          );
          this.ws.terminate();
          reject(this.closedError);
        }, this.timeoutMs);
        this.pending = { resolve, reject, timer };
        this.ws.send(JSON.stringify(message), (error) => {
          if (error)
            this.failPending(this.unsolicited ?? new OpenEnvClientError("CONNECTION_CLOSED", error.message));
        });
      });
      if (answer.type === "error") {
        const data = (typeof answer.data === "object" && answer.data !== null ? answer.data : {}) as Record<
          string,
          unknown
        >;
        const code = typeof data.code === "string" ? data.code : "EXECUTION_ERROR";
        const text = typeof data.message === "string" ? data.message : "the server reported an error";
        throw new OpenEnvClientError(code, text, data);
      }
      return answer;
    };
    const result = this.tail.then(run, run);
    this.tail = result.catch(() => undefined);
    return result;
  }

  private failPending(error: Error): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = undefined;
    clearTimeout(pending.timer);
    pending.reject(error);
  }
}

function unsolicitedError(text: string): OpenEnvClientError | undefined {
  try {
    const message = JSON.parse(text) as { type?: unknown; data?: { code?: unknown; message?: unknown } };
    if (message?.type !== "error" || typeof message.data?.code !== "string") return undefined;
    const why =
      typeof message.data.message === "string" ? message.data.message : "the server closed the connection";
    return new OpenEnvClientError(message.data.code, why);
  } catch {
    return undefined;
  }
}

/** OpenEnv's rule: the WebSocket lives at `<base_url>/ws`, http(s) becoming ws(s). */
export function webSocketUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new OpenEnvClientError("VALIDATION_ERROR", `"${baseUrl.slice(0, 200)}" is not a URL`);
  }
  if (url.protocol === "http:") url.protocol = "ws:";
  else if (url.protocol === "https:") url.protocol = "wss:";
  else if (url.protocol !== "ws:" && url.protocol !== "wss:")
    throw new OpenEnvClientError("VALIDATION_ERROR", `"${url.protocol}" URLs are not served over WebSocket`);
  const path = url.pathname.replace(/\/+$/, "");
  if (!path.endsWith("/ws")) url.pathname = `${path}/ws`;
  return url.toString();
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0)
    throw new OpenEnvClientError("VALIDATION_ERROR", `${name} must be a positive number (got ${value})`);
  return value;
}
