import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { context, propagation, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startServer } from "../../src/server/index.js";
import { SPAN_ATTRIBUTES } from "../../src/server/tracing.js";
import { toolFixture } from "../helpers/paths.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

/**
 * OpenTelemetry: terrarium only uses @opentelemetry/api, so spans exist once a process registers an SDK.
 * Here the test registers one (an in-memory exporter, the async-hooks context manager, W3C propagation),
 * as docs/deployment.md tells users to, and reads what a served call produced.
 */
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let llm: ScriptedLlmServer;
let bank: Awaited<ReturnType<typeof startServer>>;
let pets: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  llm = await startScriptedLlmServer([], {
    repeat: {
      reply: {
        content: JSON.stringify({ status: "ok", observation: { id: 3, name: "Rex" }, changes: [] }),
        usage: { prompt_tokens: 50, completion_tokens: 5 },
      },
    },
  });
  const config = writeScriptedConfig(mkdtempSync(join(tmpdir(), "terrarium-otel-")), llm.baseURL);
  [bank, pets] = await Promise.all([
    startServer({ sources: ["bank"], port: 0, seed: "t" }),
    startServer({
      sources: [toolFixture("petstore.openapi.yaml")],
      port: 0,
      model: "scripted:pet-model",
      config,
      simulator: "llm",
    }),
  ]);
});
beforeEach(() => exporter.reset());
afterAll(async () => {
  await Promise.all([bank?.close(), pets?.close()]);
  await llm?.close();
  await provider.shutdown();
  // The API's globals live for the whole worker: leave them as other test files expect them.
  trace.disable();
  context.disable();
  propagation.disable();
});

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const named = (prefix: string) => exporter.getFinishedSpans().filter((span) => span.name.startsWith(prefix));

describe("OpenTelemetry spans", () => {
  it("a request's span, named by its route, holds the tool call's span with tool, simulator, status and session", async () => {
    const { id } = (await (await fetch(`${bank.url}/sessions`, { method: "POST" })).json()) as { id: string };
    exporter.reset();
    const response = await fetch(`${bank.url}/sessions/${id}/calls`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "get_account", arguments: { account_id: "ACC-1001" } }),
    });
    expect(response.status).toBe(200);
    const [http] = named("POST ");
    const [tool] = named("tool ");
    expect(http?.name).toBe("POST /sessions/{id}/calls");
    expect(http?.kind).toBe(SpanKind.SERVER);
    expect(http?.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/sessions/{id}/calls",
      "http.response.status_code": 200,
      [SPAN_ATTRIBUTES.sessionId]: id,
    });
    expect(tool?.name).toBe("tool get_account");
    expect(tool?.attributes).toMatchObject({
      [SPAN_ATTRIBUTES.tool]: "get_account",
      [SPAN_ATTRIBUTES.simulator]: "code",
      [SPAN_ATTRIBUTES.status]: "ok",
      [SPAN_ATTRIBUTES.sessionId]: id,
      [SPAN_ATTRIBUTES.step]: 0,
    });
    expect(parentOf(tool as ReadableSpan)).toBe(http?.spanContext().spanId);
    expect(tool?.spanContext().traceId).toBe(http?.spanContext().traceId);
  });

  it("continues the caller's trace (traceparent), and marks failures", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const response = await fetch(`${bank.url}/sessions/nope/state`, {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(response.status).toBe(404);
    const [http] = named("GET ");
    expect(http?.spanContext().traceId).toBe(traceId);
    expect(parentOf(http as ReadableSpan)).toBe("00f067aa0ba902b7");
    expect(http?.attributes["http.response.status_code"]).toBe(404);

    await expect(bank.engine.call("nope", { name: "get_account", arguments: {} })).rejects.toThrow();
    const [tool] = named("tool ");
    expect(tool?.status.code).toBe(SpanStatusCode.ERROR);
    expect(tool?.attributes).toMatchObject({
      [SPAN_ATTRIBUTES.status]: "rejected",
      [SPAN_ATTRIBUTES.errorCode]: "UNKNOWN_SESSION",
    });
  });

  it("a model call is a span inside the tool call that asked for it, with its model and tokens", async () => {
    const { id } = (await (await fetch(`${pets.url}/sessions`, { method: "POST" })).json()) as { id: string };
    exporter.reset();
    const response = await fetch(`${pets.url}/pets/3`, { headers: { "x-session-id": id } });
    expect(response.status).toBe(200);
    const [http] = named("GET ");
    const [tool] = named("tool ");
    const [model] = named("model ");
    expect(http?.name).toBe("GET /pets/{petId}");
    expect(tool?.attributes).toMatchObject({
      [SPAN_ATTRIBUTES.tool]: "showPetById",
      [SPAN_ATTRIBUTES.simulator]: "llm",
      [SPAN_ATTRIBUTES.sessionId]: id,
    });
    expect(model?.name).toBe("model scripted:pet-model");
    expect(model?.kind).toBe(SpanKind.CLIENT);
    expect(model?.attributes).toMatchObject({
      "gen_ai.request.model": "scripted:pet-model",
      "gen_ai.usage.input_tokens": 50,
      "gen_ai.usage.output_tokens": 5,
      [SPAN_ATTRIBUTES.role]: "simulator",
      [SPAN_ATTRIBUTES.scope]: id,
    });
    expect(parentOf(model as ReadableSpan)).toBe(tool?.spanContext().spanId);
    expect(parentOf(tool as ReadableSpan)).toBe(http?.spanContext().spanId);
  });
});
