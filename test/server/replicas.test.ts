import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { canonicalJson } from "../../src/core/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { loadPythonEnvironment } from "../../src/envs/python/environment.js";
import { startServer } from "../../src/server/start.js";
import {
  type HistoryEntry,
  MemoryStore,
  PostgresStore,
  type SessionRecord,
  type Snapshot,
} from "../../src/sessions/index.js";
import { applyTolerantly, CodeSimulator, Engine } from "../../src/sim/index.js";
import { FIXTURES } from "../helpers/paths.js";
import { postgresAvailable, scratchDatabase } from "../helpers/postgres.js";

/**
 * Replicated servers: three `serve bank` servers, each with its own engine and its own cache of live
 * environment instances, share one Postgres database. 100 sessions are driven at once, their calls spread
 * round-robin over the replicas, several calls on one session always in flight together on different
 * replicas. Afterwards every call is stored, snapshots form one consistent chain, and every final state
 * equals a sequential replay of the session's history on a fresh in-memory engine.
 */
const withPostgres = postgresAvailable("replicated servers on Postgres");

const SESSIONS = 100;
/** Rounds per session; in each, one call per replica is sent at once, all on the same session. */
const ROUNDS = 4;
const REPLICAS = 3;

type Replica = Awaited<ReturnType<typeof startServer>>;
let database: Awaited<ReturnType<typeof scratchDatabase>> | undefined;
const replicas: Replica[] = [];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  if (!withPostgres) return;
  database = await scratchDatabase("terrarium_replicas");
  // Small pools: three replicas (and whatever else runs) stay far below max_connections.
  process.env.TERRARIUM_PG_POOL = "5";
  try {
    // Started together: their migrations race, and the advisory lock lets exactly one of them migrate.
    const started = await Promise.all(
      Array.from({ length: REPLICAS }, async () =>
        startServer({ sources: ["bank"], db: (database as { url: string }).url, port: await freePort() }),
      ),
    );
    replicas.push(...started);
  } finally {
    delete process.env.TERRARIUM_PG_POOL;
  }
}, 60_000);

afterAll(async () => {
  for (const replica of replicas.splice(0)) await replica.close();
  await database?.drop();
}, 60_000);

