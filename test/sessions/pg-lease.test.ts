import type pg from "pg";
import { describe, expect, it } from "vitest";
import type { PostgresStore } from "../../src/sessions/postgres-store.js";
import {
  bumpSteps,
  postgresAvailable,
  recordStatements,
  scratchStores,
  sessionRecord,
} from "../helpers/postgres.js";

/**
 * The Postgres store keeps a session's lock between calls of one replica (issue 25): the next call there
 * costs one statement, another replica still gets the session (it waits for the kept lock to end), a kept
 * lock whose connection dies is dropped, and a replica whose calls never stop lets the lock go. Also: a
 * database written by the store before (checkpoints without their changes) keeps working, and a state
 * that grows is not written whole every 100 steps.
 */
const withPostgres = postgresAvailable("Postgres store kept locks");
const scratch = scratchStores("terrarium_pglease", withPostgres);
let schemas = 0;

async function store(
  schema: string,
  options: {
    leaseMs?: number;
    lockPoolSize?: number;
    checkpoints?: { maxChain: number; maxChangeRatio: number };
  } = {},
): Promise<PostgresStore> {
  return scratch.open({ schema, poolSize: 2, lockPoolSize: 4, ...options });
}

type Internals = { locks: pg.Pool; pool: pg.Pool; leases: Map<string, { client: pg.PoolClient }> };
const internals = (target: PostgresStore) => target as unknown as Internals;

const record = sessionRecord;
/** A group commit's statement: with the look for waiting replicas, or without it (see WAITER_PROBE_MS). */
const isGroupCommit = (name: string) => name === "terrarium_steps_v2" || name === "terrarium_steps_quiet_v2";
const step = bumpSteps();
interface State {
  n: number;
  log: Record<string, number>;
  blob?: string;
}
const bump = (state: State): State => ({
  ...state,
  n: state.n + 1,
  log: { ...state.log, [`k${state.n}`]: state.n },
});

/** One call as the engine makes it: under the lock, read the head, write a step that builds on it. */
function call(target: PostgresStore, id: string) {
  return target.withSessionLock(id, async () => {
    const head = await target.head(id);
    return target.appendStep(id, step((head.snapshot.state as State).n), {
      state: bump(head.snapshot.state as State),
      reason: "step",
    });
  });
}

