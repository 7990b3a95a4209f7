import type { IncomingHttpHeaders } from "node:http";
import {
  type Attributes,
  type Context,
  context,
  ProxyTracerProvider,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";
import type { UsageRecord } from "../models/usage.js";
import type { CallOutcome } from "../sim/engine.js";

/**
 * OpenTelemetry spans for `terrarium serve`, through `@opentelemetry/api` only: until the embedding
 * process registers an SDK (a tracer provider, and for nesting a context manager), every span here is a
 * no-op that costs a few object allocations. docs/deployment.md shows how to register one.
 *
 * Spans: one per HTTP request (`GET /sessions/{id}/state`, kind SERVER, continuing a W3C `traceparent`
 * when a propagator is registered), one per tool call (`tool <name>`) inside it, and one per model call
 * (`model <provider:model>`) inside that, rebuilt from the usage record when the call is accounted.
 */
export const TRACER_NAME = "terrarium";

/** Attribute names terrarium puts on its spans (OpenTelemetry's HTTP and GenAI names where they exist). */
export const SPAN_ATTRIBUTES = {
  tool: "terrarium.tool",
  simulator: "terrarium.simulator",
  status: "terrarium.status",
  sessionId: "terrarium.session_id",
  step: "terrarium.step",
  errorCode: "terrarium.error_code",
  role: "terrarium.model_role",
  cached: "terrarium.model_cached",
  costUsd: "terrarium.model_cost_usd",
  scope: "terrarium.usage_scope",
} as const;

/** Reads propagation headers (`traceparent`, `baggage`, …) straight from a request's Headers. */
const HEADERS_GETTER: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

function tracer() {
  // Looked up each time: a provider registered after the server started is still used.
  return trace.getTracer(TRACER_NAME);
}

/** Reads propagation headers from a Node request's headers (what `HEADERS_GETTER` reads of a web request's). */
const NODE_HEADERS_GETTER: TextMapGetter<IncomingHttpHeaders> = {
  get: (headers, key) => {
    const value = headers[key];
    return Array.isArray(value) ? value.join(", ") : value;
  },
  keys: (headers) => Object.keys(headers),
};

/**
 * Whether spans are recorded: a tracer provider is registered (checked each time, as `tracer()` does).
 * Without one every span is a no-op, so a request need not make any (nor switch contexts for them).
 */
export function tracingEnabled(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME) !== undefined;
}

/** Starts the span of one HTTP request (its name is completed with the route once it is known). */
export function startHttpSpan(
  method: string,
  path: string,
  headers: Headers,
): { span: Span; context: Context } {
  return startSpanFrom(method, path, headers, HEADERS_GETTER);
}

/** `startHttpSpan` for a request read from Node's `IncomingMessage` (the server's fast path). */
export function startNodeHttpSpan(
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
): { span: Span; context: Context } {
  return startSpanFrom(method, path, headers, NODE_HEADERS_GETTER);
}

function startSpanFrom<T>(
  method: string,
  path: string,
  headers: T,
  getter: TextMapGetter<T>,
): { span: Span; context: Context } {
  const parent = propagation.extract(context.active(), headers, getter);
  const span = tracer().startSpan(
    method,
    {
      kind: SpanKind.SERVER,
      attributes: { "http.request.method": method, "url.path": path },
    },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Ends an HTTP request's span with its route (template), status and session. */
export function endHttpSpan(
  span: Span,
  method: string,
  route: string | undefined,
  status: number,
  sessionId: string | undefined,
): void {
  if (route) {
    span.updateName(`${method} ${route}`);
    span.setAttribute("http.route", route);
  }
  span.setAttribute("http.response.status_code", status);
  if (sessionId) span.setAttribute(SPAN_ATTRIBUTES.sessionId, sessionId);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${status}` });
  span.end();
}

/**
 * Runs one tool call in its span: attributes tool, session, and once it is answered its simulator,
 * status and step; a call that throws (an unknown session) is an error span.
 */
export async function traceToolCall(
  sessionId: string,
  tool: string,
  run: () => Promise<CallOutcome>,
): Promise<CallOutcome> {
  // No provider: the span would record nothing, and entering its context costs a share of a small call.
  if (!tracingEnabled()) return run();
  const span = tracer().startSpan(`tool ${tool}`, {
    kind: SpanKind.INTERNAL,
    attributes: { [SPAN_ATTRIBUTES.tool]: tool, [SPAN_ATTRIBUTES.sessionId]: sessionId },
  });
  try {
    const outcome = await context.with(trace.setSpan(context.active(), span), run);
    span.setAttributes({
      [SPAN_ATTRIBUTES.simulator]: outcome.simulator,
      [SPAN_ATTRIBUTES.status]: outcome.status,
      [SPAN_ATTRIBUTES.step]: outcome.step,
    });
    if (outcome.status === "error") {
      const code = firstCode(outcome);
      if (code) span.setAttribute(SPAN_ATTRIBUTES.errorCode, code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? "the simulator failed" });
    }
    return outcome;
  } catch (error) {
    span.setAttribute(SPAN_ATTRIBUTES.status, "rejected");
    const code = (error as { code?: unknown })?.code;
    if (typeof code === "string") span.setAttribute(SPAN_ATTRIBUTES.errorCode, code);
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message ?? String(error) });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * A model call as a span, made when its usage is accounted: it started `latencyMs` ago and ends now, as
 * a child of whatever span is active (the tool call that asked for it, when a context manager is registered).
 */
export function traceModelCall(record: UsageRecord): void {
  const now = Date.now();
  const attributes: Attributes = {
    "gen_ai.request.model": record.model,
    "gen_ai.usage.input_tokens": record.inputTokens,
    "gen_ai.usage.output_tokens": record.outputTokens,
    [SPAN_ATTRIBUTES.cached]: record.cached,
    [SPAN_ATTRIBUTES.costUsd]: record.costUsd,
  };
  if (record.role) attributes[SPAN_ATTRIBUTES.role] = record.role;
  // The ledger's scope: a session (`<id>`, `<id>#bootstrap`), or a task or sample outside the server.
  if (record.scope) attributes[SPAN_ATTRIBUTES.scope] = record.scope;
  const span = tracer().startSpan(`model ${record.model}`, {
    kind: SpanKind.CLIENT,
    startTime: now - Math.max(0, record.latencyMs),
    attributes,
  });
  if (!record.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: "the model call failed" });
  span.end(now);
}

/** The first error code of an outcome (the rule of its first error). */
export function firstCode(outcome: CallOutcome): string | undefined {
  const rule = outcome.errors[0]?.rule;
  return typeof rule === "string" ? rule : undefined;
}

/** Runs `fn` with `ctx` (a span's context) active, so spans started inside are its children. */
export function withSpanContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}
