import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/sessions/index.js";

/**
 * The writer finishes the checkpointing thread's rounds (syncing the log and the file on its own thread)
 * only once the log has grown past a few rounds of writes, not after every round: each finish holds the
 * writer for milliseconds. The log still starts over, so its file stays bounded.
 */
const dir = mkdtempSync(join(tmpdir(), "terrarium-finish-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = (id: string) => ({ id, createdAt: "2025-01-01T00:00:00.000Z", seed: "x" });
const entry = (n: number) => ({
  at: "2025-01-01T00:00:01.000Z",
  request: { name: "transfer", arguments: { n } },
  result: { status: "ok" as const, observation: { note: "x".repeat(900), n }, changes: [], errors: [] },
  simulator: "code",
});

interface Internals {
  checkpointer: Worker | undefined;
  db: { pragma: (text: string, options?: { simple: boolean }) => unknown };
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("SQLite store: finishing the thread's checkpoints", () => {
  it("the writer syncs a finished round only once the log is a few rounds long, and the log still starts over", async () => {
    const file = join(dir, "finish.sqlite");
    const store = new SqliteStore(file);
    await store.createSession(record("s"), { count: 0 });
    const internals = store as unknown as Internals;
    const pragma = internals.db.pragma.bind(internals.db);
    let finishes = 0;
    // Finishes that ran (a round still under way in the thread makes the writer's attempt return busy).
    internals.db.pragma = (text, options) => {
      const result = pragma(text, options);
      if (text.startsWith("wal_checkpoint") && (result as Array<{ busy: number }>)[0]?.busy === 0) finishes++;
      return result;
    };
    let rounds = 0;
    let watched: Worker | undefined;
    const writes = async (from: number, to: number) => {
      for (let n = from; n <= to; n++) {
        await store.appendStep("s", entry(n));
        if (!watched && internals.checkpointer) {
          watched = internals.checkpointer;
          watched.on("message", () => rounds++);
        }
      }
    };
    // 1,000 writes of about a kilobyte: five rounds of the thread, about 2,700 pages of log.
    await writes(1, 1000);
    await until(() => rounds >= 5);
    expect(finishes).toBeLessThanOrEqual(1);
    // Thousands more: the writer finishes now and then, and the log's file stays bounded.
    await writes(1001, 6000);
    await until(() => rounds >= 30);
    expect(finishes).toBeGreaterThanOrEqual(1);
    expect(finishes).toBeLessThan(rounds / 3);
    expect(statSync(`${file}-wal`).size).toBeLessThan(20 * 1024 * 1024);
    expect(await store.history("s", 1)).toMatchObject([{ index: 5999 }]);
    await store.close();
  });
});
