import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import type { Command } from "commander";
import { buildBenchmark, PAPER_TARGETS } from "../../bench/envsim/build.js";
import { exploreWithAgent, exploreWithSchemas, replayCalls } from "../../bench/envsim/collect.js";
import { describeSimulator, evaluateSamples, parseSimulatorSpec } from "../../bench/envsim/evaluate.js";
import { fromEnvSimBenchRecord, toEnvSimBenchRecord } from "../../bench/envsim/records.js";
import {
  renderCsv,
  renderHtml,
  renderJson,
  renderMarkdown,
  type SimulatorSummary,
} from "../../bench/envsim/report.js";
import { type ScoreMode, scoreSample, summarise } from "../../bench/envsim/score.js";
import {
  type Composition,
  compose,
  holdoutSplit,
  toChatRecord,
  toShareGptRecord,
  writeJsonl as writeSftRecords,
} from "../../bench/envsim/sft.js";
import type { EnvSimPrediction, EnvSimSample } from "../../bench/envsim/types.js";
import { TerrariumError } from "../../core/errors.js";
import { loadEnvironment } from "../../envs/load.js";
import { loadConfig } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { type CliIo, collect } from "../io.js";

/** Reads a JSONL file into objects, naming the line of any bad one. */
export function readJsonl<T>(file: string): T[] {
  if (!existsSync(file))
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the file (no such file)", { where: { file } });
  return readFileSync(file, "utf8")
    .split("\n")
    .map((line, index) => ({ line, index }))
    .filter(({ line }) => line.trim() !== "")
    .map(({ line, index }) => {
      try {
        return JSON.parse(line) as T;
      } catch (error) {
        throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
          where: { file, line: index + 1 },
        });
      }
    });
}

function writeJsonl(file: string, records: unknown[]): void {
  writeFileSync(file, records.map((record) => `${JSON.stringify(record)}\n`).join(""));
}

function modelsFor(command: Command, roles: Record<string, string> = {}): Models {
  const configPath = command.optsWithGlobals().config as string | undefined;
  const { config } = loadConfig(configPath ? { path: configPath } : {});
  return new Models({ config: { ...config, roles: { ...config.roles, ...roles } } });
}

