import { parseJsonText } from "../core/checked-json.js";
import { errorMessage, OpenEnvError, type OpenEnvServer, type OpenEnvSession } from "../rl/openenv/server.js";
import { type AppContext, jsonResponse } from "./http.js";
import type { Route } from "./route-table.js";

/** HTTP statuses of the protocol's error codes. */
const STATUS: Record<string, number> = {
  INVALID_JSON: 400,
  UNKNOWN_TYPE: 400,
  VALIDATION_ERROR: 422,
  EXECUTION_ERROR: 409,
  CAPACITY_REACHED: 503,
};

/** An error as FastAPI answers one (`detail`), with OpenEnv's code beside it. */
function failure(error: unknown): Response {
  const { data } = errorMessage(error) as {
    data: { message: string; code: string } & Record<string, unknown>;
  };
  const { message, code, ...rest } = data;
  return jsonResponse(STATUS[code] ?? 500, { detail: message, code, ...rest });
}

function body(c: AppContext, server: OpenEnvServer, optional: boolean): Record<string, unknown> {
  const problem = c.get("bodyError");
  if (problem) throw new OpenEnvError("INVALID_JSON", problem);
  const text = c.get("body") ?? "";
  if (text.trim() === "") {
    if (optional) return {};
    throw new OpenEnvError("VALIDATION_ERROR", "the request needs a JSON body");
  }
  // Parsing (with the size and depth limits) and the message's shape are the WebSocket's own checks.
  if (Buffer.byteLength(text, "utf8") > server.maxMessageBytes)
    throw new OpenEnvError("VALIDATION_ERROR", `the body is larger than ${server.maxMessageBytes} bytes`);
  let value: unknown;
  try {
    value = parseJsonText(text, server.maxJsonDepth, "the body");
  } catch (error) {
    throw new OpenEnvError("INVALID_JSON", `Invalid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new OpenEnvError("VALIDATION_ERROR", "the body must be a JSON object");
  return value as Record<string, unknown>;
}

/** Where an HTTP episode is kept: by its caller's token hash and its id. */
function episodeKey(owner: string | undefined, id: string): string {
  return `${owner ?? ""}\u0000${id}`;
}

/** The HTTP episode a request names (`episode_id`), if it is the caller's. */
function held(server: OpenEnvServer, c: AppContext, id: unknown): OpenEnvSession | undefined {
  if (id === undefined || id === null) return undefined;
  const session =
    typeof id === "string" ? server.httpEpisodes.get(episodeKey(c.get("owner"), id)) : undefined;
  if (!session || session.isClosed || session.owner !== c.get("owner"))
    throw new OpenEnvError("EXECUTION_ERROR", `there is no open HTTP episode ${String(id).slice(0, 80)}`, {
      status: 404,
    });
  session.lastActivity = server.now();
  return session;
}

/**
 * OpenEnv's HTTP routes under `prefix` (default `/openenv`), as route-table entries for the app:
 * - `POST /reset` starts an episode held for HTTP (a slot, reaped when idle) and returns OpenEnv's
 *   ResetResponse; its `observation.metadata.episode_id` names it.
 * - `POST /step` (`{action, episode_id?, timeout_s?, request_id?}`) steps that episode; without
 *   `episode_id` it is OpenEnv's stateless step: a fresh plain episode for this one action, then closed.
 * - `GET /state?episode_id=…`, `GET /schema`, `GET /metadata`, `GET /health`, `POST /mcp` (JSON-RPC
 *   `tools/list`, `tools/call`; `params.session_id` names an HTTP episode).
 * Errors answer `{detail, code}` with 400 (INVALID_JSON, UNKNOWN_TYPE), 422 (VALIDATION_ERROR), 409
 * (EXECUTION_ERROR), 404 (no such episode) or 503 (CAPACITY_REACHED).
 */
export function openEnvRoutes(server: OpenEnvServer, prefix = "/openenv"): Route<AppContext>[] {
  const guarded =
    (handle: (c: AppContext) => Promise<Response> | Response) =>
    async (c: AppContext): Promise<Response> => {
      try {
        return await handle(c);
      } catch (error) {
        if (error instanceof OpenEnvError && error.extra.status === 404) {
          return jsonResponse(404, { detail: error.message, code: error.code });
        }
        return failure(error);
      }
    };
  /** A one-action slot (OpenEnv's stateless HTTP): closed, and its engine session deleted, once it answers. */
  const oneShot = async <T>(c: AppContext, run: (session: OpenEnvSession) => Promise<T>): Promise<T> => {
    const session = server.open(c.get("owner"));
    try {
      return await run(session);
    } finally {
      const sessionId = session.sessionId;
      await session.close();
      if (sessionId) await server.engine.deleteSession(sessionId).catch(() => false);
    }
  };
  const object = { type: "object" } as const;
  return [
    {
      method: "POST",
      path: `${prefix}/reset`,
      group: "terrarium",
      summary: "OpenEnv: start an episode held for HTTP (ResetResponse)",
      requestBody: {
        required: false,
        schema: {
          type: "object",
          properties: {
            seed: { type: "integer" },
            episode_id: { type: "string" },
            task_id: { type: "string" },
          },
        },
      },
      responses: {
        "200": { description: "The first observation, reward null, done false.", schema: object },
      },
      handle: guarded(async (c) => {
        const data = body(c, server, true);
        const session = server.open(c.get("owner"));
        try {
          const result = await session.reset(data);
          // The same caller's reset with an episode id it already holds replaces that episode (its
          // engine session stays); other callers' ids never meet (the key holds the owner).
          const key = episodeKey(c.get("owner"), session.episodeId as string);
          const previous = server.httpEpisodes.get(key);
          if (previous) await previous.close();
          server.httpEpisodes.set(key, session);
          return jsonResponse(200, result);
        } catch (error) {
          await session.close();
          throw error;
        }
      }),
    },
    {
      method: "POST",
      path: `${prefix}/step`,
      group: "terrarium",
      summary: "OpenEnv: one action (StepResponse)",
      requestBody: {
        required: true,
        schema: {
          type: "object",
          properties: {
            action: { type: "object" },
            episode_id: { type: "string" },
            timeout_s: { type: "number" },
            request_id: { type: "string" },
          },
          required: ["action"],
        },
      },
      responses: { "200": { description: "The observation, reward and done.", schema: object } },
      handle: guarded(async (c) => {
        const request = body(c, server, false);
        if (!Object.hasOwn(request, "action"))
          throw new OpenEnvError("VALIDATION_ERROR", "Invalid request: action is required");
        const session = held(server, c, request.episode_id);
        if (session) return jsonResponse(200, await session.step(request.action));
        return jsonResponse(
          200,
          await oneShot(c, async (fresh) => {
            await fresh.reset({});
            return fresh.step(request.action);
          }),
        );
      }),
    },
    {
      method: "GET",
      path: `${prefix}/state`,
      group: "terrarium",
      summary: "OpenEnv: an HTTP episode's state (episode_id, step_count, session_id, done)",
      parameters: [{ name: "episode_id", in: "query", schema: { type: "string" } }],
      responses: { "200": { description: "The state.", schema: object } },
      handle: guarded((c) => {
        const session = held(server, c, c.req.query("episode_id"));
        return jsonResponse(
          200,
          session ? session.state() : { episode_id: null, step_count: 0, session_id: null, done: false },
        );
      }),
    },
    {
      method: "GET",
      path: `${prefix}/schema`,
      group: "terrarium",
      summary: "OpenEnv: JSON schemas of the action, the observation and the state",
      responses: { "200": { description: "{action, observation, state}.", schema: object } },
      handle: guarded(() => jsonResponse(200, server.schema())),
    },
    {
      method: "GET",
      path: `${prefix}/metadata`,
      group: "terrarium",
      summary: "OpenEnv: the environment's metadata",
      responses: { "200": { description: "EnvironmentMetadata.", schema: object } },
      handle: guarded(() => jsonResponse(200, server.metadata())),
    },
    {
      method: "GET",
      path: `${prefix}/health`,
      group: "terrarium",
      summary: "OpenEnv: health ({status: healthy})",
      responses: { "200": { description: "Healthy.", schema: object } },
      handle: guarded(() => jsonResponse(200, { status: "healthy" })),
    },
    {
      method: "POST",
      path: `${prefix}/mcp`,
      group: "terrarium",
      summary: "OpenEnv: MCP JSON-RPC (tools/list, tools/call)",
      requestBody: {
        required: true,
        schema: {
          type: "object",
          properties: {
            jsonrpc: { const: "2.0" },
            id: {},
            method: { type: "string" },
            params: { type: "object" },
          },
          required: ["jsonrpc", "method"],
        },
      },
      responses: { "200": { description: "A JSON-RPC answer.", schema: object } },
      handle: async (c) => {
        let request: Record<string, unknown>;
        try {
          request = body(c, server, false);
        } catch {
          return jsonResponse(200, {
            jsonrpc: "2.0",
            id: null,
            error: { code: -32700, message: "Parse error", data: null },
          });
        }
        const params = request.params;
        const named =
          params !== null &&
          typeof params === "object" &&
          !Array.isArray(params) &&
          Object.hasOwn(params, "session_id")
            ? (params as Record<string, unknown>).session_id
            : undefined;
        try {
          const session = held(server, c, named);
          if (session) return jsonResponse(200, await session.mcp(request));
          const answer = await oneShot(c, async (fresh) => {
            if (request.method === "tools/call") await fresh.reset({});
            return fresh.mcp(request);
          });
          return jsonResponse(200, answer);
        } catch (error) {
          const id = typeof request.id === "string" || typeof request.id === "number" ? request.id : null;
          return jsonResponse(200, {
            jsonrpc: "2.0",
            id,
            error: {
              code: -32000,
              message: error instanceof Error ? error.message : String(error),
              data: null,
            },
          });
        }
      },
    },
  ];
}
