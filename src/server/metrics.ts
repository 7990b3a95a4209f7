import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { UsageLedger, UsageRecord } from "../models/usage.js";
import type { Store, StoreEvent } from "../sessions/types.js";
import type { CallOutcome, Engine } from "../sim/engine.js";
import { firstCode, traceModelCall, traceToolCall, tracingEnabled } from "./tracing.js";

/**
 * Prometheus metrics of one `terrarium serve` (or one `createApp`): every `ServerMetrics` has its own
 * registry, never prom-client's global one, so several servers in one process keep their numbers apart.
 * Label values come from bounded sets only (tools of the catalog, route templates, simulators, statuses,
 * models, roles, error codes); session ids are never labels.
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `terrarium_tool_calls_total` | counter | tool, simulator, status |
 * | `terrarium_tool_call_duration_seconds` | histogram | tool, simulator, status |
 * | `terrarium_http_requests_total` | counter | method, route, status |
 * | `terrarium_http_request_duration_seconds` | histogram | method, route |
 * | `terrarium_http_requests_in_flight` | gauge | — |
 * | `terrarium_model_calls_total` | counter | model, role, outcome (ok, cached, failed) |
 * | `terrarium_model_tokens_total` | counter | model, role, kind (input, output, cached_input) |
 * | `terrarium_model_cost_usd_total` | counter | model, role |
 * | `terrarium_model_call_duration_seconds` | histogram | model, role |
 * | `terrarium_errors_total` | counter | source (http, call, model), code |
 * | `terrarium_store_errors_total` | counter | operation (the Store method), kind (connect, lost, timeout, in_doubt, lock_lost, closed, query) |
 * | `terrarium_session_lock_wait_seconds` | histogram | — |
 *
 * With `processMetrics`, Node's and the process's own metrics too, except the three `nodejs_active_*_total`
 * gauges: a gauge named `_total` is a lint error to Prometheus (`promtool check metrics`), and each is the
 * sum of the `nodejs_active_*` gauge by type (`sum(nodejs_active_handles)`).
 */
export const METRIC_PREFIX = "terrarium_";

/** Seconds: code simulators answer in milliseconds, models in seconds. */
export const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
];

/** The simulator label of a call that never reached one (an unknown session, a closed engine). */
export const NO_SIMULATOR = "none";
/** The status label of such a call. */
export const REJECTED = "rejected";
/** The tool label of a call naming no tool of the catalog (names sent by clients are not labels). */
export const UNKNOWN_TOOL = "(unknown)";
/** The route label of a request no route answers (a 404, a 405): paths themselves are never labels. */
export const UNMATCHED_ROUTE = "(unmatched)";

export interface ServerMetricsOptions {
  /** Also export Node's process metrics (CPU, memory, event loop lag, GC) into this registry. */
  processMetrics?: boolean;
  /** Labels added to every series (for example `{replica: "a"}`). */
  labels?: Record<string, string>;
}

/** One tool call, as the engine answered it (or refused it). */
export interface ToolCallEvent {
  sessionId: string;
  /** The tool's name, or `UNKNOWN_TOOL` when the catalog has no such tool. */
  tool: string;
  seconds: number;
  outcome?: CallOutcome;
  /** Set when the call threw instead of producing an outcome. */
  error?: unknown;
}

/** One HTTP request, answered. */
export interface HttpEvent {
  method: string;
  /** The route template (`/sessions/{id}/calls`), or `UNMATCHED_ROUTE`. */
  route: string;
  status: number;
  seconds: number;
  /** The error code of an answer of 400 or more (terrarium's code, else one named after the status). */
  code?: string;
}

/** Error codes for answers that carry none of terrarium's (Gecko's shapes, tools, MCP). */
const STATUS_CODES: Record<number, string> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  413: "BODY_TOO_LARGE",
  422: "INVALID_CALL",
  429: "TOO_MANY_REQUESTS",
  500: "INTERNAL",
  503: "SERVICE_UNAVAILABLE",
};

