import type pg from "pg";
import { describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/errors.js";
import type { PostgresStore } from "../../src/sessions/postgres-store.js";
import {
  bumpSteps,
  postgresAvailable,
  recordStatements,
  scratchStores,
  sessionRecord,
} from "../helpers/postgres.js";

/**
 * The Postgres store's hot path (issue 25): a call under the session lock costs two statements however
 * long the session is (the lock with what the call reads; the write, which unlocks), a replica whose cached
 * state is behind catches up from the changes the lock's read returns, checkpoints fall where they did,
 * and a one-statement write whose answer is lost is settled by asking, never written twice.
 */
const withPostgres = postgresAvailable("Postgres store hot path");
const scratch = scratchStores("terrarium_pghot", withPostgres);
let schemas = 0;

async function store(
  schema = `hot_${++schemas}`,
  checkpoints?: { maxChain: number; maxChangeRatio: number },
): Promise<PostgresStore> {
  return scratch.open({
    schema,
    poolSize: 2,
    // Each call takes and releases the lock here (kept locks: pg-lease.test.ts).
    leaseMs: 0,
    ...(checkpoints ? { checkpoints } : {}),
  });
}

type Query = (config: unknown, ...rest: unknown[]) => Promise<unknown>;
type Pools = { pool: pg.Pool; locks: pg.Pool; probes: pg.Pool };
const pools = (target: PostgresStore) => target as unknown as Pools;

const record = sessionRecord;
const step = bumpSteps();

/** One call as the engine makes it: under the lock, read the head, write a step that builds on it. */
async function call(target: PostgresStore, id: string, change: (state: State) => State, write = true) {
  return target.withSessionLock(id, async () => {
    const head = await target.head(id);
    const state = head.snapshot.state as State;
    return target.appendStep(id, step(state.n), write ? { state: change(state), reason: "step" } : undefined);
  });
}
interface State {
  n: number;
  log: Record<string, number>;
}
const bump = (state: State): State => ({ n: state.n + 1, log: { ...state.log, [`k${state.n}`]: state.n } });

describe.runIf(withPostgres)("the Postgres store's hot path", () => {
  it("a call under the session lock is two statements, at its 2nd write as at its 200th", async () => {
    const target = await store();
    await target.createSession(record("s"), { n: 0, log: {} });
    const sent = recordStatements(target);
    const perCall: number[] = [];
    for (let i = 0; i < 200; i++) {
      const before = sent.length;
      await call(target, "s", bump);
      perCall.push(sent.length - before);
    }
    // The step's statement releases the lock as it commits: no unlock follows.
    expect(new Set(perCall)).toEqual(new Set([2]));
    expect(sent.slice(-2)).toEqual(["terrarium_lock_v2", "terrarium_step_v2"]);
    // Reads under the lock (the engine's history window) cost nothing more either.
    const before = sent.length;
    await target.withSessionLock("s", async () => {
      await target.head("s");
      await target.history("s", 32);
      await target.history("s", 32);
    });
    await waitFor(() => sent.length - before >= 2);
    expect(sent.slice(before).filter((name) => name.startsWith("terrarium_history"))).toHaveLength(1);
    const latest = await target.latestSnapshot("s");
    expect((latest.state as State).n).toBe(200);
    expect(Object.keys((latest.state as State).log)).toHaveLength(200);
    // What the store says is what a store with no cache reads from the database.
    const fresh = await store(`hot_${schemas}`);
    expect((await fresh.snapshots("s")).map((s) => s.state)).toEqual(
      (await target.snapshots("s")).map((s) => s.state),
    );
    expect(await fresh.history("s", 5)).toEqual(
      await target.withSessionLock("s", () => target.history("s", 5)),
    );
  });

  it("replicas taking turns on a session bring their cached state forward from the lock's read", async () => {
    const schema = `hot_${++schemas}`;
    const replicas = [await store(schema), await store(schema), await store(schema)];
    await (replicas[0] as PostgresStore).createSession(record("t"), { n: 0, log: {} });
    const sent = replicas.map(recordStatements);
    for (let i = 0; i < 30; i++) await call(replicas[i % 3] as PostgresStore, "t", bump);
    // No replica rebuilt a state from its checkpoint statement by statement: the lock's read sufficed.
    for (const list of sent) expect(list.filter((name) => !name.startsWith("terrarium_"))).toEqual([]);
    for (const each of replicas) {
      const { snapshot, lastCall } = await each.withSessionLock("t", () => each.head("t"));
      expect((snapshot.state as State).n).toBe(30);
      expect(lastCall?.index).toBe(29);
      expect(await each.head("t")).toEqual({ snapshot, lastCall, record: record("t") });
    }
    const fresh = await store(schema);
    const states = (await fresh.snapshots("t")).map((s) => (s.state as State).n);
    expect(states).toEqual(Array.from({ length: 31 }, (_, i) => i));
    expect((await fresh.history("t")).map((entry) => [entry.index, entry.snapshot])).toEqual(
      Array.from({ length: 30 }, (_, i) => [i, i + 1]),
    );
  });

  it("stores a checkpoint where the policy says, and steps that change nothing without a snapshot", async () => {
    const schema = `hot_${++schemas}`;
    const target = await store(schema, { maxChain: 3, maxChangeRatio: 100 });
    await target.createSession(record("c"), { n: 0, log: {} });
    for (let i = 0; i < 9; i++) await call(target, "c", bump);
    const entry = await call(target, "c", bump, false);
    expect(entry.snapshot).toBeUndefined();
    expect(entry.index).toBe(9);
    const { rows } = await scratch.admin.query<{ idx: number; whole: boolean }>(
      `SELECT idx, checkpoint IS NOT NULL AS whole FROM ${schema}.terrarium_snapshots WHERE session = 'c' ORDER BY idx`,
    );
    expect(rows.filter((row) => row.whole).map((row) => row.idx)).toEqual([0, 4, 8]);
    const fresh = await store(schema);
    expect((await fresh.snapshots("c")).map((s) => (s.state as State).n)).toEqual(
      Array.from({ length: 10 }, (_, i) => i),
    );
    expect((await fresh.history("c")).map((h) => [h.index, h.snapshot])).toEqual([
      ...Array.from({ length: 9 }, (_, i) => [i, i + 1]),
      [9, undefined],
    ]);
  });

  it("a call that writes twice takes the lock again for its second write, refused if the session moved", async () => {
    const schema = `hot_${++schemas}`;
    const [a, b] = [await store(schema), await store(schema)];
    await a.createSession(record("w"), { n: 0, log: {} });
    await a.withSessionLock("w", async () => {
      const head = await a.head("w");
      await a.appendStep("w", step(0), { state: bump(head.snapshot.state as State), reason: "step" });
      await a.appendSnapshot("w", { n: 10, log: {} }, "set", new Date(Date.UTC(2025, 1, 1)).toISOString());
    });
    expect(((await b.latestSnapshot("w")).state as State).n).toBe(10);
    const error = (await a
      .withSessionLock("w", async () => {
        const head = await a.head("w");
        await a.appendStep("w", step(1), { state: bump(head.snapshot.state as State), reason: "step" });
        // Another replica takes the session between the call's two writes.
        await call(b, "w", bump);
        return a.appendStep("w", step(2), { state: { n: 99, log: {} }, reason: "step" });
      })
      .catch((e: unknown) => e)) as TerrariumError;
    expect(error.code).toBe("STORE_UNAVAILABLE");
    expect((await b.snapshots("w")).map((s) => (s.state as State).n)).toEqual([0, 1, 10, 11, 12]);
  });

  it("a one-statement write whose answer was lost is settled by asking: acknowledged once", async () => {
    const target = await store();
    await target.createSession(record("a"), { n: 0, log: {} });
    loseNextStep(target, "after");
    const entry = await call(target, "a", bump);
    expect(entry).toMatchObject({ index: 0, snapshot: 1 });
    expect((await target.history("a")).map((e) => e.index)).toEqual([0]);
    expect(((await target.latestSnapshot("a")).state as State).n).toBe(1);
    // The next call goes on from there.
    await call(target, "a", bump);
    expect(((await target.latestSnapshot("a")).state as State).n).toBe(2);
  });

  it("a one-statement write that never reached the database: STORE_UNAVAILABLE, nothing stored", async () => {
    const target = await store();
    await target.createSession(record("b"), { n: 0, log: {} });
    loseNextStep(target, "before");
    const error = (await call(target, "b", bump).catch((e: unknown) => e)) as TerrariumError;
    expect(error).toBeInstanceOf(TerrariumError);
    expect(error.code).toBe("STORE_UNAVAILABLE");
    expect(error.details).toBeUndefined();
    expect(await target.history("b")).toEqual([]);
    await call(target, "b", bump);
    expect((await target.history("b")).map((e) => e.index)).toEqual([0]);
  });
});

/** Makes the next step statement fail with a lost connection, after it reached the database or before. */
function loseNextStep(target: PostgresStore, when: "after" | "before"): void {
  let armed = true;
  const { locks } = pools(target);
  locks.on("acquire", (client: pg.PoolClient) => {
    const original = client.query.bind(client) as Query;
    (client as unknown as { query: Query }).query = (config, ...rest) => {
      if (!armed || (config as { name?: string }).name !== "terrarium_step_v2")
        return original(config, ...rest);
      armed = false;
      const lost = () => Promise.reject(new Error("Connection terminated unexpectedly"));
      return when === "after" ? original(config, ...rest).then(lost) : lost();
    };
  });
}

async function waitFor(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
