import { createHash } from "node:crypto";
import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { exportOpenApi } from "../catalog/export-openapi.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import { McpHttpEndpoint } from "../mcp/server.js";
import type { Engine, SimulatorPolicy } from "../sim/engine.js";

export interface AppOptions {
  /** Bearer tokens accepted; with none, the server is open. Each token sees only its own sessions. */
  tokens?: string[];
  /** Largest request body, in bytes. */
  maxBodyBytes?: number;
  /** Model usage per session, for Gecko's /get-session-llm-usage. */
  usageOf?: (sessionId: string) => unknown;
  /** Builds a state with a model for Gecko's bootstrap_mode auto/force (absent: states are stored as given). */
  bootstrap?: (background: { task?: string; state?: unknown }, sessionId: string) => Promise<unknown>;
  /** Whether semantic validation runs (reported in /health and call results when skipped). */
  semanticValidation?: "on" | "skipped";
  version?: string;
}

type Env = { Variables: { owner: string | undefined } };

/**
 * The HTTP surface: terrarium's REST API, a Gecko-compatible API (so Gecko clients run unchanged), and
 * every tool at its own path. Errors are JSON with a code and a sentence; nothing is served as HTML.
 */
export function createApp(engine: Engine, options: AppOptions = {}): Hono<Env> {
  const app = new Hono<Env>();
  const tokens = new Map((options.tokens ?? []).map((token) => [token, hashToken(token)]));

  app.onError((error, c) => {
    if (error instanceof TerrariumError) {
      const status = error.code === "UNKNOWN_SESSION" || error.code === "UNKNOWN_TOOL" ? 404 : 400;
      return c.json({ error: { code: error.code, message: error.message } }, status);
    }
    return c.json({ error: { code: "INTERNAL", message: (error as Error).message } }, 500);
  });
  app.notFound((c) =>
    c.json({ error: { code: "NOT_FOUND", message: `no route ${c.req.method} ${c.req.path}` } }, 404),
  );
  const maxBody = options.maxBodyBytes ?? 1_000_000;
  const tooLarge = (c: Context<Env>) =>
    c.json(
      { error: { code: "BODY_TOO_LARGE", message: `the request body is larger than ${maxBody} bytes` } },
      413,
    );
  app.use("*", async (c, next) => {
    // Read (and drop) an oversized body before answering: closing the socket mid-upload would leave the
    // client with a broken connection instead of the 413.
    if (Number(c.req.header("content-length") ?? 0) > maxBody) {
      const reader = c.req.raw.body?.getReader();
      while (reader && !(await reader.read()).done) {}
      return tooLarge(c);
    }
    return next();
  });
  app.use("*", bodyLimit({ maxSize: maxBody, onError: tooLarge }));
  app.use("*", async (c, next) => {
    if (c.req.path === "/health" || tokens.size === 0) {
      c.set("owner", undefined);
      return next();
    }
    const header = c.req.header("authorization") ?? "";
    const token = /^Bearer\s+(.+)$/i.exec(header)?.[1];
    const owner = token ? tokens.get(token) : undefined;
    if (!owner) {
      return c.json(
        {
          error: {
            code: "UNAUTHORIZED",
            message: token ? "the bearer token is not accepted" : "send Authorization: Bearer <token>",
          },
        },
        401,
      );
    }
    c.set("owner", owner);
    return next();
  });

  /** The session, if it exists and belongs to the caller (others' sessions look like missing ones). */
  const sessionOf = async (c: Context<Env>, id: string | undefined) => {
    if (!id) throw new TerrariumError("INVALID_INPUT", "no session id given (X-Session-ID header or path)");
    const record = await engine.store.getSession(id);
    if (!record || record.owner !== c.get("owner"))
      throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
    return record;
  };

  // --- terrarium's API ------------------------------------------------------------------------------
  app.get("/health", (c) =>
    c.json({
      ok: true,
      version: options.version ?? "0.1.0",
      tools: engine.catalog.size,
      semanticValidation: options.semanticValidation ?? "skipped",
    }),
  );
  app.get("/tools", (c) => c.json(engine.catalog.toJSON()));
  app.get("/openapi.json", (c) => c.json(serverOpenApi(engine)));

  app.post("/sessions", async (c) => {
    const body = await jsonBody(c, true);
    const record = await engine.createSession({
      ...(body.state !== undefined ? { state: body.state } : {}),
      ...(c.get("owner") ? { owner: c.get("owner") } : {}),
    });
    return c.json({ id: record.id, createdAt: record.createdAt }, 201);
  });
  app.get("/sessions/:id", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    const history = await engine.store.history(record.id);
    return c.json({
      ...record,
      owner: undefined,
      calls: history.length,
      state: await engine.state(record.id),
    });
  });
  app.get("/sessions/:id/state", async (c) =>
    c.json(await engine.state((await sessionOf(c, c.req.param("id"))).id)),
  );
  app.put("/sessions/:id/state", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    const snapshot = await engine.setState(record.id, await jsonValue(c));
    return c.json({ snapshot: snapshot.index });
  });
  app.post("/sessions/:id/fork", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    const body = await jsonBody(c, true);
    const forked = await engine.fork(
      record.id,
      typeof body.snapshot === "number" ? body.snapshot : undefined,
      c.get("owner"),
    );
    return c.json({ id: forked.id, parent: forked.parent }, 201);
  });
  app.post("/sessions/:id/reset", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    return c.json({ snapshot: (await engine.reset(record.id)).index });
  });
  app.get("/sessions/:id/history", async (c) =>
    c.json(await engine.history((await sessionOf(c, c.req.param("id"))).id)),
  );
  app.post("/sessions/import", async (c) => {
    const record = await engine.importSession((await jsonBody(c)) as never, c.get("owner"));
    return c.json({ id: record.id }, 201);
  });
  app.post("/sessions/:id/replay", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    const body = await jsonBody(c);
    const policy = body.simulator;
    if (typeof policy !== "string" && (policy === null || typeof policy !== "object")) {
      throw new TerrariumError(
        "INVALID_INPUT",
        'the body must name a simulator policy: {"simulator": "schema"}',
      );
    }
    const replayed = await engine.replay(record.id, policy as SimulatorPolicy);
    return c.json({ id: replayed.session.id, outcomes: replayed.outcomes }, 201);
  });
  app.get("/sessions/:id/export", async (c) =>
    c.json(await engine.exportSession((await sessionOf(c, c.req.param("id"))).id)),
  );
  app.post("/sessions/:id/calls", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    const body = await jsonBody(c);
    if (typeof body.name !== "string")
      throw new TerrariumError("INVALID_INPUT", 'the body must be {"name": string, "arguments": object}');
    return c.json(await engine.call(record.id, { name: body.name, arguments: body.arguments ?? {} }));
  });
  app.delete("/sessions/:id", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    await engine.deleteSession(record.id);
    return c.body(null, 204);
  });

  // --- MCP (streamable HTTP), one session per MCP connection ------------------------------------------
  const mcp = new McpHttpEndpoint(engine);
  app.all("/mcp", (c) => mcp.handle(c.req.raw, c.get("owner")));

  // --- Gecko-compatible API -------------------------------------------------------------------------
  app.get("/session-id", async (c) => {
    const record = await engine.createSession(c.get("owner") ? { owner: c.get("owner") } : {});
    return c.json({ session_id: record.id });
  });
  app.post("/set-session-state", async (c) => {
    const record = await sessionOf(c, c.req.header("x-session-id"));
    const body = await jsonBody(c);
    const mode = body.bootstrap_mode ?? "skip";
    if (mode !== "skip" && mode !== "auto" && mode !== "force") {
      throw new TerrariumError("INVALID_INPUT", 'bootstrap_mode must be "auto", "skip" or "force"');
    }
    const given = body.state ?? {};
    // "auto" bootstraps only a state that has no runtime_state yet; "force" always does; "skip" never.
    const wanted =
      mode === "force" ||
      (mode === "auto" && !(given && typeof given === "object" && "runtime_state" in given));
    if (wanted && !options.bootstrap) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `bootstrap_mode "${mode}" needs a model (serve --model …); use "skip" to store the state as given`,
      );
    }
    const state =
      wanted && options.bootstrap
        ? await options.bootstrap(
            { state: given, ...(typeof body.task === "string" ? { task: body.task } : {}) },
            record.id,
          )
        : given;
    await engine.setState(record.id, state);
    return c.json({ status: "ok", session_id: record.id, bootstrapped: wanted });
  });
  app.get("/get-session-state", async (c) =>
    c.json(await engine.state((await sessionOf(c, c.req.header("x-session-id"))).id)),
  );
  app.get("/get-session-history", async (c) => {
    const history = await engine.history((await sessionOf(c, c.req.header("x-session-id"))).id);
    return c.json(
      history.map((entry) => ({ timestamp: entry.at, request: entry.request, response: entry.result })),
    );
  });
  app.post("/update-state-from-real", async (c) => {
    const record = await sessionOf(c, c.req.header("x-session-id"));
    const body = await jsonBody(c);
    if (!Array.isArray(body.tool_calls))
      throw new TerrariumError(
        "INVALID_INPUT",
        'the body must be {"tool_calls": [{name, arguments, result}]}',
      );
    // Without a model, real results are recorded under runtime_state so later simulated calls can see them.
    const state = (await engine.state(record.id)) as Record<string, unknown>;
    const runtime = { ...((state.runtime_state as Record<string, unknown>) ?? {}) };
    const real = [...((runtime.real_tool_results as unknown[]) ?? []), ...body.tool_calls];
    await engine.setState(
      record.id,
      { ...state, runtime_state: { ...runtime, real_tool_results: real } },
      "real",
    );
    return c.json({ status: "ok", recorded: body.tool_calls.length });
  });
  app.get("/get-session-llm-usage", async (c) => {
    const record = await sessionOf(c, c.req.header("x-session-id"));
    return c.json({ session_id: record.id, usage: options.usageOf?.(record.id) ?? [] });
  });

  // --- every tool at its own path (Gecko clients call these with X-Session-ID) -----------------------
  for (const tool of engine.catalog.tools) {
    const { method, path } = routeOf(tool);
    app.on(method, path, async (c) => {
      const record = await sessionOf(c, c.req.header("x-session-id"));
      const args = await toolArguments(c, tool);
      const outcome = await engine.call(record.id, { name: tool.name, arguments: args });
      if (outcome.status === "invalid") {
        const message = outcome.errors.map((error) => error.message).join("; ");
        return c.json({ detail: { error_message: message, errors: outcome.errors } }, 422);
      }
      if (outcome.status === "error")
        return c.json({ detail: { error_message: (outcome.observation as { error: string }).error } }, 502);
      return c.json(outcome.observation as object);
    });
  }
  return app;
}

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex").slice(0, 32);
}

