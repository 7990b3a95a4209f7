import { randomUUID } from "node:crypto";
import { Hono } from "hono";
import type { Tool } from "../catalog/tool.js";
import { DEFAULT_MAX_JSON_DEPTH, numberFromParameter } from "../core/checked-json.js";
import { TerrariumError } from "../core/errors.js";
import { setOwn } from "../core/immutable-json.js";
import { hashToken } from "../core/token-hash.js";
import { readBodyText } from "../mcp/messages.js";
import { McpHttpEndpoint, type McpHttpOptions } from "../mcp/server.js";
import type { UsageLedger } from "../models/usage.js";
import type { OpenEnvServer } from "../rl/openenv/server.js";
import type { Engine } from "../sim/engine.js";
import { describePolicy } from "../sim/policy.js";
import type { StateUpdate, StateUpdateRequest } from "../sim/state-updater.js";
import { createFastPath, REQUEST_ID, setFastPath } from "./fast-path.js";
import {
  type GeckoOptions,
  geckoRoutes,
  geckoSession,
  MIDDLEWARE_STYLE,
  toolAnswer,
  type UsageEvent,
} from "./gecko-routes.js";
import {
  type AppContext,
  drain,
  type Env,
  HttpProblem,
  jsonBody,
  jsonResponse,
  jsonValue,
  readLimited,
  requestBody,
} from "./http.js";
import { errorCodeOf, ServerMetrics, UNMATCHED_ROUTE } from "./metrics.js";
import { renderDocsPage, routesToOpenApi } from "./openapi.js";
import { openEnvRoutes } from "./openenv-routes.js";
import { bareProfile, type ServerProfile } from "./profile.js";
import { QuotaGuard, type TokenQuotas } from "./quotas.js";
import { type Route, type RouteGroup, RouteTable } from "./route-table.js";
import { SCHEMAS } from "./schemas.js";
import type { Drain } from "./shutdown.js";
import { terrariumRoutes } from "./terrarium-routes.js";
import { defaultApiNames, type ToolRouteKind, toolRoutes } from "./tool-routes.js";
import { endHttpSpan, startHttpSpan, withSpanContext } from "./tracing.js";

export interface AppOptions {
  /** Bearer tokens accepted; with none, the server is open. Each token sees only its own sessions. */
  tokens?: string[];
  /** Largest request body, in bytes (default 1,000,000); larger ones get a 413, with or without Content-Length. */
  maxBodyBytes?: number;
  /** Deepest nesting of arrays and objects in a JSON body (default 256); deeper bodies get a 400. */
  maxJsonDepth?: number;
  /** Limits of the MCP endpoint at /mcp (live sessions, idle time). */
  mcp?: McpHttpOptions;
  /** Per-token caps on stored sessions and replays in flight (defaults in quotas.ts); MCP's caps are in `mcp`. */
  quotas?: Partial<TokenQuotas>;
  /** OpenEnv episodes: their HTTP routes are served under /openenv (the WebSocket is attached by startServer). */
  openenv?: OpenEnvServer;
  /** Model usage: a session's calls (Gecko's /get-session-llm-usage) and how many there were in all. */
  usage?: { forSession: (sessionId: string) => UsageEvent[]; count: () => number };
  /** Builds a state with a model for Gecko's bootstrap_mode auto/force (absent: states are stored as given). */
  bootstrap?: GeckoOptions["bootstrap"];
  /** The state model for /update_state and /update-state-from-real (absent: see those routes). */
  updateState?: (request: StateUpdateRequest, sessionId: string) => Promise<StateUpdate>;
  /** What the server is made of, for /health (computed by `serverProfile`; a bare profile when absent). */
  profile?: ServerProfile;
  /** The API names a tool is also served under (`/<api>/...`); by default its file name without extension. */
  apiNames?: (tool: Tool) => string[];
  version?: string;
  /** Where GET /metrics counts (a fresh registry of the app's own when absent); it watches the engine. */
  metrics?: ServerMetrics;
  /** The ledger of the models the engine uses: its records become model metrics and spans. */
  ledger?: UsageLedger;
  /** Graceful shutdown (`startServer` passes one and counts requests in it): once it drains, requests get a 503. */
  drain?: Drain;
  /**
   * What else must answer for GET /readyz to say ready (the queue a server hands work to, …), besides the
   * session store. A check resolves when its dependency answers and rejects when it does not; a named one
   * is reported under its name, a bare function under its own name or `check<n>`.
   */
  readiness?: ReadinessCheck[];
  /** How long each readiness check may take before it counts as failed (default 2000 ms). */
  readinessTimeoutMs?: number;
  /** Where internal errors and readiness changes are logged, one line each (default: stderr). */
  log?: (line: string) => void;
}

