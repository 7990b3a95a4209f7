import type { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/sessions/index.js";
import { kilobyteStep, scratchSqliteFiles, sessionRecordOf, walBytes } from "../helpers/sqlite-files.js";

/**
 * A busy SQLite store checkpoints its WAL on a thread of its own (sqlite-store.ts): the log must stay
 * bounded, every write must read back (after a reopen too), closing must end the thread, and if the
 * thread dies the writer checkpoints by itself again.
 */
const scratchFile = scratchSqliteFiles("terrarium-checkpointer-");
const record = sessionRecordOf;
const entry = kilobyteStep;

interface Internals {
  checkpointer: Worker | undefined;
  db: { pragma: (text: string, options?: { simple: boolean }) => unknown };
}

describe("SQLite store WAL checkpoints", () => {
  it("keeps the log bounded from a thread of its own, and every write reads back after a reopen", async () => {
    const file = scratchFile();
    const store = new SqliteStore(file);
    await store.createSession(record("s"), { count: 0 });
    let largest = 0;
    for (let n = 1; n <= 3000; n++) {
      await store.appendStep("s", entry(n), {
        state: { count: n },
        reason: "step",
        changes: [{ op: "replace", path: "/count", before: n - 1, after: n }],
      });
      largest = Math.max(largest, walBytes(file));
    }
    const internals = store as unknown as Internals;
    expect(internals.checkpointer).toBeDefined();
    // The writer's own checkpoints wait for 10,000 pages (40 MB); 3,000 such writes make about 60 MB of log.
    expect(largest).toBeLessThan(20 * 1024 * 1024);
    await store.close();
    expect(internals.checkpointer).toBeUndefined();
    const reopened = new SqliteStore(file);
    const history = await reopened.history("s");
    expect(history).toHaveLength(3000);
    expect(history[2999]?.result.observation).toEqual({ note: "x".repeat(900), n: 3000 });
    expect((await reopened.latestSnapshot("s")).state).toEqual({ count: 3000 });
    expect((await reopened.snapshot("s", 1234))?.state).toEqual({ count: 1234 });
    await reopened.close();
  });

  it("checkpoints by itself again when the thread is gone", async () => {
    const file = scratchFile();
    const store = new SqliteStore(file);
    await store.createSession(record("s"), { count: 0 });
    for (let n = 1; n <= 200; n++) await store.appendStep("s", entry(n));
    const internals = store as unknown as Internals;
    const worker = internals.checkpointer as Worker;
    expect(worker).toBeDefined();
    expect(internals.db.pragma("wal_autocheckpoint", { simple: true })).toBe(10_000);
    const exited = new Promise((resolve) => worker.once("exit", resolve));
    await worker.terminate();
    await exited;
    expect(internals.checkpointer).toBeUndefined();
    expect(internals.db.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
    for (let n = 201; n <= 400; n++) await store.appendStep("s", entry(n));
    expect(await store.history("s")).toHaveLength(400);
    await store.close();
  });
});
