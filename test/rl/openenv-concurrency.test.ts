import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { ManualClock } from "../../src/core/clock.js";
import { toImmutableJson } from "../../src/core/immutable-json.js";
import { canonicalJson } from "../../src/core/index.js";
import { createRandom, type Random } from "../../src/core/random.js";
import { loadEnvironment } from "../../src/envs/load.js";
import { startServer } from "../../src/server/index.js";
import { MemoryStore } from "../../src/sessions/memory-store.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";
import { OpenEnvWsClient as Client } from "../helpers/openenv-ws-client.js";

/**
 * Many episodes at once: 32 WebSocket connections run 100 steps each on bank, all at the same time, with
 * messages pipelined in bursts. Afterwards every episode's session is exported over HTTP and its calls are
 * run again, alone and in order, on a fresh engine: the state reached must be the one the server stored,
 * call for call, and the history must hold exactly the steps that reached the engine.
 */
const CONNECTIONS = 32;
const STEPS = 100;

type Started = Awaited<ReturnType<typeof startServer>>;
let server: Started;
beforeAll(async () => {
  server = await startServer({ sources: ["bank"], port: 0 });
});
afterAll(async () => {
  await server.close();
});

/** What a step is expected to do: reach the engine (and be entry N of the history) or be answered before. */
interface Planned {
  message: unknown;
  /** The engine call it makes, when it reaches the engine. */
  call?: { name: string; arguments: Record<string, unknown> };
  /** The protocol error it must get instead of an observation. */
  protocolError?: string;
}

const BASE_ACCOUNTS = ["ACC-1001", "ACC-1002", "ACC-2001"];

/** One step of a mixed workload: reads, writes (some fail in the tool), invalid arguments, stray actions. */
function plan(random: Random, accounts: string[]): Planned {
  const any = () => random.pick(accounts);
  const call = (name: string, args: Record<string, unknown>): Planned => ({
    message: { type: "step", data: { type: "call_tool", tool_name: name, arguments: args } },
    call: { name, arguments: args },
  });
  const roll = random.int(0, 99);
  if (roll < 20) return call("get_account", { account_id: any() });
  if (roll < 28) return call("list_accounts", { owner: random.pick(["Maria Lopez", "Dev Patel", "bot"]) });
  if (roll < 55)
    return call("transfer", {
      from_account: any(),
      to_account: any(),
      // Sometimes over the balance or the daily limit: a tool error, recorded like any call.
      amount: random.pick([1, 2.5, 10, 75, 1500]),
      ...(random.int(0, 3) === 0 ? { memo: `m${random.int(0, 999)}` } : {}),
    });
  if (roll < 63)
    return call("open_account", { owner: `owner-${random.int(0, 9)}`, deposit: random.int(0, 500) });
  // Freezes hit accounts the episode opened (or the one already frozen), so transfers keep working.
  const opened = accounts.slice(BASE_ACCOUNTS.length);
  if (roll < 67)
    return call("freeze_account", { account_id: opened.length > 0 ? random.pick(opened) : "ACC-2001" });
  if (roll < 70) return call("close_account", { account_id: any() });
  // Invalid arguments: answered as an observation with invalid_args, and recorded in the history.
  if (roll < 75) return call("transfer", { from_account: any(), to_account: any(), amount: -5 });
  if (roll < 79) return call("open_account", { owner: "", deposit: "lots" });
  if (roll < 82) return call("get_account", {});
  // These never reach the engine.
  if (roll < 88) return { message: { type: "step", data: { type: "list_tools" } } };
  if (roll < 93)
    return {
      message: { type: "step", data: { type: "call_tool", tool_name: "rob_bank", arguments: {} } },
    };
  if (roll < 97)
    return {
      message: { type: "step", data: { type: "call_tool", tool_name: "transfer", arguments: [1, 2] } },
      protocolError: "VALIDATION_ERROR",
    };
  return { message: { type: "state" } };
}

interface Episode {
  sessionId: string;
  /** The engine calls, in the order the answers came back. */
  calls: Array<{ name: string; arguments: Record<string, unknown> }>;
  /** Steps OpenEnv counted (list_tools and unknown tools too). */
  stepCount: number;
}

