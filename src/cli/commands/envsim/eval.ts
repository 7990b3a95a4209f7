import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, extname, isAbsolute, join, relative, resolve } from "node:path";
import type { Command } from "commander";
import { predictionErrors } from "../../../bench/envsim/errors.js";
import {
  checkBenchmarkSample,
  describeSimulator,
  EpisodeIndex,
  evaluateSamples,
  parseSimulatorSpec,
  readEpisodes,
} from "../../../bench/envsim/evaluate.js";
import { envsimRunId, evaluateOnQueue } from "../../../bench/envsim/queued.js";
import {
  renderCsv,
  renderHtml,
  renderJson,
  renderMarkdown,
  type SimulatorSummary,
} from "../../../bench/envsim/report.js";
import { isSampleFile, readSamplesSync } from "../../../bench/envsim/sample-store.js";
import { type ScoreMode, scoreSample, summarise } from "../../../bench/envsim/score.js";
import type { EnvSimPrediction, EnvSimSample } from "../../../bench/envsim/types.js";
import { type ErrorCounts, errorVerdict } from "../../../core/error-tally.js";
import { TerrariumError } from "../../../core/errors.js";
import { loadConfig, withCommandLineModel } from "../../../models/config.js";
import { Models } from "../../../models/hub.js";
import { describeWaiting, openRedisQueue } from "../../../queue/index.js";
import { type CliIo, collect, Progress, parsePositiveInteger, parseWholeNumber } from "../../io.js";

import { readJsonl } from "./shared.js";

/** The flags of `envsim eval` that name a model (for the message of a role with no model). */
const MODEL_FLAGS = ["--simulator llm:<provider:model>"] as const;

