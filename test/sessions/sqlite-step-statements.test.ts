import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/sessions/index.js";
import { counterStep, scratchSqliteFiles } from "../helpers/sqlite-files.js";

const file = scratchSqliteFiles("terrarium-sqlite-step-");
const step = counterStep;

/** Counts the statements the store runs, by wrapping each prepared statement it holds. */
function countStatements(store: SqliteStore): { count: number } {
  const counter = { count: 0 };
  const statements = (store as unknown as { statements: Record<string, Record<string, unknown>> }).statements;
  for (const statement of Object.values(statements)) {
    for (const method of ["get", "run", "all"]) {
      const original = statement[method] as (...args: unknown[]) => unknown;
      statement[method] = (...args: unknown[]) => {
        counter.count++;
        return original.apply(statement, args);
      };
    }
  }
  return counter;
}

describe("SQLite store: a call's reads and write", () => {
  it("reads a call's head in one statement and writes its step in three", async () => {
    const store = new SqliteStore(file());
    await store.createSession({ id: "s", createdAt: "2025-01-01T00:00:00.000Z", seed: "1" }, { n: 0 });
    await store.appendStep("s", step(1), {
      state: { n: 1 },
      reason: "step",
      changes: [{ op: "replace", path: "/n", before: 0, after: 1 }],
    });
    const counter = countStatements(store);
    for (let n = 2; n < 12; n++) {
      const head = await store.head("s");
      expect(head.lastCall?.index).toBe(n - 2);
      await store.appendStep("s", step(n), {
        state: { n },
        reason: "step",
        changes: [{ op: "replace", path: "/n", before: n - 1, after: n }],
      });
    }
    // Per call: the head (record, latest snapshot and last call at once), then the write's own head, the
    // snapshot's changes and the history entry. The cached state and chain spare every other read.
    expect(counter.count / 10).toBeLessThanOrEqual(4);
    await store.close();
  });

  it("sees calls and snapshots another connection wrote, whatever it cached", async () => {
    const path = file();
    const one = new SqliteStore(path);
    const two = new SqliteStore(path);
    await one.createSession({ id: "s", createdAt: "2025-01-01T00:00:00.000Z", seed: "1" }, { n: 0 });
    await one.appendStep("s", step(1), { state: { n: 1 }, reason: "step" });
    expect((await one.head("s")).lastCall).toEqual({ index: 0, at: step(1).at });
    // The other connection moves the session on: the first one's caches no longer describe it.
    await two.appendStep("s", step(5), { state: { n: 5 }, reason: "step" });
    const head = await one.head("s");
    expect(head.lastCall).toEqual({ index: 1, at: step(5).at });
    expect(head.snapshot).toMatchObject({ index: 2, state: { n: 5 } });
    expect(head.record).toMatchObject({ id: "s", seed: "1" });
    // A write after it lands after the other connection's, with the right index.
    const entry = await one.appendStep("s", step(6), { state: { n: 6 }, reason: "step" });
    expect([entry.index, entry.snapshot]).toEqual([2, 3]);
    expect((await two.history("s")).map((e) => e.index)).toEqual([0, 1, 2]);
    expect((await two.snapshot("s", 3))?.state).toEqual({ n: 6 });
    await one.close();
    await two.close();
  });

  it("writes a session's staged steps of one batch without reading where each ends, and forgets what a failed batch wrote", async () => {
    const store = new SqliteStore(file());
    await store.createSession({ id: "s", createdAt: "2025-01-01T00:00:00.000Z", seed: "1" }, { n: 0 });
    await store.appendStep("s", step(0), {
      state: { n: 0.5 },
      reason: "step",
      changes: [{ op: "replace", path: "/n", before: 0, after: 0.5 }],
    });
    const counter = countStatements(store);
    // Eight steps of one session asked for in one turn, each built on the one before (the engine's
    // staged steps): one batch, and per step only the check that no other connection committed (a
    // pragma), the snapshot's changes and the history entry; no read of where the session ends.
    const writes = Array.from({ length: 8 }, (_, k) =>
      store.appendStep(
        "s",
        step(k + 1),
        {
          state: { n: k + 1 },
          reason: "step",
          changes: [{ op: "replace", path: "/n", before: k, after: k + 1 }],
        },
        { lastCall: k, snapshot: k + 1 },
      ),
    );
    expect((await Promise.all(writes)).map((entry) => entry.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(counter.count).toBeLessThanOrEqual(8 * 3);

    // A batch whose commit fails takes back what its writes said of where the session ends.
    const transaction = (store as unknown as { transaction: (work: () => unknown) => unknown }).transaction;
    (store as unknown as { transaction: (work: () => unknown) => unknown }).transaction = (work) => {
      transaction(work);
      throw new Error("the commit failed");
    };
    await expect(store.appendStep("s", step(9), undefined, { lastCall: 8, snapshot: 9 })).rejects.toThrow(
      "the commit failed",
    );
    (store as unknown as { transaction: (work: () => unknown) => unknown }).transaction = transaction;
    // (The failed write did commit here, the test's own doing; what matters is that the store reads the
    // session again rather than trusting what the failed batch said.)
    const head = await store.head("s");
    expect(head.lastCall?.index).toBe(9);
    await expect(
      store.appendStep("s", step(10), undefined, { lastCall: 8, snapshot: 9 }),
    ).rejects.toMatchObject({
      code: "STORE_UNAVAILABLE",
    });
    await store.close();
  });

  it("refuses a step on a session that does not exist, and stores nothing of it", async () => {
    const store = new SqliteStore(file());
    await expect(
      store.appendStep("missing", step(1), { state: { n: 1 }, reason: "step" }),
    ).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
    await expect(store.head("missing")).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
    await store.close();
  });
});
