import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import {
  type HistoryEntry,
  MemoryStore,
  SqliteStore,
  type StepBase,
  type StepState,
  type Store,
} from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";
import type { Simulator } from "../../src/sim/types.js";
import { counterStep, scratchSqliteFiles } from "../helpers/sqlite-files.js";

/**
 * A store that stages steps (`Store.stagesSteps`) lets the engine start a session's next call on the last
 * one's result before it is stored, and answer each only once it is: a session's queued calls then commit
 * together. These tests hold that pipeline to a plain one-at-a-time run (same histories and states) and
 * to "acknowledged means stored" when a write in the middle of it fails.
 */
const file = scratchSqliteFiles("terrarium-staged-");
const bank = BUILTIN_ENVIRONMENTS.bank;
if (!bank) throw new Error("the bank environment is missing");

/** Back and forth between two accounts: every transfer succeeds, each leaves a new transfer record. */
const transfer = (n: number) => ({
  name: "transfer",
  arguments:
    n % 2 === 0
      ? { from_account: "ACC-1001", to_account: "ACC-1002", amount: n + 1 }
      : { from_account: "ACC-1002", to_account: "ACC-1001", amount: n },
});

async function bankEngine(store: Store): Promise<Engine> {
  return new Engine({
    catalog: new Catalog(bank?.tools ?? []),
    store,
    simulators: [new CodeSimulator(bank as NonNullable<typeof bank>, "7")],
    initialState: await bank?.initialState(),
    seed: 7,
    // A clock that stands still: each call's time is then one ms after the session's last record, so
    // times depend on the session alone (not on how many calls, failed ones included, read the clock).
    clock: { now: () => Date.UTC(2025, 0, 1) },
  });
}

/** A session's history and snapshots with what depends on the session's own id taken out. */
async function recorded(engine: Engine, id: string) {
  const exported = await engine.exportSession(id);
  return { history: exported.history, snapshots: exported.snapshots };
}

/** The same requests one at a time, awaited in turn, on a fresh seeded engine with a memory store. */
async function oneAtATime(requests: Array<ReturnType<typeof transfer>>) {
  const engine = await bankEngine(new MemoryStore());
  const { id } = await engine.createSession();
  for (const request of requests) await engine.call(id, request);
  return recorded(engine, id);
}

