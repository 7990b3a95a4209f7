import type { Catalog } from "../catalog/catalog.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import type { HistoryEntry, SessionRecord } from "../sessions/types.js";
import type { CallOutcome, Engine } from "../sim/engine.js";
import type { CompletedCall, StateUpdate, StateUpdateRequest } from "../sim/state-updater.js";
import {
  type AppContext,
  HttpProblem,
  isObject,
  jsonResponse,
  jsonValue,
  ownSession,
  shortJson,
  shortText,
} from "./http.js";
import { answeringQuota, QuotaGuard } from "./quotas.js";
import type { Route, RouteHandler } from "./route-table.js";
import {
  GECKO_DETAIL,
  GECKO_ERROR,
  GECKO_HISTORY_ENTRY,
  GECKO_REQUEST_VALIDATION,
  GECKO_SESSION_ERROR,
  GECKO_USAGE,
  REAL_TOOL_CALL,
  SCHEMAS,
  SESSION_HEADER,
} from "./schemas.js";

/** One model call as /get-session-llm-usage lists it (Gecko's event, plus its cost). */
export interface UsageEvent {
  /** Increasing over the server's life, so `since_id` pulls only what is new. */
  id: number;
  /** Seconds since the epoch. */
  ts: number;
  /** Gecko's categories: response_generation, request_validation, state_update, bootstrap. */
  category: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cost_usd: number;
}

export interface GeckoOptions {
  /** Builds a state with a model for bootstrap_mode auto/force (absent: states are stored as given). */
  bootstrap?: (background: { task?: string; state?: unknown }, sessionId: string) => Promise<unknown>;
  /** The model-driven state updater (absent: /update_state changes nothing; real results are recorded as data). */
  updateState?: (request: StateUpdateRequest, sessionId: string) => Promise<StateUpdate>;
  /** The model calls made for a session. */
  usage?: (sessionId: string) => UsageEvent[];
  /** Per-token quotas, shared with terrarium's routes (per-token defaults when absent). */
  quotas?: QuotaGuard;
}

/** The task the state model is given for real results when the caller names none. */
const REAL_RESULTS_TASK =
  "Record what these real tool calls returned, so that later simulated calls agree with the real system.";

/** Gecko's session check on its routes: a missing or unknown X-Session-ID is a 400 in each route's shape. */
type SessionStyle = (problem: "missing" | "unknown", id: string) => HttpProblem;

/** The shape of Gecko's session middleware (state, history, usage, /update_state, tools). */
export const MIDDLEWARE_STYLE: SessionStyle = (problem, id) =>
  new HttpProblem(
    400,
    problem === "missing"
      ? {
          error: "missing session id",
          message: "send the X-Session-ID header with an id from GET /session-id",
        }
      : {
          error: "unknown session id",
          message: `there is no session ${shortText(id)}; GET /session-id makes one`,
        },
  );
const SET_STATE_STYLE: SessionStyle = (problem, id) =>
  new HttpProblem(400, {
    error:
      problem === "missing"
        ? "send the X-Session-ID header with an id from GET /session-id"
        : `there is no session ${shortText(id)}; GET /session-id makes one`,
  });
const REAL_STYLE: SessionStyle = (problem, id) =>
  new HttpProblem(400, {
    detail:
      problem === "missing"
        ? "send the X-Session-ID header with an id from GET /session-id"
        : `there is no session ${shortText(id)}; GET /session-id makes one`,
  });

export async function geckoSession(
  engine: Engine,
  c: AppContext,
  style: SessionStyle,
): Promise<SessionRecord> {
  const id = c.req.header("x-session-id");
  if (!id) throw style("missing", "");
  const record = await ownSession(engine, c, id);
  if (!record) throw style("unknown", id);
  return record;
}

const SERVICE_CODES = new Set(["STORE_UNAVAILABLE", "SHUTTING_DOWN", "INTERNAL"]);

