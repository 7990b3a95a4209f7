import type { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/sessions/index.js";
import { kilobyteStep, scratchSqliteFiles, sessionRecordOf, walBytes } from "../helpers/sqlite-files.js";

/**
 * The checkpointing thread is asked for one round at a time: a round asked while the last one still runs
 * would queue behind it, and the writer's finish after that last round would find the thread busy with
 * the queued one and copy nothing, so under fast writes the log kept growing.
 */
const scratchFile = scratchSqliteFiles("terrarium-rounds-");
const record = sessionRecordOf;
const entry = kilobyteStep;

describe("SQLite store: the checkpointing thread's rounds", () => {
  it("never has more than one round outstanding, and the log stays bounded under fast writes", async () => {
    const file = scratchFile();
    const store = new SqliteStore(file);
    await store.createSession(record("s"), { count: 0 });
    const internals = store as unknown as { checkpointer: Worker | undefined };
    let outstanding = 0;
    let most = 0;
    let watched: Worker | undefined;
    let largest = 0;
    for (let n = 1; n <= 4000; n++) {
      await store.appendStep("s", entry(n), {
        state: { count: n },
        reason: "step",
        changes: [{ op: "replace", path: "/count", before: n - 1, after: n }],
      });
      const worker = internals.checkpointer;
      if (worker && !watched) {
        watched = worker;
        // The first round was asked before this look: count it.
        outstanding = 1;
        most = 1;
        const post = worker.postMessage.bind(worker);
        worker.postMessage = (value: unknown) => {
          outstanding++;
          most = Math.max(most, outstanding);
          post(value);
        };
        worker.on("message", () => {
          outstanding--;
        });
      }
      largest = Math.max(largest, walBytes(file));
    }
    expect(watched).toBeDefined();
    expect(most).toBe(1);
    expect(largest).toBeLessThan(20 * 1024 * 1024);
    expect(await store.history("s", 1)).toMatchObject([{ index: 3999 }]);
    await store.close();
  });
});