/** A dependency GET /readyz asks about. */
export type ReadinessCheck = (() => Promise<void>) | { name: string; check: () => Promise<void> };

/** How long a readiness verdict is reused: probes from every kubelet and balancer cannot load the database. */
const READINESS_CACHE_MS = 500;

/** Seconds a client is told to wait (Retry-After) when a dependency does not answer. */
const RETRY_AFTER_SECONDS = 1;

/** Routes that answer without a token and while draining: probes must always reach them. */
const PROBES = new Set(["/livez", "/readyz"]);

/** Route tiers: the server's own routes (0) before tools' real paths, then names, then `/<api>/` forms. */
const TOOL_TIERS: Record<ToolRouteKind, number> = {
  path: 1,
  operationId: 2,
  "api-path": 3,
  "api-operationId": 4,
};

/** Past the body limit, this many more bytes are read and dropped so the client still gets its 413. */
const DRAIN_FACTOR = 16;

/**
 * The HTTP surface: terrarium's REST API, Gecko's API (so Gecko clients run unchanged), MCP, and every
 * tool at its routes. Every route is one entry of one route table, which the server dispatches from and
 * publishes as /openapi.json and /docs, so what is documented is what is served. Errors are JSON: terrarium's
 * routes answer `{error: {code, message}}`, Gecko's routes and the tools answer in Gecko's shapes.
 */