/** Errors a handler's helpers throw (bad bodies, states refused) become this route's error shape. */
function guarded(
  toProblem: (message: string) => HttpProblem,
  handler: RouteHandler<AppContext>,
): RouteHandler<AppContext> {
  return async (c, params) => {
    try {
      return await handler(c, params);
    } catch (error) {
      // An outage or a shutdown is not the caller's mistake: it keeps its 503 (answerError's shape).
      if (error instanceof TerrariumError && !SERVICE_CODES.has(error.code)) throw toProblem(error.message);
      throw error;
    }
  };
}

/**
 * Gecko's own endpoints, with its request bodies, its answers and its error shapes (each endpoint of
 * Gecko has its own: `{error, message}` from its session middleware, `{error}` from set-session-state,
 * `{detail}` from update-state-from-real, FastAPI's `{detail: [...]}` for typed bodies and queries).
 */
export function geckoRoutes(engine: Engine, options: GeckoOptions): Route<AppContext>[] {
  const session = (c: AppContext, style: SessionStyle = MIDDLEWARE_STYLE) => geckoSession(engine, c, style);
  const quotas = options.quotas ?? new QuotaGuard(engine.store);
  return [
    {
      method: "GET",
      path: "/session-id",
      group: "gecko",
      summary: "Create a session (Gecko)",
      description: "A new session starting from the server's initial state; send its id as X-Session-ID.",
      responses: {
        "200": {
          description: "The new session's id.",
          schema: {
            type: "object",
            properties: { session_id: SCHEMAS.string, message: SCHEMAS.string },
            required: ["session_id", "message"],
          },
        },
      },
      handle: async (c) => {
        const owner = c.get("owner");
        const record = await answeringQuota("gecko", () =>
          quotas.createSessions(owner, () => engine.createSession(owner ? { owner } : {})),
        );
        return c.json({
          session_id: record.id,
          message: "Send this id in the X-Session-ID header of the session's requests.",
        });
      },
    },
    {
      method: "POST",
      path: "/set-session-state",
      group: "gecko",
      summary: "Set the session's state, optionally bootstrapped by a model (Gecko)",
      description:
        "bootstrap_mode auto (default) bootstraps the first state set on a session when it has no runtime_state yet and a model is configured; force always asks the model; skip stores the state as given. A model failure stores the state as given.",
      parameters: [SESSION_HEADER],
      requestBody: {
        required: true,
        schema: {
          type: "object",
          properties: {
            state: SCHEMAS.state,
            bootstrap_mode: { enum: ["auto", "skip", "force"], default: "auto" },
            task: {
              type: "string",
              description: "terrarium's addition: what the session is for, for the bootstrap.",
            },
          },
          required: ["state"],
        },
      },
      responses: {
        "200": {
          description: "Stored.",
          schema: {
            type: "object",
            properties: {
              message: SCHEMAS.string,
              bootstrapped: { type: "boolean" },
              warning: SCHEMAS.string,
            },
            required: ["message", "bootstrapped"],
          },
        },
        "400": {
          description: "No session, no state, a bad bootstrap_mode or a state that is not an object.",
          schema: GECKO_ERROR,
        },
      },
      handle: guarded(
        (message) => new HttpProblem(400, { error: message }),
        async (c) => {
          const record = await session(c, SET_STATE_STYLE);
          const body = await jsonValue(c);
          if (!isObject(body)) throw new TerrariumError("INVALID_INPUT", "the body must be a JSON object");
          if (body.state === undefined || body.state === null)
            throw new TerrariumError("INVALID_INPUT", 'the body needs a "state" (a JSON object)');
          const mode = body.bootstrap_mode ?? "auto";
          if (mode !== "auto" && mode !== "skip" && mode !== "force")
            throw new TerrariumError(
              "INVALID_INPUT",
              `bootstrap_mode must be "auto", "skip" or "force", got ${shortJson(mode)}`,
            );
          if (!isObject(body.state))
            throw new TerrariumError(
              "INVALID_INPUT",
              `the state must be a JSON object, got ${shortJson(body.state)}`,
            );
          const given = body.state;
          const task = typeof body.task === "string" ? body.task : undefined;
          // auto: only the first state a session is given, only when it brings no runtime context of its
          // own, and only when there is something to start from (domain data or a task).
          const first = (await engine.store.latestSnapshot(record.id)).index === 0;
          const wanted =
            mode === "force" ||
            (mode === "auto" &&
              first &&
              !hasRuntimeContext(given) &&
              (hasDomainData(given) || task !== undefined));
          let state: unknown = given;
          let bootstrapped = false;
          let warning: string | undefined;
          if (wanted && options.bootstrap) {
            try {
              state = await options.bootstrap(
                { state: given, ...(task !== undefined ? { task } : {}) },
                record.id,
              );
              bootstrapped = true;
            } catch (error) {
              warning = `the bootstrap failed, so the state was stored as given: ${(error as Error).message}`;
            }
          } else if (mode === "force") {
            warning =
              "no model is configured to bootstrap states (serve --model …); the state was stored as given";
          }
          await engine.setState(record.id, state);
          return c.json({
            message: "The session state was set.",
            bootstrapped,
            ...(warning ? { warning } : {}),
          });
        },
      ),
    },
    {
      method: "GET",
      path: "/get-session-state",
      group: "gecko",
      summary: "The session's current state (Gecko)",
      parameters: [SESSION_HEADER],
      responses: {
        "200": {
          description: "The latest state.",
          schema: { type: "object", properties: { state: SCHEMAS.state }, required: ["state"] },
        },
        "400": { description: "X-Session-ID is missing or names no session.", schema: GECKO_SESSION_ERROR },
      },
      handle: async (c) => c.json({ state: await engine.state((await session(c)).id) }),
    },
    {
      method: "GET",
      path: "/get-session-history",
      group: "gecko",
      summary: "The session's tool calls as HTTP exchanges (Gecko)",
      description:
        "Every call of the session (at a tool route, at /sessions/{id}/calls or over MCP), written as the request to the tool's route and the answer it gave.",
      parameters: [SESSION_HEADER],
      responses: {
        "200": {
          description: "The history, oldest first.",
          schema: {
            type: "object",
            properties: { history: { type: "array", items: GECKO_HISTORY_ENTRY } },
            required: ["history"],
          },
        },
        "400": { description: "X-Session-ID is missing or names no session.", schema: GECKO_SESSION_ERROR },
      },
      handle: async (c) => {
        const record = await session(c);
        const history = await engine.history(record.id);
        return c.json({
          history: history.map((entry) => geckoHistoryEntry(engine.catalog, entry, record.id)),
        });
      },
    },
    {
      method: "POST",
      path: "/update_state",
      group: "gecko",
      summary: "Update a state from tool calls with the state model (Gecko)",
      description:
        "The state model turns previous_state and the calls into the new state, which becomes the session's state and is answered. Calls whose result says they failed are left out. Without a model, previous_state is answered unchanged and nothing is stored.",
      parameters: [SESSION_HEADER],
      requestBody: {
        required: true,
        schema: {
          type: "object",
          properties: {
            task: { type: ["string", "null"] },
            previous_state: SCHEMAS.state,
            tool_calls: { type: "array", items: { type: "object" } },
            execution_results: { type: ["array", "null"], items: { type: ["object", "null"] } },
            tool_descriptions: { type: ["object", "null"] },
          },
          required: ["previous_state", "tool_calls"],
        },
      },
      responses: {
        "200": { description: "The updated state (the body is the state itself).", schema: SCHEMAS.state },
        "400": { description: "X-Session-ID is missing or names no session.", schema: GECKO_SESSION_ERROR },
        "422": { description: "The body does not have the fields' types.", schema: GECKO_REQUEST_VALIDATION },
      },
      handle: async (c) => {
        const record = await session(c);
        let body: unknown;
        try {
          body = await jsonValue(c);
        } catch (error) {
          throw requestValidation([{ type: "json_invalid", loc: ["body"], msg: (error as Error).message }]);
        }
        const problems = checkUpdateStateBody(body);
        if (problems.length > 0) throw requestValidation(problems);
        const fields = body as Record<string, unknown>;
        const previous = fields.previous_state as Record<string, unknown>;
        if (!options.updateState) return c.json(previous);
        const calls = (fields.tool_calls as Array<Record<string, unknown>>).flatMap((call) => {
          const name = call.name ?? call.function;
          return typeof name === "string" && name !== ""
            ? [{ name, arguments: call.arguments ?? call.args ?? {}, result: call.result }]
            : [];
        });
        let state: unknown = previous;
        const headers: Record<string, string> = {};
        try {
          state = (
            await options.updateState(
              {
                state: previous,
                calls,
                ...(typeof fields.task === "string" ? { task: fields.task } : {}),
                ...(Array.isArray(fields.execution_results)
                  ? { executionResults: fields.execution_results }
                  : {}),
                ...(isObject(fields.tool_descriptions) ? { toolDescriptions: fields.tool_descriptions } : {}),
              },
              record.id,
            )
          ).state;
        } catch (error) {
          headers["x-terrarium-warning"] = headerText(
            `the state model failed, so the state is unchanged: ${(error as Error).message}`,
          );
        }
        try {
          await engine.setState(record.id, state);
        } catch (error) {
          if (error instanceof TerrariumError && SERVICE_CODES.has(error.code)) throw error;
          throw requestValidation([
            { type: "value_error", loc: ["body", "previous_state"], msg: (error as Error).message },
          ]);
        }
        return jsonResponse(200, state, headers);
      },
    },
    {
      method: "POST",
      path: "/update-state-from-real",
      group: "gecko",
      summary: "Fold results of real tool calls into the session's state (Gecko's hybrid mode)",
      description:
        "With a model, the state model records what the calls returned (calls whose result says they failed are left out); without one, the calls are appended to runtime_state.real_tool_results. A model failure leaves the state unchanged.",
      parameters: [SESSION_HEADER],
      requestBody: {
        required: true,
        schema: {
          type: "object",
          properties: {
            tool_call: REAL_TOOL_CALL,
            tool_calls: { type: "array", items: REAL_TOOL_CALL },
            task: { type: "string", description: "terrarium's addition: context for the state model." },
          },
        },
      },
      responses: {
        "200": {
          description: "The updated state.",
          schema: {
            type: "object",
            properties: { success: { const: true }, updated_state: SCHEMAS.state },
            required: ["success", "updated_state"],
          },
        },
        "400": {
          description: "No session, no calls, or a call without name, arguments and result.",
          schema: GECKO_DETAIL,
        },
      },
      handle: guarded(
        (message) => new HttpProblem(400, { detail: message }),
        async (c) => {
          const record = await session(c, REAL_STYLE);
          const body = await jsonValue(c);
          if (!isObject(body)) throw new TerrariumError("INVALID_INPUT", "the body must be a JSON object");
          const calls = realCalls(body);
          const current = await engine.state(record.id);
          const headers: Record<string, string> = {};
          let state = current;
          if (options.updateState) {
            try {
              const update = await options.updateState(
                {
                  state: current,
                  calls,
                  task: typeof body.task === "string" ? body.task : REAL_RESULTS_TASK,
                },
                record.id,
              );
              if (update.changes.length > 0)
                state = (await engine.setState(record.id, update.state, "real")).state;
            } catch (error) {
              if (error instanceof TerrariumError && error.code === "UNKNOWN_SESSION") throw error;
              headers["x-terrarium-warning"] = headerText(
                `the state model failed, so the state is unchanged: ${(error as Error).message}`,
              );
            }
          } else {
            // Without a model the results are kept as data, so what the real system said is not lost.
            const base = isObject(current) ? current : {};
            const runtime = isObject(base.runtime_state) ? base.runtime_state : {};
            const earlier = Array.isArray(runtime.real_tool_results) ? runtime.real_tool_results : [];
            const next = {
              ...base,
              runtime_state: { ...runtime, real_tool_results: [...earlier, ...calls] },
            };
            state = (await engine.setState(record.id, next, "real")).state;
          }
          return jsonResponse(200, { success: true, updated_state: state }, headers);
        },
      ),
    },
    {
      method: "GET",
      path: "/get-session-llm-usage",
      group: "gecko",
      summary: "Tokens the session's model calls used, by model and category (Gecko)",
      parameters: [
        SESSION_HEADER,
        { name: "include_events", in: "query", schema: { type: "boolean", default: false } },
        { name: "limit", in: "query", schema: { type: "integer", default: 10000 } },
        { name: "since_id", in: "query", schema: { type: "integer", default: 0 } },
      ],
      responses: {
        "200": { description: "Totals (and the calls, with include_events).", schema: GECKO_USAGE },
        "400": { description: "X-Session-ID is missing or names no session.", schema: GECKO_SESSION_ERROR },
        "422": { description: "A query parameter is not of its type.", schema: GECKO_REQUEST_VALIDATION },
      },
      handle: async (c) => {
        const record = await session(c);
        const problems: ValidationProblem[] = [];
        const includeEvents = queryBoolean(c, "include_events", false, problems);
        const limit = queryInteger(c, "limit", 10000, problems);
        const sinceId = queryInteger(c, "since_id", 0, problems);
        if (problems.length > 0) throw requestValidation(problems);
        const events = (options.usage?.(record.id) ?? []).filter((event) => event.id > sinceId);
        const payload: Record<string, unknown> = {
          session_id: record.id,
          since_id: sinceId,
          by_model: totalsBy(events, (event) => event.model),
          by_category: totalsBy(events, (event) => event.category),
          total: totalsOf(events),
        };
        if (includeEvents) {
          const listed = limit > 0 ? events.slice(0, limit) : [];
          payload.events = listed;
          payload.max_event_id = listed.reduce((max, event) => Math.max(max, event.id), sinceId);
        }
        return c.json(payload);
      },
    },
  ];
}

