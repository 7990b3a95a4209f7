import { existsSync } from "node:fs";
import type { Command } from "commander";
import {
  type CollectSource,
  type CollectTarget,
  collectSamples,
  type EnvironmentSummary,
  environmentReference,
  plannedTrajectories,
} from "../../../bench/envsim/collect.js";
import { TerrariumError } from "../../../core/errors.js";
import { BUILTIN_ENVIRONMENTS } from "../../../envs/corpus/index.js";
import { isEnvironmentReference, loadEnvironment } from "../../../envs/load.js";
import type { Models } from "../../../models/hub.js";
import { type CliIo, collect, Progress, parsePositiveInteger } from "../../io.js";

import { modelsFor, readJsonl } from "./shared.js";

const SOURCES: Record<string, CollectSource["kind"]> = {
  explore: "explore",
  schema: "explore",
  agent: "agent",
  replay: "replay",
};

interface CollectCommandOptions {
  env?: string[];
  out: string;
  source: string;
  trajectories: number;
  steps: number;
  calls?: string;
  model?: string;
  seed: string;
  resume?: boolean;
}

export function registerCollectCommands(envsim: Command, io: CliIo): void {
  envsim
    .command("collect")
    .argument(
      "[environment...]",
      "environments: built-in names, modules, descriptors, or all (every built-in); or use --env",
    )
    .option("--env <environment>", "an environment, or all for every built-in (repeatable)", collect)
    .requiredOption("--out <file>", "the sample file (JSON Lines; states stored once, as changes)")
    .option(
      "--source <source>",
      "explore (schema-driven, no model), agent (a model explores), or replay (--calls)",
      "explore",
    )
    .option("--trajectories <n>", "trajectories per environment", parsePositiveInteger, 5)
    .option(
      "--steps <n>",
      "actions per trajectory (steps 1..n; step 0 is the setup state)",
      parsePositiveInteger,
      20,
    )
    .option("--calls <file>", "for replay: JSONL, one trajectory per line as a list of {name, arguments}")
    .option("--model <model>", "the exploring agent's model (default: roles.explorer or roles.default)")
    .option("--seed <seed>", "seed of exploration", "1")
    .option(
      "--resume",
      "continue the collection in --out: finished trajectories are skipped; unfinished ones and ones that ended with an agent error are collected again",
    )
    .description(
      "collect transitions (call, observation, before, after, changes, Δ) from executable environments, " +
        "written as they are made",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  terrarium envsim collect --env all --out transitions.jsonl --trajectories 40 --steps 60\n  terrarium envsim collect bank --source agent --model openai:gpt-4.1-mini --out samples.jsonl\n",
    )
    .action(async (positional: string[], options: CollectCommandOptions, command: Command) => {
      // Everything is checked before any work: the source, the environments, the calls, the model.
      const kind = SOURCES[options.source];
      if (!kind)
        throw new TerrariumError(
          "INVALID_INPUT",
          `--source must be explore, agent or replay, not "${options.source}"`,
        );
      if (options.calls !== undefined && kind !== "replay")
        throw new TerrariumError("INVALID_INPUT", "--calls goes with --source replay");
      const references = environmentReferences([...positional, ...(options.env ?? [])]);
      const calls = kind === "replay" ? readCalls(options.calls) : undefined;
      const targets: CollectTarget[] = [];
      let models: Models | undefined;
      try {
        for (const reference of references)
          targets.push({
            reference: environmentReference(reference),
            environment: await loadEnvironment(reference),
          });
        let source: CollectSource;
        if (kind === "agent") {
          models = modelsFor(command, options.model ? { explorer: options.model } : {}, [
            "--model <provider:model>",
          ]);
          const model = options.model ?? models.modelFor("explorer");
          await models.backend(model); // an unknown provider or a missing key fails here, not per trajectory
          source = { kind, models, ...(options.model ? { model: options.model } : {}) };
        } else if (kind === "replay") source = { kind, calls: calls ?? [] };
        else source = { kind };

        const progress = new Progress(
          io.stderr,
          plannedTrajectories(targets, { source, trajectories: options.trajectories }),
          "trajectories",
        );
        let collected = 0;
        const summary = await collectSamples(targets, {
          out: options.out,
          source,
          trajectories: options.trajectories,
          steps: options.steps,
          seed: options.seed,
          ...(options.resume ? { resume: true } : {}),
          onTrajectory: (done) => {
            collected += done.samples;
            progress.tick(
              done.skipped
                ? `${done.environment} ${done.taskId} already collected`
                : `${collected} transitions`,
            );
          },
          onEnvironment: (done) => {
            if (io.stderr.isTTY) io.stderr.write("\r\x1b[K");
            io.stderr.write(`${environmentLine(done, kind)}\n`);
          },
        });
        progress.done();
        const notes = [
          summary.skipped > 0 ? `${summary.skipped} trajectories already in the file skipped` : "",
          summary.resumed?.truncatedBytes
            ? `an unfinished trajectory (${summary.resumed.truncatedBytes} bytes) collected again`
            : "",
          summary.resumed?.retried
            ? `${summary.resumed.retried} trajectories that had ended with an agent error collected again`
            : "",
          summary.errors > 0 ? `${summary.errors} failed agent calls recorded in the file` : "",
        ].filter(Boolean);
        io.stderr.write(
          `${summary.samples} samples written to ${options.out}${notes.length ? ` (${notes.join("; ")})` : ""}\n`,
        );
        if (summary.errors > 0 && summary.samples === 0 && summary.skipped === 0)
          throw new TerrariumError(
            "MODEL_CALL_FAILED",
            `every agent trajectory failed; the first: ${summary.environments.flatMap((e) => e.errors)[0]?.error}`,
          );
      } finally {
        await models?.close();
        await Promise.all(targets.map(({ environment }) => environment.close?.()));
      }
    });
}

