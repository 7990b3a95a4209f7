/**
 * Validation throughput on the BFCL tools: terrarium's CallValidator beside raw Ajv on the same schemas
 * with the same options, measured in the same run.
 */
import { join } from "node:path";
import type { ValidateFunction } from "ajv";
import { Catalog, type Tool } from "../src/catalog/index.js";
import { CallValidator, createAjv } from "../src/validate/index.js";
import { bfclCategory, groundTruthCalls } from "../test/helpers/bfcl.js";
import type { BenchResult } from "./report.js";

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

/** Median calls per second over `rounds` timed rounds of `fn` applied to every workload. */
function throughput(workloads: Workload[], fn: (w: Workload) => unknown, rounds = 7): number {
  const perRound: number[] = [];
  for (let round = -2; round < rounds; round++) {
    let calls = 0;
    const started = process.hrtime.bigint();
    do {
      for (const workload of workloads) fn(workload);
      calls += workloads.length;
    } while (process.hrtime.bigint() - started < 200_000_000n);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (round >= 0) perRound.push(calls / seconds); // the first rounds warm the JIT up
  }
  perRound.sort((a, b) => a - b);
  return perRound[Math.floor(perRound.length / 2)] as number;
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
    { workload: "valid calls", n: valid.length, raw: throughput(valid, raw), ours: throughput(valid, ours) },
    {
      workload: "invalid calls",
      n: invalid.length,
      raw: throughput(invalid, raw),
      ours: throughput(invalid, ours),
    },
    { workload: "mixed 50/50", n: mixed.length, raw: throughput(mixed, raw), ours: throughput(mixed, ours) },
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