/** `{tool_call}` and/or `{tool_calls: [...]}`, each `{name, arguments, result}` (Gecko's checks, in its order). */
function realCalls(body: Record<string, unknown>): CompletedCall[] {
  const single = body.tool_call;
  const many = body.tool_calls;
  if (!truthy(single) && !truthy(many))
    throw new TerrariumError(
      "INVALID_INPUT",
      'the body needs "tool_call" (one call) or "tool_calls" (a list)',
    );
  const calls: unknown[] = [];
  if (truthy(many)) {
    if (!Array.isArray(many))
      throw new TerrariumError("INVALID_INPUT", '"tool_calls" must be a list of calls');
    calls.push(...many);
  }
  if (truthy(single)) calls.push(single);
  return calls.map((call, index) => {
    if (!isObject(call) || !("name" in call) || !("arguments" in call) || !("result" in call))
      throw new TerrariumError(
        "INVALID_INPUT",
        `call ${index} must be an object with "name", "arguments" and "result", got ${shortJson(call)}`,
      );
    return { name: String(call.name), arguments: call.arguments, result: call.result };
  });
}

/** Python's truthiness, which Gecko's checks use (empty lists and objects count as absent). */
function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isObject(value)) return Object.keys(value).length > 0;
  return true;
}

function hasRuntimeContext(state: Record<string, unknown>): boolean {
  const runtime = state.runtime_state;
  if (!isObject(runtime)) return false;
  return Object.entries(runtime).some(
    ([key, value]) => key !== "toolkits" || (isObject(value) && Object.keys(value).length > 0),
  );
}

