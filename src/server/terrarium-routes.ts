import { TerrariumError } from "../core/errors.js";
import type { CallOutcome, Engine, SimulatorPolicy } from "../sim/engine.js";
import { isSimulatorName, SIMULATOR_NAMES } from "../sim/types.js";
import {
  type AppContext,
  type BodyText,
  bodyTextOf,
  isObject,
  jsonBody,
  jsonValue,
  ownSessionOf,
  parseBodyObject,
  shortJson,
} from "./http.js";
import { answeringQuota, QuotaGuard } from "./quotas.js";
import type { Route } from "./route-table.js";
import { SCHEMAS, SESSION_PATH, TERRARIUM_ERROR } from "./schemas.js";

/** A session export document (what GET /sessions/{id}/export gives and POST /sessions/import takes). */
const SESSION_EXPORT = {
  type: "object",
  properties: {
    schemaVersion: SCHEMAS.integer,
    session: { type: "object" },
    snapshots: { type: "array" },
    history: { type: "array" },
  },
  required: ["schemaVersion", "session", "snapshots", "history"],
};

const error = (description: string) => ({ description, schema: TERRARIUM_ERROR });
const NOT_FOUND = error("There is no such session (or it belongs to another token).");
const BAD_REQUEST = error("The request is invalid; the message says why.");

const CALL_OUTCOME = {
  type: "object",
  properties: {
    status: { enum: ["ok", "invalid", "tool_error", "error"] },
    observation: {},
    changes: { type: "array" },
    errors: { type: "array" },
    simulator: { type: "string" },
    usage: { type: "object" },
    step: { type: "integer" },
    semantic: { enum: ["passed", "failed", "skipped", "error", "not-run"] },
  },
  required: ["status", "observation", "changes", "errors", "simulator", "step", "semantic"],
};

const POLICY_SCHEMA = {
  description: "A simulator for every tool, or one by effect and by tool.",
  oneOf: [
    { enum: ["auto", ...SIMULATOR_NAMES] },
    {
      type: "object",
      properties: {
        read: { enum: [...SIMULATOR_NAMES] },
        write: { enum: [...SIMULATOR_NAMES] },
        unknown: { enum: [...SIMULATOR_NAMES] },
        default: { enum: [...SIMULATOR_NAMES] },
        tools: { type: "object", additionalProperties: { enum: [...SIMULATOR_NAMES] } },
      },
      additionalProperties: false,
    },
  ],
};

/**
 * terrarium's own API: sessions by id in the path, terrarium's error shape `{error: {code, message}}`.
 * Routes that store a new session count against the caller's session quota, replays against its replay
 * quota (`quotas`, shared with the other route groups; per-token defaults when absent).
 */
