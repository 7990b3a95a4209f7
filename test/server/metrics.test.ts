import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageLedger, type UsageRecord } from "../../src/models/usage.js";
import { startServer } from "../../src/server/index.js";
import { ServerMetrics, UNKNOWN_TOOL, watchLedger } from "../../src/server/metrics.js";
import { toolFixture } from "../helpers/paths.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

/** GET /metrics: Prometheus text, one registry per server, counted from the engine, the HTTP layer and the ledger. */
type Server = Awaited<ReturnType<typeof startServer>>;
let bank: Server;
let other: Server;
let guarded: Server;
beforeAll(async () => {
  [bank, other, guarded] = await Promise.all([
    startServer({ sources: ["bank"], port: 0, seed: "m" }),
    startServer({ sources: ["bank"], port: 0, seed: "m" }),
    startServer({ sources: ["bank"], port: 0, seed: "m", tokens: ["secret"] }),
  ]);
});
afterAll(async () => {
  await Promise.all([bank?.close(), other?.close(), guarded?.close()]);
});

/** The samples of a Prometheus text, `name{labels}` -> value (labels as written, in order). */
function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.trim() === "") continue;
    const at = line.lastIndexOf(" ");
    found.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return found;
}

async function scrape(server: Server, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/metrics`, { headers });
  return { status: response.status, type: response.headers.get("content-type"), text: await response.text() };
}

async function call(server: Server, id: string, name: string, args: unknown) {
  const response = await fetch(`${server.url}/sessions/${id}/calls`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, arguments: args }),
  });
  return (await response.json()) as { status: string };
}

describe("GET /metrics", () => {
  it("counts tool calls by tool, simulator and status, with latency histograms, per server", async () => {
    const { id } = (await (await fetch(`${bank.url}/sessions`, { method: "POST" })).json()) as { id: string };
    expect((await call(bank, id, "get_account", { account_id: "ACC-1001" })).status).toBe("ok");
    expect((await call(bank, id, "get_account", { account_id: "ACC-1001" })).status).toBe("ok");
    expect((await call(bank, id, "get_account", {})).status).toBe("invalid");
    // A name the catalog does not have is counted under one label, whatever the client sent.
    await call(bank, id, "no_such_tool_7f3a", {});

    const scraped = await scrape(bank);
    expect(scraped.status).toBe(200);
    expect(scraped.type).toMatch(/^text\/plain; version=0\.0\.4/);
    const values = samples(scraped.text);
    expect(values.get('terrarium_tool_calls_total{tool="get_account",simulator="code",status="ok"}')).toBe(2);
    expect(
      values.get('terrarium_tool_calls_total{tool="get_account",simulator="validator",status="invalid"}'),
    ).toBe(1);
    expect(
      values.get(`terrarium_tool_calls_total{tool="${UNKNOWN_TOOL}",simulator="validator",status="invalid"}`),
    ).toBe(1);
    expect(scraped.text).not.toContain("no_such_tool_7f3a");
    expect(
      values.get(
        'terrarium_tool_call_duration_seconds_count{tool="get_account",simulator="code",status="ok"}',
      ),
    ).toBe(2);
    expect(
      values.get(
        'terrarium_tool_call_duration_seconds_bucket{le="+Inf",tool="get_account",simulator="code",status="ok"}',
      ),
    ).toBe(2);
    expect(
      values.get('terrarium_http_requests_total{method="POST",route="/sessions/{id}/calls",status="200"}'),
    ).toBe(4);
    expect(values.get('terrarium_http_requests_total{method="POST",route="/sessions",status="201"}')).toBe(1);
    // Node's process metrics come with startServer.
    expect(scraped.text).toContain("process_cpu_user_seconds_total");

    // The other server in this process counted nothing of this.
    const elsewhere = samples((await scrape(other)).text);
    expect([...elsewhere.keys()].some((key) => key.startsWith("terrarium_tool_calls_total"))).toBe(false);
  });

  it("counts errors by code, and labels requests by route template, never by the path sent", async () => {
    await fetch(`${other.url}/sessions/nope-123/state`);
    await fetch(`${other.url}/nowhere/at/all`);
    await fetch(`${other.url}/sessions`, {
      method: "POST",
      body: "{",
      headers: { "content-type": "application/json" },
    });
    const { id } = (await (await fetch(`${other.url}/sessions`, { method: "POST" })).json()) as {
      id: string;
    };
    // A tool route without X-Session-ID: Gecko's shape, counted by its status.
    await fetch(`${other.url}/get_account`, { method: "POST", body: "{}" });
    // Routes check the session first; a caller of the engine itself can still name a missing one.
    await expect(other.engine.call("nope-456", { name: "get_account", arguments: {} })).rejects.toThrow();

    const text = (await scrape(other)).text;
    const values = samples(text);
    expect(values.get('terrarium_errors_total{source="http",code="UNKNOWN_SESSION"}')).toBe(1);
    expect(values.get('terrarium_errors_total{source="http",code="NOT_FOUND"}')).toBe(1);
    expect(values.get('terrarium_errors_total{source="http",code="INVALID_INPUT"}')).toBe(1);
    expect(values.get('terrarium_errors_total{source="http",code="BAD_REQUEST"}')).toBe(1);
    // The engine refused the call on a missing session before any simulator.
    expect(values.get('terrarium_errors_total{source="call",code="UNKNOWN_SESSION"}')).toBe(1);
    expect(
      values.get('terrarium_tool_calls_total{tool="get_account",simulator="none",status="rejected"}'),
    ).toBe(1);
    expect(
      values.get('terrarium_http_requests_total{method="GET",route="/sessions/{id}/state",status="404"}'),
    ).toBe(1);
    expect(values.get('terrarium_http_requests_total{method="GET",route="(unmatched)",status="404"}')).toBe(
      1,
    );
    expect(text).not.toContain("nope-123");
    expect(text).not.toContain("nowhere");
    expect(text).not.toContain(id);
  });

  it("needs a token when the server has tokens", async () => {
    expect((await scrape(guarded)).status).toBe(401);
    const scraped = await scrape(guarded, { authorization: "Bearer secret" });
    expect(scraped.status).toBe(200);
    // The refused scrape was counted too.
    expect(
      samples(scraped.text).get('terrarium_http_requests_total{method="GET",route="/metrics",status="401"}'),
    ).toBe(1);
    expect(samples(scraped.text).get('terrarium_errors_total{source="http",code="UNAUTHORIZED"}')).toBe(1);
  });
});

describe("model usage", () => {
  const record = (overrides: Partial<UsageRecord>): UsageRecord => ({
    model: "openai:gpt-x",
    role: "simulator",
    cached: false,
    inputTokens: 100,
    outputTokens: 20,
    cachedInputTokens: 0,
    latencyMs: 1500,
    costUsd: 0.25,
    attempts: 1,
    ok: true,
    ...overrides,
  });

  it("counts tokens, cost, calls and latency by model and role as the ledger (or a child of it) accounts them", async () => {
    const metrics = new ServerMetrics();
    const ledger = new UsageLedger();
    metrics.watchLedger(ledger);
    ledger.add(record({}));
    new UsageLedger(ledger).add(record({ role: "validator", inputTokens: 7, outputTokens: 1, costUsd: 0.5 }));
    ledger.add(record({ cached: true, latencyMs: 0, costUsd: 0 }));
    ledger.add(
      record({ ok: false, model: "anthropic:claude-y", inputTokens: 0, outputTokens: 0, costUsd: 0 }),
    );
    const values = samples(await metrics.render());
    const sim = 'model="openai:gpt-x",role="simulator"';
    expect(values.get(`terrarium_model_tokens_total{${sim},kind="input"}`)).toBe(200);
    expect(values.get(`terrarium_model_tokens_total{${sim},kind="output"}`)).toBe(40);
    expect(
      values.get('terrarium_model_tokens_total{model="openai:gpt-x",role="validator",kind="input"}'),
    ).toBe(7);
    expect(values.get(`terrarium_model_cost_usd_total{${sim}}`)).toBe(0.25);
    expect(values.get('terrarium_model_cost_usd_total{model="openai:gpt-x",role="validator"}')).toBe(0.5);
    expect(values.get(`terrarium_model_calls_total{${sim},outcome="ok"}`)).toBe(1);
    expect(values.get(`terrarium_model_calls_total{${sim},outcome="cached"}`)).toBe(1);
    expect(
      values.get('terrarium_model_calls_total{model="anthropic:claude-y",role="simulator",outcome="failed"}'),
    ).toBe(1);
    // Cache hits took no model time: only the real calls are in the latency histogram.
    expect(values.get(`terrarium_model_call_duration_seconds_count{${sim}}`)).toBe(1);
    expect(values.get(`terrarium_model_call_duration_seconds_sum{${sim}}`)).toBe(1.5);
    expect(values.get('terrarium_errors_total{source="model",code="MODEL_CALL_FAILED"}')).toBe(1);

    // After dispose, the ledger's records are no longer counted here; other watchers go on.
    let seen = 0;
    const stop = watchLedger(ledger, () => seen++);
    metrics.dispose();
    ledger.add(record({}));
    expect(seen).toBe(1);
    expect(samples(await metrics.render()).get(`terrarium_model_calls_total{${sim},outcome="ok"}`)).toBe(1);
    stop();
  });

  let llm: ScriptedLlmServer;
  afterAll(async () => {
    await llm?.close();
  });

  it("a served llm simulator's calls reach /metrics with their tokens", async () => {
    llm = await startScriptedLlmServer([], {
      repeat: {
        reply: {
          content: JSON.stringify({ status: "ok", observation: { id: 1, name: "Rex" }, changes: [] }),
          usage: { prompt_tokens: 321, completion_tokens: 12 },
        },
      },
    });
    const config = writeScriptedConfig(mkdtempSync(join(tmpdir(), "terrarium-metrics-")), llm.baseURL);
    const server = await startServer({
      sources: [toolFixture("petstore.openapi.yaml")],
      port: 0,
      model: "scripted:pet-model",
      config,
      simulator: "llm",
    });
    try {
      const { id } = (await (await fetch(`${server.url}/sessions`, { method: "POST" })).json()) as {
        id: string;
      };
      const response = await fetch(`${server.url}/pets/1`, { headers: { "x-session-id": id } });
      expect(response.status).toBe(200);
      const values = samples((await scrape(server)).text);
      const labels = 'model="scripted:pet-model",role="simulator"';
      expect(values.get(`terrarium_model_tokens_total{${labels},kind="input"}`)).toBe(321);
      expect(values.get(`terrarium_model_tokens_total{${labels},kind="output"}`)).toBe(12);
      expect(values.get(`terrarium_model_calls_total{${labels},outcome="ok"}`)).toBe(1);
      expect(values.get('terrarium_tool_calls_total{tool="showPetById",simulator="llm",status="ok"}')).toBe(
        1,
      );
      expect(
        values.get('terrarium_http_requests_total{method="GET",route="/pets/{petId}",status="200"}'),
      ).toBe(1);
    } finally {
      await server.close();
    }
  });
});
