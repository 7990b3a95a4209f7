import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { replayCalls } from "../../src/bench/envsim/collect.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { type JobKind, LocalJobQueue, openJobQueue, parseQueueUrl } from "../../src/queue/index.js";
import { cli, jsonLines } from "../helpers/cli.js";

/** Squares numbers; fails the first attempt of items listed in `flaky`, always fails "bad". */
function squares(log: string[], flaky = new Set<string>()): JobKind<{ offset: number }, number, number> {
  return {
    kind: "test.square",
    async open(context) {
      log.push("open");
      return {
        async process(item) {
          log.push(item.id);
          if (item.id === "bad") throw new Error("bad item");
          if (flaky.delete(item.id)) throw new Error("flaky");
          return item.payload * item.payload + context.offset;
        },
        async close() {
          log.push("close");
        },
      };
    },
  };
}

describe("LocalJobQueue", () => {
  it("processes a run with a pool, retries failed attempts and reports progress", async () => {
    const log: string[] = [];
    const queue = new LocalJobQueue({ concurrency: 3 });
    queue.register(squares(log, new Set(["b"])));
    const seen: number[] = [];
    const items = ["a", "b", "c", "d", "bad"].map((id, index) => ({ id, payload: index + 1 }));
    const outcome = await queue.submit(
      { runId: "r1", kind: "test.square", context: { offset: 10 }, items, attempts: 2 },
      { onResult: (_result, progress) => void seen.push(progress.succeeded + progress.failed) },
    );
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(outcome.results.get("a")).toMatchObject({ ok: true, value: 11, attempts: 1 });
    expect(outcome.results.get("b")).toMatchObject({ ok: true, value: 14, attempts: 2 });
    expect(outcome.results.get("bad")).toMatchObject({ ok: false, error: "bad item", attempts: 2 });
    expect(await queue.progress("r1")).toEqual({
      total: 5,
      succeeded: 4,
      failed: 1,
      pending: 0,
      spentUsd: 0,
    });
    expect(log.filter((entry) => entry === "open" || entry === "close")).toEqual(["open", "close"]);

    // Submitting again processes only what failed.
    log.length = 0;
    const again = await queue.submit({
      runId: "r1",
      kind: "test.square",
      context: { offset: 10 },
      items,
      attempts: 1,
    });
    expect(again.earlier).toBe(4);
    expect(log).toEqual(["open", "bad", "close"]);
    expect(again.results.size).toBe(5);

    await queue.discard("r1");
    expect((await queue.progress("r1")).total).toBe(0);
  });

  it("stops starting items once the run's budget is spent", async () => {
    const queue = new LocalJobQueue({ concurrency: 1 });
    queue.register({
      kind: "test.paid",
      async open() {
        return {
          async process(item: { id: string; payload: number }, context: { spend(usd: number): void }) {
            context.spend(0.5);
            return item.payload;
          },
          async close() {},
        };
      },
    });
    const items = Array.from({ length: 5 }, (_, index) => ({ id: `n${index}`, payload: index }));
    const outcome = await queue.submit({
      runId: "paid",
      kind: "test.paid",
      context: null,
      items,
      budgetUsd: 1,
    });
    const failed = [...outcome.results.values()].filter((result) => !result.ok);
    expect(failed.map((result) => result.id)).toEqual(["n2", "n3", "n4"]);
    expect(failed[0]).toMatchObject({
      error: expect.stringMatching(/^MODEL_BUDGET_EXCEEDED: the run's budget of \$1\.0000 is spent/),
    });
    expect((await queue.progress("paid")).spentUsd).toBe(1);
  });

  it("refuses a kind nobody registered", async () => {
    await expect(
      new LocalJobQueue().submit({ runId: "x", kind: "nothing", context: null, items: [] }),
    ).rejects.toThrow(/no handler/);
  });
});

describe("--queue", () => {
  it("reads the queue name and key prefix off a Redis URL, and refuses what is not one", async () => {
    expect(parseQueueUrl("redis://:secret@127.0.0.1:6379/2?queue=eval&prefix=team-a")).toEqual({
      url: "redis://:secret@127.0.0.1:6379/2",
      options: { queue: "eval", prefix: "team-a" },
    });
    await expect(openJobQueue("http://example.com")).rejects.toThrow(/redis:\/\/host:port/);
    expect(await openJobQueue("local")).toBeInstanceOf(LocalJobQueue);
  });

  it("envsim eval --queue local predicts in this process, as without --queue", async () => {
    const bank = BUILTIN_ENVIRONMENTS.bank;
    if (!bank) throw new Error("bank");
    const samples = await replayCalls(bank, [
      [
        { name: "get_account", arguments: { account_id: "ACC-1001" } },
        { name: "freeze_account", arguments: { account_id: "ACC-1001" } },
      ],
    ]);
    const dir = mkdtempSync(join(tmpdir(), "terrarium-queue-local-"));
    const bench = join(dir, "bench.jsonl");
    writeFileSync(bench, samples.map((s) => JSON.stringify(s)).join("\n"));
    const run = await cli([
      "envsim",
      "eval",
      "--bench",
      bench,
      "--simulator",
      "code",
      "--out",
      join(dir, "out"),
      "--queue",
      "local",
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(jsonLines(readFileSync(join(dir, "out", "code.jsonl"), "utf8"))).toHaveLength(2);
  });
});
