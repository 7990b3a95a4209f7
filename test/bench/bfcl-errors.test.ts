import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BFCL_DIR } from "../helpers/bfcl.js";
import { cli } from "../helpers/cli.js";
import { withoutConfig } from "../helpers/no-config.js";
import { FIXTURES } from "../helpers/paths.js";
import { approvingReply } from "../helpers/scripted-gats.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

const MULTI = join(FIXTURES, "bfcl-multi-turn");
const BACKENDS = join(MULTI, "backends");

let server: ScriptedLlmServer;
afterEach(() => server?.close());

/**
 * Every structured role approves; the planner answers simple_0 (the triangle) right, and a planner asked
 * anything containing `failOn` gets an HTTP 400 (that item's model call fails).
 */
async function start(failOn: string, planner: (body: any) => any): Promise<ScriptedLlmServer> {
  server = await startScriptedLlmServer([], {
    respond: (body) => {
      const approved = approvingReply(body?.response_format?.json_schema?.name);
      if (approved) return approved;
      if (JSON.stringify(body.messages).includes(failOn))
        return { status: 400, error: { message: "the model cannot do this one" } };
      if (body.messages.at(-1).role === "tool") return { reply: { content: "Done." } };
      return planner(body);
    },
  });
  return server;
}

const triangle = () => ({
  reply: { toolCalls: [{ name: "calculate_triangle_area", arguments: { base: 10, height: 5 } }] },
});

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "terrarium-bfcl-errors-"));
}

