import { appendFileSync, readFileSync } from "node:fs";
import type { Command } from "commander";
import type { AstCall } from "../../bench/bfcl/ast-checker.js";
import { loadBfcl } from "../../bench/bfcl/data.js";
import { type ItemRun, runBfclItem, summariseRuns } from "../../bench/bfcl/run.js";
import { scoreBfcl } from "../../bench/bfcl/score.js";
import { TerrariumError } from "../../core/errors.js";
import { loadConfig } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { type CliIo, compactTable } from "../io.js";

export function registerBenchCommands(program: Command, io: CliIo): void {
  const bench = program.command("bench").description("benchmarks of agents and simulators");
  const bfcl = bench
    .command("bfcl")
    .description("the Berkeley Function Calling Leaderboard (v3, single-turn and irrelevance)");

  bfcl
    .command("run", { isDefault: true })
    .requiredOption("--data <folder>", "BFCL data folder (BFCL_v3_*.json and possible_answer/)")
    .option("--categories <list>", "comma-separated categories", "simple,multiple,parallel")
    .option("--planner <model>", "the planner's model (default: roles.planner or roles.default)")
    .option(
      "--max-retries <n>",
      "GATS retries; every budget from 0 to this is reported",
      (v) => Number.parseInt(v, 10),
      3,
    )
    .option("--limit <n>", "items per category (default: all)", (v) => Number.parseInt(v, 10))
    .option("--concurrency <n>", "items at once", (v) => Number.parseInt(v, 10), 2)
    .option("--out <file>", "write one JSONL line per item")
    .option("--json", "print the summary as JSON")
    .description(
      "run a planner with and without GATS on BFCL items (tools simulated by the llm simulator) and score them",
    )
    .addHelpText(
      "after",
      "\nNeeds models for the planner, simulator, checklist and judge roles (roles.default covers them).\n\nExample:\n  terrarium bench bfcl --data test/fixtures/bfcl --categories simple --limit 10 --planner openai:gpt-4.1-mini --max-retries 3\n",
    )
    .action(
      async (
        options: {
          data: string;
          categories: string;
          planner?: string;
          maxRetries: number;
          limit?: number;
          concurrency: number;
          out?: string;
          json?: boolean;
        },
        command: Command,
      ) => {
        const configPath = command.optsWithGlobals().config as string | undefined;
        const { config } = loadConfig(configPath ? { path: configPath } : {});
        const models = new Models({ config });
        try {
          const categories = options.categories
            .split(",")
            .map((c) => c.trim())
            .filter(Boolean);
          const items = categories.flatMap((category) => {
            const all = loadBfcl(options.data, [category]);
            return options.limit === undefined ? all : all.slice(0, options.limit);
          });
          const runs: ItemRun[] = [];
          let next = 0;
          const worker = async () => {
            while (next < items.length) {
              const item = items[next++] as (typeof items)[number];
              const run = await runBfclItem(item, models, {
                maxRetries: options.maxRetries,
                ...(options.planner ? { plannerModel: options.planner } : {}),
              });
              runs.push(run);
              if (options.out)
                appendFileSync(options.out, `${JSON.stringify({ schemaVersion: 1, ...run })}\n`);
              io.stderr.write(
                `\r${runs.length}/${items.length} items${run.error ? ` (last error: ${run.error.slice(0, 80)})` : ""}`,
              );
            }
          };
          await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
          io.stderr.write("\n");
          const summary = summariseRuns(runs, options.maxRetries);
          if (options.json) {
            io.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
            return;
          }
          const table = compactTable([
            "retries",
            ...categories,
            "overall",
            "latency s/task",
            "tokens/task",
            "cost $/task",
          ]);
          for (const budget of summary.budgets) {
            table.push([
              budget.retries === 0 ? "0 (planner alone)" : String(budget.retries),
              ...categories.map((c) => `${((budget.categories[c] ?? 0) * 100).toFixed(1)}%`),
              `${(budget.overall * 100).toFixed(1)}%`,
              (budget.latencyMs / 1000).toFixed(2),
              Math.round(budget.tokens).toString(),
              budget.costUsd.toFixed(5),
            ]);
          }
          io.stdout.write(`${table.toString()}\n${summary.items} items, ${summary.errors} errors\n`);
        } finally {
          await models.close();
        }
      },
    );

  bfcl
    .command("score")
    .requiredOption("--data <folder>", "BFCL data folder (BFCL_v3_*.json and possible_answer/)")
    .requiredOption("--results <file>", 'JSONL, one {"id", "calls": [{"name", "arguments"}]} per item')
    .option("--categories <list>", "comma-separated categories", "simple,multiple,parallel")
    .option("--json", "print every item's verdict as JSON")
    .description("score calls produced by any model or agent with terrarium's AST checker")
    .addHelpText(
      "after",
      "\nExample:\n  terrarium bench bfcl score --data ../shared/datasets/bfcl --categories simple,parallel --results my-model.jsonl\n",
    )
    .action((options: { data: string; results: string; categories: string; json?: boolean }) => {
      const items = loadBfcl(
        options.data,
        options.categories
          .split(",")
          .map((c) => c.trim())
          .filter(Boolean),
      );
      const score = scoreBfcl(items, readResults(options.results));
      if (options.json) {
        io.stdout.write(`${JSON.stringify(score, null, 2)}\n`);
        return;
      }
      const table = compactTable(["category", "items", "correct", "accuracy"]);
      for (const [category, entry] of Object.entries(score.categories)) {
        table.push([
          category,
          String(entry.items),
          String(entry.correct),
          `${(entry.accuracy * 100).toFixed(2)}%`,
        ]);
      }
      table.push(["overall (mean of categories)", "", "", `${(score.overall * 100).toFixed(2)}%`]);
      io.stdout.write(`${table.toString()}\n`);
      const failures = score.items.filter((item) => !item.valid);
      for (const failure of failures.slice(0, 50))
        io.stdout.write(`${failure.id}: ${failure.errorType}: ${failure.error}\n`);
      if (failures.length > 50) io.stdout.write(`… and ${failures.length - 50} more (--json lists all)\n`);
    });
}

function readResults(file: string): Map<string, AstCall[]> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the results (no such file)", {
      where: { file },
    });
  }
  const results = new Map<string, AstCall[]>();
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    let record: { id?: unknown; calls?: unknown };
    try {
      record = JSON.parse(line);
    } catch (error) {
      throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
        where: { file, line: index + 1 },
      });
    }
    if (typeof record.id !== "string" || !Array.isArray(record.calls)) {
      throw new TerrariumError("INVALID_INPUT", 'each line must be {"id": string, "calls": [...]}', {
        where: { file, line: index + 1 },
      });
    }
    results.set(
      record.id,
      record.calls.map((call: { name: string; arguments: unknown }) => ({
        name: call.name,
        arguments: (typeof call.arguments === "string"
          ? JSON.parse(call.arguments)
          : (call.arguments ?? {})) as Record<string, unknown>,
      })),
    );
  });
  return results;
}