export function registerEvalCommands(envsim: Command, io: CliIo, setExitCode: (code: number) => void): void {
  envsim
    .command("eval")
    .requiredOption("--bench <file>", "benchmark JSONL (what envsim build or envsim import wrote)")
    .requiredOption(
      "--simulator <spec>",
      "code, schema, llm:<model> (terrarium's llm simulator), or <provider:model>[#history] (repeatable)",
      collect,
    )
    .requiredOption(
      "--out <dir>",
      "folder for predictions (one JSONL per simulator), run.json, summary.json and report.md",
    )
    .option(
      "--mode <mode>",
      "scoring: paper (the official scorer's rules) or strict (exact after-state)",
      "paper",
    )
    .option(
      "--transitions <file>",
      "the collected transitions the benchmark was built from: #history shows each sample's own episode from them",
    )
    .option("--concurrency <n>", "samples at once", parsePositiveInteger, 4)
    .option(
      "--resume",
      "keep the predictions already in --out and make the missing ones (errored ones are made again)",
    )
    .option("--seed <seed>", "seed of the bootstrap confidence intervals", "1")
    .option(
      "--max-errors <n>",
      "errored predictions (a model call that failed or timed out, a simulator error), over every simulator, allowed before the exit code is 1",
      parseWholeNumber,
      0,
    )
    .option(
      "--queue <url>",
      "redis://host:port[/db][?queue=<name>&prefix=<prefix>]: enqueue the samples for `terrarium worker`s instead of predicting here (local, the default, predicts here)",
    )
    .option("--json", "print the summary as JSON instead of Markdown tables")
    .description(
      "predict every sample with each simulator (cached, resumable, concurrent), then score FM and CM",
    )
    .addHelpText(
      "after",
      "\nThe model of a simulator given here (llm:<provider:model>, <provider:model>) serves every role the configuration leaves unset. An errored prediction scores FM = CM = false and is part of every n; each simulator's errored predictions are listed by kind (count and first message) in report.md, summary.json (simulators[].errors) and on stderr, and make the exit code 1 unless --max-errors allows them.\n\nExamples:\n  terrarium envsim eval --bench bench.jsonl --simulator code --simulator schema --mode strict --out results/\n  terrarium envsim eval --bench bench.jsonl --transitions transitions.jsonl --simulator openai:gpt-4.1-mini --simulator openai:gpt-4.1-mini#history --out results/ --resume\n",
    )
    .action(
      async (
        options: {
          bench: string;
          simulator: string[];
          out: string;
          mode: string;
          transitions?: string;
          concurrency: number;
          resume?: boolean;
          seed: string;
          queue?: string;
          maxErrors: number;
          json?: boolean;
        },
        command: Command,
      ) => {
        const mode = parseMode(options.mode);
        const samples = readBenchmark(options.bench);
        const simulators = options.simulator.map((spec) => ({ spec, simulator: parseSimulatorSpec(spec) }));
        const files = new Map<string, string>();
        for (const { spec } of simulators) {
          const file = predictionsFile(spec);
          const other = files.get(file);
          if (other !== undefined)
            throw new TerrariumError(
              "INVALID_INPUT",
              other === spec
                ? `--simulator ${spec} is given twice`
                : `--simulator ${other} and ${spec} would write the same file ${file}`,
            );
          files.set(file, spec);
        }
        const needsHistory = simulators.some(
          ({ simulator }) => simulator.kind === "model" && simulator.prompt === "history",
        );
        let episodes: EpisodeIndex | undefined;
        if (needsHistory) {
          if (!options.transitions)
            throw new TerrariumError(
              "INVALID_INPUT",
              "the #history prompt shows each sample's own episode, which a benchmark does not hold: give the transitions it was built from with --transitions <file>",
            );
          episodes = await readEpisodes(options.transitions, EpisodeIndex.keysOf(samples));
          const coverage = episodes.coverage(samples);
          io.stderr.write(
            `history: ${coverage.complete} of ${coverage.samples} samples have their whole episode before them` +
              (coverage.partial + coverage.missing > 0
                ? `; ${coverage.partial} only part of it, ${coverage.missing} none (is ${options.transitions} what the benchmark was built from?)`
                : "") +
              "\n",
          );
        } else if (options.transitions) {
          io.stderr.write("--transitions is used by #history simulators only; none was given\n");
        }

        mkdirSync(options.out, { recursive: true });
        const out = resolve(options.out);
        const run: EvalRun = {
          schemaVersion: EVAL_RUN_SCHEMA_VERSION,
          bench: relative(out, resolve(options.bench)),
          ...(options.transitions ? { transitions: relative(out, resolve(options.transitions)) } : {}),
          mode,
          simulators: [],
        };
        // A resumed run keeps the simulators of the earlier run that this one does not repeat.
        const earlier = options.resume ? readRunIfAny(out) : undefined;
        for (const entry of earlier?.simulators ?? [])
          if (!simulators.some(({ spec }) => spec === entry.spec) && existsSync(resolve(out, entry.file)))
            run.simulators.push({ ...entry, file: relative(out, resolve(out, entry.file)) });
        for (const { spec, simulator } of simulators)
          run.simulators.push({ name: describeSimulator(simulator), spec, file: predictionsFile(spec) });
        // Written first, so `envsim report` can read whatever an interrupted run made.
        writeRun(out, run);

        const ids = new Set(samples.map((sample) => sample.id));
        for (const { spec, simulator } of simulators) {
          const file = join(out, predictionsFile(spec));
          const { done, retried } = options.resume
            ? keepFinished(file, ids)
            : { done: new Set<string>(), retried: 0 };
          if (!options.resume) writeFileSync(file, "");
          if (options.queue !== undefined && options.queue !== "local") {
            // The configuration's budget holds for the whole run, over every worker.
            const configPath = command.optsWithGlobals().config as string | undefined;
            const { budgetUsd } = loadConfig(configPath ? { path: configPath } : {}).config;
            await predictOnQueue(
              options.queue,
              { samples, spec, done, retried, file, bench: options.bench, out },
              io,
              {
                ...(episodes ? { episodes } : {}),
                resume: options.resume === true,
                ...(budgetUsd !== undefined ? { budgetUsd } : {}),
              },
            );
            continue;
          }
          const model =
            simulator.kind === "model"
              ? simulator.model
              : simulator.kind === "terrarium"
                ? simulator.model
                : undefined;
          const configPath = command.optsWithGlobals().config as string | undefined;
          const { config } = loadConfig(configPath ? { path: configPath } : {});
          const models = new Models({
            config: withCommandLineModel(
              model ? { ...config, roles: { ...config.roles, simulator: model } } : config,
              model,
            ),
            modelFlags: MODEL_FLAGS,
          });
          const todo = samples.length - done.size;
          try {
            // A simulator whose model cannot be reached is refused before any sample is predicted.
            if (simulator.kind === "model") await models.backend(simulator.model);
            else if (simulator.kind === "terrarium" && simulator.simulator === "llm")
              await models.backend(models.modelFor("simulator"));
            io.stderr.write(
              `${describeSimulator(simulator)}: ${todo} samples to predict (${done.size} already done${
                retried > 0 ? `, ${retried} that failed before are predicted again` : ""
              })\n`,
            );
            const progress = new Progress(io.stderr, todo, "samples");
            let failed = 0;
            const predictions = await evaluateSamples(samples, simulator, {
              models,
              ...(episodes ? { episodes } : {}),
              concurrency: options.concurrency,
              done,
              onPrediction: (prediction) => {
                appendFileSync(file, `${JSON.stringify({ schemaVersion: 1, ...prediction })}\n`);
                if (prediction.error) failed++;
                progress.tick(failed > 0 ? `${failed} failed` : undefined);
              },
            });
            progress.done();
            const usage = models.ledger.totals;
            const errors = predictions.filter((p) => p.error);
            io.stderr.write(
              `  ${errors.length} failed${errors[0] ? ` (first: ${errors[0].error})` : ""}; ${usage.calls} model calls (${usage.cachedCalls} cached), $${usage.costUsd.toFixed(4)}\n`,
            );
          } finally {
            await models.close();
          }
        }
        const entries = scoreRun(run, out, samples, options.seed);
        writeFileSync(join(out, "summary.json"), renderJson(entries, { mode }));
        writeFileSync(join(out, "report.md"), renderMarkdown(entries, { mode }));
        io.stdout.write(options.json ? renderJson(entries, { mode }) : renderMarkdown(entries, { mode }));
        const verdict = errorVerdict(runErrors(entries), {
          total: samples.length * entries.length,
          maxErrors: options.maxErrors,
          noun: "predictions",
        });
        for (const line of verdict.lines) io.stderr.write(`${line}\n`);
        if (verdict.failed) setExitCode(1);
      },
    );

  envsim
    .command("report")
    .requiredOption("--results <dir>", "a folder written by envsim eval")
    .requiredOption("--out <file>", "report file: .html (charts), .md, .csv or .json")
    .option("--mode <mode>", "rescore with paper or strict rules (default: the mode of the run)")
    .option("--seed <seed>", "seed of the bootstrap confidence intervals", "1")
    .description(
      "render the tables and per-Δ charts of an evaluation (HTML works offline: the chart libraries are inlined)",
    )
    .addHelpText("after", "\nExample:\n  terrarium envsim report --results results/ --out report.html\n")
    .action((options: { results: string; out: string; mode?: string; seed: string }) => {
      const results = resolve(options.results);
      const run = readRun(results);
      const mode = parseMode(options.mode ?? run.mode);
      run.mode = mode;
      const entries = scoreRun(run, results, readBenchmark(resolve(results, run.bench)), options.seed);
      const extension = extname(options.out).toLowerCase();
      const text =
        extension === ".html"
          ? renderHtml(entries, { mode })
          : extension === ".csv"
            ? renderCsv(entries, { mode })
            : extension === ".json"
              ? renderJson(entries, { mode })
              : renderMarkdown(entries, { mode });
      writeFileSync(options.out, text);
      io.stderr.write(`report written to ${options.out} (${mode} scoring)\n`);
    });
}

