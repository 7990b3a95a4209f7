import { appendFileSync } from "node:fs";
import { type Command, Option } from "commander";
import { runBfclBenchmark } from "../../bench/bfcl/benchmark.js";
import { runErrors } from "../../bench/bfcl/run.js";
import { readBfclResults, scoreBfclResults } from "../../bench/bfcl/score.js";
import { errorVerdict } from "../../core/error-tally.js";
import { loadConfig, withCommandLineModel } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { formatCost } from "../../models/usage.js";
import { BOOTSTRAP_MODES, type BootstrapMode } from "../../task/task-engine.js";
import { type CliIo, compactTable, Progress, parsePositiveInteger, parseWholeNumber } from "../io.js";

/** The flag of `bench bfcl` that names a model (for the message of a role with no model). */
const MODEL_FLAGS = ["--planner <provider:model>"] as const;

const MAX_ERRORS_HELP =
  "errored items allowed before the exit code is 1 (they count as wrong in accuracy either way)";

export function registerBenchCommands(
  program: Command,
  io: CliIo,
  setExitCode: (code: number) => void,
): void {
  const bench = program.command("bench").description("benchmarks of agents and simulators");
  const bfcl = bench
    .command("bfcl")
    .description("the Berkeley Function Calling Leaderboard (v3: single-turn, irrelevance, multi-turn)");

  bfcl
    .command("run", { isDefault: true })
    .requiredOption("--data <folder>", "BFCL data folder (BFCL_v3_*.json and possible_answer/)")
    .option("--categories <list>", "comma-separated categories", "simple,multiple,parallel")
    .option(
      "--planner <model>",
      "the planner's model (default: roles.planner or roles.default); it also serves every role the configuration leaves unset",
    )
    .option("--max-retries <n>", "GATS retries; every budget from 0 to this is reported", parseWholeNumber, 3)
    .option("--max-errors <n>", MAX_ERRORS_HELP, parseWholeNumber, 0)
    .option("--limit <n>", "items per category (default: all)", parsePositiveInteger)
    .option("--concurrency <n>", "items at once", parsePositiveInteger, 2)
    .addOption(
      new Option("--bootstrap <mode>", "bootstrap each item's starting state from its question (Gecko's)")
        .choices([...BOOTSTRAP_MODES])
        .default("auto"),
    )
    .option(
      "--backends <dir>",
      "BFCL's Python backend sources, for multi-turn categories (bfcl_eval/eval_checker/multi_turn_eval/func_source_code)",
    )
    .option("--out <file>", "write one JSONL line per item")
    .option("--json", "print the summary as JSON")
    .description(
      "run a planner with and without GATS on BFCL items and score them: single-turn tools simulated by the llm simulator, multi-turn on BFCL's Python backends",
    )
    .addHelpText(
      "after",
      `
Needs models for the planner, simulator, checklist and judge roles (roles.default covers them); the
validator runs too when roles.validator or roles.default names a model. A model given with --planner
serves every role the configuration leaves unset, so --planner alone is enough without a configuration.
Budget 0 is the planner with the tools it called, without GATS. Accuracy is BFCL's, over every item: an
item that failed as a whole (a model call failed or timed out) is wrong, and a budget whose simulated or
backend call failed keeps the checker's verdict on the calls made. Such items are errored: counted beside
accuracy, listed by kind with their first message, and they make the exit code 1 unless --max-errors
allows them. Multi-turn categories (multi_turn_base, multi_turn_miss_func,
multi_turn_miss_param, multi_turn_long_context) run turn by turn on BFCL's own Python classes, and are
scored by BFCL's multi-turn checker (state after every turn, and the ground truth's results).

Examples:
  terrarium bench bfcl --data test/fixtures/bfcl --categories simple --limit 10 --planner openai:gpt-4.1-mini --max-retries 3
  terrarium bench bfcl --data test/fixtures/bfcl-multi-turn --categories multi_turn_base --backends test/fixtures/bfcl-multi-turn/backends --out runs.jsonl
`,
    )
    .action(
      async (
        options: {
          data: string;
          categories: string;
          planner?: string;
          maxRetries: number;
          maxErrors: number;
          limit?: number;
          concurrency: number;
          bootstrap: BootstrapMode;
          backends?: string;
          out?: string;
          json?: boolean;
        },
        command: Command,
      ) => {
        const categories = splitList(options.categories);
        const configPath = command.optsWithGlobals().config as string | undefined;
        const { config } = loadConfig(configPath ? { path: configPath } : {});
        const models = new Models({
          config: withCommandLineModel(config, options.planner),
          modelFlags: MODEL_FLAGS,
        });
        try {
          // Every role an item needs has a model before anything is spent.
          for (const role of ["checklist", "judge", ...(options.planner ? [] : ["planner"])])
            models.modelFor(role);
          let progress: Progress | undefined;
          const { runs, summary } = await runBfclBenchmark(models, {
            data: options.data,
            categories,
            maxRetries: options.maxRetries,
            concurrency: options.concurrency,
            bootstrap: options.bootstrap,
            ...(options.limit !== undefined ? { limit: options.limit } : {}),
            ...(options.planner ? { plannerModel: options.planner } : {}),
            ...(options.backends ? { backends: options.backends } : {}),
            onItem: (run, _done, total) => {
              progress ??= new Progress(io.stderr, total, "items");
              if (options.out) appendFileSync(options.out, `${JSON.stringify(run)}\n`);
              progress.tick(run.error ? `last error: ${run.error.slice(0, 80)}` : undefined);
            },
          });
          progress?.done();
          const verdict = errorVerdict(runErrors(runs).counts(), {
            total: summary.items,
            maxErrors: options.maxErrors,
            noun: "items",
          });
          if (verdict.failed) setExitCode(1);
          if (options.json) {
            io.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
            for (const line of verdict.lines) io.stderr.write(`${line}\n`);
            return;
          }
          const table = compactTable([
            "retries",
            ...categories,
            "overall",
            "paper overall",
            "errored",
            "latency s/task",
            "model calls/task",
            "tokens/task",
            "cost/task",
          ]);
          for (const budget of summary.budgets) {
            table.push([
              budget.label,
              ...categories.map((c) => {
                const entry = budget.categories[c];
                return entry ? `${(entry.accuracy * 100).toFixed(1)}%` : "n/a";
              }),
              `${(budget.overall * 100).toFixed(1)}%`,
              `${(budget.groupedOverall * 100).toFixed(1)}%`,
              String(budget.errored),
              (budget.latencyMs / 1000).toFixed(2),
              budget.modelCalls.toFixed(1),
              Math.round(budget.tokens).toString(),
              formatCost(budget, 5),
            ]);
          }
          io.stdout.write(
            `${table.toString()}\n${summary.items} items; accuracy over all ${summary.items}, as BFCL computes it (an item that failed as a whole counts as wrong); ${summary.errored} errored (${summary.failedItems} failed as a whole). overall: mean of the categories (BFCL); paper overall: mean of the non-live, live and multi-turn group means (Gecko's Table 3)\n`,
          );
          for (const line of verdict.lines) io.stderr.write(`${line}\n`);
        } finally {
          await models.close();
        }
      },
    );

  bfcl
    .command("score")
    .requiredOption("--data <folder>", "BFCL data folder (BFCL_v3_*.json and possible_answer/)")
    .requiredOption(
      "--results <file>",
      'JSONL, one {"id", "calls": [{"name", "arguments"}]} per item (multi-turn: {"id", "turns": [[calls…]…]})',
    )
    .option("--backends <dir>", "BFCL's Python backend sources, to score multi-turn categories")
    .option("--categories <list>", "comma-separated categories", "simple,multiple,parallel")
    .option("--only-present", "score only the items that have a line in the results")
    .option(
      "--underscore-to-dot",
      "the model saw dotted function names with dots as underscores (BFCL's underscore_to_dot); by default either form matches",
    )
    .option("--max-errors <n>", MAX_ERRORS_HELP, parseWholeNumber, 0)
    .option("--json", "print every item's verdict as JSON")
    .description("score calls produced by any model or agent with terrarium's AST checker")
    .addHelpText(
      "after",
      `
An item with no line in the results is scored as making no call (as BFCL treats an empty answer), or
left out with --only-present; the number of such items is printed either way. An item errored when its
line records a failed model call ({"id", "error": "…"}, or BFCL's "Error during inference" result) or the
checker could not judge it (checker:exception; multi-turn: the backends failed on it): it counts as wrong,
as in BFCL, is counted beside accuracy, and makes the exit code 1 unless --max-errors allows it.

Example:
  terrarium bench bfcl score --data ../shared/datasets/bfcl --categories simple,parallel --results my-model.jsonl
`,
    )
    .action(
      async (options: {
        data: string;
        results: string;
        categories: string;
        backends?: string;
        onlyPresent?: boolean;
        underscoreToDot?: boolean;
        maxErrors: number;
        json?: boolean;
      }) => {
        const score = await scoreBfclResults(
          options.data,
          splitList(options.categories),
          readBfclResults(options.results),
          {
            ...(options.onlyPresent ? { onlyPresent: true } : {}),
            ...(options.underscoreToDot ? { underscoreToDot: true } : {}),
            ...(options.backends ? { backends: options.backends } : {}),
          },
        );
        const verdict = errorVerdict(score, {
          total: score.items.length,
          maxErrors: options.maxErrors,
          noun: "items",
        });
        if (verdict.failed) setExitCode(1);
        if (options.json) {
          io.stdout.write(`${JSON.stringify(score, null, 2)}\n`);
          for (const line of verdict.lines) io.stderr.write(`${line}\n`);
          return;
        }
        const table = compactTable(["category", "items", "correct", "errored", "accuracy"]);
        for (const [category, entry] of Object.entries(score.categories)) {
          table.push([
            category,
            String(entry.items),
            String(entry.correct),
            String(entry.errored),
            `${(entry.accuracy * 100).toFixed(2)}%`,
          ]);
        }
        table.push(["overall (mean of categories)", "", "", "", `${(score.overall * 100).toFixed(2)}%`]);
        table.push([
          "paper overall (mean of group means)",
          "",
          "",
          "",
          `${(score.groupedOverall * 100).toFixed(2)}%`,
        ]);
        io.stdout.write(`${table.toString()}\n`);
        if (score.missing > 0)
          io.stdout.write(`${score.missing} items had no result (${score.missingTreatment})\n`);
        const failures = score.items.filter((item) => !item.valid);
        for (const failure of failures.slice(0, 50))
          io.stdout.write(`${failure.id}: ${failure.errorType}: ${failure.error}\n`);
        if (failures.length > 50) io.stdout.write(`… and ${failures.length - 50} more (--json lists all)\n`);
        for (const line of verdict.lines) io.stderr.write(`${line}\n`);
      },
    );
}

function splitList(text: string): string[] {
  return text
    .split(",")
    .map((c) => c.trim())
    .filter(Boolean);
}
