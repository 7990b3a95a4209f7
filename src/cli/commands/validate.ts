import { createWriteStream, statSync, writeFileSync } from "node:fs";
import type { Command } from "commander";
import type { ToolFormat } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import {
  addToSummary,
  type DatasetSummary,
  emptySummary,
  readLines,
  validateDatasetLines,
} from "../../validate/dataset.js";
import { CallValidator } from "../../validate/validator.js";
import { type CliIo, collect, write } from "../io.js";
import { loadFromSources } from "./tools.js";

interface ValidateOptions {
  dataset: string;
  tools?: string[];
  as?: ToolFormat;
  out?: string;
  summaryJson?: string;
  failOnInvalid?: boolean;
  quiet?: boolean;
}

export function registerValidateCommand(
  program: Command,
  io: CliIo,
  setExitCode: (code: number) => void,
): void {
  program
    .command("validate")
    .description("check every tool call of a function-calling dataset against its tools' schemas")
    .requiredOption(
      "--dataset <file>",
      'JSONL, one {"id", "tools"?, "calls": [{"name", "arguments"}]} per line ("-" = stdin)',
    )
    .option(
      "--tools <source>",
      "tool definitions shared by lines that carry no tools of their own (repeatable)",
      collect,
    )
    .option("--as <format>", "read tool definitions as this format instead of detecting it")
    .option("--out <file>", "write the JSONL results to a file instead of stdout")
    .option("--summary-json <file>", "also write the summary as JSON")
    .option("--fail-on-invalid", "exit with status 1 when any call is invalid or any line malformed")
    .option("-q, --quiet", "print no summary")
    .addHelpText(
      "after",
      `
Each output line is {"schemaVersion", "id", "line", "results": [{"name", "valid", "errors": [{"path", "rule", "message"}]}]},
or {"schemaVersion", "id", "line", "error"} for a line that could not be read. The summary goes to stderr.

Examples:
  terrarium validate --dataset examples/dataset-check/calls.jsonl
  terrarium validate --dataset calls.jsonl --tools tools.openapi.yaml --out results.jsonl --fail-on-invalid
`,
    )
    .action(async (options: ValidateOptions) => {
      if (options.dataset !== "-") assertReadable(options.dataset);
      const validator = new CallValidator();
      const sharedTools = options.tools
        ? await loadFromSources(options.tools, { ...(options.as ? { as: options.as } : {}) })
        : undefined;
      if (sharedTools) validator.prepare(sharedTools);
      const output = options.out ? createWriteStream(options.out) : io.stdout;
      const summary = emptySummary();
      const started = performance.now();
      const progress = Boolean(io.stderr.isTTY) && !options.quiet;
      for await (const record of validateDatasetLines(readLines(options.dataset, io.stdin as never), {
        validator,
        ...(sharedTools ? { sharedTools } : {}),
        ...(options.as ? { format: options.as } : {}),
      })) {
        addToSummary(summary, record);
        if (record.error && !options.quiet) {
          io.stderr.write(
            `${clearLine(progress)}line ${record.line}: ${record.error.message} [${record.error.code}]\n`,
          );
        }
        await write(output, `${JSON.stringify(record)}\n`);
        if (progress && summary.lines % 500 === 0)
          io.stderr.write(`\r${summary.lines} lines, ${summary.calls} calls…`);
      }
      if (output !== io.stdout)
        await new Promise<void>((resolve) => (output as NodeJS.WritableStream).end(resolve));
      const seconds = (performance.now() - started) / 1000;
      if (!options.quiet) io.stderr.write(`${clearLine(progress)}${formatSummary(summary, seconds)}\n`);
      if (options.summaryJson) {
        writeFileSync(
          options.summaryJson,
          `${JSON.stringify({ schemaVersion: 1, ...summary, seconds }, null, 2)}\n`,
        );
      }
      if (options.failOnInvalid && (summary.invalid > 0 || summary.malformedLines > 0)) setExitCode(1);
    });
}

function assertReadable(file: string): void {
  try {
    if (statSync(file).isFile()) return;
  } catch {
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the dataset (no such file)", {
      where: { file },
    });
  }
  throw new TerrariumError("FILE_UNREADABLE", "the dataset must be a file", { where: { file } });
}

function clearLine(progress: boolean): string {
  return progress ? "\r\x1b[K" : "";
}

export function formatSummary(summary: DatasetSummary, seconds: number): string {
  const rules = Object.entries(summary.byRule)
    .sort((a, b) => b[1] - a[1])
    .map(([rule, count]) => `${rule} ${count}`)
    .join(", ");
  return [
    `lines ${summary.lines} (${summary.malformedLines} malformed), calls ${summary.calls}: ${summary.valid} valid, ${summary.invalid} invalid`,
    rules ? `violations by rule: ${rules}` : "violations by rule: none",
    `${seconds.toFixed(2)} s`,
  ].join("\n");
}