/**
 * One simulator's predictions made by `terrarium worker`s: the samples go on the queue as one run (the
 * same run when resumed), and predictions are written as they arrive from any worker.
 */
async function predictOnQueue(
  url: string,
  job: {
    samples: EnvSimSample[];
    spec: string;
    done: Set<string>;
    retried: number;
    file: string;
    bench: string;
    out: string;
  },
  io: CliIo,
  options: { episodes?: EpisodeIndex; resume: boolean; budgetUsd?: number },
): Promise<void> {
  const { samples, spec, done, file } = job;
  const queue = await openRedisQueue(url);
  try {
    const runId = envsimRunId({ benchmark: readFileSync(job.bench), simulator: spec, out: job.out });
    const todo = samples.length - done.size;
    io.stderr.write(
      `${describeSimulator(parseSimulatorSpec(spec))}: ${todo} samples to predict on ${queue.description} (${done.size} already done${
        job.retried > 0 ? `, ${job.retried} that failed before are predicted again` : ""
      })\n`,
    );
    const progress = new Progress(io.stderr, todo, "samples");
    let failed = 0;
    const { predictions, earlier, spentUsd } = await evaluateOnQueue(queue, samples, spec, {
      runId,
      done,
      resume: options.resume,
      ...(options.budgetUsd !== undefined ? { budgetUsd: options.budgetUsd } : {}),
      ...(options.episodes ? { episodes: options.episodes } : {}),
      onWaiting: (info) => io.stderr.write(`${describeWaiting(info, queue.description)}\n`),
      onPrediction: (prediction) => {
        appendFileSync(file, `${JSON.stringify({ schemaVersion: 1, ...prediction })}\n`);
        if (prediction.error) failed++;
        progress.tick(failed > 0 ? `${failed} failed` : undefined);
      },
    });
    progress.done();
    const errors = predictions.filter((p) => p.error);
    io.stderr.write(
      `  ${errors.length} failed${errors[0] ? ` (first: ${errors[0].error})` : ""}; ${earlier} made by an earlier submission of this run; $${spentUsd.toFixed(4)} spent by the workers on model calls\n`,
    );
  } finally {
    await queue.close();
  }
}