function hasDomainData(state: Record<string, unknown>): boolean {
  return Object.entries(state).some(([key, value]) => key !== "runtime_state" && isObject(value));
}

// --- FastAPI-style request validation ----------------------------------------------------------------

interface ValidationProblem {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input?: unknown;
}

function requestValidation(problems: ValidationProblem[]): HttpProblem {
  return new HttpProblem(422, { detail: problems });
}

function checkUpdateStateBody(body: unknown): ValidationProblem[] {
  if (!isObject(body))
    return [
      { type: "model_attributes_type", loc: ["body"], msg: "the body must be a JSON object", input: body },
    ];
  const problems: ValidationProblem[] = [];
  const field = (
    name: string,
    ok: (value: unknown) => boolean,
    type: string,
    expected: string,
    required: boolean,
  ) => {
    const value = body[name];
    if (value === undefined) {
      if (required)
        problems.push({ type: "missing", loc: ["body", name], msg: "this field is required", input: body });
    } else if (!ok(value)) {
      problems.push({ type, loc: ["body", name], msg: `must be ${expected}`, input: value });
    }
  };
  const optional = (check: (value: unknown) => boolean) => (value: unknown) => value === null || check(value);
  field("previous_state", isObject, "dict_type", "a JSON object", true);
  field(
    "tool_calls",
    (value) => Array.isArray(value) && value.every(isObject),
    "list_type",
    "a list of JSON objects",
    true,
  );
  field(
    "task",
    optional((value) => typeof value === "string"),
    "string_type",
    "a string or null",
    false,
  );
  field(
    "execution_results",
    optional((value) => Array.isArray(value) && value.every((item) => item === null || isObject(item))),
    "list_type",
    "a list of JSON objects or nulls, or null",
    false,
  );
  field("tool_descriptions", optional(isObject), "dict_type", "a JSON object or null", false);
  return problems;
}

