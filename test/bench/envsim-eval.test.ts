import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { replayCalls } from "../../src/bench/envsim/collect.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { cli, jsonLines } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

let server: ScriptedLlmServer;
afterEach(() => server?.close());

describe("terrarium envsim collect / build / eval", () => {
  it("collects from a built-in, then a model predicts each sample with the implementation in its prompt, resumably", async () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-envsim-"));
    const samplesFile = join(dir, "samples.jsonl");
    const collected = await cli([
      "envsim",
      "collect",
      "bank",
      "--out",
      samplesFile,
      "--trajectories",
      "2",
      "--steps",
      "6",
    ]);
    expect(collected.stderr).toMatch(/^bank: 12 transitions; tools succeeded \d+\/6/);
    const bench = join(dir, "bench.jsonl");
    const built = await cli([
      "envsim",
      "build",
      "--transitions",
      samplesFile,
      "--out",
      bench,
      "--targets",
      "2,2,2,2,2,2",
    ]);
    expect(built.stdout).toMatch(/samples from 1 environments written to/);
    const samples = jsonLines(readFileSync(bench, "utf8"));
    expect(samples.length).toBeGreaterThan(0);
    expect(samples.every((s) => s.step > 0)).toBe(true);

    server = await startScriptedLlmServer([], {
      respond: () => ({ reply: { content: JSON.stringify({ observation: "{}", changes: [] }) } }),
    });
    const config = writeScriptedConfig(dir, server.baseURL);
    const out = join(dir, "results");
    mkdirSync(out);
    // Pretend an earlier run predicted the first sample already.
    writeFileSync(
      join(out, "scripted_sim.jsonl"),
      `${JSON.stringify({ schemaVersion: 1, sampleId: samples[0]?.id, observation: "x", changes: [] })}\n`,
    );
    const run = await cli([
      "--config",
      config,
      "envsim",
      "eval",
      "--bench",
      bench,
      "--simulator",
      "scripted:sim",
      "--out",
      out,
      "--resume",
      "--concurrency",
      "2",
    ]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      `scripted:sim (mdp prompt): ${samples.length - 1} samples to predict (1 already done)`,
    );
    const predictions = jsonLines(readFileSync(join(out, "scripted_sim.jsonl"), "utf8"));
    expect(predictions.map((p) => p.sampleId).sort()).toEqual(samples.map((s) => s.id).sort());
    expect(server.requests).toHaveLength(samples.length - 1);
    // The prompt carries the implementation and the before-state inside data blocks.
    const user = server.requests[0]?.body.messages[1].content as string;
    expect(user).toContain("<data>");
    expect(user).toContain("transfer");
  });

  it("evaluates terrarium's schema simulator as a baseline", async () => {
    const bank = BUILTIN_ENVIRONMENTS.bank;
    if (!bank) throw new Error("bank");
    const samples = await replayCalls(bank, [
      [
        { name: "get_account", arguments: { account_id: "ACC-1001" } },
        { name: "freeze_account", arguments: { account_id: "ACC-1001" } },
      ],
    ]);
    const dir = mkdtempSync(join(tmpdir(), "terrarium-envsim-"));
    const bench = join(dir, "bench.jsonl");
    writeFileSync(bench, samples.map((s) => JSON.stringify(s)).join("\n"));
    const out = join(dir, "results");
    const run = await cli(["envsim", "eval", "--bench", bench, "--simulator", "schema", "--out", out]);
    expect(run.code).toBe(0);
    const predictions = jsonLines(readFileSync(join(out, "schema.jsonl"), "utf8"));
    expect(predictions).toHaveLength(2);
    expect(
      predictions.every(
        (p) => Array.isArray(p.changes) && p.changes.length === 0 && typeof p.observation === "string",
      ),
    ).toBe(true);
  });
});

describe("terrarium envsim sft", () => {
  it("writes OpenAI chat records with an environment held out", async () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-envsim-"));
    const samplesFile = join(dir, "samples.jsonl");
    await cli([
      "envsim",
      "collect",
      "bank",
      "airline",
      "--out",
      samplesFile,
      "--trajectories",
      "2",
      "--steps",
      "5",
    ]);
    const train = join(dir, "train.jsonl");
    const test = join(dir, "test.jsonl");
    const run = await cli([
      "envsim",
      "sft",
      "--samples",
      samplesFile,
      "--out",
      train,
      "--holdout",
      "bank",
      "--holdout-out",
      test,
      "--reasoning",
      "complex",
    ]);
    expect(run.code).toBe(0);
    const trainRecords = jsonLines(readFileSync(train, "utf8"));
    const testRecords = jsonLines(readFileSync(test, "utf8"));
    expect(trainRecords).toHaveLength(10);
    expect(testRecords).toHaveLength(10);
    expect(trainRecords[0]?.messages.map((m: { role: string }) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
    ]);
    expect(
      trainRecords.every(
        (r) => r.messages[1].content.includes('"airline"') || r.messages[1].content.includes("airline"),
      ),
    ).toBe(true);
    expect(JSON.parse(trainRecords[0]?.messages[2].content)).toHaveProperty("changes");
  });
});