/** A tool's HTTP route: its OpenAPI method and path, or Gecko's `POST /<name>`. */
export function routeOf(tool: Tool): { method: string; path: string } {
  const http = tool.origin.http;
  if (http) return { method: http.method, path: http.path.replace(/\{([^}]+)\}/g, ":$1") };
  return { method: "POST", path: `/${tool.name.replace(/[/?#%\s]/g, encodeURIComponent)}` };
}

async function toolArguments(c: Context<Env>, tool: Tool): Promise<Record<string, unknown>> {
  const http = tool.origin.http;
  if (!http) return jsonBody(c, true);
  const args: Record<string, unknown> = {};
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, { type?: unknown }>;
  for (const parameter of http.parameters) {
    const raw =
      parameter.in === "path"
        ? c.req.param(parameter.name)
        : parameter.in === "query"
          ? c.req.query(parameter.name)
          : parameter.in === "header"
            ? c.req.header(parameter.name)
            : undefined;
    if (raw !== undefined) args[parameter.name] = coerce(raw, properties[parameter.name]?.type);
  }
  if (http.body === "merged") Object.assign(args, await jsonBody(c, true));
  else if (http.body === "argument" && http.bodyArgument) {
    const body = await jsonValue(c, true);
    if (body !== undefined) args[http.bodyArgument] = body;
  }
  return args;
}

