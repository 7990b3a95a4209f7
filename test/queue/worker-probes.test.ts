import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startWorker } from "../../src/cli/commands/worker.js";
import { loadConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import { type JobKind, RedisJobQueue } from "../../src/queue/index.js";
import { cli } from "../helpers/cli.js";
import { freePort, privateRedisRunnable, startPrivateRedis } from "../helpers/redis-server.js";
import { deletePrefix, REDIS_URL, uniquePrefix } from "./redis-env.js";

const ROOT = resolve(import.meta.dirname, "../..");
const CHILD = resolve(import.meta.dirname, "worker-child.ts");

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A redis-server binary is needed besides the shared Redis: the test kills and restarts its own. */
const runnable = privateRedisRunnable(REDIS_URL);

/** Items that wait until the test lets them go; `held` lists the ids in hand. */
function holdKind() {
  const held: string[] = [];
  let release: () => void = () => {};
  let gate = new Promise<void>((done) => {
    release = done;
  });
  const kind: JobKind<null, number, number> = {
    kind: "test.hold",
    async open() {
      return {
        async process(item) {
          held.push(item.id);
          await gate;
          return item.payload * 2;
        },
        async close() {},
      };
    },
  };
  return {
    kind: kind as JobKind,
    held,
    release() {
      release();
      gate = new Promise<void>((done) => {
        release = done;
      });
    },
  };
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

/** Polls until `check` holds (a generous deadline: CI shares two cores). */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting until ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

/** One sample of a metric (labels as written), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe.skipIf(!runnable)("terrarium worker's probes and metrics", () => {
  it("serves /livez, /readyz (503 while Redis is down and while stopping) and /metrics", async () => {
    const redis = await startPrivateRedis();
    cleanups.push(() => redis.close());
    const hold = holdKind();
    const stderr = new PassThrough();
    let errText = "";
    stderr.on("data", (chunk: Buffer) => {
      errText += chunk.toString();
    });
    const running = await startWorker(
      { queue: redis.url, concurrency: 1, name: "probed", metricsPort: 0 },
      { stdout: new PassThrough(), stderr, stdin: process.stdin },
      () => new Models({ config: loadConfig({}).config }),
      [hold.kind],
    );
    cleanups.push(() => running.stop(true));
    const base = running.probes?.url as string;
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(errText).toContain(`worker probed: metrics at ${base}/metrics`);
    expect(await get(`${base}/livez`)).toEqual({ status: 200, body: "ok\n" });
    expect(await get(`${base}/readyz`)).toEqual({ status: 200, body: "ready\n" });
    expect((await get(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/readyz`, { method: "POST" })).status).toBe(405);

    const first = await get(`${base}/metrics`);
    expect(first.status).toBe(200);
    expect(sample(first.body, 'terrarium_worker_items_total{kind="test.hold",outcome="succeeded"}')).toBe(0);
    expect(sample(first.body, "terrarium_worker_items_in_flight")).toBe(0);
    expect(sample(first.body, "terrarium_worker_redis_up")).toBe(1);
    expect(sample(first.body, "terrarium_worker_redis_reconnects_total")).toBe(0);
    // Node's process metrics, as `terrarium serve` has them.
    expect(first.body).toMatch(/^# TYPE (process|nodejs)_\w+ /m);

    const submitter = await RedisJobQueue.connect(redis.url, { pollMs: 50, log: () => {} });
    cleanups.push(() => submitter.close());
    const items = [1, 2].map((n) => ({ id: `n${n}`, payload: n }));
    const outcome = submitter.submit<null, number, number>({
      runId: "probes",
      kind: "test.hold",
      context: null,
      items,
    });
    await until("an item is in hand", () => hold.held.length === 1);
    expect(sample((await get(`${base}/metrics`)).body, "terrarium_worker_items_in_flight")).toBe(1);

    // Redis goes away: not ready, still alive; back: ready again, one reconnect or more counted.
    await redis.stop("kill");
    await until("the worker says Redis is unreachable", () => /unreachable \(/.test(errText));
    await until("/readyz says 503", async () => (await get(`${base}/readyz`)).status === 503);
    expect((await get(`${base}/readyz`)).body).toBe("redis does not answer\n");
    expect((await get(`${base}/livez`)).status).toBe(200);
    expect(sample((await get(`${base}/metrics`)).body, "terrarium_worker_redis_up")).toBe(0);
    await redis.start();
    await until("/readyz says 200 again", async () => (await get(`${base}/readyz`)).status === 200);
    const after = (await get(`${base}/metrics`)).body;
    expect(sample(after, "terrarium_worker_redis_up")).toBe(1);
    expect(sample(after, "terrarium_worker_redis_reconnects_total")).toBeGreaterThanOrEqual(1);

    hold.release();
    await until("the second item is in hand", () => hold.held.length === 2);
    hold.release();
    const results = (await outcome).results;
    expect([...results.values()].map((result) => result.ok)).toEqual([true, true]);
    const done = (await get(`${base}/metrics`)).body;
    expect(sample(done, 'terrarium_worker_items_total{kind="test.hold",outcome="succeeded"}')).toBe(2);
    expect(sample(done, 'terrarium_worker_items_total{kind="test.hold",outcome="failed"}')).toBe(0);

    // Stopping with an item in hand: not ready (no new work), still alive, until the item is done.
    const third = submitter.submit<null, number, number>({
      runId: "probes-2",
      kind: "test.hold",
      context: null,
      items: [{ id: "n3", payload: 3 }],
    });
    await until("the third item is in hand", () => hold.held.length === 3);
    const stopped = running.stop();
    expect(await get(`${base}/readyz`)).toEqual({ status: 503, body: "stopping\n" });
    expect((await get(`${base}/livez`)).status).toBe(200);
    hold.release();
    await stopped;
    expect((await third).results.get("n3")).toMatchObject({ ok: true, value: 6 });
    await expect(fetch(`${base}/livez`)).rejects.toThrow();
    expect(errText).toMatch(/redis at redis:\/\/127\.0\.0\.1:\d+ unreachable \(/);
    expect(errText).toMatch(/reachable again after \d+\.\d s/);
  }, 90_000);

  it("a worker stopped while Redis is down stops (it does not wait for Redis), its item left to others", async () => {
    const redis = await startPrivateRedis();
    cleanups.push(() => redis.close());
    const hold = holdKind();
    cleanups.push(() => hold.release());
    const stderr = new PassThrough();
    let errText = "";
    stderr.on("data", (chunk: Buffer) => {
      errText += chunk.toString();
    });
    const running = await startWorker(
      { queue: redis.url, concurrency: 1, name: "cut", metricsPort: 0 },
      { stdout: new PassThrough(), stderr, stdin: process.stdin },
      () => new Models({ config: loadConfig({}).config }),
      [hold.kind],
    );
    cleanups.push(() => running.stop(true));
    const submitter = await RedisJobQueue.connect(redis.url, { log: () => {} });
    cleanups.push(() => submitter.close());
    void submitter
      .submit({ runId: "cut", kind: "test.hold", context: null, items: [{ id: "n1", payload: 1 }] })
      .catch(() => {});
    await until("the item is in hand", () => hold.held.length === 1);
    await redis.stop("kill");
    await until("the outage is noticed", () => /unreachable \(/.test(errText));
    await running.stop();
    expect(errText).toContain(
      "stopping without the 1 item(s) in hand, as Redis is unreachable; other workers take them once it is back",
    );
    expect(errText).toMatch(/worker cut stopped: 0 items processed \(0 failed\)/);
  }, 60_000);

  it("`terrarium worker --metrics-port 0` prints where it listens and answers there", async () => {
    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const proc: ChildProcess = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        CHILD,
        "cli",
        "worker",
        "--queue",
        `${REDIS_URL}?prefix=${prefix}`,
        "--name",
        "cli-probed",
        "--metrics-port",
        "0",
      ],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    proc.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((done) => proc.on("exit", (code) => done(code)));
    cleanups.push(() => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    });
    await until(
      "the worker prints its metrics address",
      () => /metrics at (http:\/\/127\.0\.0\.1:\d+)\/metrics/.test(stderr) || proc.exitCode !== null,
      60_000,
    );
    const base = /metrics at (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(stderr)?.[1] as string;
    expect(base, stderr).toBeDefined();
    expect((await get(`${base}/livez`)).status).toBe(200);
    expect((await get(`${base}/readyz`)).status).toBe(200);
    const metrics = await get(`${base}/metrics`);
    for (const kind of ["envsim.predict", "gats.task", "users.run"])
      expect(metrics.body).toContain(`terrarium_worker_items_total{kind="${kind}",outcome="succeeded"} 0`);
    proc.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/worker cli-probed stopped: 0 items processed \(0 failed\)/);
  }, 90_000);
});

describe("terrarium worker refuses bad settings before it starts", () => {
  it("--metrics-port out of range or not a number: exit 2 with a clear message", async () => {
    for (const port of ["70000", "abc", "1.5"]) {
      const run = await cli(["worker", "--queue", "redis://127.0.0.1:1", "--metrics-port", port]);
      expect(run.code, port).toBe(2);
      expect(run.stderr, port).toMatch(/--metrics-port must be a whole number from 0 to 65535/);
    }
  });

  it("a Redis that does not answer at the start: exit 2 naming the URL, without its password", async () => {
    const port = await freePort();
    const run = await cli(["worker", "--queue", `redis://:s3cret@127.0.0.1:${port}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`cannot reach Redis at redis://:***@127.0.0.1:${port} (ECONNREFUSED)`);
    expect(run.stderr).not.toContain("s3cret");
  });
});
