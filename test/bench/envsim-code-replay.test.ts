import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CodePredictor } from "../../src/bench/envsim/code-replay.js";
import { exploreWithSchemas } from "../../src/bench/envsim/collect.js";
import { evaluateSamples } from "../../src/bench/envsim/evaluate.js";
import { readSamples, writeSamples } from "../../src/bench/envsim/sample-store.js";
import { scoreSample } from "../../src/bench/envsim/score.js";
import type { EnvSimSample } from "../../src/bench/envsim/types.js";
import { loadEnvironment } from "../../src/envs/load.js";
import type { Environment, EnvironmentInstance } from "../../src/envs/types.js";
import type { Models } from "../../src/models/hub.js";
import { cli } from "../helpers/cli.js";

/**
 * The code simulator on samples of BFCL-style multi-turn backends driven as plain Python environments:
 * classes built from their own scenario (`_load_scenario`), never from a state, with private attributes
 * the state does not show (the file system's current directory) or no state at all (the math API).
 */

const BACKENDS = resolve("test", "fixtures", "bfcl-multi-turn", "backends");
const PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code";
const folder = mkdtempSync(join(tmpdir(), "terrarium-envsim-code-replay-"));
const descriptors = { fs: join(folder, "tiny-fs.json"), math: join(folder, "math.json"), notes: "" };
descriptors.notes = join(folder, "notes.json");

beforeAll(() => {
  // The backends import each other through BFCL's package path, as BFCL's own do.
  const parent = join(folder, "lib", "bfcl_eval", "eval_checker", "multi_turn_eval");
  mkdirSync(parent, { recursive: true });
  symlinkSync(BACKENDS, join(parent, "func_source_code"));
  const common = { kind: "python", pythonPath: [join(folder, "lib")], timeoutMs: 10_000 };
  writeFileSync(
    descriptors.fs,
    JSON.stringify({
      ...common,
      name: "tiny-fs",
      module: `${PACKAGE}.tiny_file_system`,
      class: "TinyFileSystem",
      init: {
        method: "_load_scenario",
        config: {
          root: {
            alex: {
              type: "directory",
              contents: {
                docs: { type: "directory", contents: { "a.txt": { type: "file", content: "hi" } } },
                "notes.txt": { type: "file", content: "x" },
              },
            },
          },
        },
      },
    }),
  );
  writeFileSync(
    descriptors.math,
    JSON.stringify({
      ...common,
      name: "tiny-math",
      module: `${PACKAGE}.tiny_math_api`,
      class: "TinyMathAPI",
    }),
  );
  writeFileSync(
    descriptors.notes,
    JSON.stringify({
      ...common,
      name: "notes",
      module: `${PACKAGE}.notes_api`,
      class: "NotesAPI",
      init: {
        method: "_load_scenario",
        config: { notes: { "1": { title: "a", body: "b" } }, note_counter: 2 },
      },
      // BFCL's function docs: the tools an agent sees (not the fixture's test hooks wait and crash).
      tools: resolve("test", "fixtures", "bfcl-multi-turn", "multi_turn_func_doc", "notes_api.json"),
    }),
  );
});

const environments: Environment[] = [];
afterAll(async () => {
  await Promise.all(environments.map((environment) => environment.close?.()));
});

async function load(reference: string): Promise<Environment> {
  const environment = await loadEnvironment(reference);
  environments.push(environment);
  return environment;
}

const NO_MODELS = {} as Models;

/** Strict scores of predictions: [samples, FM, CM, errors]. */
function strict(samples: EnvSimSample[], predictions: Array<{ sampleId: string; error?: string }>) {
  const byId = new Map(predictions.map((p) => [p.sampleId, p]));
  let fm = 0;
  let cm = 0;
  let errors = 0;
  for (const sample of samples) {
    const prediction = byId.get(sample.id) as Parameters<typeof scoreSample>[1];
    const score = scoreSample(sample, prediction, "strict");
    if (score.fm) fm++;
    if (score.cm) cm++;
    if (prediction.error !== undefined) errors++;
  }
  return [samples.length, fm, cm, errors];
}

/**
 * `envsim eval --simulator code --mode strict` on a file: its summary must be 100% on the samples it
 * groups, and every sample (grouped or not) is scored here from the predictions: [samples, FM, CM, errors].
 */