function queryBoolean(
  c: AppContext,
  name: string,
  fallback: boolean,
  problems: ValidationProblem[],
): boolean {
  const raw = c.req.query(name);
  if (raw === undefined) return fallback;
  const lowered = raw.trim().toLowerCase();
  if (["true", "1", "yes", "on", "t", "y"].includes(lowered)) return true;
  if (["false", "0", "no", "off", "f", "n"].includes(lowered)) return false;
  problems.push({
    type: "bool_parsing",
    loc: ["query", name],
    msg: "must be a boolean (true or false)",
    input: raw,
  });
  return fallback;
}

function queryInteger(c: AppContext, name: string, fallback: number, problems: ValidationProblem[]): number {
  const raw = c.req.query(name);
  if (raw === undefined) return fallback;
  if (!/^\s*[-+]?\d+\s*$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    problems.push({ type: "int_parsing", loc: ["query", name], msg: "must be an integer", input: raw });
    return fallback;
  }
  return Number(raw);
}

// --- usage -------------------------------------------------------------------------------------------

interface TokenTotals {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cost_usd: number;
}

function totalsOf(events: UsageEvent[]): TokenTotals {
  const totals = { input_tokens: 0, output_tokens: 0, total_tokens: 0, cost_usd: 0 };
  for (const event of events) {
    totals.input_tokens += event.input_tokens;
    totals.output_tokens += event.output_tokens;
    totals.total_tokens += event.total_tokens;
    totals.cost_usd += event.cost_usd;
  }
  return totals;
}

