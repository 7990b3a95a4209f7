import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorker } from "../../src/cli/commands/worker.js";
import { loadConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import { readTranscript } from "../../src/users/run/index.js";
import { cli } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";
import { deletePrefix, REDIS_URL, uniquePrefix } from "./redis-env.js";

const SCENARIOS = join(import.meta.dirname, "..", "..", "examples", "users", "scenarios");

/** `users run --queue`: two workers on Redis play the runs; the folder equals an in-process run's. */
describe.runIf(REDIS_URL)("users run on Redis workers", () => {
  let server: ScriptedLlmServer;
  let dir: string;
  let config: string;
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    dir = mkdtempSync(join(tmpdir(), "users-queue-"));
    config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:judge", user: "scripted:user" });
  });
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("plays every run on the workers, with the transcripts and metrics of a single process", async () => {
    const args = (out: string, ...more: string[]) => [
      "--config",
      config,
      "users",
      "run",
      "--scenarios",
      SCENARIOS,
      "--agent",
      "planner:scripted:agent",
      "--agent-tools",
      "tau2-retail",
      "--runs",
      "2",
      "--seed",
      "5",
      "--out",
      out,
      ...more,
    ];
    const single = join(dir, "single");
    expect((await cli(args(single))).code).toBe(0);

    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const queueUrl = `${REDIS_URL}?prefix=${prefix}`;
    const loaded = loadConfig({ path: config }).config;
    const workers: Array<Awaited<ReturnType<typeof startWorker>>> = [];
    for (const name of ["w1", "w2"]) {
      const worker = await startWorker(
        { queue: queueUrl, concurrency: 2, name, lockDuration: 1500, stalledInterval: 500 },
        { stdout: new PassThrough(), stderr: new PassThrough(), stdin: process.stdin },
        (roles) => new Models({ config: { ...loaded, roles: { ...loaded.roles, ...roles } } }),
      );
      cleanups.push(() => worker.stop());
      workers.push(worker);
    }
    const queued = join(dir, "queued");
    const run = await cli(args(queued, "--queue", queueUrl));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("playing the runs on redis://127.0.0.1:6379");

    const files = readdirSync(join(queued, "transcripts")).sort();
    // The workers played every run (the submitter only writes what they return).
    expect(workers.reduce((sum, worker) => sum + worker.worker.processed, 0)).toBe(files.length);
    expect(files).toEqual(readdirSync(join(single, "transcripts")).sort());
    // The same conversations, verdicts and tool calls; only clocks differ.
    const comparable = (folder: string, file: string) => {
      const {
        startedAt: _s,
        file: _f,
        end,
        turns,
        ...rest
      } = readTranscript(join(folder, "transcripts", file));
      return {
        ...rest,
        turns: turns.map(({ timing: _t, agent, ...turn }) => ({
          ...turn,
          agent: agent && { ...agent, latencyMs: 0 },
        })),
        end: end && { ...end, durationMs: 0 },
      };
    };
    for (const file of files) expect(comparable(queued, file)).toEqual(comparable(single, file));
    const metrics = (folder: string) =>
      JSON.parse(readFileSync(join(folder, "summary.json"), "utf8")).metrics;
    expect(metrics(queued)).toEqual(metrics(single));

    // Browser modes stay in process.
    const refused = await cli(args(join(dir, "x"), "--queue", queueUrl, "--mode", "hybrid"));
    expect(refused.code).not.toBe(0);
  }, 120_000);
});