/** prom-client's default gauges whose names end in `_total` (a counter's suffix): left out, see above. */
const MISNAMED_DEFAULT_GAUGES = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
];

export function statusCodeName(status: number): string {
  return STATUS_CODES[status] ?? `HTTP_${status}`;
}

/** The counters and histograms of one server, in a registry of their own. */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly toolCalls: Counter<"tool" | "simulator" | "status">;
  private readonly toolDuration: Histogram<"tool" | "simulator" | "status">;
  private readonly httpRequests: Counter<"method" | "route" | "status">;
  private readonly httpDuration: Histogram<"method" | "route">;
  private readonly modelCalls: Counter<"model" | "role" | "outcome">;
  private readonly modelTokens: Counter<"model" | "role" | "kind">;
  private readonly modelCost: Counter<"model" | "role">;
  private readonly modelDuration: Histogram<"model" | "role">;
  private readonly errors: Counter<"source" | "code">;
  private readonly storeErrors: Counter<"operation" | "kind">;
  private readonly lockWaits: Histogram;
  private readonly disposers: Array<() => void> = [];
  private readonly inFlightNow = { count: 0 };
  /** Label sets seen before, by their values joined: see `FastSeries`. */
  private readonly toolSeries = new Map<string, ToolSeries>();
  private readonly httpSeries = new Map<string, HttpSeries>();

  constructor(options: ServerMetricsOptions = {}) {
    const registers = [this.registry];
    if (options.labels) this.registry.setDefaultLabels(options.labels);
    this.toolCalls = new Counter({
      name: `${METRIC_PREFIX}tool_calls_total`,
      help: "Tool calls answered, by tool, simulator and status (ok, invalid, tool_error, error; rejected: the call never ran, e.g. an unknown session).",
      labelNames: ["tool", "simulator", "status"],
      registers,
    });
    this.toolDuration = new Histogram({
      name: `${METRIC_PREFIX}tool_call_duration_seconds`,
      help: "Time from a tool call reaching the engine to its outcome (waiting behind earlier calls of the same session included).",
      labelNames: ["tool", "simulator", "status"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.httpRequests = new Counter({
      name: `${METRIC_PREFIX}http_requests_total`,
      help: "HTTP requests answered, by method, route template and status.",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.httpDuration = new Histogram({
      name: `${METRIC_PREFIX}http_request_duration_seconds`,
      help: "Time to answer an HTTP request, by method and route template.",
      labelNames: ["method", "route"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const inFlight = this.inFlightNow;
    new Gauge({
      name: `${METRIC_PREFIX}http_requests_in_flight`,
      help: "HTTP requests being answered now.",
      registers,
      // Read when scraped: a request adds to a plain number, not to prom-client's map.
      collect() {
        this.set(inFlight.count);
      },
    });
    this.modelCalls = new Counter({
      name: `${METRIC_PREFIX}model_calls_total`,
      help: "Model calls accounted, by model, role and outcome (ok, cached, failed).",
      labelNames: ["model", "role", "outcome"],
      registers,
    });
    this.modelTokens = new Counter({
      name: `${METRIC_PREFIX}model_tokens_total`,
      help: "Model tokens, by model, role and kind (input, output, cached_input: the part of input served from the provider's cache).",
      labelNames: ["model", "role", "kind"],
      registers,
    });
    this.modelCost = new Counter({
      name: `${METRIC_PREFIX}model_cost_usd_total`,
      help: "Model cost in US dollars, by model and role (models without a price entry add 0).",
      labelNames: ["model", "role"],
      registers,
    });
    this.modelDuration = new Histogram({
      name: `${METRIC_PREFIX}model_call_duration_seconds`,
      help: "Model call latency (retries included), by model and role.",
      labelNames: ["model", "role"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.errors = new Counter({
      name: `${METRIC_PREFIX}errors_total`,
      help: "Errors by where they happened (http: answers of 400 or more; call: tool calls the simulator failed or that never ran; model: failed model calls) and code.",
      labelNames: ["source", "code"],
      registers,
    });
    this.storeErrors = new Counter({
      name: `${METRIC_PREFIX}store_errors_total`,
      help: "Session store failures, by Store operation and kind (connect: no connection; lost: a connection died; timeout; in_doubt: a commit whose outcome is unknown; lock_lost: a session lock's connection died during a call; closed; query: a statement the database refused).",
      labelNames: ["operation", "kind"],
      registers,
    });
    this.lockWaits = new Histogram({
      name: `${METRIC_PREFIX}session_lock_wait_seconds`,
      help: "Time a call waited for its session's lock in the shared store (another replica's call on the same session, or a free lock connection).",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    if (options.processMetrics) {
      collectDefaultMetrics({ register: this.registry });
      for (const name of MISNAMED_DEFAULT_GAUGES) this.registry.removeSingleMetric(name);
    }
  }

  /** The content type of `render()`'s text (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric in Prometheus text format. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  observeToolCall(event: ToolCallEvent): void {
    const outcome = event.outcome;
    const simulator = outcome?.simulator ?? NO_SIMULATOR;
    const status = outcome?.status ?? REJECTED;
    const key = `${event.tool}\u0000${simulator}\u0000${status}`;
    let series = this.toolSeries.get(key);
    if (!series) {
      const labels = { tool: event.tool, simulator, status };
      series = {
        calls: new FastCounter(this.toolCalls, labels),
        duration: new FastHistogram(this.toolDuration, labels),
      };
      this.toolSeries.set(key, series);
    }
    series.calls.inc();
    series.duration.observe(event.seconds);
    if (!outcome) {
      const code = (event.error as { code?: unknown })?.code;
      this.errors.inc({ source: "call", code: typeof code === "string" ? code : "INTERNAL" });
    } else if (outcome.status === "error") {
      this.errors.inc({ source: "call", code: firstCode(outcome) ?? "SIMULATOR_FAILED" });
    }
  }

  observeHttp(event: HttpEvent): void {
    this.httpSeriesOf(event.method, event.route, event.status).observe(event.seconds);
    if (event.status >= 400)
      this.errors.inc({ source: "http", code: event.code ?? statusCodeName(event.status) });
  }

  /** `observeHttp` of a 200 (the fast path's answers), without an event object. */
  observeHttpOk(method: string, route: string, seconds: number): void {
    this.httpSeriesOf(method, route, 200).observe(seconds);
  }

  private httpSeriesOf(method: string, route: string, status: number): HttpSeries {
    const key = `${method}\u0000${route}\u0000${status}`;
    let series = this.httpSeries.get(key);
    if (!series) {
      const requests = new FastCounter(this.httpRequests, { method, route, status: String(status) });
      const duration = new FastHistogram(this.httpDuration, { method, route });
      series = new HttpSeries(requests, duration);
      this.httpSeries.set(key, series);
    }
    return series;
  }

  /** A request started (+1) or was answered (-1). */
  requestsInFlight(delta: 1 | -1): void {
    this.inFlightNow.count += delta;
  }

  observeModelCall(record: UsageRecord): void {
    const labels = { model: record.model, role: record.role ?? "none" };
    const outcome = !record.ok ? "failed" : record.cached ? "cached" : "ok";
    this.modelCalls.inc({ ...labels, outcome });
    this.modelTokens.inc({ ...labels, kind: "input" }, record.inputTokens);
    this.modelTokens.inc({ ...labels, kind: "output" }, record.outputTokens);
    if (record.cachedInputTokens > 0)
      this.modelTokens.inc({ ...labels, kind: "cached_input" }, record.cachedInputTokens);
    // Incremented by 0 too, so the series exists from the first call of a model and rates start at 0.
    this.modelCost.inc(labels, Math.max(0, record.costUsd));
    if (!record.cached) this.modelDuration.observe(labels, Math.max(0, record.latencyMs) / 1000);
    if (!record.ok) this.errors.inc({ source: "model", code: "MODEL_CALL_FAILED" });
  }

  observeStore(event: StoreEvent): void {
    if (event.type === "failure") this.storeErrors.inc({ operation: event.operation, kind: event.kind });
    else this.lockWaits.observe(Math.max(0, event.seconds));
  }

  /** Counts the store's failures and lock waits (stores that report them: Postgres) until `dispose`. */
  watchStore(store: Store): void {
    const stop = store.watch?.((event) => this.observeStore(event));
    if (stop) this.disposers.push(stop);
  }

  /** Counts this engine's tool calls here (and traces each one) until `dispose`. */
  watchEngine(engine: Engine): void {
    this.disposers.push(watchEngineCalls(engine, (event) => this.observeToolCall(event)));
  }

  /** Counts model calls as the ledger accounts them (its children's too) until `dispose`. */
  watchLedger(ledger: UsageLedger): void {
    this.disposers.push(watchLedger(ledger, (record) => this.observeModelCall(record)));
  }

  /** Stops watching engines and ledgers (the numbers stay readable). */
  dispose(): void {
    for (const dispose of this.disposers.splice(0)) dispose();
  }
}

interface ToolSeries {
  calls: FastCounter;
  duration: FastHistogram;
}

class HttpSeries {
  constructor(
    private readonly requests: FastCounter,
    private readonly duration: FastHistogram,
  ) {}

  observe(seconds: number): void {
    this.requests.inc();
    this.duration.observe(seconds);
  }
}

/** What prom-client keeps per label set (its `hashMap`, stable since v11): the parts added to here. */
interface EntryMap<E> {
  hashMap: Record<string, E & { labels: Record<string, string | number> }>;
}

/**
 * One label set of a prom-client metric, counted fast. prom-client hashes and validates the labels at
 * every call, which cost more than the rest of a call's accounting; here the first call goes through
 * prom-client, which makes the set's entry, and later ones add to that entry exactly as prom-client
 * would. Whenever the entry is no longer the one prom-client holds (a reset, a removal), the call goes
 * through prom-client again and the entry is found anew, so the numbers are prom-client's either way.
 */
class FastSeries<E> {
  private map: EntryMap<E>["hashMap"] | undefined;
  private hash = "";
  private entry: E | undefined;

  constructor(
    private readonly metric: EntryMap<E>,
    readonly labels: Record<string, string>,
  ) {}

  /** The entry, while prom-client still holds it. */
  protected current(): E | undefined {
    const map = this.metric.hashMap;
    return map === this.map && map[this.hash] === this.entry ? this.entry : undefined;
  }

  /** Finds the entry prom-client keeps for these labels (after a call through prom-client made it). */
  protected find(): void {
    const map = this.metric.hashMap;
    this.map = undefined;
    this.entry = undefined;
    for (const hash in map) {
      const entry = map[hash] as E & { labels: Record<string, string | number> };
      if (sameLabels(entry.labels, this.labels)) {
        this.map = map;
        this.hash = hash;
        this.entry = entry;
        return;
      }
    }
  }
}

function sameLabels(a: Record<string, string | number>, b: Record<string, string>): boolean {
  const names = Object.keys(b);
  if (Object.keys(a).length !== names.length) return false;
  for (const name of names) if (String(a[name]) !== b[name]) return false;
  return true;
}

class FastCounter extends FastSeries<{ value: number }> {
  constructor(
    private readonly counter: Counter<string>,
    labels: Record<string, string>,
  ) {
    super(counter as unknown as EntryMap<{ value: number }>, labels);
  }

  inc(): void {
    const entry = this.current();
    if (entry) {
      entry.value += 1;
      return;
    }
    this.counter.inc(this.labels);
    this.find();
  }
}

class FastHistogram extends FastSeries<{ sum: number; count: number; bucketValues: Record<string, number> }> {
  constructor(
    private readonly histogram: Histogram<string>,
    labels: Record<string, string>,
  ) {
    super(
      histogram as unknown as EntryMap<{ sum: number; count: number; bucketValues: Record<string, number> }>,
      labels,
    );
    this.bounds = (histogram as unknown as { upperBounds: readonly number[] }).upperBounds;
  }

  /** prom-client's own upper bounds, in its order. */
  private readonly bounds: readonly number[];

  observe(value: number): void {
    const entry = Number.isFinite(value) ? this.current() : undefined;
    if (entry) {
      // As prom-client's observe: the first bound at or above the value (-1 past the last: +Inf only).
      let bound = -1;
      for (const upper of this.bounds)
        if (value <= upper) {
          bound = upper;
          break;
        }
      entry.sum += value;
      entry.count += 1;
      if (Object.hasOwn(entry.bucketValues, bound)) (entry.bucketValues[bound] as number) += 1;
      return;
    }
    this.histogram.observe(this.labels, value);
    this.find();
  }
}

type CallWatcher = (event: ToolCallEvent) => void;
type RecordWatcher = (record: UsageRecord) => void;

const engineWatchers = new WeakMap<Engine, Set<CallWatcher>>();
const ledgerWatchers = new WeakMap<UsageLedger, Set<RecordWatcher>>();

/**
 * Calls `watcher` after every tool call of the engine (`Engine.call`, which every route and MCP use),
 * with its outcome or what it threw, and runs each call in an OpenTelemetry span. The engine is wrapped
 * once however many watch it; the returned function stops this watcher.
 */
export function watchEngineCalls(engine: Engine, watcher: CallWatcher): () => void {
  let watchers = engineWatchers.get(engine);
  if (!watchers) {
    const set = new Set<CallWatcher>();
    watchers = set;
    engineWatchers.set(engine, set);
    const call = engine.call.bind(engine);
    // The caller's options (the owner the engine checks at its own read of the session) pass through.
    engine.call = async (sessionId, request, options) => {
      const started = performance.now();
      const tool = engine.catalog.get(request.name) ? request.name : UNKNOWN_TOOL;
      let outcome: CallOutcome;
      try {
        outcome = await (tracingEnabled()
          ? traceToolCall(sessionId, request.name, () => call(sessionId, request, options))
          : call(sessionId, request, options));
      } catch (error) {
        const seconds = (performance.now() - started) / 1000;
        for (const each of set) each({ sessionId, tool, seconds, error });
        throw error;
      }
      const seconds = (performance.now() - started) / 1000;
      for (const each of set) each({ sessionId, tool, seconds, outcome });
      return outcome;
    };
  }
  watchers.add(watcher);
  return () => watchers.delete(watcher);
}

/**
 * Calls `watcher` with every record the ledger accounts (records of its child ledgers reach it too), and
 * makes each a model-call span. The ledger is wrapped once however many watch it.
 */
export function watchLedger(ledger: UsageLedger, watcher: RecordWatcher): () => void {
  let watchers = ledgerWatchers.get(ledger);
  if (!watchers) {
    const set = new Set<RecordWatcher>();
    watchers = set;
    ledgerWatchers.set(ledger, set);
    const add = ledger.add.bind(ledger);
    ledger.add = (record) => {
      add(record);
      traceModelCall(record);
      for (const each of set) each(record);
    };
  }
  watchers.add(watcher);
  return () => watchers.delete(watcher);
}

/**
 * The error code of an answer of 400 or more: terrarium's `{error: {code}}` when the body has one, else
 * a name for the status (Gecko's shapes, tools, MCP carry no code of terrarium's).
 */
export async function errorCodeOf(response: Response): Promise<string> {
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("json") && response.body) {
    try {
      const body = (await response.clone().json()) as { error?: { code?: unknown } };
      const code = body?.error?.code;
      if (typeof code === "string" && /^[A-Z][A-Z0-9_]{0,63}$/.test(code)) return code;
    } catch {
      // not JSON after all: named after the status
    }
  }
  return statusCodeName(response.status);
}
