import { afterEach, describe, expect, it } from "vitest";
import { type ItemResult, type JobKind, RedisJobQueue } from "../../src/queue/index.js";
import { deletePrefix, REDIS_URL, uniquePrefix } from "./redis-env.js";

const FAST = { lockDurationMs: 1000, stalledIntervalMs: 500 };

/** Doubles numbers after a short wait; items listed in `hang` never finish in this worker. */
function doubles(hang = new Set<string>(), started: string[] = []): JobKind<null, number, number> {
  return {
    kind: "test.double",
    async open() {
      return {
        async process(item) {
          started.push(item.id);
          if (hang.has(item.id)) return new Promise<number>(() => {});
          await new Promise((resolve) => setTimeout(resolve, 20));
          if (item.payload < 0) throw new Error("negative");
          return item.payload * 2;
        },
        async close() {},
      };
    },
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openQueue(prefix: string): Promise<RedisJobQueue> {
  const queue = await RedisJobQueue.connect(REDIS_URL as string, { prefix, pollMs: 50, lostCheckMs: 500 });
  cleanups.push(() => queue.close());
  return queue;
}

describe.skipIf(!REDIS_URL)("RedisJobQueue", () => {
  it("spreads a run over two workers, shows progress to the submitter, and resumes without redoing items", async () => {
    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const submitter = await openQueue(prefix);
    const workers = [await openQueue(prefix), await openQueue(prefix)];
    for (const [index, queue] of workers.entries()) {
      queue.register(doubles());
      queue.work({ concurrency: 2, name: `w${index}`, ...FAST });
    }
    const items = Array.from({ length: 30 }, (_, index) => ({
      id: `n${index}`,
      payload: index === 7 ? -1 : index,
    }));
    const counts: number[] = [];
    const outcome = await submitter.submit<null, number, number>(
      { runId: "run-a", kind: "test.double", context: null, items, attempts: 2 },
      { onResult: (_result, progress) => void counts.push(progress.succeeded + progress.failed) },
    );
    expect(counts).toEqual(Array.from({ length: 30 }, (_, index) => index + 1));
    expect(outcome.results.get("n3")).toMatchObject({ ok: true, value: 6 });
    expect(outcome.results.get("n7")).toMatchObject({ ok: false, error: "negative", attempts: 2 });
    const byWorker = new Set([...outcome.results.values()].map((result) => result.worker));
    expect(byWorker).toEqual(new Set(["w0", "w1"]));
    expect(await submitter.progress("run-a")).toEqual({
      total: 30,
      succeeded: 29,
      failed: 1,
      pending: 0,
      spentUsd: 0,
    });

    // Submitted again, only the failed item is processed again.
    const again: ItemResult<number>[] = [];
    const resumed = await submitter.submit<null, number, number>(
      { runId: "run-a", kind: "test.double", context: null, items, attempts: 1 },
      { onResult: (result) => void again.push(result) },
    );
    expect(resumed.earlier).toBe(29);
    expect(again.slice(29)).toEqual([expect.objectContaining({ id: "n7", ok: false, attempts: 1 })]);
  });

  it("holds a global concurrency limit across workers", async () => {
    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const submitter = await openQueue(prefix);
    await submitter.setLimits({ concurrency: 1 });
    let active = 0;
    let most = 0;
    const counting: JobKind<null, number, number> = {
      kind: "test.count",
      async open() {
        return {
          async process(item) {
            active++;
            most = Math.max(most, active);
            await new Promise((resolve) => setTimeout(resolve, 30));
            active--;
            return item.payload;
          },
          async close() {},
        };
      },
    };
    for (const name of ["a", "b"]) {
      const queue = await openQueue(prefix);
      queue.register(counting);
      queue.work({ concurrency: 3, name, ...FAST });
    }
    const items = Array.from({ length: 8 }, (_, index) => ({ id: `n${index}`, payload: index }));
    const outcome = await submitter.submit({ runId: "run-c", kind: "test.count", context: null, items });
    expect(outcome.results.size).toBe(8);
    expect(most).toBe(1);
  });

  it("holds a run's budget across workers: once spent, items fail without starting", async () => {
    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const submitter = await openQueue(prefix);
    let started = 0;
    const paid: JobKind<null, number, number> = {
      kind: "test.paid",
      async open() {
        return {
          async process(item, context) {
            started++;
            await new Promise((resolve) => setTimeout(resolve, 10));
            context.spend(0.25);
            return item.payload;
          },
          async close() {},
        };
      },
    };
    for (const name of ["a", "b"]) {
      const queue = await openQueue(prefix);
      queue.register(paid);
      queue.work({ concurrency: 1, name, ...FAST });
    }
    const items = Array.from({ length: 12 }, (_, index) => ({ id: `n${index}`, payload: index }));
    const outcome = await submitter.submit({
      runId: "run-d",
      kind: "test.paid",
      context: null,
      items,
      budgetUsd: 1,
    });
    const succeeded = [...outcome.results.values()].filter((result) => result.ok).length;
    // 4 items spend the budget; each worker may have started one more before it saw that.
    expect(succeeded).toBeGreaterThanOrEqual(4);
    expect(succeeded).toBeLessThanOrEqual(5);
    expect(started).toBe(succeeded);
    const progress = await submitter.progress("run-d");
    expect(progress).toMatchObject({
      total: 12,
      succeeded,
      failed: 12 - succeeded,
      spentUsd: succeeded * 0.25,
    });
  });

  it("tells a submitter that no worker is connected, and goes on once one is", async () => {
    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const submitter = await openQueue(prefix);
    const waits: Array<number | undefined> = [];
    const items = [{ id: "only", payload: 21 }];
    const run = submitter.submit<null, number, number>(
      { runId: "run-e", kind: "test.double", context: null, items },
      { onWaiting: (info) => void waits.push(info.workers) },
    );
    while (waits.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(waits).toEqual([0]);
    const worker = await openQueue(prefix);
    worker.register(doubles());
    worker.work({ name: "late", ...FAST });
    expect((await run).results.get("only")).toMatchObject({ ok: true, value: 42, worker: "late" });
  });

  it("retries the items of a worker that stopped without finishing them on another worker", async () => {
    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const submitter = await openQueue(prefix);
    // The first worker takes two items and never finishes them, as if it had died.
    const stuck = await openQueue(prefix);
    const started: string[] = [];
    stuck.register(doubles(new Set(["n0", "n1"]), started));
    const items = Array.from({ length: 10 }, (_, index) => ({ id: `n${index}`, payload: index }));
    const run = submitter.submit<null, number, number>({
      runId: "run-b",
      kind: "test.double",
      context: null,
      items,
    });
    const deadWorker = stuck.work({ concurrency: 2, name: "dead", ...FAST });
    while (started.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    // Closed without finishing them: their locks are no longer renewed, as when the process is killed.
    await deadWorker.close({ force: true });
    const healthy = await openQueue(prefix);
    healthy.register(doubles());
    healthy.work({ concurrency: 2, name: "alive", ...FAST });
    const outcome = await run;
    expect([...outcome.results.values()].every((result) => result.ok && result.worker === "alive")).toBe(
      true,
    );
    expect(outcome.results.get("n1")).toMatchObject({ value: 2, attempts: 2 });
  }, 30_000);
});
