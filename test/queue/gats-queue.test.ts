import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startWorker } from "../../src/cli/commands/worker.js";
import { loadConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import { cli, jsonLines } from "../helpers/cli.js";
import { approvingReply } from "../helpers/scripted-gats.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { deletePrefix, REDIS_URL, uniquePrefix } from "./redis-env.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A scripted model: the planner calls get_weather once then answers; checklist, judge and simulator agree. */
async function scriptedConfig(): Promise<{ file: string; server: ScriptedLlmServer }> {
  const server = await startScriptedLlmServer([], {
    respond: (body) => {
      const schema = body?.response_format?.json_schema?.name;
      // roles.default serves the checklist, the judge, the simulator, the validator and the bootstrapper.
      const approved = approvingReply(schema);
      if (approved) return approved;
      if (body.messages.at(-1).role === "tool") return { reply: { content: "Done." } };
      return { reply: { toolCalls: [{ name: "get_weather", arguments: { city: "Oslo" } }] } };
    },
  });
  cleanups.push(() => server.close());
  const dir = mkdtempSync(join(tmpdir(), "terrarium-gats-queue-"));
  return { file: writeScriptedConfig(dir, server.baseURL, { default: "scripted:m" }), server };
}

describe.skipIf(!REDIS_URL)("gats --dataset on a Redis queue", () => {
  it("runs the tasks in workers, writes the same lines as one process, and resumes from the queue's results", async () => {
    const { file, server } = await scriptedConfig();
    const dir = mkdtempSync(join(tmpdir(), "terrarium-gats-queue-"));
    const dataset = join(dir, "tasks.jsonl");
    const tools = [
      {
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    ];
    writeFileSync(
      dataset,
      [1, 2, 3, 4]
        .map((id) => JSON.stringify({ id: `t${id}`, tools, turns: ["Weather in Oslo?"] }))
        .join("\n"),
    );
    const args = (out: string) => [
      "--config",
      file,
      "gats",
      "--dataset",
      dataset,
      "--out",
      out,
      "--max-retries",
      "0",
    ];
    const single = join(dir, "single.jsonl");
    expect((await cli(args(single))).code).toBe(0);
    const callsAlone = server.requests.length;

    const prefix = uniquePrefix();
    cleanups.push(() => deletePrefix(REDIS_URL as string, prefix));
    const queueUrl = `${REDIS_URL}?prefix=${prefix}`;
    const { config } = loadConfig({ path: file });
    for (const name of ["w1", "w2"]) {
      const worker = await startWorker(
        { queue: queueUrl, concurrency: 2, name, lockDuration: 1500, stalledInterval: 500 },
        { stdout: new PassThrough(), stderr: new PassThrough(), stdin: process.stdin },
        (roles) => new Models({ config: { ...config, roles: { ...config.roles, ...roles } } }),
      );
      cleanups.push(() => worker.stop());
    }
    const queued = join(dir, "queued.jsonl");
    const run = await cli([...args(queued), "--queue", queueUrl]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("4 tasks to run on redis://127.0.0.1:6379");
    expect(run.stderr).toMatch(/4\/4 solved \(over the 4 tasks with a verdict; max retries 0\); 0 errored/);
    expect(server.requests.length).toBe(2 * callsAlone);
    const strip = (records: Array<Record<string, unknown>>) =>
      records
        .map(({ latencyMs: _latency, ...rest }) => rest)
        .sort((a, b) => String(a.id).localeCompare(String(b.id)));
    const lines = jsonLines(readFileSync(queued, "utf8"));
    expect(strip(lines)).toEqual(strip(jsonLines(readFileSync(single, "utf8"))));

    // Resumed after losing two lines: they come back from the queue, with no model call.
    writeFileSync(queued, `${readFileSync(queued, "utf8").split("\n").slice(0, 2).join("\n")}\n`);
    const before = server.requests.length;
    const resumed = await cli([...args(queued), "--queue", queueUrl, "--resume"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain("2 tasks were run by an earlier submission");
    expect(server.requests.length).toBe(before);
    expect(strip(jsonLines(readFileSync(queued, "utf8")))).toEqual(strip(lines));
  }, 60_000);
});
