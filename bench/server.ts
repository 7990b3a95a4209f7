/**
 * The simulated-tool server under load: calls per second and p50/p99 latency of a simulated call (schema
 * and code simulators, SQLite store) beside a bare Hono JSON echo route on the same stack, in the same
 * run; and, for the llm simulator against the scripted server, model calls and prompt tokens per simulated
 * call in the merged mode versus Gecko's two-call mode.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { Catalog, loadToolFile } from "../src/catalog/index.js";
import { Models, parseConfig } from "../src/models/index.js";
import { createApp } from "../src/server/index.js";
import { buildEngine } from "../src/sim/build-engine.js";
import { Engine, LlmSimulator } from "../src/sim/index.js";
import { startScriptedLlmServer } from "../test/helpers/scripted-llm-server.js";
import type { BenchResult } from "./report.js";

const FIXTURES = join(import.meta.dirname, "..", "test", "fixtures");

function listen(app: {
  fetch: (request: Request) => Response | Promise<Response>;
}): Promise<{ url: string; close: () => Promise<void> }> {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        close: () => new Promise((done) => server.close(() => done())),
      }),
    );
  });
}

/** One client per URL, each POSTing `body` in a loop for `ms` milliseconds; rate and latency percentiles. */
async function load(urls: string[], body: unknown, ms = 2000) {
  const latencies: number[] = [];
  const end = performance.now() + ms;
  await Promise.all(
    urls.map(async (url) => {
      while (performance.now() < end) {
        const started = performance.now();
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        await response.arrayBuffer();
        latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] as number;
  return { callsPerSecond: latencies.length / (ms / 1000), p50: at(0.5), p99: at(0.99) };
}

export async function benchServer(): Promise<BenchResult> {
  const rows: Array<{ subject: string; callsPerSecond: number; p50: number; p99: number }> = [];

  const echo = new Hono().post("/echo", async (c) => c.json(await c.req.json()));
  const echoServer = await listen(echo);
  const echoUrls = Array.from({ length: 8 }, () => `${echoServer.url}/echo`);
  rows.push({
    subject: "bare Hono JSON echo (baseline)",
    ...(await load(echoUrls, { name: "x", arguments: { a: 1 } })),
  });
  await echoServer.close();

  const dir = mkdtempSync(join(tmpdir(), "terrarium-bench-server-"));
  for (const [subject, sources, call] of [
    [
      "schema simulator (petstore listPets), SQLite",
      [join(FIXTURES, "tools", "petstore.openapi.yaml")],
      { name: "listPets", arguments: { limit: 3 } },
    ],
    [
      "code simulator (bank get_account), SQLite",
      ["bank"],
      { name: "get_account", arguments: { account_id: "ACC-1001" } },
    ],
  ] as const) {
    const { engine } = await buildEngine({
      sources: [...sources],
      db: join(dir, `${subject.split(" ")[0]}.sqlite`),
      seed: "1",
    });
    const server = await listen(createApp(engine));
    // One session per client, as agents would use it.
    const sessions = await Promise.all(Array.from({ length: 8 }, () => engine.createSession()));
    rows.push({
      subject,
      ...(await load(
        sessions.map((session) => `${server.url}/sessions/${session.id}/calls`),
        call,
      )),
    });
    await server.close();
    await engine.close();
  }

  const llm = await llmModes();
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  return {
    name: "server",
    lines: [
      "simulated calls over HTTP on loopback, 8 concurrent clients for 2 s",
      "| endpoint | calls per second | p50 ms | p99 ms |",
      "|---|---:|---:|---:|",
      ...rows.map(
        (r) => `| ${r.subject} | ${fmt(r.callsPerSecond)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`,
      ),
      "",
      ...llm.lines,
    ],
    report: { benchmark: "server", rows, llm: llm.report },
  };
}

/** Model calls and prompt tokens per simulated call: merged (one call) versus gecko (two calls). */
async function llmModes(): Promise<{ lines: string[]; report: Record<string, unknown> }> {
  const scripted = await startScriptedLlmServer([], {
    countPromptTokens: true,
    respond: (body) => {
      const name = body?.response_format?.json_schema?.name;
      const observation = { order_id: "ord_1", status: "created" };
      const changes = [{ op: "add", path: "/orders/ord_1", value: { sku: "A1" } }];
      const content =
        name === "simulated_call"
          ? { status: "ok", observation, changes }
          : name === "simulated_response"
            ? { status: "ok", observation }
            : { changes };
      return { reply: { content: JSON.stringify(content) } };
    },
  });
  const catalog = new Catalog(await loadToolFile(join(FIXTURES, "tools", "functions.json")));
  const results: Record<string, { modelCallsPerCall: number; promptTokensPerCall: number }> = {};
  for (const mode of ["merged", "gecko"] as const) {
    const models = new Models({
      config: parseConfig({
        providers: {
          scripted: { type: "openai-compatible", baseURL: scripted.baseURL, structuredOutputs: true },
        },
        roles: { simulator: "scripted:m" },
      }),
      cache: null,
    });
    const engine = new Engine({
      catalog,
      simulators: [new LlmSimulator(models, { mode })],
      policy: "llm",
      seed: 1,
    });
    const session = await engine.createSession({ state: { orders: {} } });
    const calls = 20;
    for (let i = 0; i < calls; i++) {
      await engine.call(session.id, {
        name: "search_flights",
        arguments: { origin: "SFO", destination: "JFK", passengers: (i % 9) + 1 },
      });
    }
    const totals = models.ledger.totals;
    results[mode] = {
      modelCallsPerCall: totals.calls / calls,
      promptTokensPerCall: totals.inputTokens / calls,
    };
    await engine.close();
  }
  await scripted.close();
  const merged = results.merged as { modelCallsPerCall: number; promptTokensPerCall: number };
  const gecko = results.gecko as { modelCallsPerCall: number; promptTokensPerCall: number };
  return {
    lines: [
      "llm simulator per simulated call (20 calls, growing history; prompt tokens ≈ characters / 4)",
      "| mode | model calls | prompt tokens |",
      "|---|---:|---:|",
      `| gecko: response, then state update (baseline) | ${gecko.modelCallsPerCall.toFixed(1)} | ${Math.round(gecko.promptTokensPerCall)} |`,
      `| merged: one structured call | ${merged.modelCallsPerCall.toFixed(1)} | ${Math.round(merged.promptTokensPerCall)} |`,
    ],
    report: results,
  };
}
