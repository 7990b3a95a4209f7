import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { type JobKind, RedisJobQueue } from "../../src/queue/index.js";
import { cli, jsonLines, spawnCli, waitForStderr } from "../helpers/cli.js";
import { privateRedisRunnable, startPrivateRedis } from "../helpers/redis-server.js";
import { approvingReply } from "../helpers/scripted-gats.js";
import { startScriptedLlmServer, writeScriptedConfig } from "../helpers/scripted-llm-server.js";
import { REDIS_URL } from "./redis-env.js";

const ROOT = resolve(import.meta.dirname, "../..");
const CHILD = resolve(import.meta.dirname, "worker-child.ts");
const TASKS = 6;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A redis-server binary is needed besides the shared Redis: the test kills and restarts its own. */
const runnable = privateRedisRunnable(REDIS_URL);

/**
 * An HTTP gate in front of the scripted model: once `shouldHold()` says so, every request waits until
 * `release()`; `held` resolves at the first request held.
 */
async function startGate(target: string, shouldHold: () => Promise<boolean>) {
  let open: () => void = () => {};
  const opened = new Promise<void>((done) => {
    open = done;
  });
  let released = false;
  let markHeld: () => void = () => {};
  const held = new Promise<void>((done) => {
    markHeld = done;
  });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      if (!released && (await shouldHold())) {
        markHeld();
        await opened;
      }
      const answer = await fetch(`${target}${(req.url ?? "").replace(/^\/v1/, "")}`, {
        method: req.method ?? "POST",
        headers: { "content-type": "application/json" },
        body: Buffer.concat(chunks),
      });
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    held,
    release() {
      released = true;
      open();
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** `terrarium worker` in its own process (its stderr is all it printed, ioredis's own lines included). */
function workerProcess(args: string[]) {
  const proc: ChildProcess = spawn(process.execPath, ["--import", "tsx", CHILD, "cli", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  proc.stdout?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => proc.on("exit", (code) => done(code)));
  cleanups.push(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  });
  return { proc, exited, stderr: () => stderr };
}

/** Polls until `check` holds (a generous deadline: CI shares two cores). */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000) {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting until ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

const strip = (records: Array<Record<string, unknown>>) =>
  records
    .map(({ latencyMs: _latency, ...rest }) => rest)
    .sort((a, b) => String(a.id).localeCompare(String(b.id)));

const OUTAGE = /unreachable \(/;
const RECOVERY = /reachable again after/;
const count = (text: string, pattern: RegExp) => (text.match(new RegExp(pattern.source, "g")) ?? []).length;

describe.skipIf(!runnable)("a Redis restart during a queued run", () => {
  it("submitter and worker reconnect, the results written before survive (AOF), and the run equals a one-process run", async () => {
    const llm = await startScriptedLlmServer([], {
      respond: (body) => {
        const approved = approvingReply(body?.response_format?.json_schema?.name);
        if (approved) return approved;
        if (body.messages.at(-1).role === "tool") return { reply: { content: "Done." } };
        return { reply: { toolCalls: [{ name: "get_weather", arguments: { city: "Oslo" } }] } };
      },
    });
    cleanups.push(() => llm.close());
    const redis = await startPrivateRedis({ appendfsync: "always" });
    cleanups.push(() => redis.close());
    // The test's own view of Redis: how many results the run has (it reconnects by itself too).
    const observer = new Redis(redis.url, { maxRetriesPerRequest: null, lazyConnect: false });
    observer.on("error", () => {});
    cleanups.push(() => observer.disconnect());
    const resultIds = async () => {
      const keys = await observer.keys("terrarium:terrarium:run:*:results");
      return keys[0] ? (await observer.hkeys(keys[0])).sort() : [];
    };
    const resultCount = async () => (await resultIds()).length;
    // The worker (one item at a time) is held at its first model call after two results are stored.
    const gate = await startGate(llm.baseURL, async () => (await resultCount()) >= 2);
    cleanups.push(() => gate.close());

    const dir = mkdtempSync(join(tmpdir(), "terrarium-redis-restart-"));
    const config = writeScriptedConfig(dir, gate.baseURL, { default: "scripted:m" });
    const dataset = join(dir, "tasks.jsonl");
    const tools = [
      {
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    ];
    writeFileSync(
      dataset,
      Array.from({ length: TASKS }, (_, i) =>
        JSON.stringify({ id: `t${i + 1}`, tools, turns: ["Weather in Oslo?"] }),
      ).join("\n"),
    );
    const args = (out: string) => ["--config", config, "gats", "--dataset", dataset, "--out", out];
    // The reference: one process, the in-process queue (the gate is open: nothing is stored in Redis yet).
    const single = join(dir, "single.jsonl");
    expect((await cli(args(single))).code).toBe(0);

    const worker = workerProcess([
      "--config",
      config,
      "worker",
      "--queue",
      redis.url,
      "--name",
      "w1",
      "--concurrency",
      "1",
    ]);
    await until("the worker is up", () => /worker w1 on /.test(worker.stderr()));
    const queued = join(dir, "queued.jsonl");
    const submitter = spawnCli([...args(queued), "--queue", redis.url]);
    cleanups.push(() => {
      if (submitter.child.exitCode === null) submitter.child.kill("SIGKILL");
    });
    await gate.held;
    const before = await resultIds();
    expect(before).toHaveLength(2);
    // The submitter has written the two lines it got.
    await until("the submitter wrote two lines", () => {
      try {
        return jsonLines(readFileSync(queued, "utf8")).length === 2;
      } catch {
        return false;
      }
    });

    // A crash: Redis is killed while the third item is in the worker's hands.
    await redis.stop("kill");
    await waitForStderr(submitter, OUTAGE);
    await until("the worker notices", () => OUTAGE.test(worker.stderr()));
    // The worker goes on with its item during the outage (its result waits for Redis).
    const calls = llm.requests.length;
    gate.release();
    await until("the worker calls the model again", () => llm.requests.length > calls);
    await redis.start();
    await waitForStderr(submitter, RECOVERY);
    await until("the worker is back", () => RECOVERY.test(worker.stderr()));
    // What was written before the crash is still there.
    expect(await resultIds()).toEqual(expect.arrayContaining(before));

    const code = await submitter.exit;
    expect(code, submitter.stderr()).toBe(0);
    expect(submitter.stderr()).toMatch(new RegExp(`${TASKS}/${TASKS} solved`));
    expect(strip(jsonLines(readFileSync(queued, "utf8")))).toEqual(
      strip(jsonLines(readFileSync(single, "utf8"))),
    );

    worker.proc.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    for (const [who, text] of [
      ["submitter", submitter.stderr()],
      ["worker", worker.stderr()],
    ] as const) {
      expect(text, who).not.toMatch(/Unhandled error event/);
      expect(text, who).not.toMatch(/INVALID_INPUT/);
      // One line when Redis went away and one when it came back.
      expect(count(text, OUTAGE), `${who}:\n${text}`).toBe(1);
      expect(count(text, RECOVERY), `${who}:\n${text}`).toBe(1);
      expect(text, who).toContain(`redis at ${redis.url}`);
    }
    expect(worker.stderr()).toMatch(/worker w1 stopped: \d+ items processed \(0 failed\)/);
  }, 180_000);
});

describe.skipIf(!runnable)("a Redis restart without persistence", () => {
  it("loses the jobs and results: the submitter ends, reporting the items it lost and why", async () => {
    const redis = await startPrivateRedis({ appendonly: false });
    cleanups.push(() => redis.close());
    let letGo: () => void = () => {};
    const gate = new Promise<void>((done) => {
      letGo = done;
    });
    cleanups.push(() => letGo());
    const started: string[] = [];
    const kind: JobKind<null, number, number> = {
      kind: "test.wiped",
      async open() {
        return {
          async process(item) {
            started.push(item.id);
            if (item.id === "b") await gate;
            return item.payload * 2;
          },
          async close() {},
        };
      },
    };
    const lines: string[] = [];
    const worker = await RedisJobQueue.connect(redis.url, { log: (line) => lines.push(line) });
    cleanups.push(() => worker.close());
    worker.register(kind as JobKind);
    const handle = worker.work({ concurrency: 1, name: "w" });
    cleanups.push(() => handle.close({ force: true }));
    const submitter = await RedisJobQueue.connect(redis.url, {
      pollMs: 50,
      lostCheckMs: 200,
      log: (line) => lines.push(line),
    });
    cleanups.push(() => submitter.close());
    const delivered: string[] = [];
    const outcome = submitter.submit<null, number, number>(
      {
        runId: "wiped",
        kind: "test.wiped",
        context: null,
        items: ["a", "b", "c"].map((id, payload) => ({ id, payload })),
      },
      { onResult: (result) => void delivered.push(result.id) },
    );
    await until("a is delivered and b is in hand", () => delivered.includes("a") && started.includes("b"));
    await redis.stop("kill");
    await until("the outage is noticed", () => lines.some((line) => line.includes("unreachable (")));
    await redis.start();
    const { results } = await outcome;
    expect(results.get("a")).toMatchObject({ ok: true, value: 0 });
    for (const id of ["b", "c"])
      expect(results.get(id)).toMatchObject({
        ok: false,
        error: expect.stringMatching(/gone from Redis \(restarted without persistence \(AOF\)/),
      });
  }, 60_000);
});
