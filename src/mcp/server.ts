import { randomUUID } from "node:crypto";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import { positiveCap, QuotaGuard, quotaExceeded } from "../server/quotas.js";
import type { Engine } from "../sim/engine.js";
import { CheckedServer, rawArgumentsOf, rpcErrorOf } from "./guard.js";

/**
 * Simulated tools over MCP: `tools/list` publishes the catalog's raw JSON Schemas, and `tools/call` runs
 * the call through the engine in the connection's own session. Invalid calls, tool errors and simulator
 * failures come back as tool results with `isError`, the way MCP clients expect them; the arguments the
 * engine judges are the ones sent (a `__proto__` key included, refused as REST refuses it). Params that do
 * not fit a method are -32602 with the violations, over every transport (`CheckedServer`); a call the
 * engine cannot take (store down, quota) is a JSON-RPC error with terrarium's code in `data.code`.
 * `log` gets internal errors, which callers see only as a reference.
 */
export function createMcpServer(
  engine: Engine,
  sessionId: () => Promise<string>,
  version = "0.1.0",
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Server {
  const server = new CheckedServer({ name: "terrarium", version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async (request) =>
    listToolsPage(engine.catalog.tools, request.params?.cursor),
  );
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    let outcome: Awaited<ReturnType<Engine["call"]>>;
    try {
      outcome = await engine.call(await sessionId(), {
        name: request.params.name,
        arguments: (rawArgumentsOf(extra) ?? request.params.arguments ?? {}) as Record<string, unknown>,
      });
    } catch (error) {
      throw rpcErrorOf(error, log);
    }
    const tool = engine.catalog.get(request.params.name);
    const structured =
      outcome.status === "ok" && isObject(outcome.observation) && tool && objectOutputSchema(tool)
        ? { structuredContent: outcome.observation }
        : {};
    return {
      content: [
        {
          type: "text" as const,
          text: JSON.stringify(
            outcome.status === "ok"
              ? outcome.observation
              : { status: outcome.status, ...asObject(outcome.observation), errors: outcome.errors },
          ),
        },
      ],
      ...structured,
      ...(outcome.status === "ok" ? {} : { isError: true }),
    };
  });
  return server;
}

/** Most characters of tool definitions in one `tools/list` answer (a page holds at least one tool). */
export const MCP_TOOLS_PAGE_CHARS = 4_000_000;

/** Each tool's MCP definition and its size, made once per tool object. */
const mcpTools = new WeakMap<Tool, { tool: ReturnType<typeof toMcpTool>; chars: number }>();

/**
 * One page of `tools/list`. An MCP tool's `inputSchema` must stand alone (its `$ref`s are read against
 * itself), so each carries the shared definitions it reaches; on large API descriptions those repeat from
 * tool to tool, and one answer holding them all could be gigabytes. Pages are cut by size instead, and the
 * cursor is the index of the page's first tool.
 */
export function listToolsPage(
  tools: readonly Tool[],
  cursor: string | undefined,
  maxChars = MCP_TOOLS_PAGE_CHARS,
): { tools: Array<ReturnType<typeof toMcpTool>>; nextCursor?: string } {
  const start = cursor === undefined ? 0 : Number(cursor);
  if (!Number.isInteger(start) || start < 0 || start > tools.length)
    throw new McpError(
      ErrorCode.InvalidParams,
      `tools/list: the cursor ${JSON.stringify(cursor)} is not one this server gave`,
    );
  const page: Array<ReturnType<typeof toMcpTool>> = [];
  let chars = 0;
  let index = start;
  for (; index < tools.length; index++) {
    const tool = tools[index] as Tool;
    let entry = mcpTools.get(tool);
    if (!entry) {
      const definition = toMcpTool(tool);
      entry = { tool: definition, chars: JSON.stringify(definition).length };
      mcpTools.set(tool, entry);
    }
    if (page.length > 0 && chars + entry.chars > maxChars) break;
    page.push(entry.tool);
    chars += entry.chars;
  }
  return index < tools.length ? { tools: page, nextCursor: String(index) } : { tools: page };
}

function toMcpTool(tool: Tool) {
  const output = objectOutputSchema(tool);
  return {
    name: tool.name,
    ...(tool.title ? { title: tool.title } : {}),
    description: tool.description,
    inputSchema: tool.inputSchema as { type: "object"; [key: string]: unknown },
    ...(output ? { outputSchema: output } : {}),
    annotations: {
      readOnlyHint: tool.effect === "read",
      ...(tool.effect === "write" ? { destructiveHint: true } : {}),
    },
  };
}