function totalsBy(events: UsageEvent[], key: (event: UsageEvent) => string): Record<string, TokenTotals> {
  const groups = new Map<string, UsageEvent[]>();
  for (const event of events) groups.set(key(event), [...(groups.get(key(event)) ?? []), event]);
  return Object.fromEntries([...groups].map(([name, list]) => [name, totalsOf(list)]));
}

/** Header values are one line of visible ASCII. */
function headerText(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?").slice(0, 500);
}

// --- tool calls as Gecko's HTTP exchanges --------------------------------------------------------------

/** What a tool route answers for an outcome: the status and body Gecko gives. */
export function toolAnswer(outcome: Pick<CallOutcome, "status" | "observation" | "errors">): {
  status: number;
  body: unknown;
} {
  if (outcome.status === "invalid") {
    const messages = outcome.errors.map((error) => (error as { message: string }).message);
    return {
      status: 422,
      body: {
        detail: { error_message: messages.join("; ") || "the call is invalid", errors: outcome.errors },
      },
    };
  }
  if (outcome.status === "error") {
    const error = isObject(outcome.observation) ? outcome.observation.error : undefined;
    return { status: 500, body: { detail: typeof error === "string" ? error : "the simulator failed" } };
  }
  return { status: 200, body: outcome.observation === undefined ? {} : outcome.observation };
}

