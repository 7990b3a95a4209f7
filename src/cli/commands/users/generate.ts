import { existsSync } from "node:fs";
import { relative, resolve } from "node:path";
import { type Command, Option } from "commander";
import { TerrariumError } from "../../../core/errors.js";
import { loadConfig } from "../../../models/config.js";
import { Models } from "../../../models/hub.js";
import { formatCost } from "../../../models/usage.js";
import {
  existingScenarioFiles,
  GENERATION_STRATEGIES,
  type GenerationStrategy,
  generateScenarios,
  loadAttributeCategories,
  MAX_GENERATED_SCENARIOS,
  refuseExisting,
  writeScenarios,
} from "../../../users/generate/index.js";
import { SCENARIO_LIMITS } from "../../../users/scenario/schema.js";
import { type CliIo, Progress, parsePositiveInteger } from "../../io.js";

interface GenerateOptions {
  docs: string;
  attributes: string;
  count: number;
  strategy: GenerationStrategy;
  seed: string;
  maxTurns: number;
  model?: string;
  config?: string;
  out: string;
  force?: boolean;
  json?: boolean;
  concurrency: number;
  agentContext?: string;
}

/** The role whose model writes scenarios (config falls back to roles.default). */
const ROLE = "scenario_writer";

/** `users generate`: scenarios from knowledge documents and profile attribute categories, written with a model. */
export function registerUsersGenerateCommand(
  users: Command,
  io: CliIo,
  setExitCode: (code: number) => void,
): void {
  users
    .command("generate")
    .description(
      "write user-simulation scenarios from knowledge documents and profile attributes, with a model",
    )
    .requiredOption("--docs <dir>", "knowledge documents: a folder (read recursively) or one file")
    .requiredOption(
      "--attributes <file>",
      "profile attribute categories (YAML/JSON): category: [values] or category: {values, weights}",
    )
    .requiredOption("--count <n>", `scenarios to write (1-${MAX_GENERATED_SCENARIOS})`, parsePositiveInteger)
    .requiredOption("--out <dir>", "folder for the scenario files (documents go to <dir>/knowledge/)")
    .addOption(
      new Option("--strategy <name>", "top-down (from the person), bottom-up (from the document) or mixed")
        .choices([...GENERATION_STRATEGIES])
        .default("mixed"),
    )
    .option("--seed <seed>", "seed of every choice (documents, strategies, attributes, passages)", "1")
    .option("--max-turns <n>", "max_turns of every scenario", parsePositiveInteger, 20)
    .option("--model <model>", `model that writes the scenarios (default: roles.${ROLE} or roles.default)`)
    .option("--config <file>", "terrarium.config.yaml to use")
    .option("--concurrency <n>", "model calls at the same time", parsePositiveInteger, 4)
    .option("--agent-context <text>", "what the user is told about the agent (added to every scenario)")
    .option("--force", "replace scenario and knowledge files that already exist")
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      [
        "",
        "Each scenario: a profile sampled from the attribute categories, one document as knowledge, and a goal,",
        "a fact the user must reveal and a checklist written by the model. Same seed, same sampling.",
        "",
        "Example:",
        "  terrarium users generate --docs examples/users/generate/docs --attributes examples/users/generate/attributes.yaml --count 6 --seed 7 --out scenarios/generated",
        "",
      ].join("\n"),
    )
    .action(async (options: GenerateOptions, command: Command) => {
      // Every input is checked before a model exists, let alone is called.
      if (options.count > MAX_GENERATED_SCENARIOS) {
        throw new TerrariumError(
          "INVALID_INPUT",
          `--count must be at most ${MAX_GENERATED_SCENARIOS}, got ${options.count}`,
        );
      }
      if (options.maxTurns > SCENARIO_LIMITS.maxTurns) {
        throw new TerrariumError(
          "INVALID_INPUT",
          `--max-turns must be at most ${SCENARIO_LIMITS.maxTurns}, got ${options.maxTurns}`,
        );
      }
      if (options.concurrency > 64) {
        throw new TerrariumError(
          "INVALID_INPUT",
          `--concurrency must be at most 64, got ${options.concurrency}`,
        );
      }
      if (!existsSync(options.docs)) {
        throw new TerrariumError("FILE_UNREADABLE", "cannot read the documents (no such file or folder)", {
          where: { file: resolve(options.docs) },
        });
      }
      const attributes = loadAttributeCategories(options.attributes);
      const configPath = (options.config ?? command.optsWithGlobals().config) as string | undefined;
      const { config } = loadConfig(configPath ? { path: configPath } : {});
      const models = new Models({
        config: options.model ? { ...config, roles: { ...config.roles, [ROLE]: options.model } } : config,
        modelFlags: ["--model <provider:model>"],
      });
      const out = resolve(options.out);
      try {
        let progress: Progress | undefined;
        const result = await generateScenarios(models, {
          documents: [options.docs],
          attributes,
          count: options.count,
          seed: options.seed,
          strategy: options.strategy,
          maxTurns: options.maxTurns,
          role: ROLE,
          concurrency: options.concurrency,
          ...(options.agentContext ? { agentContext: options.agentContext } : {}),
          onPlan: (planned) => {
            // Files this run would replace are refused now, before the first model call.
            const taken = existingScenarioFiles(planned, out);
            if (!options.force) refuseExisting(taken);
            io.stderr.write(`generating ${planned.length} scenarios with ${models.modelFor(ROLE)}…\n`);
            progress = new Progress(io.stderr, planned.length, "scenarios drafted");
          },
          onProgress: (event) => {
            if (event.kind === "drafted") progress?.tick();
            else if (event.kind === "regenerating")
              io.stderr.write(
                `${event.id}: goal too close to ${event.similarTo}'s, regenerating (${event.attempt})\n`,
              );
          },
        });
        progress?.done();
        for (const warning of result.warnings) io.stderr.write(`warning: ${warning}\n`);
        const written = writeScenarios(result.scenarios, out, {
          force: options.force === true,
          header: `seed ${options.seed}, strategy ${options.strategy}`,
        });
        const usage = models.ledger.totals;
        if (options.json) {
          io.stdout.write(
            `${JSON.stringify(
              {
                schemaVersion: 1,
                out,
                seed: options.seed,
                strategy: options.strategy,
                scenarios: result.scenarios.map((scenario, index) => ({
                  id: scenario.id,
                  file: written.files[index],
                  strategy: scenario.strategy,
                  document: scenario.document.source,
                  attributes: scenario.attributes,
                  reveal: scenario.reveal,
                  goal: scenario.scenario.goal,
                  regenerations: scenario.regenerations,
                })),
                knowledgeFiles: written.knowledgeFiles,
                skipped: result.skipped,
                warnings: result.warnings,
                usage: { calls: usage.calls, costUsd: usage.costUsd },
              },
              null,
              2,
            )}\n`,
          );
        } else {
          for (const [index, scenario] of result.scenarios.entries()) {
            io.stdout.write(
              `${relative(process.cwd(), written.files[index] as string)}  ${scenario.strategy}  ${scenario.document.source}  reveals ${scenario.reveal.attribute}\n`,
            );
          }
        }
        io.stderr.write(
          `${result.scenarios.length}/${options.count} scenarios written to ${out}` +
            `${result.skipped.length > 0 ? `, ${result.skipped.length} skipped` : ""}; ${usage.calls} model calls, ${formatCost(usage)}\n`,
        );
        if (result.scenarios.length === 0) setExitCode(1);
      } finally {
        await models.close();
      }
    });
}
