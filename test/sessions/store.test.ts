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

    it("does not let callers change stored values through returned objects (states are frozen)", async () => {
      const store = make();
      const given = { list: [1] };
      await store.createSession(record("c"), given);
      given.list.push(3);
      const snapshot = await store.latestSnapshot("c");
      expect(() => (snapshot.state as { list: number[] }).list.push(2)).toThrow(TypeError);
      expect((await store.latestSnapshot("c")).state).toEqual({ list: [1] });
      await store.close();
    });

    it("gives back every snapshot exactly, however many steps and checkpoints lie between", async () => {
      const store = make();
      await store.createSession(record("h"), { items: {}, log: [] });
      const expected: unknown[] = [{ items: {}, log: [] }];
      let state: { items: Record<string, number>; log: string[] } = { items: {}, log: [] };
      for (let i = 1; i <= 230; i++) {
        state = structuredClone(state);
        if (i % 7 === 0) delete state.items[`k${i - 6}`];
        else state.items[`k${i}`] = i;
        state.log.push(`step ${i}`);
        if (i % 50 === 0) await store.appendSnapshot("h", state, "set", "2025-01-01T00:00:02.000Z");
        else await store.appendStep("h", step("inc"), { state, reason: "step" });
        expected.push(structuredClone(state));
      }
      for (const index of [0, 1, 49, 50, 99, 100, 101, 150, 229, 230])
        expect((await store.snapshot("h", index))?.state).toEqual(expected[index]);
      expect((await store.snapshots("h")).map((s) => s.state)).toEqual(expected);
      expect((await store.latestSnapshot("h")).index).toBe(230);
      await store.close();
    });

    it("imports a whole session at once, and refuses a second session with the same id", async () => {
      const store = make();
      const entry = { ...step("inc"), index: 0, snapshot: 1 };
      const contents = {
        snapshots: [
          { index: 0, at: "2025-01-01T00:00:00.000Z", reason: "initial" as const, state: { n: 0 } },
          { index: 1, at: "2025-01-01T00:00:01.000Z", reason: "step" as const, state: { n: 1 } },
        ],
        history: [entry],
      };
      await store.importSession(record("i"), contents);
      expect((await store.snapshots("i")).map((s) => s.state)).toEqual([{ n: 0 }, { n: 1 }]);
      expect(await store.history("i")).toEqual([entry]);
      await expect(store.importSession(record("i"), contents)).rejects.toThrow();
      expect(await store.history("i")).toEqual([entry]);
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