export function terrariumRoutes(
  engine: Engine,
  quotas: QuotaGuard = new QuotaGuard(engine.store),
): Route<AppContext>[] {
  const createSession = <T>(c: AppContext, create: () => Promise<T>) =>
    answeringQuota("terrarium", () => quotas.createSessions(c.get("owner"), create));
  const session = (c: AppContext, id: string | undefined) => ownedSession(engine, c.get("owner"), id);
  const withId = { parameters: [SESSION_PATH] };
  return [
    {
      method: "POST",
      path: "/sessions",
      group: "terrarium",
      summary: "Create a session",
      requestBody: {
        required: false,
        schema: { type: "object", properties: { state: SCHEMAS.state } },
        description: "Optionally the state to start from (the server's initial state otherwise).",
      },
      responses: {
        "201": {
          description: "Created.",
          schema: {
            type: "object",
            properties: { id: SCHEMAS.string, createdAt: SCHEMAS.string },
            required: ["id", "createdAt"],
          },
        },
        "400": BAD_REQUEST,
      },
      handle: async (c) => {
        const body = await jsonBody(c, true);
        if (body.state !== undefined) requireObjectState(body.state, "state");
        const owner = c.get("owner");
        const record = await createSession(c, () =>
          engine.createSession({
            ...(body.state !== undefined ? { state: body.state } : {}),
            ...(owner ? { owner } : {}),
          }),
        );
        return c.json({ id: record.id, createdAt: record.createdAt }, 201);
      },
    },
    {
      method: "POST",
      path: "/sessions/import",
      group: "terrarium",
      summary: "Import an exported session under a new id",
      requestBody: {
        required: true,
        description: "A session export document (GET /sessions/{id}/export).",
        schema: SESSION_EXPORT,
      },
      responses: {
        "201": {
          description: "Imported.",
          schema: { type: "object", properties: { id: SCHEMAS.string }, required: ["id"] },
        },
        "400": BAD_REQUEST,
      },
      handle: async (c) => {
        // The engine checks the document before storing anything; the caller's token owns the import,
        // whatever the document says (exports name no owner).
        const document = await jsonBody(c);
        const record = await createSession(c, () => engine.importSession(document, c.get("owner")));
        return c.json({ id: record.id }, 201);
      },
    },
    {
      method: "GET",
      path: "/sessions/{id}",
      group: "terrarium",
      summary: "A session: its record, number of calls and state",
      ...withId,
      responses: {
        "200": {
          description: "The session.",
          schema: {
            type: "object",
            properties: {
              id: SCHEMAS.string,
              createdAt: SCHEMAS.string,
              seed: SCHEMAS.string,
              parent: { type: "object" },
              metadata: { type: "object" },
              calls: SCHEMAS.integer,
              state: SCHEMAS.state,
            },
            required: ["id", "createdAt", "seed", "calls", "state"],
          },
        },
        "404": NOT_FOUND,
      },
      handle: async (c, params) => {
        const record = await session(c, params.id);
        const { owner: _owner, ...visible } = record;
        // The count from the last entry: reading the whole history to count it grew with the session.
        const calls = await engine.callCount(record.id);
        return c.json({ ...visible, calls, state: await engine.state(record.id) });
      },
    },
    {
      method: "DELETE",
      path: "/sessions/{id}",
      group: "terrarium",
      summary: "Delete a session",
      ...withId,
      responses: { "204": { description: "Deleted." }, "404": NOT_FOUND },
      handle: async (c, params) => {
        const record = await session(c, params.id);
        await engine.deleteSession(record.id);
        return c.body(null, 204);
      },
    },
    {
      method: "GET",
      path: "/sessions/{id}/state",
      group: "terrarium",
      summary: "The session's current state",
      ...withId,
      responses: { "200": { description: "The state itself.", schema: SCHEMAS.state }, "404": NOT_FOUND },
      handle: async (c, params) => c.json(await sessionState(engine, c.get("owner"), params.id)),
    },
    {
      method: "PUT",
      path: "/sessions/{id}/state",
      group: "terrarium",
      summary: "Replace the session's state (a new snapshot)",
      ...withId,
      requestBody: { required: true, schema: SCHEMAS.state, description: "The new state." },
      responses: {
        "200": {
          description: "The snapshot's index.",
          schema: { type: "object", properties: { snapshot: SCHEMAS.integer }, required: ["snapshot"] },
        },
        "400": BAD_REQUEST,
        "404": NOT_FOUND,
      },
      handle: async (c, params) => {
        const record = await session(c, params.id);
        const snapshot = await engine.setState(record.id, requireObjectState(await jsonValue(c), "the body"));
        return c.json({ snapshot: snapshot.index });
      },
    },
    {
      method: "POST",
      path: "/sessions/{id}/fork",
      group: "terrarium",
      summary: "Fork a session from a snapshot (the latest by default)",
      ...withId,
      requestBody: {
        required: false,
        schema: { type: "object", properties: { snapshot: { type: "integer", minimum: 0 } } },
      },
      responses: {
        "201": {
          description: "The fork.",
          schema: {
            type: "object",
            properties: {
              id: SCHEMAS.string,
              parent: {
                type: "object",
                properties: { session: SCHEMAS.string, snapshot: SCHEMAS.integer },
                required: ["session", "snapshot"],
              },
            },
            required: ["id", "parent"],
          },
        },
        "400": BAD_REQUEST,
        "404": NOT_FOUND,
      },
      handle: async (c, params) => {
        const record = await session(c, params.id);
        const body = await jsonBody(c, true);
        if (
          body.snapshot !== undefined &&
          !(Number.isSafeInteger(body.snapshot) && (body.snapshot as number) >= 0)
        )
          throw new TerrariumError(
            "INVALID_INPUT",
            `"snapshot" must be a snapshot index (an integer ≥ 0), got ${shortJson(body.snapshot)}`,
          );
        const forked = await createSession(c, () =>
          engine.fork(record.id, body.snapshot as number | undefined, c.get("owner")),
        );
        return c.json({ id: forked.id, parent: forked.parent }, 201);
      },
    },
    {
      method: "POST",
      path: "/sessions/{id}/reset",
      group: "terrarium",
      summary: "Back to the session's first state",
      ...withId,
      responses: {
        "200": {
          description: "The new snapshot's index.",
          schema: { type: "object", properties: { snapshot: SCHEMAS.integer }, required: ["snapshot"] },
        },
        "404": NOT_FOUND,
      },
      handle: async (c, params) => {
        const record = await session(c, params.id);
        return c.json({ snapshot: (await engine.reset(record.id)).index });
      },
    },
    {
      method: "GET",
      path: "/sessions/{id}/history",
      group: "terrarium",
      summary: "The session's calls with their outcomes",
      ...withId,
      responses: {
        "200": {
          description: "History entries, oldest first.",
          schema: {
            type: "array",
            items: {
              type: "object",
              properties: {
                index: SCHEMAS.integer,
                at: SCHEMAS.string,
                request: { type: "object" },
                result: { type: "object" },
                simulator: SCHEMAS.string,
              },
              required: ["index", "at", "request", "result", "simulator"],
            },
          },
        },
        "404": NOT_FOUND,
      },
      handle: async (c, params) => c.json(await engine.history((await session(c, params.id)).id)),
    },
    {
      method: "POST",
      path: "/sessions/{id}/calls",
      group: "terrarium",
      summary: "One simulated tool call",
      ...withId,
      requestBody: {
        required: true,
        schema: {
          type: "object",
          properties: { name: SCHEMAS.string, arguments: { type: ["object", "string"] } },
          required: ["name"],
        },
      },
      responses: {
        "200": { description: "The outcome (invalid calls and tool errors too).", schema: CALL_OUTCOME },
        "400": BAD_REQUEST,
        "404": NOT_FOUND,
      },
      handle: async (c, params) =>
        c.json(await sessionCall(engine, c.get("owner"), params.id, bodyTextOf(c))),
    },
    {
      method: "GET",
      path: "/sessions/{id}/export",
      group: "terrarium",
      summary: "The session as a versioned JSON document (never its owner)",
      ...withId,
      responses: {
        "200": {
          description: "The export.",
          schema: SESSION_EXPORT,
        },
        "404": NOT_FOUND,
      },
      // Exports never carry the token hash that owns the session (the engine leaves it out).
      handle: async (c, params) => c.json(await engine.exportSession((await session(c, params.id)).id)),
    },
    {
      method: "POST",
      path: "/sessions/{id}/replay",
      group: "terrarium",
      summary: "Re-run the session's calls on a new session with another simulator policy",
      ...withId,
      requestBody: {
        required: true,
        schema: { type: "object", properties: { simulator: POLICY_SCHEMA }, required: ["simulator"] },
      },
      responses: {
        "201": {
          description: "The new session and each call's outcome.",
          schema: {
            type: "object",
            properties: { id: SCHEMAS.string, outcomes: { type: "array", items: CALL_OUTCOME } },
            required: ["id", "outcomes"],
          },
        },
        "400": BAD_REQUEST,
        "404": NOT_FOUND,
      },
      handle: async (c, params) => {
        const record = await session(c, params.id);
        const body = await jsonBody(c);
        // The engine leaves no session behind a replay that fails; the shape is checked here for a clear 400.
        const policy = checkedPolicy(body.simulator);
        const owner = c.get("owner");
        const replayed = await answeringQuota("terrarium", () =>
          quotas.replay(owner, () => quotas.createSessions(owner, () => engine.replay(record.id, policy))),
        );
        return c.json({ id: replayed.session.id, outcomes: replayed.outcomes }, 201);
      },
    },
    {
      method: "GET",
      path: "/tools",
      group: "terrarium",
      summary: "The catalog: every tool in terrarium's canonical form",
      responses: {
        "200": {
          description: "The catalog.",
          schema: {
            type: "object",
            properties: { schemaVersion: SCHEMAS.integer, tools: { type: "array" } },
            required: ["schemaVersion", "tools"],
          },
        },
      },
      handle: (c) => c.json(engine.catalog.toJSON()),
    },
  ];
}

