import { once } from "node:events";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/errors.js";
import { connectionFailure, type PostgresStore } from "../../src/sessions/postgres-store.js";
import type { SessionRecord, StoreEvent } from "../../src/sessions/types.js";
import { postgresAvailable, scratchStores } from "../helpers/postgres.js";

/**
 * The Postgres store under connection faults, one at a time and on purpose: which errors mean "the
 * database is not there", a connection killed inside a transaction (the crash of issue 23: pg emits
 * 'error' on a client in use), a COMMIT whose answer is lost (settled by asking, never by running the
 * write again), and a session lock lost during a call (its write refused, so two replicas never both
 * write from the same state).
 */
describe("connectionFailure: what counts as the database being away", () => {
  it("classifies Node's and Postgres' connection errors, and nothing else", () => {
    const coded = (code: string, message = code) => Object.assign(new Error(message), { code });
    expect(connectionFailure(coded("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:55432"))).toBe("connect");
    expect(
      connectionFailure(new AggregateError([coded("ECONNREFUSED"), coded("ECONNREFUSED")], "connect failed")),
    ).toBe("connect");
    expect(connectionFailure(coded("57P03", "the database system is starting up"))).toBe("connect");
    expect(connectionFailure(coded("53300", "sorry, too many clients already"))).toBe("connect");
    expect(connectionFailure(new Error("Connection terminated unexpectedly"))).toBe("lost");
    expect(connectionFailure(coded("ECONNRESET", "read ECONNRESET"))).toBe("lost");
    expect(connectionFailure(coded("57P01", "terminating connection due to administrator command"))).toBe(
      "lost",
    );
    expect(connectionFailure(coded("57P02"))).toBe("lost");
    expect(connectionFailure(coded("08006", "connection failure"))).toBe("lost");
    expect(
      connectionFailure(new Error("Client has encountered a connection error and is not queryable")),
    ).toBe("lost");
    expect(connectionFailure(new Error("timeout exceeded when trying to connect"))).toBe("timeout");
    expect(connectionFailure(new Error("wrapped", { cause: coded("ECONNREFUSED") }))).toBe("connect");
    // Statements the database refused are not outages.
    expect(
      connectionFailure(coded("23505", "duplicate key value violates unique constraint")),
    ).toBeUndefined();
    expect(connectionFailure(coded("42601", "syntax error at or near"))).toBeUndefined();
    expect(connectionFailure(new TerrariumError("UNKNOWN_SESSION", "there is no session x"))).toBeUndefined();
    expect(connectionFailure("connection terminated")).toBeUndefined();
  });
});

const withPostgres = postgresAvailable("Postgres store under connection faults");
const scratch = scratchStores("terrarium_pgfault", withPostgres);
let schemas = 0;

/** A store in a schema of its own, with what it reports collected. */
async function store(
  schema = `fault_${++schemas}`,
): Promise<{ store: PostgresStore; events: StoreEvent[]; logged: string[] }> {
  const events: StoreEvent[] = [];
  const logged: string[] = [];
  const made = await scratch.open({ schema, poolSize: 2, log: (line) => logged.push(line) });
  made.watch((event) => events.push(event));
  return { store: made, events, logged };
}

/** The pools of a store, for injecting faults (tests only). */
function pools(target: PostgresStore): { pool: pg.Pool; locks: pg.Pool; probes: pg.Pool } {
  return target as unknown as { pool: pg.Pool; locks: pg.Pool; probes: pg.Pool };
}

const record = (id: string): SessionRecord => ({ id, createdAt: "2025-01-01T00:00:00.000Z", seed: "1" });
const step = (n: number) => ({
  at: `2025-01-01T00:00:${String(n).padStart(2, "0")}.000Z`,
  request: { name: "bump", arguments: { n } },
  result: { status: "ok" as const, observation: { n }, changes: [], errors: [] },
  simulator: "code",
});

