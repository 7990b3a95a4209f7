/**
 * Model-layer overhead: a loopback call through terrarium's model layer and a cache hit, beside a bare
 * fetch() to the same scripted OpenAI-compatible server in the same run; and local generation speed on
 * the tiny GGUF fixture with terrarium's thread setting versus the library default.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryResponseCache, Models, parseConfig, SqliteResponseCache } from "../src/models/index.js";
import { startScriptedLlmServer } from "../test/helpers/scripted-llm-server.js";
import { type BenchResult, median } from "./report.js";

const messages = [{ role: "user" as const, content: "Say hi." }];

/**
 * Median microseconds per call of each path. Rounds of the paths are interleaved, so that warm-up, JIT
 * and machine noise fall on all of them alike.
 */
async function perCallMicros(
  paths: Array<{ calls: number; call: () => Promise<unknown> }>,
  rounds = 7,
): Promise<number[]> {
  for (const path of paths) for (let i = 0; i < Math.min(path.calls, 50); i++) await path.call();
  const samples: number[][] = paths.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (const [index, path] of paths.entries()) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < path.calls; i++) await path.call();
      samples[index]?.push(Number(process.hrtime.bigint() - started) / 1000 / path.calls);
    }
  }
  return samples.map(median);
}

export async function benchModels(): Promise<BenchResult> {
  const server = await startScriptedLlmServer([], { repeat: { reply: { content: "hi" } } });
  const config = parseConfig({
    providers: { local: { type: "openai-compatible", baseURL: server.baseURL } },
  });
  const url = `${server.baseURL}/chat/completions`;
  const body = JSON.stringify({ model: "m", messages });
  try {
    const uncached = new Models({ config, cache: null });
    const memory = new Models({ config, cache: new MemoryResponseCache() });
    const sqlitePath = join(mkdtempSync(join(tmpdir(), "terrarium-bench-")), "cache.sqlite");
    const sqlite = new Models({ config, cache: new SqliteResponseCache(sqlitePath) });
    const [bareFetch, layerCall, memoryHit, sqliteHit] = (await perCallMicros([
      {
        calls: 200,
        call: async () => {
          const response = await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          });
          return response.json();
        },
      },
      { calls: 200, call: () => uncached.generateText({ model: "local:m", messages }) },
      { calls: 2000, call: () => memory.generateText({ model: "local:m", messages }) },
      { calls: 2000, call: () => sqlite.generateText({ model: "local:m", messages }) },
    ])) as [number, number, number, number];
    await sqlite.close();

    const local = await localTokensPerSecond();
    const rows = [
      { path: "bare fetch() to the scripted server (baseline)", micros: bareFetch },
      { path: "model layer, loopback call (AI SDK provider, limits, accounting)", micros: layerCall },
      { path: "model layer, cache hit (memory)", micros: memoryHit },
      { path: "model layer, cache hit (SQLite file)", micros: sqliteHit },
    ];
    const lines = [
      "per-call time on loopback, median of 7 interleaved rounds (microseconds; lower is better)",
      "| path | µs per call | vs bare fetch |",
      "|---|---:|---:|",
      ...rows.map(
        (row) => `| ${row.path} | ${row.micros.toFixed(0)} | ${(row.micros / bareFetch).toFixed(2)}x |`,
      ),
      "",
      ...local.lines,
    ];
    return {
      name: "models",
      lines,
      report: {
        benchmark: "model-layer",
        perCallMicros: Object.fromEntries(rows.map((r) => [r.path, r.micros])),
        local: local.report,
      },
    };
  } finally {
    await server.close();
  }
}

/** Tokens per second on the tiny GGUF fixture, threads = cores versus node-llama-cpp's default. */
async function localTokensPerSecond(): Promise<{ lines: string[]; report: Record<string, unknown> }> {
  let lib: typeof import("node-llama-cpp");
  try {
    lib = await import("node-llama-cpp");
  } catch {
    return {
      lines: ["local generation: skipped (node-llama-cpp is not installed)"],
      report: { skipped: true },
    };
  }
  const { tinyGgufPath } = await import("../test/helpers/tiny-gguf.js");
  const { availableParallelism } = await import("node:os");
  const modelPath = tinyGgufPath();
  const measure = async (threads: number | undefined) => {
    const llama = await lib.getLlama({
      gpu: false,
      build: "never",
      logLevel: lib.LlamaLogLevel.error,
      ...(threads !== undefined ? { maxThreads: threads } : {}),
    });
    const model = await llama.loadModel({ modelPath });
    const context = await model.createContext({
      contextSize: 512,
      ...(threads !== undefined ? { threads } : {}),
    });
    const completion = new lib.LlamaCompletion({ contextSequence: context.getSequence() });
    const tokens = 200;
    const started = process.hrtime.bigint();
    const text = await completion.generateCompletion("The", { maxTokens: tokens, temperature: 0 });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const produced = model.tokenize(text).length;
    const usedThreads = context.currentThreads;
    await context.dispose();
    await model.dispose();
    await llama.dispose();
    return { tokensPerSecond: produced / seconds, threads: usedThreads };
  };
  const chosen = await measure(availableParallelism());
  const fallback = await measure(undefined);
  const single = await measure(1);
  return {
    lines: [
      `local generation on the tiny GGUF fixture (${availableParallelism()} cores)`,
      "| threads | tokens per second |",
      "|---|---:|",
      `| library default (${fallback.threads}) (baseline) | ${fallback.tokensPerSecond.toFixed(0)} |`,
      `| terrarium: one per core (${chosen.threads}) | ${chosen.tokensPerSecond.toFixed(0)} |`,
      `| one thread (${single.threads}) | ${single.tokensPerSecond.toFixed(0)} |`,
      "(a model this small is dominated by per-token thread start-up, so one thread wins here; real models are",
      "compute-bound and want one thread per core, which is terrarium's default; set llama.threads to override)",
    ],
    report: { cores: availableParallelism(), chosen, libraryDefault: fallback, oneThread: single },
  };
}
