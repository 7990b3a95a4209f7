import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { exploreWithSchemas } from "../../src/bench/envsim/collect.js";
import type { EnvSimSample } from "../../src/bench/envsim/types.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { cli, jsonLines } from "../helpers/cli.js";
import { withoutConfig } from "../helpers/no-config.js";
import { approvingReply } from "../helpers/scripted-gats.js";
import { type ScriptedLlmServer, startScriptedLlmServer } from "../helpers/scripted-llm-server.js";

let server: ScriptedLlmServer;
afterEach(() => server?.close());

/** A small benchmark of bank samples, written to `<dir>/bench.jsonl`. */
async function bench(dir: string): Promise<EnvSimSample[]> {
  const bank = BUILTIN_ENVIRONMENTS.bank;
  if (!bank) throw new Error("bank");
  const samples = (await exploreWithSchemas(bank, { trajectories: 2, steps: 6, seed: 5 })).samples.filter(
    (sample) => sample.step % 3 === 2,
  );
  writeFileSync(join(dir, "bench.jsonl"), samples.map((s) => `${JSON.stringify(s)}\n`).join(""));
  return samples;
}

/** Answers every prediction (the paper's prompt and terrarium's llm simulator) with an empty change. */
function predicting(body: any) {
  return (
    approvingReply(body?.response_format?.json_schema?.name) ?? {
      reply: { content: JSON.stringify({ observation: "{}", changes: [] }) },
    }
  );
}

describe("envsim eval: errored predictions", () => {
  it("with only --simulator <model> and no config, a failed model call is counted, listed by kind, and fails the run; --resume makes it again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-envsim-errors-"));
    const samples = await bench(dir);
    expect(samples.length).toBeGreaterThan(2);
    // The second prediction's model call fails (one at a time, so it is the second sample's).
    server = await startScriptedLlmServer(
      [predicting({}), { status: 400, error: { message: "the model cannot predict this" } }],
      { respond: predicting },
    );
    const out = join(dir, "results");
    const args = [
      "envsim",
      "eval",
      "--bench",
      join(dir, "bench.jsonl"),
      "--simulator",
      "openai:gpt-4.1-mini",
      "--out",
      out,
      "--concurrency",
      "1",
    ];
    const run = await withoutConfig(server.baseURL, () => cli(args));
    expect(run.code).toBe(1);
    const predictions = jsonLines(readFileSync(join(out, "openai_gpt-4.1-mini.jsonl"), "utf8"));
    const failed = predictions.filter((p) => p.error !== undefined);
    expect(failed).toEqual([expect.objectContaining({ errorKind: "model_call_failed" })]);
    const id = failed[0]?.sampleId;
    expect(run.stderr.trim().split("\n").slice(-2)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^openai:gpt-4\\.1-mini \\(mdp prompt\\): model_call_failed: 1 \\(first, ${id?.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}: .*the model cannot predict this\\)$`,
        ),
      ),
      `1 of ${samples.length} predictions errored; --max-errors allows 0`,
    ]);
    // The summary file and the report say it too.
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary.simulators[0].errors).toEqual({
      errored: 1,
      errorKinds: [
        {
          kind: "model_call_failed",
          count: 1,
          firstId: id,
          firstMessage: expect.stringContaining("the model cannot predict this"),
        },
      ],
    });
    const report = readFileSync(join(out, "report.md"), "utf8");
    expect(report).toContain("## Errored predictions");
    expect(report).toContain(
      "- openai:gpt-4.1-mini (mdp prompt): 1 errored\n  - model_call_failed: 1 (first, ",
    );

    // Resumed: the errored prediction is made again (the model answers now), and the run passes.
    const before = server.requests.length;
    const resumed = await withoutConfig(server.baseURL, () => cli([...args, "--resume"]));
    expect(resumed.code).toBe(0);
    expect(server.requests.length - before).toBe(1);
    expect(resumed.stderr).not.toContain("errored");
    expect(JSON.parse(readFileSync(join(out, "summary.json"), "utf8")).simulators[0].errors).toEqual({
      errored: 0,
      errorKinds: [],
    });
  }, 60_000);

  it("--max-errors allows that many errored predictions", async () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-envsim-errors-"));
    const samples = await bench(dir);
    server = await startScriptedLlmServer([{ status: 400, error: { message: "no" } }], {
      respond: predicting,
    });
    const run = await withoutConfig(server.baseURL, () =>
      cli([
        "envsim",
        "eval",
        "--bench",
        join(dir, "bench.jsonl"),
        "--simulator",
        "llm:openai:gpt-4.1-mini",
        "--out",
        join(dir, "results"),
        "--concurrency",
        "1",
        "--max-errors",
        "1",
      ]),
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      `1 of ${samples.length} predictions errored; --max-errors allows 1, so this passes`,
    );
    // terrarium's llm simulator ran on the model named on the command line, with no config.
    expect(new Set(server.requests.map((r) => r.body.model))).toEqual(new Set(["gpt-4.1-mini"]));
  }, 60_000);

  it("a role with no model names envsim eval's own flag; a bad --max-errors is refused; both before any work", async () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-envsim-errors-"));
    await bench(dir);
    server = await startScriptedLlmServer([], { respond: predicting });
    const args = ["envsim", "eval", "--bench", join(dir, "bench.jsonl"), "--out", join(dir, "results")];
    const noModel = await withoutConfig(server.baseURL, () => cli([...args, "--simulator", "llm:"]));
    expect(noModel.code).toBe(2);
    expect(noModel.stderr).toContain(
      'no model is configured for the "simulator" role: set roles.simulator or roles.default in terrarium.config.yaml (e.g. roles: { default: openai:gpt-4.1-mini }), or pass --simulator llm:<provider:model>',
    );
    expect(noModel.stderr).not.toContain("--model");
    const bad = await cli([...args, "--simulator", "schema", "--max-errors", "lots"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("option '--max-errors <n>' argument 'lots' is invalid");
    expect(server.requests).toHaveLength(0);
  });
});
