/**
 * Validation throughput on the BFCL tools: terrarium's CallValidator beside raw Ajv on the same schemas
 * with the same options, measured in the same run.
 */
import { join } from "node:path";
import type { ValidateFunction } from "ajv";
import { Catalog, type Tool } from "../src/catalog/index.js";
import { CallValidator, createAjv } from "../src/validate/index.js";
import { bfclCategory, groundTruthCalls } from "../test/helpers/bfcl.js";
import { type BenchResult, median } from "./report.js";

interface Workload {
  catalog: Catalog;
  tool: Tool;
  call: { name: string; arguments: Record<string, unknown> };
}

function buildWorkloads(): { valid: Workload[]; invalid: Workload[] } {
  const valid: Workload[] = [];
  const invalid: Workload[] = [];
  for (const category of ["simple", "multiple", "parallel"]) {
    for (const { question, answer } of bfclCategory(category)) {
      const catalog = Catalog.fromDocument(question.function);
      for (const call of groundTruthCalls(answer)) {
        const tool = catalog.get(call.name);
        if (!tool) continue;
        valid.push({ catalog, tool, call });
        // Broken the way models break calls: an unknown argument, and a required one dropped.
        const required = (tool.inputSchema.required as string[] | undefined) ?? [];
        const args: Record<string, unknown> = { ...call.arguments, not_a_parameter: 1 };
        if (required[0]) delete args[required[0]];
        invalid.push({ catalog, tool, call: { name: call.name, arguments: args } });
      }
    }
  }
  return { valid, invalid };
}

/** Calls per second of one timed round of `fn` over the workloads (at least 200 ms). */
function round(workloads: Workload[], fn: (w: Workload) => unknown): number {
  let calls = 0;
  const started = process.hrtime.bigint();
  do {
    for (const workload of workloads) fn(workload);
    calls += workloads.length;
  } while (process.hrtime.bigint() - started < 200_000_000n);
  return calls / (Number(process.hrtime.bigint() - started) / 1e9);
}

/**
 * Median calls per second of the baseline and of terrarium, their rounds interleaved so that JIT warm-up,
 * garbage collection and machine noise fall on both alike (two warm-up rounds each are discarded).
 */
function compare(
  workloads: Workload[],
  raw: (w: Workload) => unknown,
  ours: (w: Workload) => unknown,
  rounds = 9,
): { raw: number; ours: number } {
  const rawRounds: number[] = [];
  const ourRounds: number[] = [];
  for (let index = -2; index < rounds; index++) {
    const r = round(workloads, raw);
    const o = round(workloads, ours);
    if (index >= 0) {
      rawRounds.push(r);
      ourRounds.push(o);
    }
  }
  return { raw: median(rawRounds), ours: median(ourRounds) };
}

export async function benchValidate(): Promise<BenchResult> {
  const { valid, invalid } = buildWorkloads();
  const mixed = valid.flatMap((w, i) => [w, invalid[i] as Workload]);

  // Raw Ajv baseline: one Ajv with terrarium's options, each schema compiled once up front.
  const ajv = createAjv();
  const rawCompiled = new Map<Tool, ValidateFunction>();
  let started = performance.now();
  for (const w of valid)
    if (!rawCompiled.has(w.tool)) rawCompiled.set(w.tool, ajv.compile(w.tool.inputSchema));
  const rawCompileMs = performance.now() - started;

  const validator = new CallValidator();
  started = performance.now();
  for (const w of valid) validator.prepare(w.catalog);
  const ourCompileMs = performance.now() - started;

  const raw = (w: Workload) => (rawCompiled.get(w.tool) as ValidateFunction)(w.call.arguments);
  const ours = (w: Workload) => validator.validate(w.catalog, w.call);

  const rows = [
    { workload: "valid calls", n: valid.length, ...compare(valid, raw, ours) },
    { workload: "invalid calls", n: invalid.length, ...compare(invalid, raw, ours) },
    { workload: "mixed 50/50", n: mixed.length, ...compare(mixed, raw, ours) },
  ].map((row) => ({ ...row, overhead: row.raw / row.ours }));

  const report = {
    benchmark: "validate-bfcl",
    data: join("test", "fixtures", "bfcl"),
    tools: rawCompiled.size,
    compile: { rawAjvMs: rawCompileMs, terrariumMs: ourCompileMs },
    rows,
    target: "terrarium overhead over raw Ajv < 2x",
    pass: rows.every((row) => row.overhead < 2),
  };
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  const lines = [
    `validation throughput on ${report.tools} BFCL tools (simple, multiple, parallel), calls per second`,
    "| workload | calls | raw Ajv (baseline) | terrarium | overhead |",
    "|---|---:|---:|---:|---:|",
    ...rows.map(
      (row) =>
        `| ${row.workload} | ${row.n} | ${fmt(row.raw)} | ${fmt(row.ours)} | ${row.overhead.toFixed(2)}x |`,
    ),
    `compile once: raw Ajv ${rawCompileMs.toFixed(0)} ms for ${rawCompiled.size} schemas; terrarium ${ourCompileMs.toFixed(0)} ms (deduplicated by content)`,
    `target: overhead < 2x on every workload -> ${report.pass ? "met" : "NOT MET"}`,
  ];
  return { name: "validate", lines, report, pass: report.pass };
}