describe("bench bfcl: errored items", () => {
  it("single-turn run with --planner alone and no config: a failed model call is wrong in accuracy, counted and fails the run", async () => {
    await start("factorial", triangle);
    const args = [
      "bench",
      "bfcl",
      "--data",
      BFCL_DIR,
      "--categories",
      "simple",
      "--limit",
      "2",
      "--max-retries",
      "0",
      "--concurrency",
      "1",
      "--planner",
      "openai:gpt-4.1-mini",
    ];
    const run = await withoutConfig(server.baseURL, () => cli([...args, "--json"]));
    expect(run.stderr).not.toContain("no model is configured");
    expect(run.code).toBe(1);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({ schemaVersion: 2, items: 2, failedItems: 1, errored: 1 });
    expect(summary.errorKinds).toEqual([
      {
        kind: "model_call_failed",
        count: 1,
        firstId: "simple_1",
        firstMessage: expect.stringContaining("the model cannot do this one"),
      },
    ]);
    // BFCL's accuracy: over both items, the failed one wrong.
    expect(summary.budgets[0]).toMatchObject({
      overall: 0.5,
      errored: 1,
      categories: { simple: { items: 2, correct: 1, errored: 1, accuracy: 0.5 } },
    });
    expect(run.stderr.trim().split("\n").slice(-2)).toEqual([
      expect.stringMatching(/^model_call_failed: 1 \(first, simple_1: .*the model cannot do this one\)$/),
      "1 of 2 items errored; --max-errors allows 0",
    ]);
    // Every model call went to the one model named on the command line.
    expect(new Set(server.requests.map((r) => r.body.model))).toEqual(new Set(["gpt-4.1-mini"]));

    const allowed = await withoutConfig(server.baseURL, () => cli([...args, "--max-errors", "1"]));
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toMatch(
      /0 \(no GATS: planner \+ its tool calls\)\s+│\s+50\.0%\s+│\s+50\.0%\s+│\s+50\.0%\s+│\s+1\s/,
    );
    expect(allowed.stdout).toContain("2 items; accuracy over all 2, as BFCL computes it");
    expect(allowed.stdout).toContain("1 errored (1 failed as a whole)");
    expect(allowed.stderr).toContain("1 of 2 items errored; --max-errors allows 1, so this passes");
  }, 60_000);

  it("a role with no model names bench bfcl's own flag, before any model call", async () => {
    await start("nothing", triangle);
    const run = await withoutConfig(server.baseURL, () =>
      cli(["bench", "bfcl", "--data", BFCL_DIR, "--categories", "simple", "--limit", "1"]),
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'no model is configured for the "checklist" role: set roles.checklist or roles.default in terrarium.config.yaml (e.g. roles: { default: openai:gpt-4.1-mini }), or pass --planner <provider:model>',
    );
    expect(run.stderr).not.toContain("--model");
    expect(server.requests).toHaveLength(0);
  });

  it("multi-turn run: an item whose planner call fails is errored and fails the run", async () => {
    await start("docs folder", (body) => {
      const last = String(body.messages.at(-1).content);
      if (last.includes("mean of 2, 4 and 9"))
        return {
          reply: {
            toolCalls: [
              { name: "mean", arguments: { numbers: [2, 4, 9] } },
              { name: "add_note", arguments: { title: "mean", body: "5.0" } },
            ],
          },
        };
      if (last.includes("How many notes"))
        return { reply: { toolCalls: [{ name: "count_notes", arguments: {} }] } };
      return { reply: { content: "Nothing to do." } };
    });
    const config = writeScriptedConfig(tempDir(), server.baseURL, { default: "scripted:m" });
    const run = await cli([
      "--config",
      config,
      "bench",
      "bfcl",
      "--data",
      MULTI,
      "--categories",
      "multi_turn_base",
      "--backends",
      BACKENDS,
      "--max-retries",
      "0",
      "--json",
    ]);
    expect(run.code).toBe(1);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({ items: 2, failedItems: 1, errored: 1 });
    expect(summary.errorKinds).toEqual([
      expect.objectContaining({ kind: "model_call_failed", count: 1, firstId: "multi_turn_base_0" }),
    ]);
    expect(summary.budgets[0].categories.multi_turn_base).toEqual({
      items: 2,
      correct: 1,
      errored: 1,
      accuracy: 0.5,
    });
    expect(run.stderr).toContain("1 of 2 items errored; --max-errors allows 0");
  }, 60_000);

  it("scoring: a results line that records a failed model call is wrong, counted apart, and fails unless allowed", async () => {
    const dir = tempDir();
    const single = join(dir, "single.jsonl");
    writeFileSync(
      single,
      [
        { id: "simple_0", calls: [{ name: "calculate_triangle_area", arguments: { base: 10, height: 5 } }] },
        { id: "simple_1", error: "the model timed out" },
        { id: "simple_2", result: "Error during inference: rate limited" },
      ]
        .map((line) => JSON.stringify(line))
        .join("\n"),
    );
    const score = (results: string, categories: string, ...more: string[]) =>
      cli([
        "bench",
        "bfcl",
        "score",
        "--data",
        categories === "simple" ? BFCL_DIR : MULTI,
        "--categories",
        categories,
        "--results",
        results,
        "--only-present",
        ...more,
      ]);
    const failed = await score(single, "simple", "--json");
    expect(failed.code).toBe(1);
    const result = JSON.parse(failed.stdout);
    expect(result).toMatchObject({
      schemaVersion: 2,
      categories: { simple: { items: 3, correct: 1, errored: 2, accuracy: 1 / 3 } },
      errored: 2,
      errorKinds: [
        { kind: "inference_error", count: 2, firstId: "simple_1", firstMessage: "the model timed out" },
      ],
    });
    expect(result.items.find((item: { id: string }) => item.id === "simple_2")).toEqual({
      id: "simple_2",
      category: "simple",
      valid: false,
      errorType: "inference_error",
      error: "Error during inference: rate limited",
      errored: true,
    });
    expect(failed.stderr).toBe(
      "inference_error: 2 (first, simple_1: the model timed out)\n2 of 3 items errored; --max-errors allows 0\n",
    );
    const allowed = await score(single, "simple", "--max-errors", "2");
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toMatch(/simple\s+│\s+3\s+│\s+1\s+│\s+2\s+│\s+33\.33%/);
    expect(allowed.stderr).toContain("2 of 3 items errored; --max-errors allows 2, so this passes");

    // Multi-turn scoring, on BFCL's backends: the same rule.
    const multi = join(dir, "multi.jsonl");
    writeFileSync(multi, JSON.stringify({ id: "multi_turn_base_0", error: "the model timed out" }));
    const multiFailed = await score(multi, "multi_turn_base", "--backends", BACKENDS);
    expect(multiFailed.code).toBe(1);
    expect(multiFailed.stdout).toMatch(/multi_turn_base\s+│\s+1\s+│\s+0\s+│\s+1\s+│\s+0\.00%/);
    expect(multiFailed.stderr).toBe(
      "multi_turn:inference_error: 1 (first, multi_turn_base_0: the model timed out)\n1 of 1 items errored; --max-errors allows 0\n",
    );
  }, 60_000);

  it("refuses a bad --max-errors before any work", async () => {
    for (const command of [
      ["bench", "bfcl"],
      ["bench", "bfcl", "score", "--results", "nowhere.jsonl"],
    ]) {
      const run = await cli([...command, "--data", BFCL_DIR, "--max-errors", "-2"]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("option '--max-errors <n>' argument '-2' is invalid");
    }
  });
});
