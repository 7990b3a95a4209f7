import { describe, expect, it } from "vitest";
import type { JsonChange } from "../../src/core/json-diff.js";
import { MemoryStore } from "../../src/sessions/index.js";

/**
 * The memory store spaces its checkpoints by the latest state's size, which it keeps up to date from each
 * step's changes instead of walking the state at every checkpoint. These check that the kept size stays
 * the state's (so the limit keeps its meaning: memory proportional to what the session wrote) and that
 * snapshots still read back exactly.
 */
interface Internals {
  sessions: Map<
    string,
    { stateSize: number; snapshots: Array<number | { state?: unknown; changes?: unknown[] }> }
  >;
}

/** The same rough JSON size the store counts, by a walk of the whole state. */
function walkedSize(value: unknown): number {
  if (typeof value === "string") return value.length + 2;
  if (typeof value === "number" || typeof value === "boolean") return 5;
  if (value === null || value === undefined) return 4;
  if (Array.isArray(value)) return value.length + 2 + value.reduce((sum, item) => sum + walkedSize(item), 0);
  let size = 2;
  for (const [key, member] of Object.entries(value as object)) size += key.length + 4 + walkedSize(member);
  return size;
}

const record = { id: "s", createdAt: "2025-01-01T00:00:00.000Z", seed: "x" };
const entry = (changes: JsonChange[]) => ({
  at: "2025-01-01T00:00:01.000Z",
  request: { name: "transfer", arguments: {} },
  result: { status: "ok" as const, observation: {}, changes, errors: [] },
  simulator: "code",
});

describe("memory store checkpoints", () => {
  it("keeps the latest state's size from the changes, through adds, replaces and removes", async () => {
    const store = new MemoryStore();
    let state: { stats: { count: number }; transfers: Record<string, unknown> } = {
      stats: { count: 0 },
      transfers: {},
    };
    await store.createSession(record, state);
    const expected: unknown[] = [state];
    for (let i = 1; i <= 1500; i++) {
      const changes: JsonChange[] = [];
      const transfers = { ...state.transfers };
      const id = `TRF-${i.toString().padStart(8, "0")}`;
      transfers[id] = { id, from: "ACC-1001", to: "ACC-1002", amount: i, memo: "x".repeat(i % 40) };
      changes.push({ op: "add", path: `/transfers/${id}`, after: transfers[id] });
      if (i % 5 === 0) {
        const old = `TRF-${(i - 3).toString().padStart(8, "0")}`;
        changes.push({ op: "remove", path: `/transfers/${old}`, before: transfers[old] });
        delete transfers[old];
      }
      changes.push({ op: "replace", path: "/stats/count", before: state.stats.count, after: i });
      state = { stats: { count: i }, transfers };
      await store.appendStep("s", entry(changes), { state, reason: "step", changes });
      expected.push(state);
    }
    const stored = (store as unknown as Internals).sessions.get("s");
    const walked = walkedSize(state);
    // An estimate, but one that does not drift: within a few percent of a walk after 1,500 steps.
    expect(Math.abs((stored?.stateSize ?? 0) - walked) / walked).toBeLessThan(0.05);
    // Checkpoints come further apart as the state grows (not one every few steps, not never).
    const checkpoints =
      stored?.snapshots.filter((kept) => typeof kept !== "number" && kept.state !== undefined).length ?? 0;
    expect(checkpoints).toBeGreaterThan(3);
    expect(checkpoints).toBeLessThan(150);
    for (const index of [0, 1, 777, 1499, 1500])
      expect((await store.snapshot("s", index))?.state).toEqual(expected[index]);
  });

  it("measures a replaced root and a set state afresh", async () => {
    const store = new MemoryStore();
    await store.createSession(record, { a: 1 });
    const big = { list: Array.from({ length: 500 }, (_, i) => `item ${i}`) };
    const changes: JsonChange[] = [{ op: "replace", path: "", before: { a: 1 }, after: big }];
    await store.appendStep("s", entry(changes), { state: big, reason: "step", changes });
    const stored = () => (store as unknown as Internals).sessions.get("s")?.stateSize ?? 0;
    expect(stored()).toBe(walkedSize(big));
    await store.appendSnapshot("s", { b: "two" }, "set", "2025-01-01T00:00:02.000Z");
    expect(stored()).toBe(walkedSize({ b: "two" }));
  });

  it("keeps a step's changes once, in its history entry, and rebuilds older snapshots from them", async () => {
    const store = new MemoryStore();
    await store.createSession(record, { n: 0, log: {} });
    const states: unknown[] = [{ n: 0, log: {} }];
    let log: Record<string, unknown> = {};
    for (let i = 1; i <= 40; i++) {
      log = { ...log, [`k${i}`]: { at: i } };
      const state = { n: i, log };
      const changes: JsonChange[] = [
        { op: "replace", path: "/n", before: i - 1, after: i },
        { op: "add", path: `/log/k${i}`, after: { at: i } },
      ];
      // Odd steps record the very changes they store; even ones record a copy (kept on their own).
      const recorded = i % 2 === 1 ? changes : changes.map((change) => ({ ...change }));
      await store.appendStep("s", entry(recorded), { state, reason: "step", changes });
      // The caller may reuse its objects afterwards: nothing kept may change with them.
      changes.length = 0;
      recorded.length = 0;
      states.push(state);
    }
    const kept = (store as unknown as Internals).sessions.get("s")?.snapshots ?? [];
    // A step that recorded its very changes is kept as its history entry's index (no object of its own);
    // one that recorded a copy keeps its changes.
    const byEntry = kept.filter((snapshot) => typeof snapshot === "number");
    const withChanges = kept.filter(
      (snapshot) => typeof snapshot !== "number" && snapshot.state === undefined,
    );
    expect(byEntry.length).toBeGreaterThan(5);
    expect(withChanges.length).toBeGreaterThan(5);
    for (const snapshot of withChanges) expect((snapshot as { changes?: unknown[] }).changes?.length).toBe(2);
    for (let index = 0; index <= 40; index++)
      expect((await store.snapshot("s", index))?.state).toEqual(states[index]);
    expect((await store.snapshots("s")).map((snapshot) => snapshot.state)).toEqual(states);
  });
});
