import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, jsonLines } from "../helpers/cli.js";
import { approvingReply } from "../helpers/scripted-gats.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

let server: ScriptedLlmServer;
afterEach(() => server?.close());

/** A scripted model that plans one transfer, writes a one-item checklist and always approves. */
async function config(): Promise<string> {
  server = await startScriptedLlmServer([], {
    respond: (body) => {
      const schema = body?.response_format?.json_schema?.name;
      if (body.model === "broken") return { status: 400, error: { message: "the simulator broke" } };
      // roles.default serves the checklist, the judge, the simulator, the validator and the bootstrapper.
      const approved = approvingReply(schema);
      if (approved) return approved;
      // Planner: a tool call first, an answer once it has seen a tool result.
      if (body.messages.at(-1).role === "tool") return { reply: { content: "Done." } };
      const names = body.tools.map((t: { function: { name: string } }) => t.function.name);
      const tool = names.includes("transfer") ? "transfer" : names[0];
      const args =
        tool === "transfer"
          ? { from_account: "ACC-1001", to_account: "ACC-1002", amount: 5 }
          : { city: "Oslo" };
      return { reply: { toolCalls: [{ name: tool, arguments: args }] } };
    },
  });
  const dir = mkdtempSync(join(tmpdir(), "terrarium-gats-"));
  const file = writeScriptedConfig(dir, server.baseURL, { default: "scripted:m" });
  return file;
}

describe("terrarium gats", () => {
  it("runs one task on an environment and prints the chosen calls and the attempts", async () => {
    const file = await config();
    const run = await cli([
      "--config",
      file,
      "gats",
      "--tools",
      "bank",
      "--task",
      "Send 5 from ACC-1001 to ACC-1002",
      "--max-retries",
      "1",
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^turn 1: Send 5 from ACC-1001 to ACC-1002\n {2}\* attempt 0: success \(score 1\.00\), 1 calls/,
    );
    expect(run.stdout).toContain(
      '    transfer({"from_account":"ACC-1001","to_account":"ACC-1002","amount":5})',
    );
    // The catalog's load summary comes first, as with `serve`.
    expect(run.stderr).toMatch(/^\d+ tools\n/);
    // One ledger: every request the model server saw is counted (planner, validator, checklist, judge).
    expect(run.stdout).toContain(`; ${server.requests.length} model calls (every role`);
    expect(
      server.requests.some((r) => r.body?.response_format?.json_schema?.name === "semantic_verdict"),
    ).toBe(true);
    expect(run.stdout).toContain("price unknown");
  });

  it("--strict refuses tool files with skipped operations before any model call", async () => {
    const file = await config();
    const tools = join(import.meta.dirname, "..", "fixtures", "tools", "bad", "unknown-format.json");
    const run = await cli(["--config", file, "gats", "--tools", tools, "--task", "anything", "--strict"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/1 operation was skipped \(strict mode\)/);
    expect(run.stderr).toMatch(/\[CATALOG_INCOMPLETE\]/);
  });

  it("runs a dataset with the llm simulator, writes one line per task, and resumes", async () => {
    const file = await config();
    const dir = mkdtempSync(join(tmpdir(), "terrarium-gats-"));
    const dataset = join(dir, "tasks.jsonl");
    const tools = [
      {
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    ];
    writeFileSync(
      dataset,
      [1, 2, 3].map((id) => JSON.stringify({ id: `t${id}`, tools, turns: ["Weather in Oslo?"] })).join("\n"),
    );
    const out = join(dir, "results.jsonl");
    writeFileSync(out, `${JSON.stringify({ schemaVersion: 1, id: "t1", success: true })}\n`);
    const run = await cli([
      "--config",
      file,
      "gats",
      "--dataset",
      dataset,
      "--out",
      out,
      "--resume",
      "--max-retries",
      "0",
    ]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      "2/2 solved (over the 2 tasks with a verdict; max retries 0); 0 errored (left out); 1 skipped as already done; price unknown",
    );
    // Tasks run two at a time, so lines arrive in completion order.
    const records = jsonLines(readFileSync(out, "utf8")).sort((a, b) =>
      String(a.id).localeCompare(String(b.id)),
    );
    expect(records.map((r) => [r.id, r.success])).toEqual([
      ["t1", true],
      ["t2", true],
      ["t3", true],
    ]);
    expect(records[1]?.calls).toEqual([[{ name: "get_weather", arguments: { city: "Oslo" } }]]);
    // The task's state was bootstrapped from the task (Gecko's bootstrapper), and that call is counted.
    expect(records[1]?.bootstrap).toEqual({ status: "done" });
    expect(records[1]?.usage.calls).toBeGreaterThanOrEqual(5);
  });

  it("flags a task whose simulated call failed as an error, never as unsolved", async () => {
    const file = await config();
    const dir = mkdtempSync(join(tmpdir(), "terrarium-gats-"));
    const dataset = join(dir, "tasks.jsonl");
    writeFileSync(
      dataset,
      JSON.stringify({
        id: "t1",
        tools: [
          { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
        ],
        turns: ["Weather in Oslo?"],
        state: { runtime_state: {} },
      }),
    );
    const out = join(dir, "results.jsonl");
    // A model config whose simulator role fails every call.
    writeFileSync(file, readFileSync(file, "utf8").replace("roles:", "roles:\n  simulator: scripted:broken"));
    const run = await cli([
      "--config",
      file,
      "gats",
      "--dataset",
      dataset,
      "--out",
      out,
      "--max-retries",
      "0",
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      "0/0 solved (over the 0 tasks with a verdict; max retries 0); 1 errored (left out)",
    );
    expect(run.stderr).toMatch(
      /\nsimulator_error: 1 \(first, t1: 1 simulated call\(s\) of the chosen attempts failed \(get_weather: .+\)\)\n1 of 1 tasks errored; --max-errors allows 0\n$/,
    );
    const [record] = jsonLines(readFileSync(out, "utf8"));
    expect(record).toMatchObject({ id: "t1", simulatorErrors: 1, errorKind: "simulator_error" });
  });

  it("refuses bad numbers and modes before any model call", async () => {
    const file = await config();
    for (const [flag, value] of [
      ["--max-retries", "abc"],
      ["--max-retries", "-1"],
      ["--concurrency", "0"],
      ["--bootstrap", "maybe"],
    ] as const) {
      const run = await cli(["--config", file, "gats", "--tools", "bank", "--task", "x", flag, value]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(flag);
    }
    expect(server.requests).toHaveLength(0);
  });
});