async function waitFor(check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** What a store with nothing cached reads: every snapshot's n, and the history's indexes. */
async function stored(schema: string, id: string) {
  const fresh = await store(schema, { leaseMs: 0 });
  return {
    states: (await fresh.snapshots(id)).map((s) => (s.state as State).n),
    history: (await fresh.history(id)).map((entry) => [entry.index, entry.snapshot]),
  };
}
const consecutive = (calls: number) => ({
  states: Array.from({ length: calls + 1 }, (_, i) => i),
  history: Array.from({ length: calls }, (_, i) => [i, i + 1]),
});

describe.runIf(withPostgres)("the Postgres store's kept locks", () => {
  it("a replica that keeps a session's lock serves its next calls in one statement each", async () => {
    const schema = `lease_${++schemas}`;
    // A lease far longer than the test: whether the next call finds it does not depend on timing.
    const target = await store(schema, { leaseMs: 60_000 });
    await target.createSession(record("s"), { n: 0, log: {} });
    const sent = recordStatements(target);
    const perCall: number[] = [];
    for (let i = 0; i < 50; i++) {
      const before = sent.length;
      await call(target, "s");
      perCall.push(sent.length - before);
    }
    // The first call takes the lock (and keeps it); every later one only writes its step (group commit).
    expect(perCall[0]).toBe(2);
    expect(new Set(perCall.slice(1))).toEqual(new Set([1]));
    expect(sent[0]).toBe("terrarium_lock_v2");
    expect(sent.slice(1).every(isGroupCommit)).toBe(true);
    expect(await stored(schema, "s")).toEqual(consecutive(50));
  });

  it("group commits back to back look for waiting replicas at most every 20 ms, not with every commit", async () => {
    const schema = `lease_${++schemas}`;
    const target = await store(schema, { leaseMs: 60_000 });
    await target.createSession(record("p"), { n: 0, log: {} });
    const sent = recordStatements(target);
    const started = performance.now();
    for (let i = 0; i < 40; i++) await call(target, "p");
    const elapsed = performance.now() - started;
    const probes = sent.filter((name) => name === "terrarium_steps_v2").length;
    // One look at pg_locks per 20 ms window at most (the first commit always looks), however fast the calls.
    expect(probes).toBeGreaterThanOrEqual(1);
    expect(probes).toBeLessThanOrEqual(Math.floor(elapsed / 20) + 1);
    expect(sent.filter(isGroupCommit)).toHaveLength(40);
    expect(await stored(schema, "p")).toEqual(consecutive(40));
  });

  it("another replica's call waits for the kept lock to end, then the replicas take turns correctly", async () => {
    const schema = `lease_${++schemas}`;
    const [a, b] = [await store(schema, { leaseMs: 100 }), await store(schema, { leaseMs: 100 })];
    await a.createSession(record("t"), { n: 0, log: {} });
    await call(a, "t"); // kept by a
    expect(internals(a).leases.has("t")).toBe(true);
    await call(b, "t"); // waits until a lets go
    for (let i = 0; i < 20; i++) await call(i % 2 === 0 ? a : b, "t");
    // Every replica reads the latest state under the lock: nothing lost, nothing applied twice.
    expect(await stored(schema, "t")).toEqual(consecutive(22));
    for (const each of [a, b]) {
      const head = await each.withSessionLock("t", () => each.head("t"));
      expect((head.snapshot.state as State).n).toBe(22);
      expect(head.lastCall?.index).toBe(21);
    }
  });

  it("two replicas racing on one session serialise every call, kept locks or not", async () => {
    const schema = `lease_${++schemas}`;
    const replicas = [await store(schema, { leaseMs: 20 }), await store(schema, { leaseMs: 20 })];
    await (replicas[0] as PostgresStore).createSession(record("r"), { n: 0, log: {} });
    await Promise.all(
      replicas.map(async (replica) => {
        for (let i = 0; i < 25; i++) await call(replica, "r");
      }),
    );
    expect(await stored(schema, "r")).toEqual(consecutive(50));
  });

  it("a replica whose calls on a session never stop lets the lock go once another replica waits", async () => {
    const schema = `lease_${++schemas}`;
    // Kept far longer than the test: only seeing the other replica wait makes a let go.
    const [a, b] = [await store(schema, { leaseMs: 60_000 }), await store(schema, { leaseMs: 60_000 })];
    await a.createSession(record("f"), { n: 0, log: {} });
    let served = false;
    const other = call(b, "f").then(() => {
      served = true;
    });
    let calls = 0;
    // a calls back to back, without a break: its lock is let go after a while, and b gets its turn.
    while (!served) {
      await call(a, "f");
      if (++calls > 500) throw new Error("the other replica never got the session");
    }
    await other;
    expect(await stored(schema, "f")).toEqual(consecutive(calls + 1));
  });

  it("steps of sessions kept at once commit together, and a step refused among them fails alone", async () => {
    const schema = `lease_${++schemas}`;
    const target = await store(schema, { leaseMs: 60_000, lockPoolSize: 24 });
    const ids = Array.from({ length: 12 }, (_, i) => `g${i}`);
    for (const id of ids) await target.createSession(record(id), { n: 0, log: {} });
    const sent = recordStatements(target);
    // g0 is deleted while the others' calls go on: its steps are refused, theirs are all stored.
    const outcomes = await Promise.all(
      ids.map(async (id) => {
        const failures: string[] = [];
        for (let i = 0; i < 10; i++) {
          if (id === "g0" && i === 5) await target.deleteSession(id);
          await call(target, id).catch((error: { code?: string }) => failures.push(error.code ?? "?"));
        }
        return failures;
      }),
    );
    expect(outcomes[0]).toEqual(Array(5).fill("UNKNOWN_SESSION"));
    for (const failures of outcomes.slice(1)) expect(failures).toEqual([]);
    const commits = sent.filter(isGroupCommit).length;
    // 115 steps stored, in fewer statements than steps.
    expect(commits).toBeLessThan(115);
    for (const id of ids.slice(1)) expect(await stored(schema, id)).toEqual(consecutive(10));
  });

  it("a kept lock whose connection dies is dropped, and the next call takes the lock afresh", async () => {
    const schema = `lease_${++schemas}`;
    const target = await store(schema, { leaseMs: 60_000 });
    await target.createSession(record("d"), { n: 0, log: {} });
    await call(target, "d");
    const lease = internals(target).leases.get("d");
    expect(lease).toBeDefined();
    const pid = (lease as { client: unknown }).client as { processID: number };
    await scratch.admin.query("SELECT pg_terminate_backend($1)", [pid.processID]);
    await waitFor(() => !internals(target).leases.has("d"));
    await call(target, "d");
    await call(target, "d");
    expect(await stored(schema, "d")).toEqual(consecutive(3));
  });

  it("reads a database the store wrote before: checkpoints without their changes, cold and warm", async () => {
    const schema = `lease_${++schemas}`;
    const often = { maxChain: 5, maxChangeRatio: 1 };
    const [a, b] = [
      await store(schema, { leaseMs: 0, checkpoints: often }),
      await store(schema, { leaseMs: 0, checkpoints: often }),
    ];
    const big = { n: 0, log: {}, blob: "x".repeat(2000) };
    await a.createSession(record("m"), big);
    await call(b, "m"); // b's cache: snapshot 1
    for (let i = 0; i < 30; i++) await call(a, "m");
    // As the store before this one wrote them: a checkpoint row carries no changes (snapshot 0 never did).
    await scratch.admin.query(
      `UPDATE ${schema}.terrarium_snapshots SET changes = NULL WHERE checkpoint IS NOT NULL`,
    );
    const { rows } = await scratch.admin.query<{ n: number }>(
      `SELECT COUNT(*)::int AS n FROM ${schema}.terrarium_snapshots WHERE session = 'm' AND idx > 0 AND checkpoint IS NOT NULL`,
    );
    expect(rows[0]?.n).toBeGreaterThan(0); // a checkpoint lies between b's cache and the latest
    await call(b, "m"); // warm but behind, across those checkpoints
    const cold = await store(schema, { leaseMs: 0 });
    await call(cold, "m"); // nothing cached
    await call(a, "m");
    expect(await stored(schema, "m")).toEqual(consecutive(34));
  });

  it("a state that grows is not written whole every 100 steps: checkpoints follow the changes' weight", async () => {
    const schema = `lease_${++schemas}`;
    const target = await store(schema, { leaseMs: 0 });
    // 40 KB of state; 250 steps add ~10 KB of changes: less than the state, so no checkpoint is due.
    await target.createSession(record("g"), { n: 0, log: {}, blob: "y".repeat(40_000) });
    for (let i = 0; i < 250; i++) await call(target, "g");
    const { rows } = await scratch.admin.query<{ idx: number }>(
      `SELECT idx FROM ${schema}.terrarium_snapshots WHERE session = 'g' AND checkpoint IS NOT NULL ORDER BY idx`,
    );
    expect(rows.map((row) => row.idx)).toEqual([0]);
    const latest = await (await store(schema, { leaseMs: 0 })).latestSnapshot("g");
    expect((latest.state as State).n).toBe(250);
    expect(Object.keys((latest.state as State).log)).toHaveLength(250);
  });
});
