import { createHash } from "node:crypto";
import { type Context, Hono } from "hono";
import { exportOpenApi } from "../catalog/export-openapi.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import { setOwn } from "../core/immutable-json.js";
import { McpHttpEndpoint, type McpHttpOptions } from "../mcp/server.js";
import type { Engine, SimulatorPolicy } from "../sim/engine.js";
import { isSimulatorName, SIMULATOR_NAMES } from "../sim/types.js";
import { DEFAULT_MAX_JSON_DEPTH, numberFromParameter, parseJsonText } from "./json-body.js";

export interface AppOptions {
  /** Bearer tokens accepted; with none, the server is open. Each token sees only its own sessions. */
  tokens?: string[];
  /** Largest request body, in bytes (default 1,000,000); larger ones get a 413, with or without Content-Length. */
  maxBodyBytes?: number;
  /** Deepest nesting of arrays and objects in a JSON body (default 256); deeper bodies get a 400. */
  maxJsonDepth?: number;
  /** Limits of the MCP endpoint at /mcp (live sessions, idle time). */
  mcp?: McpHttpOptions;
  /** Model usage per session, for Gecko's /get-session-llm-usage. */
  usageOf?: (sessionId: string) => unknown;
  /** Builds a state with a model for Gecko's bootstrap_mode auto/force (absent: states are stored as given). */
  bootstrap?: (background: { task?: string; state?: unknown }, sessionId: string) => Promise<unknown>;
  /** Whether semantic validation runs (reported in /health and call results when skipped). */
  semanticValidation?: "on" | "skipped";
  version?: string;
}

type Env = { Variables: { owner: string | undefined; body: string | undefined; maxDepth: number } };

/** Past the body limit, this many more bytes are read and dropped so the client still gets its 413. */
const DRAIN_FACTOR = 16;

/**
 * The HTTP surface: terrarium's REST API, a Gecko-compatible API (so Gecko clients run unchanged), and
 * every tool at its own path. Errors are JSON with a code and a sentence; nothing is served as HTML.
 */