/** One connection: reset, then STEPS messages sent in bursts of 1 to 5 without waiting in between. */
async function runEpisode(index: number): Promise<Episode> {
  const random = createRandom(`concurrency/${index}`);
  const client = await Client.connect(server.url);
  client.send({ type: "reset", data: { episode_id: `ep-${index}` } });
  const reset = await client.next();
  expect(reset.type).toBe("observation");
  const sessionId = reset.data.observation.metadata.session_id as string;
  const accounts = [...BASE_ACCOUNTS];
  const calls: Episode["calls"] = [];
  let counted = 0;
  let sent = 0;
  while (sent < STEPS) {
    const burst: Planned[] = [];
    const size = Math.min(random.int(1, 5), STEPS - sent);
    for (let i = 0; i < size; i++) burst.push(plan(random, accounts));
    for (const step of burst) client.send(step.message);
    sent += size;
    for (const step of burst) {
      const answer = await client.next();
      const message = step.message as { type: string; data?: { type: string; tool_name?: string } };
      if (step.protocolError) {
        expect(answer).toMatchObject({ type: "error", data: { code: step.protocolError } });
        continue;
      }
      if (message.type === "state") {
        expect(answer).toMatchObject({
          type: "state",
          data: { episode_id: `ep-${index}`, session_id: sessionId },
        });
        expect(answer.data.step_count).toBe(counted);
        continue;
      }
      expect(answer.type).toBe("observation");
      counted++;
      const observation = answer.data.observation;
      expect(observation.metadata.step_count).toBe(counted);
      if (step.call) {
        // The engine's step number is the call's place in this session's history: nothing else got in.
        expect(observation.metadata.step).toBe(calls.length);
        calls.push(step.call);
        const opened = observation.result?.account_id;
        if (step.call.name === "open_account" && observation.error === null && typeof opened === "string")
          accounts.push(opened);
      } else if (message.data?.type === "call_tool") {
        expect(observation.error.error_type).toBe("tool_not_found");
      }
    }
  }
  client.send({ type: "close" });
  expect(await client.closed).toBe(1000);
  return { sessionId, calls, stepCount: counted };
}

/**
 * The session's calls on a fresh engine (its own store, no live instances): the same session id and seed
 * (code environments derive a call's ids from them), and each call at the time the server recorded for it.
 */
async function replayOnFreshEngine(exported: any) {
  const environment = await loadEnvironment("bank");
  const clock = new ManualClock(exported.session.createdAt, 0);
  const engine = new Engine({
    catalog: new Catalog(environment.tools),
    simulators: [new CodeSimulator(environment)],
    store: new MemoryStore(),
    clock,
  });
  await engine.store.createSession(exported.session, toImmutableJson(exported.snapshots[0].state));
  const outcomes = [];
  for (const entry of exported.history) {
    clock.set(entry.at);
    outcomes.push(await engine.call(exported.session.id, entry.request));
  }
  const state = await engine.state(exported.session.id);
  const history = await engine.history(exported.session.id);
  await engine.close();
  return { outcomes, state, history };
}

describe("OpenEnv: many episodes at once", () => {
  it(`${CONNECTIONS} connections × ${STEPS} steps on bank, each final state equal to a replay of its history`, async () => {
    const episodes = await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => runEpisode(i)));
    expect(new Set(episodes.map((episode) => episode.sessionId)).size).toBe(CONNECTIONS);
    expect(server.openenv.active).toBe(0);

    let writes = 0;
    let invalid = 0;
    let transfers = 0;
    for (const episode of episodes) {
      const response = await fetch(`${server.url}/sessions/${episode.sessionId}/export`);
      expect(response.status).toBe(200);
      const exported = (await response.json()) as any;
      const history = exported.history as Array<{ request: unknown; at: string; result: any }>;

      // Exactly the calls that reached the engine, in the order this connection sent them.
      expect(history.length).toBe(episode.calls.length);
      expect(history.map((entry) => entry.request)).toEqual(episode.calls);
      expect(episode.stepCount).toBeGreaterThanOrEqual(episode.calls.length);

      const stored = exported.snapshots.at(-1).state;
      expect(canonicalJson(await server.engine.state(episode.sessionId))).toBe(canonicalJson(stored));

      const replay = await replayOnFreshEngine(exported);
      expect(canonicalJson(replay.state)).toBe(canonicalJson(stored));
      expect(replay.history.length).toBe(history.length);
      for (const [i, outcome] of replay.outcomes.entries()) {
        const recorded = history[i]?.result;
        expect({ status: outcome.status, observation: outcome.observation }).toEqual({
          status: recorded.status,
          observation: recorded.observation,
        });
        if (outcome.changes.length > 0) writes++;
        if (outcome.status === "invalid") invalid++;
        if (episode.calls[i]?.name === "transfer" && outcome.status === "ok") transfers++;
      }
    }
    // The workload did what it is meant to: state changes and refused arguments in every run.
    expect(writes).toBeGreaterThan(CONNECTIONS * 10);
    expect(invalid).toBeGreaterThan(CONNECTIONS * 3);
    expect(transfers).toBeGreaterThan(CONNECTIONS * 5);
  }, 120_000);
});