async function terminate(pid: number): Promise<void> {
  await scratch.admin.query("SELECT pg_terminate_backend($1)", [pid]);
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

type Query = (text: unknown, ...rest: unknown[]) => Promise<unknown>;

/**
 * Makes the next COMMIT of the query pool fail with a lost connection: `after` it reached the database
 * (committed, its answer lost) or `before` (never sent; the transaction dies with the connection).
 */
function loseNextCommit(target: PostgresStore, when: "after" | "before"): void {
  let armed = true;
  const { pool } = pools(target);
  const wrap = (client: pg.PoolClient) => {
    const original = client.query.bind(client) as Query;
    (client as unknown as { query: Query }).query = (text, ...rest) => {
      if (!armed || text !== "COMMIT") return original(text, ...rest);
      armed = false;
      const lost = () => Promise.reject(new Error("Connection terminated unexpectedly"));
      return when === "after" ? original(text, ...rest).then(lost) : lost();
    };
  };
  pool.on("acquire", wrap);
}

describe.runIf(withPostgres)("the Postgres store under connection faults", () => {
  it("a connection killed inside a transaction: STORE_UNAVAILABLE, no crash, and the next write succeeds", async () => {
    const { store: target, events, logged } = await store();
    const { pool } = pools(target);
    const kill = (client: pg.PoolClient) => {
      pool.off("acquire", kill);
      const original = client.query.bind(client) as Query;
      (client as unknown as { query: Query }).query = async (text, ...rest) => {
        if (text === "BEGIN") {
          // Killed while the transaction holds it: pg emits 'error' on the client in use, which no pool
          // listener hears (unheard, it ends the process). Then BEGIN is sent on the dead connection.
          await terminate((client as unknown as { processID: number }).processID);
          await until(
            () => (client as unknown as { _queryable: boolean })._queryable === false,
            "the client to hear its connection die",
          );
        }
        return original(text, ...rest);
      };
    };
    pool.on("acquire", kill);
    const error = (await target
      .createSession(record("a"), { n: 0 })
      .catch((e: unknown) => e)) as TerrariumError;
    expect(error).toBeInstanceOf(TerrariumError);
    expect(error.code).toBe("STORE_UNAVAILABLE");
    expect(error.message).not.toMatch(/terminat|57P01|127\.0\.0\.1/i);
    expect(events).toContainEqual({ type: "failure", operation: "createSession", kind: "lost" });
    expect(await target.getSession("a")).toBeUndefined();
    // The dead connection is not handed out again: the next write gets a new one.
    await target.createSession(record("b"), { n: 0 });
    expect(await target.getSession("b")).toMatchObject({ id: "b" });
    expect(logged).toEqual([
      expect.stringMatching(/session store at .* does not answer \(.*\); requests get 503 STORE_UNAVAILABLE/),
      expect.stringMatching(/session store at .* answers again/),
    ]);
  });

  it("a COMMIT that reached the database but whose answer was lost: settled by asking, acknowledged once", async () => {
    const { store: target, events } = await store();
    await target.createSession(record("s"), { n: 0 });
    loseNextCommit(target, "after");
    const entry = await target.appendStep("s", step(1), { state: { n: 1 }, reason: "step" });
    expect(entry).toMatchObject({ index: 0, snapshot: 1 });
    expect((await target.history("s")).map((e) => e.request.arguments)).toEqual([{ n: 1 }]);
    expect((await target.latestSnapshot("s")).state).toEqual({ n: 1 });
    expect(events.filter((event) => event.type === "failure")).toEqual([]);
  });

  it("a COMMIT that never reached the database: STORE_UNAVAILABLE, nothing stored, safe to send again", async () => {
    const { store: target, events } = await store();
    await target.createSession(record("s"), { n: 0 });
    loseNextCommit(target, "before");
    const error = (await target
      .appendStep("s", step(1), { state: { n: 1 }, reason: "step" })
      .catch((e: unknown) => e)) as TerrariumError;
    expect(error).toBeInstanceOf(TerrariumError);
    expect(error.code).toBe("STORE_UNAVAILABLE");
    expect(error.details).toBeUndefined();
    expect(events).toContainEqual({ type: "failure", operation: "appendStep", kind: "lost" });
    expect(await target.history("s")).toEqual([]);
    // Sent again, it is stored once.
    await target.appendStep("s", step(1), { state: { n: 1 }, reason: "step" });
    expect((await target.history("s")).map((e) => e.index)).toEqual([0]);
  });

  it("a COMMIT in doubt that cannot be checked: STORE_UNAVAILABLE saying the outcome is unknown", async () => {
    const { store: target, events } = await store();
    await target.createSession(record("s"), { n: 0 });
    loseNextCommit(target, "after");
    const { probes } = pools(target);
    const connect = probes.connect.bind(probes);
    (probes as unknown as { connect: () => Promise<never> }).connect = () =>
      Promise.reject(
        Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }),
      );
    const error = (await target
      .appendStep("s", step(1), { state: { n: 1 }, reason: "step" })
      .catch((e: unknown) => e)) as TerrariumError;
    (probes as unknown as { connect: typeof connect }).connect = connect;
    expect(error.code).toBe("STORE_UNAVAILABLE");
    expect(error.details).toEqual({ written: "unknown" });
    expect(error.message).toMatch(/may or may not be stored; read the session before sending it again/);
    expect(error.message).not.toMatch(/ECONNREFUSED|5432/);
    expect(events).toContainEqual({ type: "failure", operation: "appendStep", kind: "in_doubt" });
    // It was in fact stored: this is why the caller must read before sending it again.
    expect((await target.history("s")).map((e) => e.request.arguments)).toEqual([{ n: 1 }]);
  });

  it("a session lock whose connection dies during a call: the call's write is refused, nothing stored", async () => {
    const { store: target, events } = await store();
    await target.createSession(record("s"), { n: 0 });
    const { locks } = pools(target);
    let lockClient: pg.PoolClient | undefined;
    locks.once("acquire", (client: pg.PoolClient) => {
      lockClient = client;
    });
    const error = (await target
      .withSessionLock("s", async () => {
        await target.latestSnapshot("s");
        const client = lockClient as pg.PoolClient;
        const died = once(client, "error");
        await terminate((client as unknown as { processID: number }).processID);
        await died;
        return target.appendStep("s", step(1), { state: { n: 1 }, reason: "step" });
      })
      .catch((e: unknown) => e)) as TerrariumError;
    expect(error.code).toBe("STORE_UNAVAILABLE");
    expect(error.message).toMatch(/lock was lost/);
    expect(events).toContainEqual({ type: "failure", operation: "appendStep", kind: "lock_lost" });
    expect(await target.history("s")).toEqual([]);
    // The lock is taken again by the next call, on a new connection.
    await target.withSessionLock("s", () =>
      target.appendStep("s", step(1), { state: { n: 1 }, reason: "step" }),
    );
    expect((await target.history("s")).map((e) => e.index)).toEqual([0]);
  });

  it("a call whose session moved on under it (another replica wrote meanwhile) has its write refused", async () => {
    const schema = `fault_${++schemas}`;
    const { store: a } = await store(schema);
    // The same tables: b is "the other replica".
    const { store: b } = await store(schema);
    await a.createSession(record("s"), { n: 0 });
    const error = (await a
      .withSessionLock("s", async () => {
        const read = await a.latestSnapshot("s");
        expect(read.index).toBe(0);
        await b.appendStep("s", step(1), { state: { n: 1, by: "b" }, reason: "step" });
        return a.appendStep("s", step(2), { state: { n: 1, by: "a" }, reason: "step" });
      })
      .catch((e: unknown) => e)) as TerrariumError;
    expect(error.code).toBe("STORE_UNAVAILABLE");
    expect((await a.history("s")).map((e) => e.request.arguments)).toEqual([{ n: 1 }]);
    expect((await a.latestSnapshot("s")).state).toEqual({ n: 1, by: "b" });
  });
});