/**
 * A history entry as Gecko records it: the HTTP request to the tool's route and the answer. terrarium
 * stores calls, not requests, so the request is rebuilt from the tool's binding (its own method and path,
 * path and query parameters from the arguments, the rest as the JSON body); tools without one are written
 * as `POST /<name>` with the arguments as the body. Request headers are not stored (they may carry
 * credentials): the entry shows the session header and the body's type.
 */
export function geckoHistoryEntry(catalog: Catalog, entry: HistoryEntry, sessionId: string) {
  const tool = catalog.get(entry.request.name);
  const args = argumentsObject(entry.request.arguments);
  const request = rebuildRequest(tool, entry.request.name, args);
  const answer = toolAnswer({
    status: entry.result.status,
    observation: entry.result.observation,
    errors: entry.result.errors as CallOutcome["errors"],
  });
  const responseBody = JSON.stringify(answer.body ?? null);
  return {
    timestamp: entry.at,
    request: {
      method: request.method,
      path: request.path,
      query_params: request.query,
      headers: {
        "x-session-id": sessionId,
        ...(request.body !== null ? { "content-type": "application/json" } : {}),
      },
      body: request.body,
    },
    response: {
      status_code: answer.status,
      headers: {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(responseBody)),
      },
      body: responseBody,
    },
  };
}

function argumentsObject(value: unknown): Record<string, unknown> {
  if (typeof value === "string") {
    try {
      const parsed = JSON.parse(value) as unknown;
      if (isObject(parsed)) return parsed;
    } catch {
      // arguments that were not JSON: shown as they came, under no key
    }
    return {};
  }
  return isObject(value) ? value : {};
}

function rebuildRequest(
  tool: Tool | undefined,
  name: string,
  args: Record<string, unknown>,
): { method: string; path: string; query: Record<string, string>; body: string | null } {
  const http = tool?.origin.http;
  if (!http) {
    return {
      method: "POST",
      path: `/${encodeURIComponent(name)}`,
      query: {},
      body: JSON.stringify(args),
    };
  }
  let path = http.path;
  const query: Record<string, string> = {};
  const used = new Set<string>();
  for (const parameter of http.parameters) {
    const value = args[parameter.name];
    if (value === undefined) continue;
    used.add(parameter.name);
    const text = typeof value === "string" ? value : JSON.stringify(value);
    if (parameter.in === "path") path = path.replace(`{${parameter.name}}`, encodeURIComponent(text));
    else if (parameter.in === "query") query[parameter.name] = text;
  }
  let body: string | null = null;
  if (http.body === "merged") {
    const rest = Object.fromEntries(Object.entries(args).filter(([key]) => !used.has(key)));
    if (Object.keys(rest).length > 0) body = JSON.stringify(rest);
  } else if (http.body === "argument" && http.bodyArgument && args[http.bodyArgument] !== undefined) {
    body = JSON.stringify(args[http.bodyArgument]);
  }
  return { method: http.method.toUpperCase(), path, query, body };
}
