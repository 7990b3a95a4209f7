import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { startServer } from "../../src/server/index.js";
import { OpenEnvWsClient as Client } from "../helpers/openenv-ws-client.js";

/** OpenEnv over a real WebSocket at /openenv/ws of `startServer`: a round trip, tokens, capacity. */
type Started = Awaited<ReturnType<typeof startServer>>;
let open: Started;
let secured: Started;
let small: Started;
let impatient: Started;
beforeAll(async () => {
  [open, secured, small, impatient] = await Promise.all([
    startServer({ sources: ["bank"], port: 0, seed: "1" }),
    startServer({ sources: ["bank"], port: 0, tokens: ["alpha"] }),
    startServer({ sources: ["bank"], port: 0, openenv: { maxEpisodes: 1 } }),
    startServer({ sources: ["bank"], port: 0, openenv: { idleTimeoutMs: 200 } }),
  ]);
});
afterAll(async () => {
  await Promise.all([open.close(), secured.close(), small.close(), impatient.close()]);
});

describe("/openenv/ws", () => {
  it("reset, list_tools, call_tool valid and invalid, state, error, close", async () => {
    const client = await Client.connect(open.url);
    const reset = await client.ask({ type: "reset", data: { seed: 3, episode_id: "ws-1" } });
    expect(reset.type).toBe("observation");
    expect(reset.data).toMatchObject({
      reward: null,
      done: false,
      observation: { metadata: { episode_id: "ws-1" } },
    });
    const sessionId = reset.data.observation.metadata.session_id as string;

    const listed = await client.ask({ type: "step", data: { type: "list_tools" } });
    expect(listed.data.observation.tools.map((t: { name: string }) => t.name)).toContain("transfer");

    const valid = await client.ask({
      type: "step",
      data: {
        type: "call_tool",
        tool_name: "transfer",
        arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 100 },
      },
    });
    expect(valid.data.observation).toMatchObject({
      tool_name: "transfer",
      error: null,
      metadata: { status: "ok" },
    });
    const invalid = await client.ask({
      type: "step",
      data: { type: "call_tool", tool_name: "transfer", arguments: { from_account: "ACC-1001", amount: 0 } },
    });
    expect(invalid.type).toBe("observation");
    expect(invalid.data.observation.error.error_type).toBe("invalid_args");

    const state = await client.ask({ type: "state" });
    expect(state).toEqual({
      type: "state",
      data: { episode_id: "ws-1", step_count: 3, session_id: sessionId, done: false },
    });
    expect(await client.ask("{bad")).toMatchObject({ type: "error", data: { code: "INVALID_JSON" } });
    expect(await client.ask({ type: "nope" })).toMatchObject({
      type: "error",
      data: { code: "UNKNOWN_TYPE" },
    });

    // The episode is an engine session like any other: the transfer is in its state.
    const world = (await open.engine.state(sessionId)) as { accounts: Record<string, { balance: number }> };
    expect(world.accounts["ACC-1002"]?.balance).toBe(220.5);

    client.ws.send(JSON.stringify({ type: "close" }));
    expect(await client.closed).toBe(1000);
    expect(open.openenv.active).toBe(0);
  });

  it("messages sent without waiting are all answered, in order, before a close sent after them", async () => {
    // Answers leave in batches (once per event-loop turn): each connection must still get its own, in
    // order, and a close must not overtake the answers before it.
    const clients = await Promise.all([Client.connect(open.url), Client.connect(open.url)]);
    const transfer = (amount: number) => ({
      type: "step",
      data: {
        type: "call_tool",
        tool_name: "transfer",
        arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount },
      },
    });
    for (const [k, client] of clients.entries()) {
      client.send({ type: "reset", data: { episode_id: `burst-${k}` } });
      for (let i = 1; i <= 5; i++) client.send(transfer(i + k));
      client.send({ type: "state" });
      client.send({ type: "close" });
    }
    for (const [k, client] of clients.entries()) {
      const reset = await client.next();
      expect(reset.data.observation.metadata.episode_id).toBe(`burst-${k}`);
      for (let i = 1; i <= 5; i++) {
        const answer = await client.next();
        expect(answer.data.observation).toMatchObject({
          error: null,
          metadata: { episode_id: `burst-${k}`, step: i - 1, step_count: i },
        });
      }
      expect(await client.next()).toMatchObject({
        type: "state",
        data: { episode_id: `burst-${k}`, step_count: 5 },
      });
      expect(await client.closed).toBe(1000);
    }
    expect(open.openenv.active).toBe(0);
  });

  it("the upgrade needs an accepted bearer token when tokens are set", async () => {
    const refused = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${secured.url.replace(/^http/, "ws")}/openenv/ws`);
      ws.on("error", () => undefined);
      ws.once("unexpected-response", (request, response) => {
        resolve(response.statusCode ?? 0);
        request.destroy();
      });
      ws.once("open", () => reject(new Error("opened without a token")));
    });
    expect(refused).toBe(401);
    const wrong = await Client.connect(secured.url, { authorization: "Bearer beta" }).catch(
      (error: Error) => error,
    );
    expect(wrong).toBeInstanceOf(Error);
    const client = await Client.connect(secured.url, { authorization: "Bearer alpha" });
    const reset = await client.ask({ type: "reset" });
    const sessionId = reset.data.observation.metadata.session_id as string;
    // Created under the token, so the token's REST routes see (and can export) it.
    expect((await secured.engine.session(sessionId)).owner).toMatch(/^[0-9a-f]{32}$/);
    client.ws.close();
    await client.closed;
  });

  it("a connection past capacity gets CAPACITY_REACHED and is closed", async () => {
    const first = await Client.connect(small.url);
    expect((await first.ask({ type: "reset" })).type).toBe("observation");
    const second = await Client.connect(small.url);
    expect(await second.next()).toMatchObject({
      type: "error",
      data: { code: "CAPACITY_REACHED", active_sessions: 1, max_sessions: 1 },
    });
    expect(await second.closed).toBe(1013);
    first.ws.close();
    await first.closed;
  });

  it("an idle connection is closed and its engine session deleted", async () => {
    const client = await Client.connect(impatient.url);
    const reset = await client.ask({ type: "reset" });
    const sessionId = reset.data.observation.metadata.session_id as string;
    expect(await client.closed).toBe(1000);
    expect(impatient.openenv.active).toBe(0);
    await expect(impatient.engine.session(sessionId)).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
  });
});