async function post(replica: Replica, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(replica.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

async function get(replica: Replica, path: string): Promise<any> {
  const response = await fetch(replica.url + path);
  expect(response.status).toBe(200);
  return response.json();
}

/** The calls of one round of one session: money moving both ways, accounts opened (fresh ids), reads. */
function roundCalls(session: number, round: number): Array<{ name: string; arguments: unknown }> {
  return Array.from({ length: REPLICAS }, (_, k) => {
    const n = session * 31 + round * 7 + k;
    if (n % 5 === 0) return { name: "open_account", arguments: { owner: `Owner ${n}`, deposit: n % 97 } };
    if (n % 7 === 0) return { name: "get_account", arguments: { account_id: "ACC-1001" } };
    const forward = n % 2 === 0;
    return {
      name: "transfer",
      arguments: {
        from_account: forward ? "ACC-1001" : "ACC-1002",
        to_account: forward ? "ACC-1002" : "ACC-1001",
        amount: (n % 13) + 1,
      },
    };
  });
}

/** Replays a history in order on a fresh in-memory engine: same record (id, seed), same call times. */
async function replay(
  record: SessionRecord,
  initialState: unknown,
  history: HistoryEntry[],
): Promise<{ state: unknown; observations: unknown[] }> {
  const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;
  let now = Date.parse(record.createdAt);
  const store = new MemoryStore();
  const engine = new Engine({
    catalog: new Catalog(bank.tools),
    simulators: [new CodeSimulator(bank)],
    store,
    clock: { now: () => now },
    initialState: await bank.initialState(),
  });
  await store.createSession(record, initialState);
  const observations: unknown[] = [];
  for (const entry of history) {
    now = Date.parse(entry.at);
    observations.push((await engine.call(record.id, entry.request)).observation);
  }
  const state = await engine.state(record.id);
  await engine.close();
  return { state, observations };
}

describe.runIf(withPostgres)("replicated servers sharing one Postgres", () => {
  it("serve 100 concurrent sessions round-robin with racing calls: nothing lost, every state a replay", async () => {
    expect(replicas).toHaveLength(REPLICAS);
    const started = Date.now();
    const ids: string[] = [];
    for (let s = 0; s < SESSIONS; s++) {
      const created = await post(replicas[s % REPLICAS] as Replica, "/sessions", {});
      expect(created.status).toBe(201);
      ids.push(created.json.id);
    }
    const made = new Map<string, number>(ids.map((id) => [id, 0]));
    const served = replicas.map(() => 0);
    await Promise.all(
      ids.map(async (id, s) => {
        for (let round = 0; round < ROUNDS; round++) {
          // One call per replica, on the same session, all in flight together.
          const answers = await Promise.all(
            roundCalls(s, round).map((call, k) => {
              const r = (s + round + k) % REPLICAS;
              served[r] = (served[r] ?? 0) + 1;
              return post(replicas[r] as Replica, `/sessions/${id}/calls`, call);
            }),
          );
          for (const answer of answers) {
            expect(answer.status, JSON.stringify(answer.json)).toBe(200);
            expect(["ok", "tool_error"]).toContain(answer.json.status);
          }
          made.set(id, (made.get(id) ?? 0) + answers.length);
        }
      }),
    );
    const elapsed = Date.now() - started;
    console.info(
      `[replicas] ${SESSIONS * ROUNDS * REPLICAS} calls on ${SESSIONS} sessions over ${REPLICAS} replicas in ${elapsed} ms (${Math.round((SESSIONS * ROUNDS * REPLICAS * 1000) / elapsed)} calls/s)`,
    );
    expect(served.every((n) => n === (SESSIONS * ROUNDS * REPLICAS) / REPLICAS)).toBe(true);

    const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;
    const initial = await bank.initialState();
    let transfersSeen = 0;
    for (const [s, id] of ids.entries()) {
      // Read back through another replica than the one that created the session.
      const reader = replicas[(s + 1) % REPLICAS] as Replica;
      const exported = (await get(reader, `/sessions/${id}/export`)) as {
        session: SessionRecord;
        snapshots: Snapshot[];
        history: HistoryEntry[];
      };
      const state = await get(replicas[(s + 2) % REPLICAS] as Replica, `/sessions/${id}/state`);
      // Nothing lost: one history entry per call made, in order.
      expect(exported.history).toHaveLength(made.get(id) as number);
      expect(exported.history.map((entry) => entry.index)).toEqual(exported.history.map((_, i) => i));
      // One snapshot chain: each state change made exactly the next snapshot, and its recorded changes
      // applied to the one before give it.
      const producing = exported.history.filter((entry) => entry.snapshot !== undefined);
      expect(producing.map((entry) => entry.snapshot)).toEqual(producing.map((_, i) => i + 1));
      expect(exported.snapshots.map((snapshot) => snapshot.index)).toEqual(
        exported.snapshots.map((_, i) => i),
      );
      let replayed = exported.snapshots[0]?.state;
      for (const entry of exported.history) {
        replayed = applyTolerantly(replayed, entry.result.changes as never[]).state;
        if (entry.snapshot !== undefined)
          expect(canonicalJson(replayed)).toBe(canonicalJson(exported.snapshots[entry.snapshot]?.state));
      }
      expect(canonicalJson(state)).toBe(canonicalJson(replayed));
      expect(canonicalJson(state)).toBe(canonicalJson(exported.snapshots.at(-1)?.state));
      // Every final state equals a sequential replay of the history, re-simulated on a fresh engine.
      const again = await replay(
        { ...exported.session, id },
        exported.snapshots[0]?.state ?? initial,
        exported.history,
      );
      expect(canonicalJson(again.state)).toBe(canonicalJson(state));
      expect(again.observations.map((o) => canonicalJson(o))).toEqual(
        exported.history.map((entry) => canonicalJson(entry.result.observation)),
      );
      transfersSeen += exported.history.filter(
        (entry) => entry.request.name === "transfer" && entry.result.status === "ok",
      ).length;
    }
    // The workload did move money (a replay of nothing would prove nothing).
    expect(transfersSeen).toBeGreaterThan(SESSIONS);
  }, 120_000);

  it("two engines on one database, 40 racing calls on one session: the session lock loses no update", async () => {
    const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;
    const engines = [0, 1].map(
      () =>
        new Engine({
          catalog: new Catalog(bank.tools),
          simulators: [new CodeSimulator(bank)],
          store: new PostgresStore((database as { url: string }).url, { poolSize: 3 }),
        }),
    );
    try {
      const initial = (await bank.initialState()) as { accounts: Record<string, { balance: number }> };
      const session = await (engines[0] as Engine).createSession({ state: initial });
      const transfer = { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 };
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (engines[i % 2] as Engine).call(session.id, { name: "transfer", arguments: transfer }),
        ),
      );
      expect(outcomes.map((o) => o.status)).toEqual(outcomes.map(() => "ok"));
      expect(outcomes.map((o) => o.step).sort((a, b) => a - b)).toEqual(outcomes.map((_, i) => i));
      const state = (await (engines[1] as Engine).state(session.id)) as typeof initial & {
        stats: { transfer_count: number };
      };
      expect(state.stats.transfer_count).toBe(40);
      expect(state.accounts["ACC-1001"]?.balance).toBe((initial.accounts["ACC-1001"]?.balance ?? 0) - 40);
    } finally {
      for (const engine of engines) await engine.close();
    }
  }, 60_000);

  it("keeps live instances per replica only: a Python instance is rebuilt once the session moved on elsewhere", async () => {
    const environment = await loadPythonEnvironment(join(FIXTURES, "python", "counter.yaml"));
    const engines = [0, 1].map(
      () =>
        new Engine({
          catalog: new Catalog(environment.tools),
          simulators: [new CodeSimulator(environment, "t")],
          store: new PostgresStore((database as { url: string }).url, { poolSize: 2 }),
        }),
    );
    const [a, b] = engines as [Engine, Engine];
    try {
      const session = await a.createSession({ state: await environment.initialState() });
      const add = (n: number) => ({ name: "add", arguments: { n } });
      // The counter's hidden call count is not in the state: only a replay of the calls brings it back.
      expect((await a.call(session.id, add(1))).observation).toBe(1);
      expect((await b.call(session.id, add(2))).observation).toBe(3);
      expect((await a.call(session.id, add(3))).observation).toBe(6);
      expect((await b.call(session.id, { name: "peek", arguments: {} })).observation).toEqual({
        total: 6,
        rolls: [],
        calls: 3,
      });
      expect((await a.call(session.id, { name: "peek", arguments: {} })).observation).toEqual({
        total: 6,
        rolls: [],
        calls: 3,
      });
    } finally {
      for (const engine of engines) await engine.close();
    }
  }, 60_000);
});