/** Version of `run.json`: 2 keeps paths relative to the results folder (1 had them absolute; still read). */
const EVAL_RUN_SCHEMA_VERSION = 2;

/** What `envsim eval` ran, so `envsim report` can rescore and render it later. */
interface EvalRun {
  schemaVersion: number;
  /** The benchmark, relative to the results folder (absolute in version 1). */
  bench: string;
  /** The transitions the #history prompt read, relative to the results folder. */
  transitions?: string;
  mode: string;
  /** Each simulator's predictions file, relative to the results folder. */
  simulators: Array<{ name: string; spec: string; file: string }>;
}

function parseMode(mode: string): ScoreMode {
  if (mode !== "paper" && mode !== "strict")
    throw new TerrariumError("INVALID_INPUT", `--mode must be paper or strict, got "${mode}"`);
  return mode;
}

function predictionsFile(spec: string): string {
  return `${spec.replace(/[^A-Za-z0-9._-]+/g, "_")}.jsonl`;
}

/** The benchmark's samples, refusing files that are something else (predictions, SFT data, a published record). */
function readBenchmark(file: string): EnvSimSample[] {
  if (existsSync(file) && /^\s*\[/.test(readFileSync(file, "utf8").slice(0, 64)))
    throw new TerrariumError(
      "INVALID_INPUT",
      "this is a JSON array, not a benchmark in JSON Lines: if it is the published EnvSimBench file, convert it with `terrarium envsim import` first",
      { where: { file } },
    );
  const seen = new Map<string, number>();
  // A sample file of the v2 layout (states by reference) is read through its decoder; lines number samples.
  const records: unknown[] = isSampleFile(file) ? readSamplesSync(file) : readJsonl<unknown>(file);
  const samples = records.map((record, index) => {
    const sample = checkBenchmarkSample(record, { file, line: index + 1 });
    const first = seen.get(sample.id);
    if (first !== undefined)
      throw new TerrariumError(
        "INVALID_INPUT",
        `sample id ${sample.id} appears twice (also on line ${first}): predictions are kept by sample id`,
        { where: { file, line: index + 1 } },
      );
    seen.set(sample.id, index + 1);
    return sample;
  });
  if (samples.length === 0)
    throw new TerrariumError("INVALID_INPUT", "the benchmark has no samples", { where: { file } });
  return samples;
}

/**
 * For `--resume`: the predictions file keeps one finished prediction per benchmark sample (the last one
 * made); predictions with an error are dropped, so they are made again.
 */
function keepFinished(file: string, ids: ReadonlySet<string>): { done: Set<string>; retried: number } {
  if (!existsSync(file)) {
    writeFileSync(file, "");
    return { done: new Set(), retried: 0 };
  }
  const kept = new Map<string, EnvSimPrediction>();
  const failed = new Set<string>();
  readJsonl<unknown>(file).forEach((record, index) => {
    const prediction = record as EnvSimPrediction;
    if (prediction === null || typeof prediction !== "object" || typeof prediction.sampleId !== "string")
      throw new TerrariumError(
        "INVALID_INPUT",
        "not a predictions file (a line has no sampleId): --resume continues what envsim eval wrote in --out",
        { where: { file, line: index + 1 } },
      );
    if (!ids.has(prediction.sampleId)) return;
    if (prediction.error !== undefined) {
      failed.add(prediction.sampleId);
      kept.delete(prediction.sampleId);
    } else {
      failed.delete(prediction.sampleId);
      kept.set(prediction.sampleId, prediction);
    }
  });
  writeFileSync(file, [...kept.values()].map((p) => `${JSON.stringify(p)}\n`).join(""));
  return { done: new Set(kept.keys()), retried: failed.size };
}

function writeRun(out: string, run: EvalRun): void {
  writeFileSync(join(out, "run.json"), `${JSON.stringify(run, null, 2)}\n`);
}

function readRunIfAny(out: string): EvalRun | undefined {
  return existsSync(join(out, "run.json")) ? readRun(out) : undefined;
}

function readRun(results: string): EvalRun {
  const file = join(results, "run.json");
  if (!existsSync(file))
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `${results} has no run.json: --results takes a folder written by envsim eval`,
      { where: { file } },
    );
  let run: EvalRun;
  try {
    run = JSON.parse(readFileSync(file, "utf8")) as EvalRun;
  } catch (error) {
    throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, { where: { file } });
  }
  if (typeof run?.bench !== "string" || !Array.isArray(run.simulators))
    throw new TerrariumError("INVALID_INPUT", "not a run.json written by envsim eval (bench, simulators)", {
      where: { file },
    });
  return run;
}

