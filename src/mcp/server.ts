import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { Tool } from "../catalog/tool.js";
import type { Engine } from "../sim/engine.js";

/**
 * Simulated tools over MCP: `tools/list` publishes the catalog's raw JSON Schemas, and `tools/call` runs
 * the call through the engine in the connection's own session. Invalid calls, tool errors and simulator
 * failures come back as tool results with `isError`, the way MCP clients expect them.
 */
export function createMcpServer(engine: Engine, sessionId: () => Promise<string>, version = "0.1.0"): Server {
  const server = new Server({ name: "terrarium", version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async (request) =>
    listToolsPage(engine.catalog.tools, request.params?.cursor),
  );
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const outcome = await engine.call(await sessionId(), {
      name: request.params.name,
      arguments: request.params.arguments ?? {},
    });
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
  /** A session unused this long (ms) is closed, with its engine session, when room is needed. */
  idleMs?: number;
  /** Reported by the MCP server. */
  version?: string;
}

/** Default cap on live MCP sessions over HTTP. */
export const DEFAULT_MAX_MCP_SESSIONS = 1000;
/** Default idle time after which an MCP session may be reclaimed (30 minutes). */
export const DEFAULT_MCP_IDLE_MS = 30 * 60 * 1000;

interface McpConnection {
  transport: WebStandardStreamableHTTPServerTransport;
  /** Hash of the token that initialised it (undefined on an open server); only it may use the session. */
  owner: string | undefined;
  engineSession: string;
  lastUsed: number;
}

/**
 * MCP over streamable HTTP: one engine session per MCP connection (per `Mcp-Session-Id`). Nothing is created
 * until an `initialize` request succeeds; the session then belongs to the caller's token, and any other
 * token gets the same 404 as an unknown session id. `DELETE /mcp` ends the MCP session and deletes its
 * engine session. Live sessions are capped: idle ones are reclaimed first, then new ones are refused.
 */
export class McpHttpEndpoint {
  private readonly connections = new Map<string, McpConnection>();
  /** Initialize requests in flight: they count against the cap before they are registered. */
  private pending = 0;
  private readonly maxSessions: number;
  private readonly idleMs: number;

  constructor(
    private readonly engine: Engine,
    private readonly options: McpHttpOptions = {},
  ) {
    this.maxSessions = options.maxSessions ?? DEFAULT_MAX_MCP_SESSIONS;
    this.idleMs = options.idleMs ?? DEFAULT_MCP_IDLE_MS;
  }

  /** Live MCP sessions. */
  get size(): number {
    return this.connections.size;
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
      connection.lastUsed = Date.now();
      return connection.transport.handleRequest(request, handleOptions);
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
    if (this.connections.size + this.pending >= this.maxSessions) await this.reclaimIdle();
    if (this.connections.size + this.pending >= this.maxSessions)
      return rpcError(
        503,
        -32000,
        `too many MCP sessions (limit ${this.maxSessions}); end unused ones with DELETE /mcp and try again`,
      );
    this.pending++;
    try {
      return await this.initialize(request, owner, handleOptions);
    } finally {
      this.pending--;
    }
  }

  private async initialize(
    request: Request,
    owner: string | undefined,
    handleOptions: { parsedBody: unknown } | undefined,
  ): Promise<Response> {
    let engineSession: string | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      // Called only once the initialize request is accepted: the engine session is made here, not before.
      onsessioninitialized: async (mcpSession) => {
        const record = await this.engine.createSession({
          ...(owner ? { owner } : {}),
          metadata: { mcpSession },
        });
        engineSession = record.id;
        this.connections.set(mcpSession, { transport, owner, engineSession, lastUsed: Date.now() });
      },
      onsessionclosed: async (mcpSession) => {
        await this.forget(mcpSession);
      },
    });
    const server = createMcpServer(
      this.engine,
      async () => {
        if (!engineSession) throw new Error("the MCP session is not initialized");
        return engineSession;
      },
      this.options.version,
    );
    await server.connect(transport);
    const response = await transport.handleRequest(request, handleOptions);
    // An initialize the transport refused leaves nothing behind.
    if (!transport.sessionId || !this.connections.has(transport.sessionId)) await transport.close();
    return response;
  }

  /** Drops an MCP session and deletes its engine session. */
  private async forget(mcpSession: string): Promise<void> {
    const connection = this.connections.get(mcpSession);
    if (!connection) return;
    this.connections.delete(mcpSession);
    await this.engine.deleteSession(connection.engineSession).catch(() => false);
  }

  private async reclaimIdle(): Promise<void> {
    const cutoff = Date.now() - this.idleMs;
    for (const [mcpSession, connection] of [...this.connections]) {
      if (connection.lastUsed > cutoff) continue;
      await this.forget(mcpSession);
      await connection.transport.close();
    }
  }

  /** Closes every MCP session (the engine sessions stay, like any stored session). */
  async close(): Promise<void> {
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
): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers });
}
