import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/sessions/index.js";
import { counterStep, scratchSqliteFiles } from "../helpers/sqlite-files.js";

const file = scratchSqliteFiles("terrarium-group-commit-");
const step = counterStep;

describe("SQLite group commit", () => {
  it("commits concurrent writes on several sessions together, each acknowledged only once stored", async () => {
    const path = file();
    const store = new SqliteStore(path);
    const ids = Array.from({ length: 8 }, (_, i) => `s${i}`);
    for (const id of ids)
      await store.createSession({ id, createdAt: "2025-01-01T00:00:00.000Z", seed: "1" }, { n: 0 });
    // Another connection on the file: it sees only what was committed.
    const reader = new Database(path, { readonly: true });
    const stored = reader.prepare<[string], { entry: string }>("SELECT entry FROM history WHERE session = ?");
    const seenAtAcknowledgement: boolean[] = [];
    const before = store.commits;
    const writes = ids.map((id, i) =>
      store.appendStep(id, step(i), { state: { n: i + 1 }, reason: "step" }).then((entry) => {
        seenAtAcknowledgement.push(stored.get(id) !== undefined);
        return entry;
      }),
    );
    // A write that fails (no such session) takes back only itself.
    const failing = store.appendStep("missing", step(99), { state: { n: 1 }, reason: "step" });
    await expect(failing).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
    const entries = await Promise.all(writes);
    expect(entries.map((entry) => [entry.index, entry.snapshot])).toEqual(ids.map(() => [0, 1]));
    expect(seenAtAcknowledgement).toEqual(ids.map(() => true));
    expect(store.commits - before).toBe(1);
    for (const [i, id] of ids.entries()) {
      expect((await store.latestSnapshot(id)).state).toEqual({ n: i + 1 });
      expect((await store.history(id)).map((entry) => entry.request.arguments)).toEqual([{ n: i }]);
    }
    expect(stored.get("missing")).toBeUndefined();
    reader.close();
    await store.close();

    // Read back by a fresh store: the batch is on disk.
    const again = new SqliteStore(path);
    for (const [i, id] of ids.entries()) expect((await again.latestSnapshot(id)).state).toEqual({ n: i + 1 });
    await again.close();
  });

  it("commits writes still waiting when the store closes, and refuses none of them", async () => {
    const path = file();
    const store = new SqliteStore(path);
    await store.createSession({ id: "a", createdAt: "2025-01-01T00:00:00.000Z", seed: "1" }, { n: 0 });
    const write = store.appendStep("a", step(1));
    // appendStep without a state queues its write at once; close before the batch's turn comes.
    await Promise.resolve();
    await store.close();
    await expect(write).resolves.toMatchObject({ index: 0 });
    const again = new SqliteStore(path);
    expect(await again.history("a")).toHaveLength(1);
    await again.close();
  });
});
