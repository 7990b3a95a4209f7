import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import type { Command } from "commander";
import { buildBenchmark, PAPER_TARGETS } from "../../bench/envsim/build.js";
import { exploreWithAgent, exploreWithSchemas, replayCalls } from "../../bench/envsim/collect.js";
import { describeSimulator, type EvalSimulator, evaluateSamples } from "../../bench/envsim/evaluate.js";
import { fromEnvSimBenchRecord, toEnvSimBenchRecord } from "../../bench/envsim/records.js";
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
import type { CliIo } from "../io.js";

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
    .argument("<environment...>", "environments (built-in names, modules, descriptors)")
    .requiredOption("--out <file>", "samples JSONL")
    .option("--source <source>", "schema (no model), agent (a model explores), or replay (--calls)", "schema")
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
      "\nExamples:\n  terrarium envsim collect bank airline tau2-retail --out samples.jsonl --trajectories 10\n  terrarium envsim collect bank --source agent --model openai:gpt-4.1-mini --out samples.jsonl\n",
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
              if (options.source === "schema") {
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
    .requiredOption("--samples <file>", "samples JSONL (from collect or import)")
    .requiredOption("--out <file>", "benchmark JSONL")
    .option(
      "--targets <list>",
      "failure,no-change-0,no-change-1+,simple-per-Δ,medium-per-Δ,difficult (paper: 20,40,40,25,50,50)",
    )
    .option("--seed <seed>", "seed of the selection", "1")
    .description(
      "drop step 0, stratify by outcome / Δ tier / argument count, and fill each stratum with the diversity rule",
    )
    .action((options: { samples: string; out: string; targets?: string; seed: string }) => {
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
      const { samples, report } = buildBenchmark(readJsonl<EnvSimSample>(options.samples), {
        targets: targets as typeof PAPER_TARGETS,
        seed: options.seed,
      });
      writeJsonl(options.out, samples);
      for (const stratum of report.strata) {
        io.stderr.write(
          `${stratum.stratum.padEnd(22)} ${String(stratum.selected).padStart(4)}/${stratum.target} (available ${stratum.available}, ${stratum.environments} environments)\n`,
        );
      }
      io.stderr.write(`${report.total} samples written to ${options.out}\n`);
    });

  envsim
    .command("import")
    .argument("<file>", "published EnvSimBench records (JSONL)")
    .requiredOption("--out <file>", "samples JSONL")
    .description("read the published EnvSimBench format into terrarium samples (groups recomputed)")
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
    .requiredOption("--out <file>", "predictions JSONL (appended as it goes; see --resume)")
    .option("--model <model>", "the model that simulates (provider:model)")
    .option("--prompt <prompt>", "mdp (implementation + full state) or history (earlier calls only)", "mdp")
    .option("--simulator <name>", "evaluate terrarium's own simulator instead: llm or schema")
    .option("--concurrency <n>", "samples at once", (v) => Number.parseInt(v, 10), 4)
    .option("--resume", "skip samples already predicted in --out")
    .description(
      "predict every sample's observation and changes with a simulator (cached, resumable, concurrent)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  terrarium envsim eval --bench bench.jsonl --model openai:gpt-4.1-mini --out gpt41mini.jsonl --resume\n  terrarium envsim eval --bench bench.jsonl --simulator schema --out schema.jsonl\n",
    )
    .action(
      async (
        options: {
          bench: string;
          out: string;
          model?: string;
          prompt: string;
          simulator?: string;
          concurrency: number;
          resume?: boolean;
        },
        command: Command,
      ) => {
        const samples = readJsonl<EnvSimSample>(options.bench);
        let simulator: EvalSimulator;
        if (options.simulator) {
          if (options.simulator !== "llm" && options.simulator !== "schema")
            throw new TerrariumError("INVALID_INPUT", "--simulator must be llm or schema");
          simulator = {
            kind: "terrarium",
            simulator: options.simulator,
            ...(options.model ? { model: options.model } : {}),
          };
        } else {
          if (!options.model)
            throw new TerrariumError("INVALID_INPUT", "give --model (or --simulator schema|llm)");
          if (options.prompt !== "mdp" && options.prompt !== "history")
            throw new TerrariumError("INVALID_INPUT", "--prompt must be mdp or history");
          simulator = { kind: "model", model: options.model, prompt: options.prompt };
        }
        const done = new Set<string>();
        if (options.resume && existsSync(options.out))
          for (const p of readJsonl<EnvSimPrediction>(options.out)) done.add(p.sampleId);
        const models = modelsFor(command, options.model ? { simulator: options.model } : {});
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
              appendFileSync(options.out, `${JSON.stringify({ schemaVersion: 1, ...prediction })}\n`),
            onProgress: (finished, total) => io.stderr.write(`\r${finished}/${total}`),
          });
          const failed = predictions.filter((p) => p.error).length;
          const usage = models.ledger.totals;
          io.stderr.write(
            `\n${predictions.length} predictions (${failed} failed); ${usage.calls} model calls (${usage.cachedCalls} cached), $${usage.costUsd.toFixed(4)}\n`,
          );
        } finally {
          await models.close();
        }
      },
    );
}