/** Path and query parameters arrive as text; the schema says what they are. */
function coerce(raw: string, type: unknown): unknown {
  const types = Array.isArray(type) ? type : [type];
  if (
    (types.includes("integer") || types.includes("number")) &&
    raw.trim() !== "" &&
    !Number.isNaN(Number(raw))
  )
    return Number(raw);
  if (types.includes("boolean") && (raw === "true" || raw === "false")) return raw === "true";
  return raw;
}

async function jsonValue(c: Context<Env>, optional = false): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === "") {
    if (optional) return undefined;
    throw new TerrariumError("INVALID_INPUT", "the request needs a JSON body");
  }
  const type = c.req.header("content-type") ?? "";
  if (type && !/json/i.test(type)) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `the body must be JSON (Content-Type: application/json), not ${type}`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new TerrariumError("INVALID_INPUT", `the body is not valid JSON: ${(error as Error).message}`);
  }
}

async function jsonBody(c: Context<Env>, optional = false): Promise<Record<string, unknown>> {
  const value = await jsonValue(c, optional);
  if (value === undefined) return {};
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new TerrariumError("INVALID_INPUT", "the body must be a JSON object");
  return value as Record<string, unknown>;
}

/** The server's own API plus the simulated tools, as one OpenAPI 3.1 document. */
function serverOpenApi(engine: Engine): Record<string, unknown> {
  const tools = exportOpenApi(engine.catalog, { title: "terrarium simulated tools" });
  const sessionPath = (summary: string) => ({
    summary,
    parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
  });
  const own: Record<string, unknown> = {
    "/health": {
      get: { summary: "Liveness and configuration", responses: { "200": { description: "ok" } } },
    },
    "/tools": { get: { summary: "The canonical tools", responses: { "200": { description: "ok" } } } },
    "/sessions": {
      post: {
        summary: "Create a session (optional initial state)",
        responses: { "201": { description: "created" } },
      },
    },
    "/sessions/{id}": {
      ...sessionPath("A session"),
      get: { responses: { "200": { description: "ok" } } },
      delete: { responses: { "204": { description: "deleted" } } },
    },
    "/sessions/{id}/state": {
      ...sessionPath("Its state"),
      get: { responses: { "200": { description: "ok" } } },
      put: { responses: { "200": { description: "replaced" } } },
    },
    "/sessions/{id}/fork": {
      ...sessionPath("Fork"),
      post: { responses: { "201": { description: "forked" } } },
    },
    "/sessions/{id}/reset": {
      ...sessionPath("Reset"),
      post: { responses: { "200": { description: "reset" } } },
    },
    "/sessions/{id}/history": {
      ...sessionPath("History"),
      get: { responses: { "200": { description: "ok" } } },
    },
    "/sessions/{id}/calls": {
      ...sessionPath("A simulated call"),
      post: { responses: { "200": { description: "the outcome" } } },
    },
  };
  return { ...tools, paths: { ...own, ...(tools.paths as object) } };
}