describe("staged steps: a session's queued calls pipelined to the store", () => {
  it("commits a session's queued calls together (SQLite), recording exactly what one call at a time records", async () => {
    const store = new SqliteStore(file());
    const engine = await bankEngine(store);
    const { id } = await engine.createSession();
    const requests = Array.from({ length: 8 }, (_, n) => transfer(n));
    const before = store.commits;
    const outcomes = await Promise.all(requests.map((request) => engine.call(id, request)));
    // One call at a time, each call was a transaction of its own: eight commits.
    expect(store.commits - before).toBeLessThanOrEqual(2);
    expect(outcomes.map((outcome) => [outcome.status, outcome.step])).toEqual(
      requests.map((_, n) => ["ok", n]),
    );
    expect(await recorded(engine, id)).toEqual(await oneAtATime(requests));
    await engine.close();
  });

  it("fails every call staged after a write that failed, stores none of them, and goes on from what is stored (SQLite)", async () => {
    const path = file();
    const store = new SqliteStore(path);
    const engine = await bankEngine(store);
    const { id } = await engine.createSession();
    // Another connection refuses the fourth call's history entry: a write failing inside a group commit.
    const other = new Database(path);
    other.exec(
      "CREATE TRIGGER refuse_fourth BEFORE INSERT ON history WHEN NEW.idx = 3 BEGIN SELECT RAISE(ABORT, 'disk says no'); END",
    );
    const requests = Array.from({ length: 8 }, (_, n) => transfer(n));
    const settled = await Promise.allSettled(requests.map((request) => engine.call(id, request)));
    expect(settled.map((result) => result.status)).toEqual([
      ...Array(3).fill("fulfilled"),
      ...Array(5).fill("rejected"),
    ]);
    // The calls built on the refused one are refused as not stored (send again), not as the refusal.
    for (const result of settled.slice(4))
      expect((result as PromiseRejectedResult).reason).toMatchObject({ code: "STORE_UNAVAILABLE" });
    expect(await recorded(engine, id)).toEqual(await oneAtATime(requests.slice(0, 3)));

    // With the refusal gone, the session goes on from its stored end: the call is the fourth, as it
    // would have been one call at a time.
    other.exec("DROP TRIGGER refuse_fourth");
    other.close();
    const next = await engine.call(id, requests[3] as ReturnType<typeof transfer>);
    expect(next.step).toBe(3);
    expect(await recorded(engine, id)).toEqual(await oneAtATime(requests.slice(0, 4)));
    await engine.close();
  });

  it("answers only what was stored when a write fails part way, whatever the timing (memory store)", async () => {
    // The third write fails before storing anything; the calls after it either fail or start again
    // from the stored end, depending on when they read it.
    class FailingThird extends MemoryStore {
      private writes = 0;
      override appendStep(
        id: string,
        entry: Omit<HistoryEntry, "index" | "snapshot">,
        state?: StepState,
        base?: StepBase,
      ): Promise<HistoryEntry> {
        if (++this.writes === 3) return Promise.reject(new Error("the store went away"));
        return super.appendStep(id, entry, state, base);
      }
    }
    const engine = await bankEngine(new FailingThird());
    const { id } = await engine.createSession();
    const requests = Array.from({ length: 8 }, (_, n) => transfer(n));
    const settled = await Promise.allSettled(requests.map((request) => engine.call(id, request)));
    expect(settled[2]?.status).toBe("rejected");
    const acknowledged = settled.flatMap((result, n) => (result.status === "fulfilled" ? [n] : []));
    const history = (await engine.exportSession(id)).history;
    // Exactly the acknowledged calls are stored, in order, at the steps they were told.
    expect(history.map((entry) => entry.request)).toEqual(acknowledged.map((n) => requests[n]));
    expect(settled.flatMap((result) => (result.status === "fulfilled" ? [result.value.step] : []))).toEqual(
      history.map((entry) => entry.index),
    );
    // And they record what those calls, one at a time, record.
    expect(await recorded(engine, id)).toEqual(
      await oneAtATime(acknowledged.map((n) => requests[n] as ReturnType<typeof transfer>)),
    );
    await engine.close();
  });

  it("sets the state only after the calls queued before it are stored", async () => {
    const engine = await bankEngine(new SqliteStore(file()));
    const { id } = await engine.createSession();
    const initial = (await engine.state(id)) as Record<string, unknown>;
    const [first, second, set, after] = await Promise.all([
      engine.call(id, transfer(0)),
      engine.call(id, transfer(1)),
      engine.setState(id, { ...initial, note: "set" }),
      engine.call(id, { name: "get_account", arguments: { account_id: "ACC-1001" } }),
    ]);
    expect([first.step, second.step, after.step]).toEqual([0, 1, 2]);
    expect(set.index).toBe(3);
    expect(((await engine.state(id)) as Record<string, unknown>).note).toBe("set");
    await engine.close();
  });

  it("queues a reset like a call: a call made after it runs on the reset state", async () => {
    const engine = await bankEngine(new SqliteStore(file()));
    const { id } = await engine.createSession();
    await engine.call(id, transfer(0));
    const reset = engine.reset(id);
    const after = engine.call(id, { name: "get_account", arguments: { account_id: "ACC-1001" } });
    const [snapshot, read] = await Promise.all([reset, after]);
    expect(snapshot.reason).toBe("reset");
    const initial = (await bank?.initialState()) as { accounts: Record<string, { balance: number }> };
    expect((read.observation as { balance: number }).balance).toBe(initial.accounts["ACC-1001"]?.balance);
    await engine.close();
  });

  it("shows a simulator that reads the history every earlier call, however many are queued", async () => {
    const counting: Simulator = {
      name: "llm",
      readsHistory: true,
      handles: () => true,
      simulate: async ({ history }) => ({
        status: "ok",
        observation: { seen: history.length },
        changes: [{ op: "replace", path: "/calls", before: history.length, after: history.length + 1 }],
      }),
    };
    const engine = new Engine({
      catalog: new Catalog(bank?.tools ?? []),
      store: new SqliteStore(file()),
      simulators: [counting],
      policy: "llm",
      initialState: { calls: 0 },
    });
    const { id } = await engine.createSession();
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () =>
        engine.call(id, { name: "get_account", arguments: { account_id: "ACC-1001" } }),
      ),
    );
    expect(outcomes.map((outcome) => outcome.observation)).toEqual([0, 1, 2, 3, 4].map((seen) => ({ seen })));
    expect(await engine.state(id)).toEqual({ calls: 5 });
    await engine.close();
  });
});

describe("a store that stages steps refuses a step whose base has moved", () => {
  for (const [kind, open] of [
    ["memory", () => new MemoryStore()],
    ["SQLite", () => new SqliteStore(file())],
  ] as Array<[string, () => Store]>) {
    it(kind, async () => {
      const store = open();
      expect(store.stagesSteps).toBe(true);
      await store.createSession({ id: "a", createdAt: "2025-01-01T00:00:00.000Z", seed: "1" }, { n: 0 });
      const first = await store.appendStep(
        "a",
        counterStep(0),
        { state: { n: 1 }, reason: "step" },
        { lastCall: -1, snapshot: 0 },
      );
      expect([first.index, first.snapshot]).toEqual([0, 1]);
      // Built on the session as it was before `first`: refused, and nothing of it stored.
      await expect(
        store.appendStep(
          "a",
          counterStep(1),
          { state: { n: 5 }, reason: "step" },
          { lastCall: -1, snapshot: 0 },
        ),
      ).rejects.toMatchObject({ code: "STORE_UNAVAILABLE" });
      await expect(
        store.appendStep("a", counterStep(1), undefined, { lastCall: 0, snapshot: 0 }),
      ).rejects.toMatchObject({ code: "STORE_UNAVAILABLE" });
      expect(await store.history("a")).toHaveLength(1);
      expect((await store.latestSnapshot("a")).state).toEqual({ n: 1 });
      // Built on where it ends: stored.
      const second = await store.appendStep("a", counterStep(1), undefined, { lastCall: 0, snapshot: 1 });
      expect([second.index, second.snapshot]).toEqual([1, undefined]);
      await store.close();
    });
  }
});