/** The environments named, `all` expanded, each checked; an unknown one is an error before any work. */
function environmentReferences(named: string[]): string[] {
  if (named.length === 0)
    throw new TerrariumError(
      "INVALID_INPUT",
      "name the environments to collect from (built-in names, modules, descriptors, or all), as arguments or with --env",
    );
  const references: string[] = [];
  for (const reference of named) {
    for (const one of reference === "all" ? Object.keys(BUILTIN_ENVIRONMENTS) : [reference]) {
      if (!isEnvironmentReference(one)) {
        throw new TerrariumError(
          "INVALID_INPUT",
          existsSync(one)
            ? `"${one}" is not an environment (a TypeScript/JavaScript module, or a descriptor of kind python or quickjs)`
            : `unknown environment "${one}": not a built-in (${Object.keys(BUILTIN_ENVIRONMENTS).join(", ")}, or all) nor a file`,
        );
      }
      if (!references.some((r) => environmentReference(r) === environmentReference(one)))
        references.push(one);
    }
  }
  return references;
}

/** The call lists of `--calls`: one JSON array of `{name, arguments}` per line. */
function readCalls(file: string | undefined): Array<Array<{ name: string; arguments?: unknown }>> {
  if (!file) throw new TerrariumError("INVALID_INPUT", "--source replay needs --calls <file>");
  const lines = readJsonl<unknown>(file);
  for (const [index, line] of lines.entries()) {
    if (
      !Array.isArray(line) ||
      !line.every(
        (call) => call && typeof call === "object" && typeof (call as { name?: unknown }).name === "string",
      )
    )
      throw new TerrariumError("INVALID_INPUT", "each line of --calls must be a list of {name, arguments}", {
        where: { file, line: index + 1 },
      });
  }
  return lines as Array<Array<{ name: string; arguments?: unknown }>>;
}

function environmentLine(done: EnvironmentSummary, kind: CollectSource["kind"]): string {
  const coverage = done.coverage;
  const skipped = done.skipped > 0 ? ` (${done.skipped} trajectories already collected)` : "";
  if (kind === "explore")
    return (
      `${done.environment}: ${done.samples} transitions; tools succeeded ${coverage.toolsSucceeded}/${coverage.toolCount}, ` +
      `tools with a guard hit ${coverage.toolsRejected}/${coverage.toolCount}, ${coverage.outcomes} distinct outcomes${skipped}`
    );
  const failures =
    done.errors.length > 0
      ? `; ${done.errors.length} agent calls failed (first: ${done.errors[0]?.error.split("\n")[0]})`
      : "";
  return `${done.environment}: ${done.samples} transitions${kind === "agent" ? " from the agent" : " replayed"}${failures}${skipped}`;
}