export function createApp(engine: Engine, options: AppOptions = {}): Hono<Env> {
  const app = new Hono<Env>();
  // Keyed by hash: looking a presented token up never compares it against a stored token directly.
  const tokens = new Set((options.tokens ?? []).map(hashToken));
  const maxDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const version = options.version ?? "0.1.0";
  const startedAt = Date.now();
  const profile = options.profile ?? bareProfile();
  // One guard for every door, so REST, Gecko and MCP sessions of a token count against one cap.
  const quotas = new QuotaGuard(engine.store, options.quotas);

  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const answer = (group: RouteGroup, error: unknown, c: AppContext) =>
    answerError(group, error, {
      requestId: c.get("requestId") ?? "-",
      request: `${c.req.method} ${routeLabel(c.req.method, c.req.url)}`,
      log,
    });
  app.onError((error, c) => answer("terrarium", error, c as AppContext));
  // Every answer names its request: a sane id the client sent, else a new one; 500s are logged under it.
  app.use("*", async (c, next) => {
    const given = c.req.header("x-request-id");
    const id = given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
    c.set("requestId", id);
    await next();
    try {
      c.res.headers.set("x-request-id", id);
    } catch {
      // A response with immutable headers: copied once to carry the id.
      c.res = new Response(c.res.body, c.res);
      c.res.headers.set("x-request-id", id);
    }
  });
  // Metrics, a span per request and graceful shutdown wrap everything else, the refusals of the other
  // middlewares included. A route label is the route's template, never the path as sent.
  const metrics = options.metrics ?? new ServerMetrics();
  metrics.watchEngine(engine);
  metrics.watchStore(engine.store);
  if (options.ledger) metrics.watchLedger(options.ledger);
  const routeOf = new WeakMap<Request, { path: string; session?: string }>();
  const routeLabel = (method: string, url: string) => {
    const match = table.match(method, new URL(url).pathname);
    return match.kind === "found" ? match.route.path : UNMATCHED_ROUTE;
  };
  app.use("*", async (c, next) => {
    const started = performance.now();
    const method = c.req.method;
    if (options.drain?.isDraining && !PROBES.has(c.req.path)) {
      await drain(requestBody(c), maxBody * DRAIN_FACTOR);
      const refused = jsonResponse(
        503,
        { error: { code: "SHUTTING_DOWN", message: "the server is shutting down; send the request again" } },
        { connection: "close", "retry-after": "1" },
      );
      metrics.observeHttp({ method, route: routeLabel(method, c.req.url), status: 503, seconds: 0 });
      return refused;
    }
    metrics.requestsInFlight(1);
    const { span, context } = startHttpSpan(method, c.req.path, c.req.raw.headers);
    try {
      await withSpanContext(context, next);
    } finally {
      metrics.requestsInFlight(-1);
      const status = c.res.status;
      // Requests the middlewares answered (401, 413) never reached the dispatcher: their route is looked up.
      const route = routeOf.get(c.req.raw) ?? { path: routeLabel(method, c.req.url) };
      const session = route.session ?? c.req.header("x-session-id")?.slice(0, 200);
      metrics.observeHttp({
        method,
        route: route.path,
        status,
        seconds: (performance.now() - started) / 1000,
        ...(status >= 400 ? { code: ANSWERED_CODES.get(c.res) ?? (await errorCodeOf(c.res)) } : {}),
      });
      endHttpSpan(span, method, route.path, status, session);
      if (options.drain?.isDraining) {
        try {
          c.res.headers.set("connection", "close");
        } catch {
          // immutable headers: the connection is closed when the drain ends
        }
      }
    }
  });
  const maxBody = options.maxBodyBytes ?? 1_000_000;
  const tooLarge = () =>
    jsonResponse(413, {
      error: { code: "BODY_TOO_LARGE", message: `the request body is larger than ${maxBody} bytes` },
    });
  app.use("*", async (c, next) => {
    c.set("maxDepth", maxDepth);
    c.set("body", undefined);
    c.set("bodyError", undefined);
    const declared = c.req.header("content-length");
    if (declared !== undefined && Number(declared) > maxBody && !c.req.header("transfer-encoding")) {
      await drain(requestBody(c), maxBody * DRAIN_FACTOR);
      return tooLarge();
    }
    return next();
  });
  app.use("*", async (c, next) => {
    if (c.req.path === "/health" || PROBES.has(c.req.path) || tokens.size === 0) {
      c.set("owner", undefined);
      return next();
    }
    const header = c.req.header("authorization") ?? "";
    const token = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
    const hash = token ? hashToken(token) : undefined;
    const owner = hash && tokens.has(hash) ? hash : undefined;
    if (!owner) {
      // The body is not wanted, but reading it lets the client see the 401 instead of a reset connection.
      await drain(requestBody(c), maxBody * DRAIN_FACTOR);
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
    const body = requestBody(c);
    if (!body) return next();
    const read = await readLimited(body, maxBody, maxBody * DRAIN_FACTOR);
    if (read === "too-large") return tooLarge();
    if (read === "not-utf8") c.set("bodyError", "the body is not UTF-8 text");
    else c.set("body", read);
    return next();
  });

  // Counting sessions reads every record; liveness probes may come many times a second.
  let counted: { at: number; count: number } | undefined;
  const sessionCount = async () => {
    if (!counted || Date.now() - counted.at > 1000)
      counted = { at: Date.now(), count: (await engine.store.listSessions()).length };
    return counted.count;
  };

  // Readiness: the store's ping and the given checks, asked at most once per READINESS_CACHE_MS however
  // many probes come; a check that hangs counts as failed after the timeout.
  const readinessTimeout = options.readinessTimeoutMs ?? 2000;
  if (!Number.isFinite(readinessTimeout) || readinessTimeout <= 0)
    throw new TerrariumError(
      "CONFIG_INVALID",
      `readinessTimeoutMs must be a positive number of milliseconds (got ${readinessTimeout})`,
    );
  const checks: Array<{ name: string; check: () => Promise<void> }> = [
    { name: "store", check: () => engine.store.ping?.() ?? Promise.resolve() },
    ...(options.readiness ?? []).map((given, i) => readinessCheck(given, i)),
  ];
  const failing = new Set<string>();
  let verdict: { at: number; failed: string[] } | undefined;
  let asking: Promise<string[]> | undefined;
  const askDependencies = async (): Promise<string[]> => {
    const results = await Promise.all(
      checks.map(async ({ name, check }) => {
        try {
          await withTimeout(check(), readinessTimeout, `did not answer within ${readinessTimeout} ms`);
          if (failing.delete(name)) log(`terrarium: readiness: ${name} answers again`);
          return undefined;
        } catch (error) {
          // Logged when it starts failing (the reason is for operators, never for the probe's answer).
          if (!failing.has(name)) {
            failing.add(name);
            log(`terrarium: readiness: ${name} fails: ${oneLine(internalReason(error))}`);
          }
          return name;
        }
      }),
    );
    return results.filter((name): name is string => name !== undefined);
  };
  const dependencies = (): Promise<string[]> => {
    if (verdict && Date.now() - verdict.at < READINESS_CACHE_MS) return Promise.resolve(verdict.failed);
    asking ??= askDependencies().then((failed) => {
      verdict = { at: Date.now(), failed };
      asking = undefined;
      return failed;
    });
    return asking;
  };

  const table = new RouteTable<AppContext>();
  const own: Route<AppContext>[] = [
    {
      method: "GET",
      path: "/livez",
      group: "terrarium",
      summary: "Liveness: the process is up and answering (never asks the store)",
      description:
        "Needs no token, and answers while draining too. 200 for as long as the process serves HTTP; restart the process only when this fails.",
      responses: { "200": { description: "Alive.", schema: LIVEZ_SCHEMA } },
      handle: (c) => c.json({ status: "alive" }),
    },
    {
      method: "GET",
      path: "/readyz",
      group: "terrarium",
      summary:
        "Readiness: the session store (and any other dependency) answers and the server is not draining",
      description: `Needs no token. The store is pinged with a short timeout and the verdict reused for ${READINESS_CACHE_MS} ms, so probes cannot load the database. 503 names what is not ready (store, draining, or another dependency), never why: the server's log says why.`,
      responses: {
        "200": { description: "Ready for traffic.", schema: READYZ_SCHEMA },
        "503": { description: "Not ready: send traffic elsewhere for now.", schema: READYZ_SCHEMA },
      },
      handle: async (c) => {
        const failed = await dependencies();
        const draining = options.drain?.isDraining === true;
        const status: Record<string, "ok" | "failing" | "draining"> = {
          draining: draining ? "draining" : "ok",
        };
        for (const { name } of checks) status[name] = failed.includes(name) ? "failing" : "ok";
        if (!draining && failed.length === 0) return c.json({ status: "ready", checks: status });
        const notReady = [...(draining ? ["draining"] : []), ...failed];
        return jsonResponse(
          503,
          {
            status: "not ready",
            checks: status,
            error: {
              code: failed.length > 0 ? "STORE_UNAVAILABLE" : "SHUTTING_DOWN",
              message: `not ready: ${notReady.join(", ")}`,
              requestId: c.get("requestId"),
            },
          },
          { "retry-after": String(RETRY_AFTER_SECONDS) },
        );
      },
    },
    {
      method: "GET",
      path: "/health",
      group: "terrarium",
      summary: "Liveness and configuration (Gecko's /health, with terrarium's fields)",
      description:
        "Needs no token. semanticValidation says whether a model checks calls for semantic fit and which one, exactly as serve's start-up banner does.",
      responses: { "200": { description: "Up.", schema: HEALTH_SCHEMA } },
      handle: async (c) => {
        const open = tokens.size === 0;
        return c.json({
          status: "ok",
          service: "terrarium",
          ok: true,
          version,
          process_id: process.pid,
          uptime_seconds: (Date.now() - startedAt) / 1000,
          tools: engine.catalog.size,
          simulators: profile.simulators,
          policy: describePolicy(profile.policy),
          semanticValidation: profile.semanticValidation,
          config: {
            db_path: open ? profile.db : null,
            schema_dirs: open ? profile.sources : [],
            response_model: profile.models.simulator,
            validation_model: profile.semanticValidation.model,
            state_model: profile.models.simulator,
            state_model_enabled: profile.models.simulator !== null,
          },
          stats: {
            session_count: await sessionCount(),
            llm_usage_event_count: options.usage?.count() ?? 0,
          },
        });
      },
    },
    ...terrariumRoutes(engine, quotas),
    ...geckoRoutes(engine, {
      quotas,
      ...(options.bootstrap ? { bootstrap: options.bootstrap } : {}),
      ...(options.updateState ? { updateState: options.updateState } : {}),
      ...(options.usage ? { usage: options.usage.forSession } : {}),
    }),
    {
      method: "GET",
      path: "/metrics",
      group: "terrarium",
      summary:
        "Prometheus metrics: tool calls, latencies, HTTP requests, model tokens and cost, errors by code",
      description:
        "Prometheus text format (0.0.4). With --token, a token is needed here too (Prometheus sends it with `authorization: {credentials: …}`).",
      responses: {
        "200": {
          description: "Every metric of this server.",
          contentType: "text/plain",
          schema: SCHEMAS.string,
        },
      },
      handle: async () =>
        new Response(await metrics.render(), { headers: { "content-type": metrics.contentType } }),
    },
    {
      method: "GET",
      path: "/openapi.json",
      group: "docs",
      summary: "This server's routes as OpenAPI 3.1 (generated from the route table)",
      responses: { "200": { description: "The document.", schema: { type: "object" } } },
      handle: () => {
        // Serialised once too: a large catalog's document is megabytes.
        openApiText ??= JSON.stringify(openApi());
        return new Response(openApiText, { headers: { "content-type": "application/json" } });
      },
    },
    {
      method: "GET",
      path: "/docs",
      group: "docs",
      summary: "The same document as a page (no scripts, works offline)",
      responses: { "200": { description: "HTML.", contentType: "text/html", schema: SCHEMAS.string } },
      handle: () => {
        docs ??= renderDocsPage(openApi());
        return new Response(docs.html, {
          headers: {
            "content-type": "text/html; charset=utf-8",
            "content-security-policy": docs.csp,
            "x-content-type-options": "nosniff",
          },
        });
      },
    },
  ];

  // --- MCP (streamable HTTP), one session per MCP connection ------------------------------------------
  const mcp = new McpHttpEndpoint(engine, {
    ...options.mcp,
    quotas,
    ...(options.version ? { version } : {}),
  });
  const mcpHandle = async (c: AppContext) => {
    let parsed: unknown;
    const text = c.get("body");
    const bodyError = c.get("bodyError");
    if (c.req.method === "POST" && bodyError !== undefined)
      return c.json({ jsonrpc: "2.0", error: { code: -32700, message: bodyError }, id: null }, 400);
    if (c.req.method === "POST" && text !== undefined && text.trim() !== "") {
      // The checks `terrarium mcp` makes on stdio too, so both doors answer a bad message alike.
      const read = readBodyText(text, maxDepth);
      if (!read.ok) return c.json(read.reply, 400);
      parsed = read.value;
    }
    return mcp.handle(c.req.raw, c.get("owner"), parsed);
  };
  for (const method of ["POST", "DELETE"] as const)
    own.push({
      method,
      path: "/mcp",
      group: "mcp",
      summary:
        method === "POST"
          ? "MCP over streamable HTTP: initialize (no Mcp-Session-Id) or a message of a session"
          : "End an MCP session (Mcp-Session-Id)",
      parameters: [
        {
          name: "Mcp-Session-Id",
          in: "header",
          required: method === "DELETE",
          description: "The MCP session (from the initialize answer's header).",
          schema: SCHEMAS.string,
        },
      ],
      ...(method === "POST"
        ? {
            requestBody: {
              required: true,
              description: "One JSON-RPC message.",
              schema: {
                type: "object",
                properties: { jsonrpc: { const: "2.0" }, id: {}, method: SCHEMAS.string, params: {} },
                required: ["jsonrpc", "method"],
              },
            },
          }
        : {}),
      responses: {
        "200": { description: "A JSON-RPC answer (JSON or an SSE stream).", schema: { type: "object" } },
        "400": { description: "Not a JSON-RPC message, or no session.", schema: { type: "object" } },
        "404": { description: "No such MCP session.", schema: { type: "object" } },
      },
      handle: mcpHandle,
    });
  if (options.openenv) own.push(...openEnvRoutes(options.openenv));
  for (const route of own) table.add(route);

  // --- every tool at its routes (Gecko clients call these with X-Session-ID) -------------------------
  const tools = toolRoutes(engine.catalog, options.apiNames ?? defaultApiNames);
  for (const { spec, tool, kind } of tools.routes)
    table.add({ ...spec, handle: (c, params) => callTool(engine, c, tool, kind, params) }, TOOL_TIERS[kind]);

  let document: ReturnType<typeof routesToOpenApi> | undefined;
  let docs: { html: string; csp: string } | undefined;
  let openApiText: string | undefined;
  const openApi = () => {
    document ??= routesToOpenApi(table.routes, { schemas: tools.schemas, bearer: tokens.size > 0, version });
    return document;
  };

  // POST /sessions/{id}/calls and GET /sessions/{id}/state straight on Node's request (fast-path.ts),
  // unless some other route of this app could answer such paths (a tool's own /sessions/... route).
  const fastRoutes: Array<[string, string, RegExp]> = [
    ["POST", "/sessions/{id}/calls", /^\/sessions\/[^/]*\/calls$/],
    ["GET", "/sessions/{id}/state", /^\/sessions\/[^/]*\/state$/],
  ];
  const alone = fastRoutes.every(([method, path, shape]) => {
    const own = table.routes.find((route) => route.method === method && route.path === path);
    return (
      own && !table.routes.some((route) => route !== own && route.method === method && shape.test(route.path))
    );
  });
  if (alone)
    setFastPath(
      app,
      createFastPath({
        engine,
        metrics,
        tokens,
        maxBody,
        drainLimit: maxBody * DRAIN_FACTOR,
        maxDepth,
        drain: options.drain,
        answer: (error, requestId, request) => answerError("terrarium", error, { requestId, request, log }),
        tooLarge,
        answeredCode: (response) => ANSWERED_CODES.get(response),
      }),
    );

  app.all("*", async (c) => {
    const method = c.req.method;
    const match = table.match(method, new URL(c.req.url).pathname);
    if (match.kind === "none")
      return c.json(
        { error: { code: "NOT_FOUND", message: `no route ${method} ${c.req.path} (the routes: GET /docs)` } },
        404,
      );
    if (match.kind === "method") {
      if (match.group === "mcp") return mcpHandle(c);
      const message = `${method} is not allowed on ${c.req.path}; it answers ${match.allowed.join(", ")}`;
      const allow = { allow: match.allowed.join(", ") };
      return match.group === "gecko" || match.group === "tools"
        ? jsonResponse(405, { detail: message }, allow)
        : jsonResponse(405, { error: { code: "METHOD_NOT_ALLOWED", message } }, allow);
    }
    routeOf.set(c.req.raw, {
      path: match.route.path,
      ...(match.params.id && match.route.path.startsWith("/sessions/") ? { session: match.params.id } : {}),
    });
    let response: Response;
    try {
      response = await match.route.handle(c, match.params);
    } catch (error) {
      response = answer(match.route.group, error, c);
    }
    return method === "HEAD"
      ? new Response(null, { status: response.status, headers: response.headers })
      : response;
  });
  return app;
}

/** The error code each answer was given (for metrics: Gecko's and the tools' shapes carry none). */
const ANSWERED_CODES = new WeakMap<Response, string>();

/** HTTP statuses of terrarium's error codes that are not the caller's mistake (others are 400, or 404). */
const CODE_STATUS: Partial<Record<string, number>> = {
  UNKNOWN_SESSION: 404,
  UNKNOWN_TOOL: 404,
  QUOTA_EXCEEDED: 429,
  INTERNAL: 500,
  STORE_UNAVAILABLE: 503,
  SHUTTING_DOWN: 503,
};

/** What a 500 says: nothing of the failure itself, which is in the log under the request id. */
const INTERNAL_MESSAGE = "internal error; the server's log has the details under this request id";

/**
 * An error as the route's group answers it. Answers of 500 and 503 never carry the failure's own text
 * (it may name hosts, ports, files or a library's internals): a 500 is logged, one line with the request
 * id, and answered with the code, a generic message and the id; a 503 says what is unavailable and when to
 * try again.
 */
function answerError(
  group: RouteGroup,
  error: unknown,
  request: { requestId: string; request: string; log: (line: string) => void },
): Response {
  if (error instanceof HttpProblem) return jsonResponse(error.status, error.body, error.headers);
  const code = error instanceof TerrariumError ? error.code : "INTERNAL";
  const status = CODE_STATUS[code] ?? 400;
  const gecko = group === "gecko" || group === "tools";
  let response: Response;
  if (status === 500) {
    request.log(
      `terrarium: 500 ${code} request ${request.requestId} ${request.request}: ${oneLine(internalReason(error))}`,
    );
    if (process.env.TERRARIUM_DEBUG && error instanceof Error && error.stack) request.log(error.stack);
    response = gecko
      ? jsonResponse(500, { detail: `internal error (request id ${request.requestId})` })
      : jsonResponse(500, { error: { code, message: INTERNAL_MESSAGE, requestId: request.requestId } });
  } else if (status === 503) {
    const message = (error as Error).message;
    const headers = { "retry-after": String(RETRY_AFTER_SECONDS) };
    const details = (error as TerrariumError).details;
    response = gecko
      ? jsonResponse(503, { detail: message }, headers)
      : jsonResponse(
          503,
          { error: { code, message, requestId: request.requestId, ...(details ? { details } : {}) } },
          headers,
        );
  } else {
    const message = (error as Error).message;
    response = gecko
      ? group === "tools"
        ? jsonResponse(422, { detail: { error_message: message } })
        : jsonResponse(400, { detail: message })
      : jsonResponse(status, { error: { code, message } });
  }
  ANSWERED_CODES.set(response, code);
  return response;
}

/** Whatever an error says about itself, its causes included: for the log only. */
function internalReason(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 4; depth++) {
    const text =
      current instanceof Error
        ? `${current.message}${(current as { code?: unknown }).code ? ` [${String((current as { code?: unknown }).code)}]` : ""}`
        : String(current);
    if (text && !parts.includes(text)) parts.push(text);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(" <- ") || "unknown error";
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").slice(0, 2000);
}

/** A readiness check with its name. */
function readinessCheck(given: ReadinessCheck, index: number): { name: string; check: () => Promise<void> } {
  if (typeof given === "function") {
    const name = /^[A-Za-z][A-Za-z0-9_-]{0,40}$/.test(given.name) ? given.name : `check${index + 1}`;
    return { name, check: given };
  }
  if (!/^[A-Za-z][A-Za-z0-9_-]{0,40}$/.test(given.name) || ["store", "draining"].includes(given.name))
    throw new TerrariumError(
      "CONFIG_INVALID",
      `a readiness check's name must be a short word other than store and draining (got ${JSON.stringify(given.name)})`,
    );
  return given;
}

/** `promise`, or a rejection once `ms` pass first. */
async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** One call at a tool route: Gecko's session check, the arguments from the request, Gecko's answer. */
async function callTool(
  engine: Engine,
  c: AppContext,
  tool: Tool,
  kind: ToolRouteKind,
  params: Record<string, string>,
): Promise<Response> {
  const record = await geckoSession(engine, c, MIDDLEWARE_STYLE);
  const args = await toolArguments(c, tool, kind, params);
  let outcome: Awaited<ReturnType<Engine["call"]>>;
  try {
    outcome = await engine.call(record.id, { name: tool.name, arguments: args });
  } catch (error) {
    // The dispatcher answers: a refusal with a status of its own (503 when the store is away, a quota)
    // as such, anything else as a 500 that is logged and says nothing internal.
    if (error instanceof TerrariumError && (CODE_STATUS[error.code] ?? 400) !== 400) throw error;
    throw new TerrariumError("INTERNAL", `the call could not be simulated: ${(error as Error)?.message}`, {
      cause: error,
    });
  }
  const answer = toolAnswer(outcome);
  return jsonResponse(answer.status, answer.body);
}

/**
 * A call's arguments from the request. At the operation's own path they are where its binding puts them
 * (path, query, header, body); at the name routes they are the JSON body, with declared query
 * parameters read too.
 */
async function toolArguments(
  c: AppContext,
  tool: Tool,
  kind: ToolRouteKind,
  params: Record<string, string>,
): Promise<Record<string, unknown>> {
  const http = tool.origin.http;
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, { type?: unknown }>;
  const args: Record<string, unknown> = {};
  if (http && (kind === "path" || kind === "api-path")) {
    for (const parameter of http.parameters) {
      const raw =
        parameter.in === "path"
          ? params[parameter.name]
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
  for (const [key, raw] of Object.entries(c.req.query()))
    if (Object.hasOwn(properties, key)) setOwn(args, key, coerce(raw, properties[key]?.type, key));
  for (const [key, value] of Object.entries(await jsonBody(c, true))) setOwn(args, key, value);
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

const LIVEZ_SCHEMA = {
  type: "object",
  properties: { status: { const: "alive" } },
  required: ["status"],
};

const READYZ_SCHEMA = {
  type: "object",
  properties: {
    status: { enum: ["ready", "not ready"] },
    checks: {
      type: "object",
      description:
        "Each dependency (store, draining, the readiness checks given) and how it is: ok, failing, draining.",
      additionalProperties: { enum: ["ok", "failing", "draining"] },
    },
    error: {
      type: "object",
      properties: { code: SCHEMAS.string, message: SCHEMAS.string, requestId: SCHEMAS.string },
      required: ["code", "message", "requestId"],
    },
  },
  required: ["status", "checks"],
};

const HEALTH_SCHEMA = {
  type: "object",
  properties: {
    status: { const: "ok" },
    service: { const: "terrarium" },
    ok: { const: true },
    version: SCHEMAS.string,
    process_id: SCHEMAS.integer,
    uptime_seconds: { type: "number" },
    tools: SCHEMAS.integer,
    simulators: { type: "array", items: SCHEMAS.string },
    policy: SCHEMAS.string,
    semanticValidation: {
      type: "object",
      properties: {
        enabled: { type: "boolean" },
        model: { type: ["string", "null"] },
        source: { enum: ["roles.validator", "roles.default", null] },
      },
      required: ["enabled", "model", "source"],
    },
    config: {
      type: "object",
      description:
        "Gecko's configuration fields; db_path and schema_dirs are withheld when tokens are required.",
      properties: {
        db_path: { type: ["string", "null"] },
        schema_dirs: { type: "array", items: SCHEMAS.string },
        response_model: { type: ["string", "null"] },
        validation_model: { type: ["string", "null"] },
        state_model: { type: ["string", "null"] },
        state_model_enabled: { type: "boolean" },
      },
    },
    stats: {
      type: "object",
      properties: { session_count: SCHEMAS.integer, llm_usage_event_count: SCHEMAS.integer },
    },
  },
  required: ["status", "service", "ok", "version", "tools", "semanticValidation", "config", "stats"],
};
