import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, jsonLines } from "../helpers/cli.js";
import { withoutConfig } from "../helpers/no-config.js";
import { approvingReply } from "../helpers/scripted-gats.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

let server: ScriptedLlmServer;
afterEach(() => server?.close());

/**
 * A scripted model: every structured role approves; the planner calls the task's first tool, then
 * answers. A planner asked about Bergen gets an error instead (the model call of that task fails).
 */
async function start(): Promise<ScriptedLlmServer> {
  server = await startScriptedLlmServer([], {
    respond: (body) => {
      const approved = approvingReply(body?.response_format?.json_schema?.name);
      if (approved) return approved;
      if (JSON.stringify(body.messages).includes("Bergen"))
        return { status: 400, error: { message: "the model refuses Bergen" } };
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
  return server;
}

const WEATHER = [
  {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
];

/** Three weather tasks; the second asks about Bergen, which the scripted planner fails on. */
function dataset(dir: string): string {
  const file = join(dir, "tasks.jsonl");
  writeFileSync(
    file,
    ["Oslo", "Bergen", "Oslo"]
      .map((city, index) =>
        JSON.stringify({ id: `t${index + 1}`, tools: WEATHER, turns: [`Weather in ${city}?`] }),
      )
      .join("\n"),
  );
  return file;
}

describe("gats: one model flag", () => {
  it("--planner alone runs a task with no configuration at all, serving every role", async () => {
    await start();
    const run = await withoutConfig(server.baseURL, () =>
      cli([
        "gats",
        "--tools",
        "bank",
        "--task",
        "Move 5 from ACC-1001 to ACC-1002",
        "--planner",
        "openai:gpt-4.1-mini",
        "--max-retries",
        "0",
      ]),
    );
    expect(run.stderr).not.toContain("no model is configured");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('transfer({"from_account":"ACC-1001","to_account":"ACC-1002","amount":5})');
    expect(run.stdout).toMatch(/\nsuccess; \d+ model calls/);
    // The planner, the checklist, the judge and the semantic validator all asked the one model.
    const schemas = new Set(server.requests.map((r) => r.body?.response_format?.json_schema?.name));
    expect([...schemas].sort()).toEqual(["checklist", "judgement", "semantic_verdict", undefined].sort());
    expect(new Set(server.requests.map((r) => r.body.model))).toEqual(new Set(["gpt-4.1-mini"]));
  });

  it("a role with no model names gats's own flag, before any model call", async () => {
    await start();
    const run = await withoutConfig(server.baseURL, () =>
      cli(["gats", "--tools", "bank", "--task", "Move 5 from ACC-1001 to ACC-1002"]),
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'no model is configured for the "checklist" role: set roles.checklist or roles.default in terrarium.config.yaml (e.g. roles: { default: openai:gpt-4.1-mini }), or pass --planner <provider:model> (a model given on the command line serves every role the configuration leaves unset)',
    );
    expect(run.stderr).not.toContain("--model");
    expect(server.requests).toHaveLength(0);
  });
});

describe("gats --dataset: errored tasks", () => {
  it("a task whose model call fails is counted, listed by kind and fails the command", async () => {
    await start();
    const dir = mkdtempSync(join(tmpdir(), "terrarium-gats-errors-"));
    const out = join(dir, "results.jsonl");
    const args = [
      "gats",
      "--dataset",
      dataset(dir),
      "--out",
      out,
      "--max-retries",
      "0",
      "--concurrency",
      "1",
    ];
    const run = await withoutConfig(server.baseURL, () =>
      cli([...args, "--planner", "openai:gpt-4.1-mini", "--json"]),
    );
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split("\n");
    expect(lines.slice(-3)).toEqual([
      expect.stringMatching(
        /^2\/2 solved \(over the 2 tasks with a verdict; max retries 0\); 1 errored \(left out\); 0 skipped as already done; \$\d/,
      ),
      expect.stringMatching(/^model_call_failed: 1 \(first, t2: .*the model refuses Bergen/),
      "1 of 3 tasks errored; --max-errors allows 0",
    ]);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({
      schemaVersion: 1,
      kind: "terrarium.gats.dataset-summary",
      tasks: 3,
      solved: 2,
      unsolved: 0,
      scored: 2,
      successRate: 1,
      errored: 1,
      maxErrors: 0,
    });
    expect(summary.errorKinds).toEqual([
      { kind: "model_call_failed", count: 1, firstId: "t2", firstMessage: expect.stringContaining("Bergen") },
    ]);
    const records = jsonLines(readFileSync(out, "utf8"));
    expect(records.find((r) => r.id === "t2")).toMatchObject({ errorKind: "model_call_failed" });

    // --resume runs the errored task again (and only it); --max-errors 1 lets it pass.
    const requestsBefore = server.requests.length;
    const resumed = await withoutConfig(server.baseURL, () =>
      cli([...args, "--planner", "openai:gpt-4.1-mini", "--resume", "--max-errors", "1"]),
    );
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toContain(
      "0/0 solved (over the 0 tasks with a verdict; max retries 0); 1 errored",
    );
    expect(resumed.stderr).toContain("1 of 1 tasks errored; --max-errors allows 1, so this passes");
    expect(resumed.stderr).toContain("2 skipped as already done");
    expect(server.requests.slice(requestsBefore).some((r) => JSON.stringify(r.body).includes("Oslo"))).toBe(
      false,
    );
    // The file keeps one line per task: the two verdicts and the task's latest error.
    expect(
      jsonLines(readFileSync(out, "utf8"))
        .map((r) => [r.id, r.success ?? r.errorKind])
        .sort(),
    ).toEqual([
      ["t1", true],
      ["t2", "model_call_failed"],
      ["t3", true],
    ]);
  });

  it("refuses a bad --max-errors before any model call", async () => {
    await start();
    const dir = mkdtempSync(join(tmpdir(), "terrarium-gats-errors-"));
    const config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:m" });
    for (const value of ["-1", "two", "1.5"]) {
      const run = await cli([
        "--config",
        config,
        "gats",
        "--dataset",
        dataset(dir),
        "--out",
        join(dir, "out.jsonl"),
        "--max-errors",
        value,
      ]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`option '--max-errors <n>' argument '${value}' is invalid`);
    }
    expect(server.requests).toHaveLength(0);
  });
});
