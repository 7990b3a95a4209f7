import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Tool } from "../../src/catalog/tool.js";
import {
  type EpisodeSource,
  type OpenEnvMessageOut,
  OpenEnvServer,
  type OpenEnvSession,
  plainWorldSource,
} from "../../src/rl/openenv/index.js";
import type { Env } from "../../src/server/http.js";
import { openEnvRoutes } from "../../src/server/openenv-routes.js";
import type { Engine } from "../../src/sim/engine.js";
import { buildEngine } from "../../src/sim/index.js";

/** The OpenEnv protocol over the transport-independent layer: every message type and every error code. */
let engine: Engine;
beforeAll(async () => {
  engine = (await buildEngine({ sources: ["bank"], seed: "1" })).engine;
});
afterAll(() => engine.close());

const servers: OpenEnvServer[] = [];
function server(options: Partial<ConstructorParameters<typeof OpenEnvServer>[1]> = {}): OpenEnvServer {
  const made = new OpenEnvServer(engine, { source: plainWorldSource(engine), idleTimeoutMs: 0, ...options });
  servers.push(made);
  return made;
}
afterAll(async () => {
  for (const made of servers) await made.close();
});

async function send(session: OpenEnvSession, message: unknown): Promise<OpenEnvMessageOut | undefined> {
  return session.handleText(typeof message === "string" ? message : JSON.stringify(message));
}
async function observation(session: OpenEnvSession, message: unknown) {
  const answer = await send(session, message);
  if (answer?.type !== "observation")
    throw new Error(`expected an observation, got ${JSON.stringify(answer)}`);
  return answer.data as { observation: Record<string, any>; reward: number | null; done: boolean };
}
/** A JSON-RPC answer's data (fails the test when the answer is not one). */
function rpc(answer: OpenEnvMessageOut | undefined): any {
  if (answer?.type !== "mcp") throw new Error(`expected an mcp answer, got ${JSON.stringify(answer)}`);
  return answer.data;
}
async function errorOf(session: OpenEnvSession, message: unknown) {
  const answer = await send(session, message);
  if (answer?.type !== "error") throw new Error(`expected an error, got ${JSON.stringify(answer)}`);
  return answer.data;
}