export function createApp(engine: Engine, options: AppOptions = {}): Hono<Env> {
  const app = new Hono<Env>();
  // Keyed by hash: looking a presented token up never compares it against a stored token directly.
  const tokens = new Set((options.tokens ?? []).map(hashToken));
  const maxDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;

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
    c.set("maxDepth", maxDepth);
    c.set("body", undefined);
    const declared = c.req.header("content-length");
    if (declared !== undefined && Number(declared) > maxBody && !c.req.header("transfer-encoding")) {
      await drain(c.req.raw.body, maxBody * DRAIN_FACTOR);
      return tooLarge(c);
    }
    return next();
  });
  app.use("*", async (c, next) => {
    if (c.req.path === "/health" || tokens.size === 0) {
      c.set("owner", undefined);
      return next();
    }
    const header = c.req.header("authorization") ?? "";
    const token = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
    const hash = token ? hashToken(token) : undefined;
    const owner = hash && tokens.has(hash) ? hash : undefined;
    if (!owner) {
      // The body is not wanted, but reading it lets the client see the 401 instead of a reset connection.
      await drain(c.req.raw.body, maxBody * DRAIN_FACTOR);
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
  // Every body is read here, counted as it streams (chunked uploads have no Content-Length to trust).
  app.use("*", async (c, next) => {
    const body = c.req.raw.body;
    if (!body) return next();
    const read = await readLimited(body, maxBody);
    if (read === "too-large") return tooLarge(c);
    if (read === "not-utf8") throw new TerrariumError("INVALID_INPUT", "the body is not UTF-8 text");
    c.set("body", read);
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
    if (body.state !== undefined) requireObjectState(body.state, "state");
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
    const snapshot = await engine.setState(record.id, requireObjectState(await jsonValue(c), "the body"));
    return c.json({ snapshot: snapshot.index });
  });
  app.post("/sessions/:id/fork", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    const body = await jsonBody(c, true);
    if (
      body.snapshot !== undefined &&
      !(Number.isSafeInteger(body.snapshot) && (body.snapshot as number) >= 0)
    )
      throw new TerrariumError(
        "INVALID_INPUT",
        `"snapshot" must be a snapshot index (an integer ≥ 0), got ${shortJson(body.snapshot)}`,
      );
    const forked = await engine.fork(record.id, body.snapshot as number | undefined, c.get("owner"));
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
    // The engine checks the document before storing anything; the caller's token owns the import,
    // whatever the document says (exports name no owner).
    const record = await engine.importSession(await jsonBody(c), c.get("owner"));
    return c.json({ id: record.id }, 201);
  });
  app.post("/sessions/:id/replay", async (c) => {
    const record = await sessionOf(c, c.req.param("id"));
    const body = await jsonBody(c);
    // The engine leaves no session behind a replay that fails; the shape is checked here for a clear 400.
    const replayed = await engine.replay(record.id, checkedPolicy(body.simulator));
    return c.json({ id: replayed.session.id, outcomes: replayed.outcomes }, 201);
  });
  // Exports never carry the token hash that owns the session (the engine leaves it out).
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
  const mcp = new McpHttpEndpoint(engine, {
    ...options.mcp,
    ...(options.version ? { version: options.version } : {}),
  });
  app.all("/mcp", async (c) => {
    let parsed: unknown;
    const text = c.get("body");
    if (c.req.method === "POST" && text !== undefined && text.trim() !== "") {
      try {
        parsed = parseJsonText(text, maxDepth);
      } catch (error) {
        return c.json(
          { jsonrpc: "2.0", error: { code: -32700, message: (error as Error).message }, id: null },
          400,
        );
      }
    }
    return mcp.handle(c.req.raw, c.get("owner"), parsed);
  });

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
    const given = requireObjectState(body.state ?? {}, "state");
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
    const current = await engine.state(record.id);
    const state = isObject(current) ? current : {};
    const runtime = isObject(state.runtime_state) ? { ...state.runtime_state } : {};
    const earlier = Array.isArray(runtime.real_tool_results) ? runtime.real_tool_results : [];
    const real = [...earlier, ...body.tool_calls];
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

const POLICY_KEYS = ["read", "write", "unknown", "default"];

/** A replay policy from a request: a simulator name, or one by effect and by tool. */
function checkedPolicy(value: unknown): SimulatorPolicy {
  const wrong = (detail: string) =>
    new TerrariumError(
      "INVALID_INPUT",
      `${detail}; the body must name a simulator policy: {"simulator": "schema"} or {"simulator": {"write": "llm", "tools": {"<tool>": "code"}}} (simulators: auto, ${SIMULATOR_NAMES.join(", ")})`,
    );
  if (typeof value === "string") {
    if (value === "auto" || isSimulatorName(value)) return value as SimulatorPolicy;
    throw wrong(`unknown simulator ${shortJson(value)}`);
  }
  if (!isObject(value)) throw wrong(`"simulator" is ${shortJson(value)}`);
  for (const [key, name] of Object.entries(value)) {
    if (key === "tools") {
      if (!isObject(name)) throw wrong(`"simulator.tools" must be an object`);
      for (const [tool, toolName] of Object.entries(name))
        if (!isSimulatorName(toolName)) throw wrong(`"simulator.tools.${tool}" is ${shortJson(toolName)}`);
    } else if (!POLICY_KEYS.includes(key)) {
      throw wrong(`"simulator" has an unknown key ${shortJson(key)}`);
    } else if (!isSimulatorName(name)) {
      throw wrong(`"simulator.${key}" is ${shortJson(name)}`);
    }
  }
  return value as SimulatorPolicy;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** States are JSON objects (an environment's or a task's document). */
function requireObjectState(value: unknown, what: string): Record<string, unknown> {
  if (!isObject(value))
    throw new TerrariumError(
      "INVALID_INPUT",
      `${what} must be a JSON object (a state), got ${shortJson(value)}`,
    );
  return value;
}

/** A value for an error message, never longer than a line. */
function shortJson(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? "nothing" : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

/** Reads and drops up to `limit` bytes of a body nobody will use. */
async function drain(body: ReadableStream<Uint8Array> | null, limit: number): Promise<void> {
  if (!body) return;
  const reader = body.getReader();
  let seen = 0;
  try {
    while (seen <= limit) {
      const { done, value } = await reader.read();
      if (done) return;
      seen += value.length;
    }
    await reader.cancel();
  } catch {
    // The client went away: nothing to answer.
  }
}

/** The body as text, or why not: larger than `max` bytes (the rest is drained), or not UTF-8. */
async function readLimited(
  body: ReadableStream<Uint8Array>,
  max: number,
): Promise<string | "too-large" | "not-utf8"> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      reader.releaseLock();
      await drain(body, max * DRAIN_FACTOR);
      return "too-large";
    }
    chunks.push(value);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    return "not-utf8";
  }
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
    if (raw !== undefined)
      setOwn(args, parameter.name, coerce(raw, properties[parameter.name]?.type, parameter.name));
  }
  if (http.body === "merged") {
    // Keys are data: Object.assign would run the __proto__ setter for a body key named "__proto__".
    for (const [key, value] of Object.entries(await jsonBody(c, true))) setOwn(args, key, value);
  } else if (http.body === "argument" && http.bodyArgument) {
    const body = await jsonValue(c, true);
    if (body !== undefined) setOwn(args, http.bodyArgument, body);
  }
  return args;
}

/** Path and query parameters arrive as text; the schema says what they are. */
function coerce(raw: string, type: unknown, name: string): unknown {
  const types = Array.isArray(type) ? type : [type];
  if (types.includes("integer") || types.includes("number")) {
    const number = numberFromParameter(raw, name);
    if (typeof number === "number") return number;
  }
  if (types.includes("boolean") && (raw === "true" || raw === "false")) return raw === "true";
  return raw;
}

async function jsonValue(c: Context<Env>, optional = false): Promise<unknown> {
  const text = c.get("body") ?? "";
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
  return parseJsonText(text, c.get("maxDepth"));
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