async function cliCodeScore(file: string, out: string): Promise<number[]> {
  const run = await cli([
    "envsim",
    "eval",
    "--bench",
    file,
    "--simulator",
    "code",
    "--mode",
    "strict",
    "--out",
    out,
    "--json",
  ]);
  expect(run.code, run.stderr).toBe(0);
  const overall = JSON.parse(run.stdout).simulators[0].summary.overall;
  expect([overall.fm.value, overall.cm.value]).toEqual([1, 1]);
  const predictions = readFileSync(join(out, "code.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { sampleId: string; error?: string });
  return strict(await readSamples(file), predictions);
}

/** Counts the instances an environment makes and the steps they take. */
function counted(environment: Environment): { environment: Environment; creates: number; steps: number } {
  const counts = { creates: 0, steps: 0 };
  const wrap = (instance: EnvironmentInstance) =>
    new Proxy(instance, {
      get(target, property) {
        if (property === "step")
          return (...args: Parameters<EnvironmentInstance["step"]>) => {
            counts.steps++;
            return (target.step as (...a: unknown[]) => unknown).apply(target, args);
          };
        const value = Reflect.get(target, property);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  const proxy = new Proxy(environment, {
    get(target, property) {
      if (property === "create")
        return async (options?: Parameters<Environment["create"]>[0]) => {
          counts.creates++;
          return wrap(await target.create(options));
        };
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return Object.assign(counts, { environment: proxy });
}

describe("the code simulator on Python environments that cannot start from a state", () => {
  it("scores every explored and replayed sample of BFCL-style backends at 100% strict, through the CLI", async () => {
    const explored = join(folder, "explored.jsonl");
    const collected = await cli([
      "envsim",
      "collect",
      descriptors.fs,
      descriptors.math,
      descriptors.notes,
      "--trajectories",
      "3",
      "--steps",
      "12",
      "--out",
      explored,
    ]);
    expect(collected.code, collected.stderr).toBe(0);
    const calls = join(folder, "calls.jsonl");
    // The current directory is private: only a replay knows where `touch` and `ls` act.
    writeFileSync(
      calls,
      `${JSON.stringify([
        { name: "cd", arguments: { folder: "docs" } },
        { name: "touch", arguments: { file_name: "b.txt" } },
        { name: "echo", arguments: { content: "two", file_name: "b.txt" } },
        { name: "ls", arguments: {} },
        { name: "cd", arguments: { folder: ".." } },
        { name: "cat", arguments: { file_name: "b.txt" } },
        { name: "mkdir", arguments: { dir_name: "docs" } },
        { name: "pwd", arguments: {} },
      ])}\n`,
    );
    const replayed = join(folder, "replayed.jsonl");
    const replay = await cli([
      "envsim",
      "collect",
      descriptors.fs,
      "--source",
      "replay",
      "--calls",
      calls,
      "--out",
      replayed,
    ]);
    expect(replay.code, replay.stderr).toBe(0);
    const replayedSamples = await readSamples(replayed);
    expect(replayedSamples.map((s) => [s.call.name, s.success, s.observationText])).toEqual([
      ["cd", true, "None"],
      ["touch", true, "None"],
      ["echo", true, "None"],
      ["ls", true, "{'current_directory_content': ['a.txt', 'b.txt']}"],
      ["cd", true, "None"],
      ["cat", false, "{'error': 'cat: b.txt: No such file'}"],
      ["mkdir", false, "{'error': 'mkdir: docs: already exists'}"],
      ["pwd", true, "{'current_working_directory': '/alex'}"],
    ]);
    // A collection's file states no prefix: readers take it from the samples before.
    expect(readFileSync(replayed, "utf8")).not.toMatch(/"prefix"/);
    expect(replayedSamples.map((s) => s.prefix?.length)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);

    const explore = await readSamples(explored);
    expect(explore).toHaveLength(3 * 3 * 12);
    expect(new Set(explore.map((s) => s.envId))).toEqual(new Set(["tiny-fs", "tiny-math", "notes"]));
    expect(await cliCodeScore(explored, join(folder, "eval-explored"))).toEqual([108, 108, 108, 0]);
    expect(await cliCodeScore(replayed, join(folder, "eval-replayed"))).toEqual([8, 8, 8, 0]);

    // A benchmark holds a few steps of each episode: each of its samples carries its own prefix.
    const bench = join(folder, "bench.jsonl");
    const built = await cli([
      "envsim",
      "build",
      "--transitions",
      explored,
      replayed,
      "--out",
      bench,
      "--targets",
      "4,4,4,4,2,0",
    ]);
    expect(built.code, built.stderr).toBe(0);
    const benchSamples = await readSamples(bench);
    expect(benchSamples.length).toBeGreaterThan(10);
    expect(benchSamples.every((s) => s.prefix?.length === s.step - 1)).toBe(true);
    const n = benchSamples.length;
    expect(await cliCodeScore(bench, join(folder, "eval-bench"))).toEqual([n, n, n, 0]);
    // The same benchmark as a v2 sample file: the prefixes its episodes do not imply are stored.
    const benchV2 = join(folder, "bench-v2.jsonl");
    await writeSamples(benchV2, benchSamples);
    expect((await readSamples(benchV2)).map((s) => s.prefix)).toEqual(benchSamples.map((s) => s.prefix));
    expect(await cliCodeScore(benchV2, join(folder, "eval-bench-v2"))).toEqual([n, n, n, 0]);
  }, 240_000);

  it("replays each trajectory once when its samples are scored in order, not once per sample", async () => {
    const environment = await load(descriptors.fs);
    const { samples } = await exploreWithSchemas(environment, {
      trajectories: 3,
      steps: 10,
      seed: 7,
      reference: descriptors.fs,
    });
    const counting = counted(environment);
    const predictor = new CodePredictor();
    const predictions = [];
    try {
      for (const sample of samples) predictions.push(await predictor.predict(sample, counting.environment));
    } finally {
      await predictor.close();
    }
    expect(strict(samples, predictions)).toEqual([30, 30, 30, 0]);
    // One fresh instance per trajectory, and each sample's call stepped once.
    expect([counting.creates, counting.steps]).toEqual([3, 30]);

    // Out of order: the last sample of each trajectory first (a replay of its 9 earlier calls), then the
    // others in order, which continue the instance their first sample made.
    const reordered = [...samples.filter((s) => s.step === 10), ...samples.filter((s) => s.step < 10)];
    const again = counted(environment);
    const second = new CodePredictor();
    const predicted = [];
    try {
      for (const sample of reordered) predicted.push(await second.predict(sample, again.environment));
    } finally {
      await second.close();
    }
    expect(strict(reordered, predicted)).toEqual([30, 30, 30, 0]);
    expect([again.creates, again.steps]).toEqual([6, 3 * (10 + 9)]);
  }, 120_000);

  it("scores concurrently (evaluateSamples) at 100% strict", async () => {
    const environment = await load(descriptors.fs);
    const { samples } = await exploreWithSchemas(environment, {
      trajectories: 4,
      steps: 8,
      seed: 3,
      reference: descriptors.fs,
    });
    const predictions = await evaluateSamples(
      samples,
      { kind: "code" },
      { models: NO_MODELS, concurrency: 4 },
    );
    expect(strict(samples, predictions)).toEqual([32, 32, 32, 0]);
  }, 120_000);

  it("a sample without its prefix (collected before it was recorded) fails with what to do", async () => {
    const environment = await load(descriptors.fs);
    const { samples } = await exploreWithSchemas(environment, {
      trajectories: 1,
      steps: 2,
      seed: 1,
      reference: descriptors.fs,
    });
    const old = samples.map(({ prefix: _prefix, ...rest }) => rest);
    const predictions = await evaluateSamples(old, { kind: "code" }, { models: NO_MODELS });
    expect(predictions).toHaveLength(2);
    for (const prediction of predictions) {
      expect(prediction.error).toMatch(/TinyFileSystem cannot start from this state/);
      expect(prediction.error).toMatch(
        /does not record the calls that led to its before-state .* collect it again to score it with the code simulator/,
      );
    }
    // A prefix that does not lead to the before-state is refused, saying where they differ.
    const wrong = {
      ...(samples[1] as EnvSimSample),
      prefix: [{ name: "mkdir", arguments: { dir_name: "zz" } }],
    };
    const [refused] = await evaluateSamples([wrong], { kind: "code" }, { models: NO_MODELS });
    expect(refused?.error).toMatch(
      /replaying the 1 earlier calls of the sample's trajectory on a fresh tiny-fs does not give its before-state \(the replay has \/root\/contents\/zz/,
    );
    const malformed = { ...(samples[1] as EnvSimSample), prefix: "cd alex" as never };
    const [bad] = await evaluateSamples([malformed], { kind: "code" }, { models: NO_MODELS });
    expect(bad?.error).toMatch(/sample tiny-fs\/schema-0\/2: its prefix is not a list of calls/);
  }, 60_000);
});