/** The caller's session, or UNKNOWN_SESSION (others' sessions look like missing ones). */
async function ownedSession(engine: Engine, owner: string | undefined, id: string | undefined) {
  const record = await ownSessionOf(engine, owner, id);
  if (!record) throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
  return record;
}

/** GET /sessions/{id}/state, for the route and the server's fast path alike. */
export async function sessionState(engine: Engine, owner: string | undefined, id: string | undefined) {
  return engine.state((await ownedSession(engine, owner, id)).id);
}

/** Refuses a session that is not the caller's as unknown, from the engine's kept owners (no record read). */
async function checkOwner(
  engine: Engine,
  owner: string | undefined,
  id: string | undefined,
): Promise<string> {
  if (!id || !(await engine.ownsSession(id, owner)))
    throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
  return id;
}

/**
 * POST /sessions/{id}/calls once its body is read: the caller's session (others' look missing), the body
 * `{name, arguments}`, the engine's outcome. The route and the server's fast path (fast-path.ts) both
 * answer through it, so they refuse alike and in the same order.
 */
export async function sessionCall(
  engine: Engine,
  owner: string | undefined,
  id: string | undefined,
  read: BodyText,
): Promise<CallOutcome> {
  const session = await checkOwner(engine, owner, id);
  const body = parseBodyObject(read);
  if (typeof body.name !== "string")
    throw new TerrariumError("INVALID_INPUT", 'the body must be {"name": string, "arguments": object}');
  // The engine checks the owner again at its own read of the session (a kept owner may be stale).
  return engine.call(session, { name: body.name, arguments: body.arguments ?? {} }, { owner });
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

/** States are JSON objects (an environment's or a task's document). */
export function requireObjectState(value: unknown, what: string): Record<string, unknown> {
  if (!isObject(value))
    throw new TerrariumError(
      "INVALID_INPUT",
      `${what} must be a JSON object (a state), got ${shortJson(value)}`,
    );
  return value;
}
