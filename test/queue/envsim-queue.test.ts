import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { envsimRunId } from "../../src/bench/envsim/queued.js";
import { startWorker } from "../../src/cli/commands/worker.js";
import { loadConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import { RedisJobQueue } from "../../src/queue/index.js";
import { cli, jsonLines } from "../helpers/cli.js";
import { deletePrefix, REDIS_URL, uniquePrefix } from "./redis-env.js";

const CHILD = resolve(import.meta.dirname, "worker-child.ts");
const SPECS = ["code", "schema"];

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A worker process; its output is kept, and `lines` resolves when a line matching a pattern appears. */
function child(args: string[]) {
  const proc: ChildProcess = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], {
    cwd: resolve(import.meta.dirname, "../.."),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  proc.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((done) =>
    proc.on("exit", (code, signal) => done(signal ? null : code)),
  );
  cleanups.push(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  });
  return {
    proc,
    exited,
    output: () => ({ stdout, stderr }),
    async waitFor(pattern: RegExp, count = 1, timeoutMs = 20_000): Promise<string[]> {
      const started = Date.now();
      for (;;) {
        const found = [...`${stdout}\n${stderr}`.matchAll(new RegExp(pattern.source, "gm"))].map(
          (m) => m[1] ?? m[0],
        );
        if (found.length >= count) return found;
        if (Date.now() - started > timeoutMs || proc.exitCode !== null)
          throw new Error(`no ${pattern} in the worker's output:\n${stdout}\n${stderr}`);
        await new Promise((done) => setTimeout(done, 50));
      }
    },
  };
}

/** The predictions of each simulator, by sample id (the order of lines depends on who finished first). */
function predictionsOf(out: string): Record<string, unknown[]> {
  return Object.fromEntries(
    SPECS.map((spec) => [
      spec,
      jsonLines(readFileSync(join(out, `${spec}.jsonl`), "utf8")).sort((a, b) =>
        String(a.sampleId).localeCompare(String(b.sampleId)),
      ),
    ]),
  );
}

describe.skipIf(!REDIS_URL)("envsim eval on a Redis queue", () => {
  it("three workers, one killed mid-run: its samples are predicted elsewhere and the result equals a single-process run", async () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-queue-"));
    const transitions = join(dir, "transitions.jsonl");
    expect(
      (
        await cli([
          "envsim",
          "collect",
          "bank",
          "hotel",
          "--out",
          transitions,
          "--trajectories",
          "3",
          "--steps",
          "8",
        ])
      ).code,
    ).toBe(0);
    const bench = join(dir, "bench.jsonl");
    expect(
      (
        await cli([
          "envsim",
          "build",
          "--transitions",
          transitions,
          "--out",
          bench,
          "--targets",
          "8,8,8,6,6,6",
        ])
      ).code,
    ).toBe(0);
    const samples = jsonLines(readFileSync(bench, "utf8"));
    expect(samples.length).toBeGreaterThanOrEqual(20);
    const evalArgs = (out: string) => [
      "envsim",
      "eval",
      "--bench",
      bench,
      ...SPECS.flatMap((spec) => ["--simulator", spec]),
      "--mode",
      "strict",
      "--seed",
      "7",
      "--out",
      out,
    ];

    // The reference: one process.
    const single = join(dir, "single");
    const reference = await cli(evalArgs(single));
    expect(reference.code).toBe(0);

    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const queueUrl = `${REDIS_URL}?prefix=${prefix}`;
    // Worker 1 takes two samples and never finishes them: it is killed while holding them.
    const doomed = child(["hold", queueUrl, "doomed"]);
    await doomed.waitFor(/^ready$/);
    const queued = join(dir, "queued");
    const started = Date.now();
    const run = cli([...evalArgs(queued), "--queue", queueUrl]);
    const held = await doomed.waitFor(/^holding (\S+)$/, 2);
    // Worker 2 is `terrarium worker` in its own process, worker 3 runs in this one.
    const command = child([
      "cli",
      "worker",
      "--queue",
      queueUrl,
      "--name",
      "cli-worker",
      "--concurrency",
      "2",
      "--lock-duration",
      "1500",
      "--stalled-interval",
      "500",
    ]);
    await command.waitFor(/^worker cli-worker on /);
    const local = await startWorker(
      { queue: queueUrl, concurrency: 2, name: "in-process", lockDuration: 1500, stalledInterval: 500 },
      { stdout: new PassThrough(), stderr: new PassThrough(), stdin: process.stdin },
      () => new Models({ config: loadConfig({}).config }),
    );
    cleanups.push(() => local.stop());
    doomed.proc.kill("SIGKILL");
    expect(await doomed.exited).toBeNull();

    const result = await run;
    const seconds = (Date.now() - started) / 1000;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(
      /code \(the environment itself\): \d+ samples to predict on redis:\/\/127\.0\.0\.1:6379/,
    );

    // The same predictions and the same summary as the single process.
    expect(predictionsOf(queued)).toEqual(predictionsOf(single));
    expect(JSON.parse(readFileSync(join(queued, "summary.json"), "utf8"))).toEqual(
      JSON.parse(readFileSync(join(single, "summary.json"), "utf8")),
    );
    expect(result.stdout).toBe(reference.stdout);

    // The killed worker's samples were made by the others, on a second start.
    const inspect = await RedisJobQueue.connect(REDIS_URL as string, { prefix });
    cleanups.push(() => inspect.close());
    const runId = envsimRunId({ benchmark: readFileSync(bench), simulator: "code", out: resolve(queued) });
    const results = await inspect.results(runId);
    expect(results.size).toBe(samples.length);
    for (const id of held) {
      const retried = results.get(id);
      expect(retried?.ok).toBe(true);
      expect(retried?.worker).not.toBe("doomed");
      expect(retried?.attempts).toBeGreaterThanOrEqual(2);
    }
    const workers = new Set([...results.values()].map((r) => r.worker));
    expect(workers.has("doomed")).toBe(false);

    // `terrarium worker` stops on SIGTERM once its items are done.
    command.proc.kill("SIGTERM");
    expect(await command.exited).toBe(0);
    expect(command.output().stderr).toMatch(/worker cli-worker stopped: \d+ items processed \(0 failed\)/);
    await local.stop();
    console.log(
      `envsim on the queue: ${samples.length} samples x ${SPECS.length} simulators in ${seconds.toFixed(1)} s with a killed worker (${[...workers].join(", ")})`,
    );

    // --resume with no worker running: what the file lost comes back from the run's results in Redis.
    for (const spec of SPECS) {
      const file = join(queued, `${spec}.jsonl`);
      const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
      writeFileSync(file, `${lines.slice(0, Math.floor(lines.length / 2)).join("\n")}\n`);
    }
    const resumed = await cli([...evalArgs(queued), "--queue", queueUrl, "--resume"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/made by an earlier submission of this run/);
    expect(predictionsOf(queued)).toEqual(predictionsOf(single));
    expect(resumed.stdout).toBe(reference.stdout);
  }, 60_000);
});
