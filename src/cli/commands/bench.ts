import { readFileSync } from "node:fs";
import type { Command } from "commander";
import type { AstCall } from "../../bench/bfcl/ast-checker.js";
import { loadBfcl } from "../../bench/bfcl/data.js";
import { scoreBfcl } from "../../bench/bfcl/score.js";
import { TerrariumError } from "../../core/errors.js";
import { type CliIo, compactTable } from "../io.js";

export function registerBenchCommands(program: Command, io: CliIo): void {
  const bench = program.command("bench").description("benchmarks of agents and simulators");
  const bfcl = bench
    .command("bfcl")
    .description("the Berkeley Function Calling Leaderboard (v3, single-turn and irrelevance)");

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