/** MCP output schemas must describe objects; other result shapes are published without one. */
function objectOutputSchema(tool: Tool): { type: "object"; [key: string]: unknown } | undefined {
  const schema = tool.outputSchema;
  return isObject(schema) && schema.type === "object" ? (schema as { type: "object" }) : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function asObject(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : { observation: value };
}

export interface McpHttpOptions {
  /** Live MCP sessions at most (all tokens together); a new initialize beyond it gets a 503. */
  maxSessions?: number;
  /** Live MCP sessions one token may hold; a new initialize beyond it gets a 429 (no cap on an open server). */
  maxSessionsPerToken?: number;
  /** A session unused this long (ms) is closed, with its engine session (checked on a timer and when room is needed). */
  idleMs?: number;
  /** Per-token quotas shared with the REST routes: an MCP session's engine session counts as a stored session. */
  quotas?: QuotaGuard;
  /** Reported by the MCP server. */
  version?: string;
}

/** Default cap on live MCP sessions over HTTP. */
export const DEFAULT_MAX_MCP_SESSIONS = 1000;
/** Default cap on one token's live MCP sessions: a tenth of the server's, so no token alone can fill it. */
export const DEFAULT_MAX_MCP_SESSIONS_PER_TOKEN = 100;
/** Default idle time after which an MCP session is closed (5 minutes). */
export const DEFAULT_MCP_IDLE_MS = 5 * 60 * 1000;
/** How often idle sessions are looked for, at most (the sweep runs every idleMs / 2 within these bounds). */
const SWEEP_MIN_MS = 50;
const SWEEP_MAX_MS = 60_000;

interface McpConnection {
  transport: WebStandardStreamableHTTPServerTransport;
  /** Hash of the token that initialised it (undefined on an open server); only it may use the session. */
  owner: string | undefined;
  /** The engine session, made at the first call that needs one (a list-only connection never stores one). */
  engineSession: Promise<string> | undefined;
  lastUsed: number;
  /** Requests being answered now: a session is never reclaimed in the middle of one. */
  active: number;
}

/** Emitted by `McpHttpEndpoint` when it closes a session (`deleted`, `idle`), after its engine session is gone. */
export interface McpSessionEnded {
  mcpSession: string;
  owner: string | undefined;
  reason: "deleted" | "idle";
  /** The engine session it deleted, if the session had made one. */
  engineSession: string | undefined;
}

/**
 * MCP over streamable HTTP: one engine session per MCP connection (per `Mcp-Session-Id`), made only when the
 * connection first calls a tool, so `initialize` and `tools/list` store nothing. The MCP session belongs to
 * the caller's token, and any other token gets the same 404 as an unknown session id. `DELETE /mcp` ends
 * the MCP session and deletes its engine session; so does idling past `idleMs` (a timer looks while any
 * session is open). Live sessions are capped per token (429, so one tenant cannot fill the server) and in
 * all (503): idle ones are reclaimed first, then new ones are refused.
 */
export class McpHttpEndpoint {
  private readonly connections = new Map<string, McpConnection>();
  /** Initialize requests in flight: they count against the caps before they are registered. */
  private pending = 0;
  private readonly pendingByOwner = new Map<string, number>();
  private readonly maxSessions: number;
  private readonly maxPerToken: number;
  private readonly idleMs: number;
  private readonly quotas: QuotaGuard;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private readonly listeners = new Set<(ended: McpSessionEnded) => void>();

  constructor(
    private readonly engine: Engine,
    private readonly options: McpHttpOptions = {},
  ) {
    this.maxSessions = positiveCap(
      "the MCP session limit (maxSessions)",
      options.maxSessions ?? DEFAULT_MAX_MCP_SESSIONS,
    );
    this.maxPerToken = positiveCap(
      "--max-mcp-sessions-per-token",
      options.maxSessionsPerToken ?? DEFAULT_MAX_MCP_SESSIONS_PER_TOKEN,
    );
    const idleMs = options.idleMs ?? DEFAULT_MCP_IDLE_MS;
    if (typeof idleMs !== "number" || !Number.isFinite(idleMs) || idleMs <= 0 || idleMs > 2 ** 31 - 1)
      throw new TerrariumError(
        "CONFIG_INVALID",
        `--mcp-idle-timeout must be a positive time of at most 24 days, got ${String(idleMs)} ms`,
      );
    this.idleMs = idleMs;
    this.quotas = options.quotas ?? new QuotaGuard(engine.store);
  }

  /** Live MCP sessions. */
  get size(): number {
    return this.connections.size;
  }

  /** Calls `listener` each time a session is ended by DELETE or reclaimed; returns how to stop listening. */
  onSessionEnded(listener: (ended: McpSessionEnded) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Answers one HTTP request to `/mcp`. `owner` is the caller's token hash; `parsedBody` is the body the
   * HTTP layer already read and checked (depth, numbers), so the transport does not parse it again.
   */
  async handle(request: Request, owner?: string, parsedBody?: unknown): Promise<Response> {
    // No server-initiated messages here, so no standalone SSE stream: the spec's answer for that is 405,
    // and it means no GET can hold a connection open indefinitely.
    if (request.method === "GET")
      return rpcError(405, -32000, "this server sends no messages of its own: no SSE stream (use POST)", {
        allow: "POST, DELETE",
      });
    const id = request.headers.get("mcp-session-id");
    const handleOptions = parsedBody !== undefined ? { parsedBody } : undefined;
    if (id !== null) {
      const connection = this.connections.get(id);
      // Another token's session looks exactly like a missing one: its existence is not revealed.
      if (!connection || connection.owner !== owner)
        return rpcError(404, -32001, `no MCP session ${id.slice(0, 100)}; initialize a new one`);
      connection.active++;
      connection.lastUsed = Date.now();
      try {
        return await connection.transport.handleRequest(request, handleOptions);
      } finally {
        connection.active--;
        connection.lastUsed = Date.now();
      }
    }
    if (request.method !== "POST" && request.method !== "DELETE")
      return rpcError(405, -32000, `${request.method} is not allowed on /mcp (use POST or DELETE)`, {
        allow: "POST, DELETE",
      });
    if (request.method !== "POST" || !isInitialize(parsedBody))
      return rpcError(
        400,
        -32000,
        "send Mcp-Session-Id, or start a session with a POST whose body is one initialize request",
      );
    if (owner !== undefined) {
      if (this.ownedBy(owner) >= this.maxPerToken) await this.reclaimIdle(owner);
      if (this.ownedBy(owner) >= this.maxPerToken) return this.tokenFull(owner);
    }
    if (this.connections.size + this.pending >= this.maxSessions) await this.reclaimIdle();
    if (this.connections.size + this.pending >= this.maxSessions)
      return rpcError(
        503,
        -32000,
        `too many MCP sessions (limit ${this.maxSessions}); end unused ones with DELETE /mcp and try again`,
      );
    this.pending++;
    if (owner !== undefined) this.pendingByOwner.set(owner, (this.pendingByOwner.get(owner) ?? 0) + 1);
    try {
      return await this.initialize(request, owner, handleOptions);
    } finally {
      this.pending--;
      if (owner !== undefined) {
        const left = (this.pendingByOwner.get(owner) ?? 1) - 1;
        if (left > 0) this.pendingByOwner.set(owner, left);
        else this.pendingByOwner.delete(owner);
      }
    }
  }

  /** Live and initialising sessions of one token. */
  private ownedBy(owner: string): number {
    let count = this.pendingByOwner.get(owner) ?? 0;
    for (const connection of this.connections.values()) if (connection.owner === owner) count++;
    return count;
  }

  /** The 429 for a token at its cap; Retry-After is when its least recently used session may be reclaimed. */
  private tokenFull(owner: string): Response {
    let oldest = Number.POSITIVE_INFINITY;
    for (const connection of this.connections.values())
      if (connection.owner === owner && connection.active === 0)
        oldest = Math.min(oldest, connection.lastUsed);
    const wait = Number.isFinite(oldest)
      ? Math.max(1, Math.ceil((oldest + this.idleMs - Date.now()) / 1000))
      : 1;
    const error = quotaExceeded(
      "live MCP sessions",
      "--max-mcp-sessions-per-token",
      this.maxPerToken,
      `end unused ones with DELETE /mcp (their Mcp-Session-Id), or wait until one has been idle for ${Math.round(this.idleMs / 1000)} s, then try again`,
    );
    return rpcError(429, -32000, error.message, { "retry-after": String(wait) }, { code: "QUOTA_EXCEEDED" });
  }

  private async initialize(
    request: Request,
    owner: string | undefined,
    handleOptions: { parsedBody: unknown } | undefined,
  ): Promise<Response> {
    let connection: McpConnection | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      // Called only once the initialize request is accepted. Nothing is stored yet: the engine session
      // waits for the first call that needs it.
      onsessioninitialized: (mcpSession) => {
        connection = { transport, owner, engineSession: undefined, lastUsed: Date.now(), active: 0 };
        this.connections.set(mcpSession, connection);
        this.startSweeping();
      },
      onsessionclosed: async (mcpSession) => {
        await this.forget(mcpSession, "deleted");
      },
    });
    const server = createMcpServer(
      this.engine,
      () => {
        if (!connection || !transport.sessionId) throw new Error("the MCP session is not initialized");
        connection.engineSession ??= this.createEngineSession(transport.sessionId, owner).catch((error) => {
          // A refusal (quota) is not remembered: the next call tries again.
          if (connection) connection.engineSession = undefined;
          throw error;
        });
        return connection.engineSession;
      },
      this.options.version,
    );
    await server.connect(transport);
    const response = await transport.handleRequest(request, handleOptions);
    // An initialize the transport refused leaves nothing behind.
    if (!transport.sessionId || !this.connections.has(transport.sessionId)) await transport.close();
    return response;
  }

  /** The connection's engine session, counted against the token's stored sessions. */
  private async createEngineSession(mcpSession: string, owner: string | undefined): Promise<string> {
    try {
      const record = await this.quotas.createSessions(owner, () =>
        this.engine.createSession({ ...(owner ? { owner } : {}), metadata: { mcpSession } }),
      );
      // Ended while the session was being made (DELETE, reclaimed): nobody will use it.
      if (!this.connections.has(mcpSession)) {
        await this.engine.deleteSession(record.id).catch(() => false);
        throw new McpError(-32001, "the MCP session ended; initialize a new one");
      }
      return record.id;
    } catch (error) {
      if (error instanceof TerrariumError && error.code === "QUOTA_EXCEEDED")
        throw new McpError(-32000, error.message, { code: "QUOTA_EXCEEDED" });
      throw error;
    }
  }

  /** Drops an MCP session and deletes its engine session (waiting for one being made). */
  private async forget(mcpSession: string, reason: McpSessionEnded["reason"]): Promise<void> {
    const connection = this.connections.get(mcpSession);
    if (!connection) return;
    this.connections.delete(mcpSession);
    if (this.connections.size === 0) this.stopSweeping();
    const engineSession = await connection.engineSession?.catch(() => undefined);
    if (engineSession !== undefined) await this.engine.deleteSession(engineSession).catch(() => false);
    for (const listener of this.listeners)
      listener({ mcpSession, owner: connection.owner, reason, engineSession });
  }

  /** Closes sessions idle past `idleMs` (of one token, or all), never one answering a request. */
  private async reclaimIdle(owner?: string): Promise<void> {
    const cutoff = Date.now() - this.idleMs;
    for (const [mcpSession, connection] of [...this.connections]) {
      if (connection.lastUsed > cutoff || connection.active > 0) continue;
      if (owner !== undefined && connection.owner !== owner) continue;
      await this.forget(mcpSession, "idle");
      await connection.transport.close();
    }
  }

  /** A timer while sessions are open, so idle ones go (with their engine sessions) even when no one asks for room. */
  private startSweeping(): void {
    if (this.sweeper) return;
    const every = Math.min(SWEEP_MAX_MS, Math.max(SWEEP_MIN_MS, Math.floor(this.idleMs / 2)));
    this.sweeper = setInterval(() => {
      this.reclaimIdle().catch(() => undefined);
    }, every);
    // Never what keeps a process alive.
    this.sweeper.unref?.();
  }

  private stopSweeping(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Closes every MCP session (the engine sessions stay, like any stored session). */
  async close(): Promise<void> {
    this.stopSweeping();
    for (const connection of this.connections.values()) await connection.transport.close();
    this.connections.clear();
  }
}

function isInitialize(body: unknown): boolean {
  return (
    body !== null &&
    typeof body === "object" &&
    !Array.isArray(body) &&
    (body as { method?: unknown }).method === "initialize"
  );
}

function rpcError(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  data?: Record<string, unknown>,
): Response {
  return Response.json(
    { jsonrpc: "2.0", error: { code, message, ...(data ? { data } : {}) }, id: null },
    { status, headers },
  );
}
