import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryStore, type SessionRecord, SqliteStore, type Store } from "../../src/sessions/index.js";

/** One contract, both stores: what the engine relies on. */
const stores: Array<[string, () => Store]> = [
  ["memory", () => new MemoryStore()],
  ["sqlite", () => new SqliteStore(join(mkdtempSync(join(tmpdir(), "terrarium-store-")), "sessions.sqlite"))],
];

const record = (id: string, owner?: string): SessionRecord => ({
  id,
  createdAt: "2025-01-01T00:00:00.000Z",
  seed: "1",
  ...(owner ? { owner } : {}),
});
const step = (name: string, at = "2025-01-01T00:00:01.000Z") => ({
  at,
  request: { name, arguments: { n: 1 } },
  result: { status: "ok" as const, observation: { ok: true }, changes: [], errors: [] },
  simulator: "code",
});

for (const [name, make] of stores) {
  describe(`${name} store`, () => {
    it("keeps append-only snapshots and history, a step and its snapshot together", async () => {
      const store = make();
      await store.createSession(record("s1"), { count: 0 });
      expect(await store.latestSnapshot("s1")).toEqual({
        index: 0,
        at: "2025-01-01T00:00:00.000Z",
        reason: "initial",
        state: { count: 0 },
      });
      const read = await store.appendStep("s1", step("get"));
      expect(read).toMatchObject({ index: 0 });
      expect(read.snapshot).toBeUndefined();
      const write = await store.appendStep("s1", step("inc"), { state: { count: 1 }, reason: "step" });
      expect(write).toMatchObject({ index: 1, snapshot: 1 });
      await store.appendSnapshot("s1", { count: 5 }, "set", "2025-01-01T00:00:02.000Z");
      expect((await store.latestSnapshot("s1")).state).toEqual({ count: 5 });
      expect((await store.snapshot("s1", 1))?.state).toEqual({ count: 1 });
      expect((await store.snapshots("s1")).map((s) => s.reason)).toEqual(["initial", "step", "set"]);
      expect((await store.history("s1")).map((h) => h.request.name)).toEqual(["get", "inc"]);
      await store.close();
    });

    it("isolates sessions, filters by owner, deletes, and names unknown sessions", async () => {
      const store = make();
      await store.createSession(record("a", "alice"), { v: "a" });
      await store.createSession(record("b", "bob"), { v: "b" });
      await store.appendStep("a", step("x"), { state: { v: "a2" }, reason: "step" });
      expect((await store.latestSnapshot("b")).state).toEqual({ v: "b" });
      expect((await store.listSessions("alice")).map((s) => s.id)).toEqual(["a"]);
      expect((await store.listSessions()).map((s) => s.id)).toEqual(["a", "b"]);
      expect(await store.deleteSession("a")).toBe(true);
      expect(await store.getSession("a")).toBeUndefined();
      await expect(store.latestSnapshot("a")).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
      await expect(store.appendStep("a", step("x"))).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
      await store.close();
    });

    it("does not let callers change stored values through returned objects", async () => {
      const store = make();
      await store.createSession(record("c"), { list: [1] });
      const snapshot = await store.latestSnapshot("c");
      (snapshot.state as { list: number[] }).list.push(2);
      expect((await store.latestSnapshot("c")).state).toEqual({ list: [1] });
      await store.close();
    });
  });
}

describe("sqlite store durability", () => {
  it("reopens with everything that was written", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "terrarium-store-")), "s.sqlite");
    const first = new SqliteStore(path);
    await first.createSession(record("p"), { n: 0 });
    await first.appendStep("p", step("inc"), { state: { n: 1 }, reason: "step" });
    await first.close();
    const second = new SqliteStore(path);
    expect((await second.latestSnapshot("p")).state).toEqual({ n: 1 });
    expect(await second.history("p")).toHaveLength(1);
    await second.close();
  });
});

describe("history windows", () => {
  for (const [name, make] of stores) {
    it(`${name}: returns only the last entries, in order`, async () => {
      const store = make();
      await store.createSession(record("w"), {});
      for (const n of ["a", "b", "c", "d"]) await store.appendStep("w", step(n));
      expect((await store.history("w", 2)).map((h) => [h.index, h.request.name])).toEqual([
        [2, "c"],
        [3, "d"],
      ]);
      expect(await store.history("w", 10)).toHaveLength(4);
      await store.close();
    });
  }
});
