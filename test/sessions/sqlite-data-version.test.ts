import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/sessions/index.js";
import { counterStep, scratchSqliteFiles } from "../helpers/sqlite-files.js";

/**
 * A call reads where its session ends twice (before it runs, and in its write's transaction). The SQLite
 * store keeps what it read and wrote, and asks the file only whether another connection committed since
 * (`PRAGMA data_version`), so neither read queries the tables; whatever another connection commits
 * (a call, a deletion, a session made again) is still seen at once.
 */
const file = scratchSqliteFiles("terrarium-sqlite-version-");
const step = counterStep;
const record = (id: string, owner?: string) => ({
  id,
  createdAt: "2025-01-01T00:00:00.000Z",
  seed: "1",
  ...(owner ? { owner } : {}),
});

/** How often each of the store's prepared statements ran from now on, by name. */
function countByName(store: SqliteStore): Map<string, number> {
  const counts = new Map<string, number>();
  const statements = (store as unknown as { statements: Record<string, Record<string, unknown>> }).statements;
  for (const [name, statement] of Object.entries(statements)) {
    for (const method of ["get", "run", "all"]) {
      const original = statement[method] as (...args: unknown[]) => unknown;
      statement[method] = (...args: unknown[]) => {
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return original.apply(statement, args);
      };
    }
  }
  return counts;
}

async function call(store: SqliteStore, id: string, n: number) {
  const head = await store.head(id);
  const value = (head.snapshot.state as { n: number }).n;
  return store.appendStep(id, step(n), {
    state: { n: value + 1 },
    reason: "step",
    changes: [{ op: "replace", path: "/n", before: value, after: value + 1 }],
  });
}

describe("SQLite store: where a session ends, without reading the tables", () => {
  it("a call's reads of its session's end query no table once the store knows it, over hundreds of commits", async () => {
    const store = new SqliteStore(file());
    await store.createSession(record("s"), { n: 0 });
    await call(store, "s", 1);
    const counts = countByName(store);
    // 300 calls: the checkpointing thread (another connection, which never writes) runs meanwhile.
    for (let n = 2; n <= 301; n++) {
      expect((await store.getSession("s"))?.id).toBe("s");
      const entry = await call(store, "s", n);
      expect([entry.index, entry.snapshot]).toEqual([n - 1, n]);
    }
    expect(counts.get("head") ?? 0).toBe(0);
    expect(counts.get("writeHead") ?? 0).toBe(0);
    expect(counts.get("getSession") ?? 0).toBe(0);
    expect(counts.get("dataVersion")).toBe(900);
    expect((await store.history("s")).map((entry) => entry.index)).toEqual(
      Array.from({ length: 301 }, (_, i) => i),
    );
    await store.close();
  });

  it("another connection's call between a call's read and its write is seen by the write", async () => {
    const path = file();
    const one = new SqliteStore(path);
    const two = new SqliteStore(path);
    await one.createSession(record("s"), { n: 0 });
    await call(one, "s", 1);
    await call(one, "s", 2);
    const head = await one.head("s");
    expect(head.lastCall?.index).toBe(1);
    // two writes the session after one read where it ends, before one writes.
    await call(two, "s", 3);
    const entry = await one.appendStep("s", step(4), { state: { n: 9 }, reason: "step" });
    expect([entry.index, entry.snapshot]).toEqual([3, 4]);
    expect((await two.history("s")).map((e) => e.index)).toEqual([0, 1, 2, 3]);
    expect((await two.snapshots("s")).map((s) => (s.state as { n: number }).n)).toEqual([0, 1, 2, 3, 9]);
    await one.close();
    await two.close();
  });

  it("a session another connection deleted, or made again, is seen at once", async () => {
    const path = file();
    const one = new SqliteStore(path);
    const two = new SqliteStore(path);
    await one.createSession(record("s", "first"), { n: 0 });
    await call(one, "s", 1);
    expect((await one.getSession("s"))?.owner).toBe("first");
    expect(await two.deleteSession("s")).toBe(true);
    expect(await one.getSession("s")).toBeUndefined();
    await expect(one.head("s")).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
    await expect(one.appendStep("s", step(2))).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
    await two.createSession(record("s", "second"), { n: 40 });
    expect((await one.getSession("s"))?.owner).toBe("second");
    const head = await one.head("s");
    expect(head.record.owner).toBe("second");
    expect(head.snapshot).toMatchObject({ index: 0, state: { n: 40 } });
    expect(head.lastCall).toBeUndefined();
    const entry = await call(one, "s", 3);
    expect([entry.index, entry.snapshot]).toEqual([0, 1]);
    await one.close();
    await two.close();
  });

  it("two writes of one session in one group commit take consecutive indexes", async () => {
    const store = new SqliteStore(file());
    await store.createSession(record("s"), { n: 0 });
    await call(store, "s", 1);
    await store.head("s");
    const [a, b] = await Promise.all([
      store.appendStep("s", step(2), { state: { n: 2 }, reason: "step" }),
      store.appendStep("s", step(3), { state: { n: 3 }, reason: "step" }),
    ]);
    expect([a.index, a.snapshot, b.index, b.snapshot]).toEqual([1, 2, 2, 3]);
    const head = await store.head("s");
    expect(head.lastCall?.index).toBe(2);
    expect(head.snapshot).toMatchObject({ index: 3, state: { n: 3 } });
    await store.close();
  });
});