/** Scores every simulator of a run; paths in the run are relative to the results folder (or absolute). */
function scoreRun(run: EvalRun, results: string, samples: EnvSimSample[], seed: string): SimulatorSummary[] {
  return run.simulators.map((entry) => {
    const file = isAbsolute(entry.file) ? entry.file : resolve(results, entry.file);
    if (!existsSync(file))
      throw new TerrariumError(
        "FILE_UNREADABLE",
        `the predictions of ${entry.spec} (${basename(file)}) are missing from ${results}`,
        { where: { file } },
      );
    const predictions = new Map(readJsonl<EnvSimPrediction>(file).map((p) => [p.sampleId, p]));
    const scores = samples.map((sample) =>
      scoreSample(
        sample,
        predictions.get(sample.id) ?? {
          sampleId: sample.id,
          observation: "",
          changes: [],
          error: "no prediction",
        },
        run.mode as ScoreMode,
      ),
    );
    return {
      name: entry.name,
      summary: summarise(samples, scores, { seed }),
      errors: predictionErrors(samples, predictions),
    };
  });
}

/** The errored predictions of every simulator of a run, each kind named with its simulator. */
function runErrors(entries: readonly SimulatorSummary[]): ErrorCounts {
  return {
    errored: entries.reduce((total, entry) => total + (entry.errors?.errored ?? 0), 0),
    errorKinds: entries.flatMap((entry) =>
      (entry.errors?.errorKinds ?? []).map((kind) => ({ ...kind, kind: `${entry.name}: ${kind.kind}` })),
    ),
  };
}
