import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { z } from "zod";
import { Catalog } from "../catalog/catalog.js";
import { LoadReport } from "../catalog/report.js";
import type { ToolFormat } from "../catalog/tool.js";
import { type ErrorCode, TerrariumError, toTerrariumError } from "../core/errors.js";
import type { CallValidation, CallValidator } from "./validator.js";

/** Version of the JSONL records `validate --dataset` writes. */
export const VALIDATION_RECORD_SCHEMA_VERSION = 1;

/** One input line: an id, the calls, and (unless shared tools are given) the tools they were made against. */
const DatasetLine = z.object({
  id: z.union([z.string(), z.number()]),
  tools: z.unknown().optional(),
  calls: z.array(z.unknown()),
});

export interface ValidationRecord {
  schemaVersion: number;
  id: string | number | null;
  line: number;
  results?: CallValidation[];
  error?: { code: string; message: string };
  /** What reading the line's tools normalised or dropped (a pattern with no JavaScript equivalent, …). */
  warnings?: Array<{ code: string; message: string; tool?: string; pointer?: string }>;
}

export interface DatasetSummary {
  lines: number;
  malformedLines: number;
  calls: number;
  valid: number;
  invalid: number;
  /** How many violations of each rule were found. */
  byRule: Record<string, number>;
}

export interface ValidateDatasetOptions {
  validator: CallValidator;
  /** Tools for lines that carry none of their own (a line with `tools` is checked against those). */
  sharedTools?: Catalog;
  format?: ToolFormat;
}

/**
 * Validates a function-calling dataset line by line. A line that cannot be used (bad JSON, missing
 * fields, unreadable tools) becomes a record with an `error` and the run goes on.
 */
export async function* validateDatasetLines(
  lines: AsyncIterable<string> | Iterable<string>,
  options: ValidateDatasetOptions,
): AsyncGenerator<ValidationRecord> {
  let lineNumber = 0;
  for await (const text of lines) {
    lineNumber++;
    if (text.trim() === "") continue;
    yield validateLine(text, lineNumber, options);
  }
}

function validateLine(text: string, line: number, options: ValidateDatasetOptions): ValidationRecord {
  const base = { schemaVersion: VALIDATION_RECORD_SCHEMA_VERSION, line };
  let id: string | number | null = null;
  try {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`);
    }
    if (raw && typeof raw === "object" && "id" in raw) {
      const candidate = (raw as { id: unknown }).id;
      if (typeof candidate === "string" || typeof candidate === "number") id = candidate;
    }
    const parsed = DatasetLine.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.length ? `"${issue.path.join(".")}"` : "the line";
      throw new TerrariumError(
        "INVALID_INPUT",
        `${field}: ${issue?.message ?? "invalid"}; expected {"id", "calls": [...], "tools"?}`,
      );
    }
    const catalog = catalogFor(parsed.data.tools, options);
    const results = parsed.data.calls.map((call) => options.validator.validate(catalog, call as never));
    const warnings = catalog.report.warnings.map(({ code, message, tool, pointer }) => ({
      code,
      message,
      ...(tool ? { tool } : {}),
      ...(pointer ? { pointer } : {}),
    }));
    return {
      ...base,
      id,
      results,
      ...(warnings.length > 0 && catalog !== options.sharedTools ? { warnings } : {}),
    };
  } catch (error) {
    const problem = toTerrariumError(error);
    const place = problem.where.pointer ? ` (at ${problem.where.pointer} of the line)` : "";
    return { ...base, id, error: { code: problem.code, message: `${problem.message}${place}` } };
  }
}

function catalogFor(tools: unknown, options: ValidateDatasetOptions): Catalog {
  if (tools === undefined) {
    if (options.sharedTools) return options.sharedTools;
    throw new TerrariumError("INVALID_INPUT", 'the line has no "tools" and no --tools source was given');
  }
  // Strict about what cannot be read (the line becomes an error record); what was normalised is kept
  // as warnings on the record.
  const report = new LoadReport();
  const catalog = Catalog.fromDocument(tools, {
    ...(options.format ? { format: options.format } : {}),
    report,
  });
  if (report.skipped[0]) {
    const skip = report.skipped[0];
    throw new TerrariumError(skip.code as ErrorCode, skip.message, { where: { pointer: skip.pointer } });
  }
  options.validator.prepare(catalog);
  return catalog;
}

/** Adds one record to a running summary. */
export function addToSummary(summary: DatasetSummary, record: ValidationRecord): void {
  summary.lines++;
  if (record.error) {
    summary.malformedLines++;
    return;
  }
  for (const result of record.results ?? []) {
    summary.calls++;
    if (result.valid) summary.valid++;
    else summary.invalid++;
    for (const violation of result.errors)
      summary.byRule[violation.rule] = (summary.byRule[violation.rule] ?? 0) + 1;
  }
}

export function emptySummary(): DatasetSummary {
  return { lines: 0, malformedLines: 0, calls: 0, valid: 0, invalid: 0, byRule: {} };
}

/** The lines of a file ("-" is standard input), streamed. */
export function readLines(file: string, stdin: Readable = process.stdin): AsyncIterable<string> {
  const input = file === "-" ? stdin : createReadStream(file, { encoding: "utf8" });
  return createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
}