describe("messages", () => {
  it("reset: tools, episode and session ids in metadata, reward null, done false; state follows", async () => {
    const session = server().open(undefined);
    expect((await send(session, { type: "state" }))?.data).toEqual({
      episode_id: null,
      step_count: 0,
      session_id: null,
      done: false,
    });
    const reset = await observation(session, { type: "reset", data: { seed: 7, episode_id: "ep-1" } });
    expect(reset.reward).toBeNull();
    expect(reset.done).toBe(false);
    expect(reset.observation.tools.map((t: { name: string }) => t.name)).toContain("get_account");
    expect(reset.observation.tools[0]).toHaveProperty("input_schema.type", "object");
    expect(reset.observation.metadata).toMatchObject({ status: "ready", episode_id: "ep-1" });
    const sessionId = reset.observation.metadata.session_id as string;
    expect((await engine.session(sessionId)).seed).toBe("openenv/7");
    const state = await send(session, { type: "state" });
    expect(state).toEqual({
      type: "state",
      data: { episode_id: "ep-1", step_count: 0, session_id: sessionId, done: false },
    });
    // Without episode_id a fresh one is made for every reset, and each reset is a fresh engine session.
    const again = await observation(session, { type: "reset" });
    expect(again.observation.metadata.episode_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(again.observation.metadata.session_id).not.toBe(sessionId);
  });

  it("step list_tools and call_tool: result, error null, metadata; invalid arguments are an invalid_args error", async () => {
    const session = server().open(undefined);
    await observation(session, { type: "reset" });
    const listed = await observation(session, { type: "step", data: { type: "list_tools" } });
    expect(listed.observation.tools).toHaveLength(engine.catalog.tools.length);
    expect(listed.observation.metadata.step_count).toBe(1);

    const call = await observation(session, {
      type: "step",
      data: { type: "call_tool", tool_name: "get_account", arguments: { account_id: "ACC-1001" } },
    });
    expect(call.done).toBe(false);
    expect(call.reward).toBeNull();
    expect(call.observation.tool_name).toBe("get_account");
    expect(call.observation.error).toBeNull();
    expect(call.observation.result).toMatchObject({ balance: 2500, owner: "Maria Lopez" });
    expect(call.observation.metadata).toMatchObject({ status: "ok", step: 0, step_count: 2 });

    const invalid = await observation(session, {
      type: "step",
      data: { type: "call_tool", tool_name: "open_account", arguments: { owner: "Ann", deposit: -5 } },
    });
    expect(invalid.observation.error.error_type).toBe("invalid_args");
    expect(Object.keys(invalid.observation.error).sort()).toEqual(["error_type", "message"]);
    expect(invalid.observation.error.message).toMatch(/\/deposit/);
    expect(invalid.observation.metadata.status).toBe("invalid");
    expect(invalid.observation.metadata.violations[0]).toMatchObject({ path: "/deposit" });

    const unknown = await observation(session, {
      type: "step",
      data: { type: "call_tool", tool_name: "rob_bank", arguments: {} },
    });
    expect(unknown.observation.error).toMatchObject({ error_type: "tool_not_found" });
    expect((await send(session, { type: "state" }))?.data).toMatchObject({ step_count: 4 });
    // Both calls that reached the engine are in the session's history (invalid ones included).
    const history = await engine.history(session.sessionId as string);
    expect(history.map((entry) => entry.result.status)).toEqual(["ok", "invalid"]);
  });

  it("episodes are isolated engine sessions", async () => {
    const made = server();
    const a = made.open(undefined);
    const b = made.open(undefined);
    await observation(a, { type: "reset" });
    await observation(b, { type: "reset" });
    const opened = await observation(a, {
      type: "step",
      data: { type: "call_tool", tool_name: "open_account", arguments: { owner: "Ann", deposit: 10 } },
    });
    expect(opened.observation.error).toBeNull();
    const mine = await observation(a, {
      type: "step",
      data: { type: "call_tool", tool_name: "list_accounts", arguments: { owner: "Ann" } },
    });
    const theirs = await observation(b, {
      type: "step",
      data: { type: "call_tool", tool_name: "list_accounts", arguments: { owner: "Ann" } },
    });
    expect(mine.observation.result.account_ids).toHaveLength(1);
    expect(theirs.observation.result.account_ids).toEqual([]);
  });

  it("mcp: tools/list and tools/call as JSON-RPC, errors with JSON-RPC codes", async () => {
    const session = server().open(undefined);
    const before = await send(session, {
      type: "mcp",
      data: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    expect(before?.type).toBe("mcp");
    expect(rpc(before).result.tools[0]).toHaveProperty("inputSchema");
    const noEpisode = await send(session, {
      type: "mcp",
      data: { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_account", arguments: {} } },
    });
    expect(rpc(noEpisode).error.code).toBe(-32000);
    await observation(session, { type: "reset" });
    const called = await send(session, {
      type: "mcp",
      data: {
        jsonrpc: "2.0",
        id: "c",
        method: "tools/call",
        params: { name: "get_account", arguments: { account_id: "ACC-1002" } },
      },
    });
    expect(called?.data).toMatchObject({ jsonrpc: "2.0", id: "c", result: { isError: false } });
    expect(rpc(called).result.structuredContent).toMatchObject({ balance: 120.5 });
    const invalid = await send(session, {
      type: "mcp",
      data: { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "get_account", arguments: {} } },
    });
    expect(rpc(invalid).result.isError).toBe(true);
    const missing = await send(session, {
      type: "mcp",
      data: { jsonrpc: "2.0", id: 4, method: "prompts/list" },
    });
    expect(rpc(missing).error.code).toBe(-32601);
    const bad = await send(session, { type: "mcp", data: { method: "tools/list" } });
    expect(rpc(bad).error.code).toBe(-32600);
  });

  it("close frees the slot and keeps the engine session; later messages are errors", async () => {
    const made = server();
    const session = made.open(undefined);
    await observation(session, { type: "reset" });
    expect(made.active).toBe(1);
    expect(await send(session, { type: "close" })).toBeUndefined();
    expect(made.active).toBe(0);
    expect(await engine.session(session.sessionId as string)).toBeTruthy();
    expect((await errorOf(session, { type: "state" })).code).toBe("EXECUTION_ERROR");
  });

  it("schema and metadata follow OpenEnv's SchemaResponse and EnvironmentMetadata", () => {
    const made = server({ name: "bank", version: "9.9.9" });
    const schema = made.schema();
    expect(Object.keys(schema).sort()).toEqual(["action", "observation", "state"]);
    expect(JSON.stringify(schema.action)).toContain("call_tool");
    expect(made.metadata()).toMatchObject({ name: "bank", version: "9.9.9", readme_content: null });
  });
});

describe("error codes", () => {
  it("INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR, EXECUTION_ERROR", async () => {
    const made = server({ maxMessageBytes: 2000 });
    const session = made.open(undefined);
    expect(await errorOf(session, "{not json")).toMatchObject({ code: "INVALID_JSON" });
    expect((await errorOf(session, `${"[".repeat(300)}${"]".repeat(300)}`)).code).toBe("INVALID_JSON");
    expect(await errorOf(session, { type: "dance" })).toMatchObject({
      code: "UNKNOWN_TYPE",
      message: "Unknown message type: dance",
    });
    expect((await errorOf(session, {})).code).toBe("UNKNOWN_TYPE");
    expect((await errorOf(session, [1, 2])).code).toBe("VALIDATION_ERROR");
    expect((await errorOf(session, { type: "state", extra: 1 })).code).toBe("VALIDATION_ERROR");
    expect((await errorOf(session, { type: "reset", data: { seed: -1 } })).code).toBe("VALIDATION_ERROR");
    expect((await errorOf(session, { type: "reset", data: { episode_id: 5 } })).code).toBe(
      "VALIDATION_ERROR",
    );
    expect((await errorOf(session, { type: "reset", data: { task_id: "t1" } })).message).toMatch(/no tasks/);
    expect((await errorOf(session, { type: "step", data: { type: "call_tool" } })).code).toBe(
      "VALIDATION_ERROR",
    );
    expect((await errorOf(session, { type: "step", data: { type: "fly" } })).code).toBe("VALIDATION_ERROR");
    expect(
      (await errorOf(session, { type: "step", data: { type: "list_tools", surprise: true } })).code,
    ).toBe("VALIDATION_ERROR");
    expect(
      (await errorOf(session, { type: "step", data: { type: "call_tool", tool_name: "x", arguments: [1] } }))
        .code,
    ).toBe("VALIDATION_ERROR");
    expect((await errorOf(session, { type: "reset", data: { pad: "x".repeat(3000) } })).message).toMatch(
      /larger than 2000 bytes/,
    );
    // The limit is in bytes of UTF-8: 680 euro signs are under 2000 characters but over 2000 bytes.
    expect((await errorOf(session, { type: "reset", data: { pad: "€".repeat(680) } })).message).toMatch(
      /larger than 2000 bytes/,
    );
    expect(
      (
        await observation(session, {
          type: "step",
          data: { type: "list_tools", metadata: { pad: "€".repeat(600) } },
        })
      ).observation.tools,
    ).toHaveLength(engine.catalog.tools.length);
    // A call before any reset: there is no episode to run it in.
    expect(
      await errorOf(session, { type: "step", data: { type: "call_tool", tool_name: "get_account" } }),
    ).toMatchObject({ code: "EXECUTION_ERROR", message: expect.stringMatching(/reset first/) });
    // list_tools needs no reset (OpenEnv's rule).
    expect(
      (await observation(session, { type: "step", data: { type: "list_tools" } })).observation.tools,
    ).toHaveLength(engine.catalog.tools.length);
    // Keys such as __proto__ are plain data, never merged into anything.
    await observation(session, { type: "reset", data: JSON.parse('{"__proto__":{"polluted":1}}') });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("CAPACITY_REACHED past maxEpisodes, with the counts; a closed slot makes room", async () => {
    const made = server({ maxEpisodes: 2 });
    const first = made.open(undefined);
    made.open(undefined);
    let refused: unknown;
    try {
      made.open(undefined);
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({
      code: "CAPACITY_REACHED",
      extra: { active_sessions: 2, max_sessions: 2 },
    });
    await first.close();
    expect(made.open(undefined)).toBeTruthy();
  });

  it("max steps end the episode (done true); a step after that is EXECUTION_ERROR", async () => {
    const session = server({ maxSteps: 2 }).open(undefined);
    const reset = await observation(session, { type: "reset" });
    expect(reset.observation.metadata.max_steps).toBe(2);
    expect((await observation(session, { type: "step", data: { type: "list_tools" } })).done).toBe(false);
    const last = await observation(session, {
      type: "step",
      data: { type: "call_tool", tool_name: "get_account", arguments: { account_id: "ACC-1001" } },
    });
    expect(last.done).toBe(true);
    expect(last.observation.metadata.end_reason).toBe("max_steps");
    expect(
      (await errorOf(session, { type: "step", data: { type: "call_tool", tool_name: "get_account" } })).code,
    ).toBe("EXECUTION_ERROR");
  });
});

describe("episode sources and idle reaping", () => {
  it("a source's finish tool ends the episode with its score: reward and reward_breakdown", async () => {
    const finish: Tool = {
      name: "finish",
      description: "End the episode.",
      inputSchema: { type: "object", properties: {} },
      effect: "write",
      effectSource: "declared",
      origin: { kind: "manual" } as unknown as Tool["origin"],
    };
    const plain = plainWorldSource(engine);
    const scored: string[] = [];
    const source: EpisodeSource = {
      defaultTools: plain.defaultTools,
      async reset(options) {
        const start = await plain.reset({ ...options, taskId: undefined } as typeof options);
        return { ...start, finishTool: finish, observation: { instruction: `do ${options.taskId}` } };
      },
      async score(sessionId, ended) {
        scored.push(`${sessionId}:${ended.reason}`);
        return { reward: 0.5, breakdown: { db: 1, nl: null, actions: 0.5 } };
      },
    };
    const session = server({ source }).open(undefined);
    const reset = await observation(session, { type: "reset", data: { task_id: "t-1" } });
    expect(reset.observation.instruction).toBe("do t-1");
    expect(reset.observation.tools.map((t: { name: string }) => t.name)).toContain("finish");
    const done = await observation(session, {
      type: "step",
      data: { type: "call_tool", tool_name: "finish", arguments: {} },
    });
    expect(done).toMatchObject({ reward: 0.5, done: true });
    expect(done.observation.metadata.reward_breakdown).toEqual({ db: 1, nl: null, actions: 0.5 });
    expect(scored).toEqual([`${session.sessionId}:finish`]);
    expect((await send(session, { type: "state" }))?.data).toMatchObject({
      task_id: "t-1",
      done: true,
      reward: 0.5,
    });
  });

  it("a slot idle past the timeout is closed and its engine session deleted", async () => {
    let now = 1_000_000;
    const made = server({ idleTimeoutMs: 60_000, now: () => now });
    let reaped = 0;
    const idle = made.open(undefined, () => reaped++);
    const busy = made.open(undefined);
    await observation(idle, { type: "reset" });
    await observation(busy, { type: "reset" });
    const idleSession = idle.sessionId as string;
    now += 59_000;
    expect(await made.reap()).toBe(0);
    await observation(busy, { type: "step", data: { type: "list_tools" } });
    now += 2_000;
    expect(await made.reap()).toBe(1);
    expect(reaped).toBe(1);
    expect(idle.isClosed).toBe(true);
    expect(busy.isClosed).toBe(false);
    expect(made.active).toBe(1);
    await expect(engine.session(idleSession)).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
  });
});

describe("HTTP routes", () => {
  /** The routes behind the same variables the app's middlewares set (body text, owner, depth). */
  function app(made: OpenEnvServer): Hono<Env> {
    const hono = new Hono<Env>();
    hono.use("*", async (c, next) => {
      // Stands for the token check: the owner the app's auth middleware would set.
      c.set("owner", c.req.header("x-test-owner"));
      c.set("maxDepth", 256);
      c.set("bodyError", undefined);
      c.set("body", c.req.raw.body ? await c.req.text() : undefined);
      await next();
    });
    for (const route of openEnvRoutes(made)) hono.on(route.method, route.path, (c) => route.handle(c, {}));
    return hono;
  }
  const post = (body: unknown) => ({
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

  it("reset, step with episode_id, state, stateless step, schema, metadata, health, mcp", async () => {
    const made = server();
    const http = app(made);
    const reset = await http.request("/openenv/reset", post({ episode_id: "h-1" }));
    expect(reset.status).toBe(200);
    const first = (await reset.json()) as { observation: any; reward: null; done: boolean };
    expect(first).toMatchObject({
      reward: null,
      done: false,
      observation: { metadata: { episode_id: "h-1" } },
    });
    const step = await http.request(
      "/openenv/step",
      post({
        action: { type: "call_tool", tool_name: "get_account", arguments: { account_id: "ACC-1001" } },
        episode_id: "h-1",
        timeout_s: 5,
      }),
    );
    expect(await step.json()).toMatchObject({
      observation: { tool_name: "get_account", error: null, result: { balance: 2500 } },
      reward: null,
      done: false,
    });
    expect(await (await http.request("/openenv/state?episode_id=h-1")).json()).toMatchObject({
      episode_id: "h-1",
      step_count: 1,
    });
    expect(await (await http.request("/openenv/state")).json()).toMatchObject({
      episode_id: null,
      step_count: 0,
    });
    // Without episode_id: OpenEnv's stateless step, on a fresh world that is deleted afterwards.
    const stateless = await http.request("/openenv/step", post({ action: { type: "list_tools" } }));
    expect(((await stateless.json()) as any).observation.tools).toHaveLength(engine.catalog.tools.length);
    expect(made.active).toBe(1);
    expect(await (await http.request("/openenv/health")).json()).toEqual({ status: "healthy" });
    expect(Object.keys((await (await http.request("/openenv/schema")).json()) as object).sort()).toEqual([
      "action",
      "observation",
      "state",
    ]);
    expect(await (await http.request("/openenv/metadata")).json()).toMatchObject({ name: "terrarium" });
    const rpc = await http.request(
      "/openenv/mcp",
      post({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "get_account", arguments: { account_id: "ACC-1001" }, session_id: "h-1" },
      }),
    );
    expect(await rpc.json()).toMatchObject({ jsonrpc: "2.0", id: 1, result: { isError: false } });
    expect(await (await http.request("/openenv/state?episode_id=h-1")).json()).toMatchObject({
      step_count: 2,
    });
    const parse = await http.request("/openenv/mcp", post("{oops"));
    expect(((await parse.json()) as any).error.code).toBe(-32700);
  });

  it("errors: 400 INVALID_JSON, 422 VALIDATION_ERROR, 404 unknown episode, 503 CAPACITY_REACHED", async () => {
    const made = server({ maxEpisodes: 1 });
    const http = app(made);
    const badJson = await http.request("/openenv/reset", post("{nope"));
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ code: "INVALID_JSON" });
    const noAction = await http.request("/openenv/step", post({}));
    expect(noAction.status).toBe(422);
    expect(await noAction.json()).toMatchObject({ code: "VALIDATION_ERROR", detail: expect.any(String) });
    const unknown = await http.request(
      "/openenv/step",
      post({ action: { type: "list_tools" }, episode_id: "nope" }),
    );
    expect(unknown.status).toBe(404);
    // Another caller's episode looks like a missing one.
    const mine = await http.request("/openenv/reset", {
      ...post({ episode_id: "owned" }),
      headers: { "content-type": "application/json", "x-test-owner": "alice" },
    });
    expect(mine.status).toBe(200);
    const theirs = await http.request("/openenv/state?episode_id=owned", {
      headers: { "x-test-owner": "bob" },
    });
    expect(theirs.status).toBe(404);
    const alice = await http.request("/openenv/state?episode_id=owned", {
      headers: { "x-test-owner": "alice" },
    });
    expect(await alice.json()).toMatchObject({ episode_id: "owned" });
    const full = await http.request("/openenv/reset", post({}));
    expect(full.status).toBe(503);
    expect(await full.json()).toMatchObject({ code: "CAPACITY_REACHED", max_sessions: 1 });
  });
});
