import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Tool } from "../catalog/tool.js";
import type { Engine } from "../sim/engine.js";

/**
 * Simulated tools over MCP: `tools/list` publishes the catalog's raw JSON Schemas, and `tools/call` runs
 * the call through the engine in the connection's own session. Invalid calls, tool errors and simulator
 * failures come back as tool results with `isError`, the way MCP clients expect them.
 */
export function createMcpServer(engine: Engine, sessionId: () => Promise<string>, version = "0.1.0"): Server {
  const server = new Server({ name: "terrarium", version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: engine.catalog.tools.map(toMcpTool),
  }));
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

/**
 * MCP over streamable HTTP: one engine session per MCP connection (per `Mcp-Session-Id`), created when the
 * client initializes and deleted when it closes.
 */
export class McpHttpEndpoint {
  private readonly transports = new Map<string, WebStandardStreamableHTTPServerTransport>();

  constructor(private readonly engine: Engine) {}

  /** Answers one HTTP request to `/mcp`; `owner` (a token hash) owns the session a new connection gets. */
  async handle(request: Request, owner?: string): Promise<Response> {
    const id = request.headers.get("mcp-session-id");
    const existing = id ? this.transports.get(id) : undefined;
    if (existing) return existing.handleRequest(request);
    if (id) {
      return Response.json(
        { jsonrpc: "2.0", error: { code: -32001, message: `no MCP session ${id}` }, id: null },
        { status: 404 },
      );
    }
    const session = await this.engine.createSession(owner ? { owner } : {});
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (mcpSession) => {
        this.transports.set(mcpSession, transport);
      },
      onsessionclosed: (mcpSession) => {
        this.transports.delete(mcpSession);
      },
    });
    const server = createMcpServer(this.engine, async () => session.id);
    await server.connect(transport);
    return transport.handleRequest(request);
  }

  async close(): Promise<void> {
    for (const transport of this.transports.values()) await transport.close();
    this.transports.clear();
  }
}