export function registerEnvsimCommands(program: Command, io: CliIo): void {
  const envsim = program
    .command("envsim")
    .description("EnvSimBench: how faithfully a simulator predicts what an environment really does");

  envsim
    .command("collect")
    .argument("[environment...]", "environments (built-in names, modules, descriptors); or use --env")
    .option("--env <environment>", "an environment (repeatable)", collect)
    .requiredOption("--out <file>", "samples JSONL")
    .option(
      "--source <source>",
      "explore (schema-driven, no model), agent (a model explores), or replay (--calls)",
      "explore",
    )
    .option("--trajectories <n>", "trajectories per environment", (v) => Number.parseInt(v, 10), 5)
    .option("--steps <n>", "steps per trajectory", (v) => Number.parseInt(v, 10), 20)
    .option("--calls <file>", "for replay: JSONL, one trajectory per line as a list of {name, arguments}")
    .option("--model <model>", "the exploring agent's model (default: roles.explorer or roles.default)")
    .option("--seed <seed>", "seed of exploration", "1")
    .description(
      "collect transitions (call, observation, before, after, changes, Δ) from executable environments",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  terrarium envsim collect --env all --out transitions.jsonl --trajectories 40 --steps 60\n  terrarium envsim collect bank --source agent --model openai:gpt-4.1-mini --out samples.jsonl\n",
    )
    .action(
      async (
        references: string[],
        options: {
          out: string;
          source: string;
          trajectories: number;
          steps: number;
          calls?: string;
          model?: string;
          seed: string;
        },
        command: Command,
      ) => {
        const samples: EnvSimSample[] = [];
        const models =
          options.source === "agent"
            ? modelsFor(command, options.model ? { explorer: options.model } : {})
            : undefined;
        try {
          for (const reference of references) {
            const environment = await loadEnvironment(reference);
            try {
              if (options.source === "explore" || options.source === "schema") {
                const { samples: found, coverage } = await exploreWithSchemas(environment, options);
                samples.push(...found);
                io.stderr.write(
                  `${environment.name}: ${found.length} transitions; tools succeeded ${coverage.toolsSucceeded}/${coverage.toolCount}, ` +
                    `tools with a guard hit ${coverage.toolsRejected}/${coverage.toolCount}, ${coverage.outcomes} distinct outcomes\n`,
                );
              } else if (options.source === "agent") {
                const found = await exploreWithAgent(environment, models as Models, options);
                samples.push(...found);
                io.stderr.write(`${environment.name}: ${found.length} transitions from the agent\n`);
              } else if (options.source === "replay") {
                if (!options.calls)
                  throw new TerrariumError("INVALID_INPUT", "--source replay needs --calls <file>");
                samples.push(...(await replayCalls(environment, readJsonl(options.calls), options.seed)));
              } else {
                throw new TerrariumError(
                  "INVALID_INPUT",
                  `--source must be schema, agent or replay, not "${options.source}"`,
                );
              }
            } finally {
              await environment.close?.();
            }
          }
          writeJsonl(options.out, samples);
          io.stderr.write(`${samples.length} samples written to ${options.out}\n`);
        } finally {
          await models?.close();
        }
      },
    );

  envsim
    .command("build")
    .requiredOption("--transitions <file...>", "transition/sample JSONL files (from collect or import)")
    .requiredOption("--out <file>", "benchmark JSONL")
    .option(
      "--targets <list>",
      "failure,no-change-0,no-change-1+,simple-per-Δ,medium-per-Δ,difficult (paper: 20,40,40,25,50,50)",
    )
    .option("--seed <seed>", "seed of the selection", "1")
    .option("--json", "print the counts as JSON")
    .description(
      "drop step 0, stratify by outcome / Δ tier / argument count, and fill each stratum with the diversity rule",
    )
    .addHelpText(
      "after",
      "\nExample:\n  terrarium envsim build --transitions transitions.jsonl --out bench.jsonl --seed 1\n",
    )
    .action(
      (options: { transitions: string[]; out: string; targets?: string; seed: string; json?: boolean }) => {
        const numbers = options.targets?.split(",").map((v) => Number.parseInt(v, 10));
        if (numbers && (numbers.length !== 6 || numbers.some((n) => !Number.isInteger(n) || n < 0))) {
          throw new TerrariumError(
            "INVALID_INPUT",
            "--targets needs six non-negative integers, e.g. 20,40,40,25,50,50",
          );
        }
        const targets = numbers
          ? {
              failure: numbers[0],
              noChangeZeroArgs: numbers[1],
              noChangeWithArgs: numbers[2],
              simplePerDelta: numbers[3],
              mediumPerDelta: numbers[4],
              difficult: numbers[5],
            }
          : PAPER_TARGETS;
        const all = options.transitions.flatMap((file) => readJsonl<EnvSimSample>(file));
        const { samples, report } = buildBenchmark(all, {
          targets: targets as typeof PAPER_TARGETS,
          seed: options.seed,
        });
        writeJsonl(options.out, samples);
        const byDelta: Record<string, number> = {};
        for (const sample of samples)
          if (sample.success) byDelta[String(sample.delta)] = (byDelta[String(sample.delta)] ?? 0) + 1;
        const environments = new Set(samples.map((sample) => sample.envId)).size;
        if (options.json) {
          io.stdout.write(
            `${JSON.stringify({ schemaVersion: 1, ...report, byDelta, environments }, null, 2)}\n`,
          );
          return;
        }
        for (const stratum of report.strata) {
          io.stdout.write(
            `${stratum.stratum.padEnd(22)} ${String(stratum.selected).padStart(4)}/${stratum.target} (available ${stratum.available}, ${stratum.environments} environments)\n`,
          );
        }
        io.stdout.write(
          `per Δ (successful samples): ${Object.entries(byDelta)
            .map(([delta, count]) => `${delta}: ${count}`)
            .join(", ")}\n`,
        );
        io.stdout.write(
          `${report.total} samples from ${environments} environments written to ${options.out}\n`,
        );
      },
    );

  envsim
    .command("import")
    .argument("<file>", "published EnvSimBench records (JSONL)")
    .requiredOption("--out <file>", "samples JSONL")
    .description("read the published EnvSimBench format into terrarium samples (groups recomputed)")
    .addHelpText("after", "\nExample:\n  terrarium envsim import envsimbench.jsonl --out samples.jsonl\n")
    .action((file: string, options: { out: string }) => {
      const samples = readJsonl<never>(file).map((record, index) => fromEnvSimBenchRecord(record, index + 1));
      writeJsonl(options.out, samples);
      io.stderr.write(`${samples.length} samples\n`);
    });

  envsim
    .command("export")
    .argument("<file>", "samples JSONL")
    .requiredOption("--out <file>", "EnvSimBench records JSONL")
    .description("write samples in the published EnvSimBench record format")
    .addHelpText(
      "after",
      "\nExample:\n  terrarium envsim export bench.jsonl --out envsimbench-records.jsonl\n",
    )
    .action((file: string, options: { out: string }) => {
      writeJsonl(options.out, readJsonl<EnvSimSample>(file).map(toEnvSimBenchRecord));
    });

  envsim
    .command("sft")
    .requiredOption("--samples <file>", "samples JSONL (collected from environments)")
    .requiredOption("--out <file>", "training records JSONL")
    .option("--format <format>", "openai (chat fine-tuning JSONL) or sharegpt (LLaMA-Factory)", "openai")
    .option("--composition <name>", "all, change-only, balance or balance2", "all")
    .option("--size <n>", "records to keep (compositions)", (v) => Number.parseInt(v, 10))
    .option(
      "--holdout <envs>",
      "comma-separated environment ids kept out of training (written to --holdout-out)",
    )
    .option("--holdout-out <file>", "where the held-out environments' records go")
    .option(
      "--reasoning <mode>",
      "add a reasoning trace before the answer: none, all, or complex (Δ ≥ 3 only)",
      "none",
    )
    .option("--seed <seed>", "seed of the selection", "1")
    .description("write SFT training data that teaches a model to simulate environments")
    .addHelpText(
      "after",
      "\nExample:\n  terrarium envsim sft --samples samples.jsonl --format sharegpt --composition balance2 --size 6000 --holdout bank --out train.jsonl --holdout-out test.jsonl\n",
    )
    .action(
      (options: {
        samples: string;
        out: string;
        format: string;
        composition: string;
        size?: number;
        holdout?: string;
        holdoutOut?: string;
        reasoning: string;
        seed: string;
      }) => {
        if (options.format !== "openai" && options.format !== "sharegpt")
          throw new TerrariumError("INVALID_INPUT", "--format must be openai or sharegpt");
        if (!["all", "change-only", "balance", "balance2"].includes(options.composition)) {
          throw new TerrariumError(
            "INVALID_INPUT",
            "--composition must be all, change-only, balance or balance2",
          );
        }
        if (!["none", "all", "complex"].includes(options.reasoning))
          throw new TerrariumError("INVALID_INPUT", "--reasoning must be none, all or complex");
        let samples = readJsonl<EnvSimSample>(options.samples);
        let heldOut: EnvSimSample[] = [];
        if (options.holdout) {
          const split = holdoutSplit(samples, {
            holdoutEnvIds: options.holdout.split(",").map((e) => e.trim()),
            seed: options.seed,
          });
          samples = split.train;
          heldOut = split.test;
        }
        if (options.composition !== "all") {
          const composed = compose(samples, options.composition as Composition, {
            seed: options.seed,
            ...(options.size ? { size: options.size } : {}),
          });
          samples = composed.samples;
          for (const note of composed.report.notes) io.stderr.write(`${note}\n`);
        }
        const reasoning =
          options.reasoning === "all" ? true : options.reasoning === "complex" ? ("complex" as const) : false;
        const toRecord = (sample: EnvSimSample) =>
          options.format === "openai"
            ? toChatRecord(sample, { reasoning })
            : toShareGptRecord(sample, { reasoning });
        const written = writeSftRecords(samples.map(toRecord), options.out);
        io.stderr.write(`${written} training records written to ${options.out}\n`);
        if (options.holdoutOut) {
          io.stderr.write(
            `${writeSftRecords(heldOut.map(toRecord), options.holdoutOut)} held-out records written to ${options.holdoutOut}\n`,
          );
        }
      },
    );

  envsim
    .command("eval")
    .requiredOption("--bench <file>", "benchmark JSONL")
    .requiredOption(
      "--simulator <spec>",
      "code, schema, llm:<model> (terrarium's llm simulator), or <provider:model>[#history] (repeatable)",
      collect,
    )
    .requiredOption(
      "--out <dir>",
      "folder for predictions (one JSONL per simulator), summary.json and report.md",
    )
    .option(
      "--mode <mode>",
      "scoring: paper (the official scorer's rules) or strict (exact after-state)",
      "paper",
    )
    .option("--concurrency <n>", "samples at once", (v) => Number.parseInt(v, 10), 4)
    .option("--resume", "keep predictions already in --out and make only the missing ones")
    .option("--seed <seed>", "seed of the bootstrap confidence intervals", "1")
    .option("--json", "print the summary as JSON instead of Markdown tables")
    .description(
      "predict every sample with each simulator (cached, resumable, concurrent), then score FM and CM",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  terrarium envsim eval --bench bench.jsonl --simulator code --simulator schema --mode strict --out results/\n  terrarium envsim eval --bench bench.jsonl --simulator openai:gpt-4.1-mini --simulator openai:gpt-4.1-mini#history --out results/ --resume\n",
    )
    .action(
      async (
        options: {
          bench: string;
          simulator: string[];
          out: string;
          mode: string;
          concurrency: number;
          resume?: boolean;
          seed: string;
          json?: boolean;
        },
        command: Command,
      ) => {
        if (options.mode !== "paper" && options.mode !== "strict")
          throw new TerrariumError("INVALID_INPUT", "--mode must be paper or strict");
        const samples = readJsonl<EnvSimSample>(options.bench);
        const simulators = options.simulator.map((spec) => ({ spec, simulator: parseSimulatorSpec(spec) }));
        mkdirSync(options.out, { recursive: true });
        const run: EvalRun = {
          schemaVersion: 1,
          bench: resolve(options.bench),
          mode: options.mode,
          simulators: [],
        };
        for (const { spec, simulator } of simulators) {
          const file = join(options.out, `${spec.replace(/[^A-Za-z0-9._-]+/g, "_")}.jsonl`);
          const done = new Set<string>();
          if (options.resume && existsSync(file))
            for (const p of readJsonl<EnvSimPrediction>(file)) done.add(p.sampleId);
          else writeFileSync(file, "");
          const model =
            simulator.kind === "model"
              ? simulator.model
              : simulator.kind === "terrarium"
                ? simulator.model
                : undefined;
          const models = modelsFor(command, model ? { simulator: model } : {});
          try {
            io.stderr.write(
              `${describeSimulator(simulator)}: ${samples.length - done.size} samples to predict (${done.size} already done)\n`,
            );
            const predictions = await evaluateSamples(samples, simulator, {
              models,
              context: samples,
              concurrency: options.concurrency,
              done,
              onPrediction: (prediction) =>
                appendFileSync(file, `${JSON.stringify({ schemaVersion: 1, ...prediction })}\n`),
              onProgress: (finished, total) => io.stderr.write(`\r${finished}/${total}`),
            });
            const usage = models.ledger.totals;
            io.stderr.write(
              `\n  ${predictions.filter((p) => p.error).length} failed; ${usage.calls} model calls (${usage.cachedCalls} cached), $${usage.costUsd.toFixed(4)}\n`,
            );
          } finally {
            await models.close();
          }
          run.simulators.push({ name: describeSimulator(simulator), spec, file });
        }
        writeFileSync(join(options.out, "run.json"), `${JSON.stringify(run, null, 2)}\n`);
        const entries = scoreRun(run, samples, options.seed);
        writeFileSync(join(options.out, "summary.json"), renderJson(entries));
        writeFileSync(join(options.out, "report.md"), renderMarkdown(entries));
        io.stdout.write(options.json ? renderJson(entries) : renderMarkdown(entries));
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
      const run = JSON.parse(readFileSync(join(options.results, "run.json"), "utf8")) as EvalRun;
      if (options.mode) run.mode = options.mode;
      const entries = scoreRun(run, readJsonl<EnvSimSample>(run.bench), options.seed);
      const extension = extname(options.out).toLowerCase();
      const text =
        extension === ".html"
          ? renderHtml(entries)
          : extension === ".csv"
            ? renderCsv(entries)
            : extension === ".json"
              ? renderJson(entries)
              : renderMarkdown(entries);
      writeFileSync(options.out, text);
      io.stderr.write(`report written to ${options.out}\n`);
    });
}

/** What `envsim eval` ran, so `envsim report` can rescore and render it later. */
interface EvalRun {
  schemaVersion: number;
  bench: string;
  mode: string;
  simulators: Array<{ name: string; spec: string; file: string }>;
}

function scoreRun(run: EvalRun, samples: EnvSimSample[], seed: string): SimulatorSummary[] {
  return run.simulators.map((entry) => {
    const predictions = new Map(readJsonl<EnvSimPrediction>(entry.file).map((p) => [p.sampleId, p]));
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
    return { name: entry.name, summary: summarise(samples, scores, { seed }) };
  });
}
