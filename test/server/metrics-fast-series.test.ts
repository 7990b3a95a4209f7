import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LATENCY_BUCKETS, ServerMetrics } from "../../src/server/metrics.js";
import type { CallOutcome } from "../../src/sim/engine.js";

/**
 * ServerMetrics counts label sets it has seen before straight into prom-client's entries (skipping its
 * per-call hashing). Its text must be what plain prom-client calls would make, value for value (float
 * sums included), however the calls interleave, and after a reset of the registry.
 */
function reference() {
  const registry = new Registry();
  const registers = [registry];
  const metrics = {
    registry,
    toolCalls: new Counter({
      name: "tool_calls",
      help: "h",
      labelNames: ["tool", "simulator", "status"],
      registers,
    }),
    toolDuration: new Histogram({
      name: "tool_duration",
      help: "h",
      labelNames: ["tool", "simulator", "status"],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    http: new Counter({ name: "http", help: "h", labelNames: ["method", "route", "status"], registers }),
    httpDuration: new Histogram({
      name: "http_duration",
      help: "h",
      labelNames: ["method", "route"],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    inFlight: new Gauge({ name: "in_flight", help: "h", registers }),
  };
  return metrics;
}

/** The served text of the metrics both sides keep, under the reference's names. */
async function comparable(metrics: ServerMetrics): Promise<string> {
  const names: Record<string, string> = {
    terrarium_tool_calls_total: "tool_calls",
    terrarium_tool_call_duration_seconds: "tool_duration",
    terrarium_http_requests_total: "http",
    terrarium_http_request_duration_seconds: "http_duration",
    terrarium_http_requests_in_flight: "in_flight",
  };
  const parts: string[] = [];
  for (const [name, short] of Object.entries(names)) {
    const text = await metrics.registry.getSingleMetricAsString(name);
    parts.push(
      text
        .split("\n")
        .filter((line) => !line.startsWith("#"))
        .map((line) => line.replace(name, short))
        .join("\n"),
    );
  }
  return parts.join("\n");
}

async function referenceText(metrics: ReturnType<typeof reference>): Promise<string> {
  const parts: string[] = [];
  for (const name of ["tool_calls", "tool_duration", "http", "http_duration", "in_flight"]) {
    const text = await metrics.registry.getSingleMetricAsString(name);
    parts.push(
      text
        .split("\n")
        .filter((line) => !line.startsWith("#"))
        .join("\n"),
    );
  }
  return parts.join("\n");
}

const outcome = (status: CallOutcome["status"], simulator = "code"): CallOutcome => ({
  status,
  observation: {},
  changes: [],
  errors: status === "error" ? [{ rule: "SIMULATOR_FAILED", message: "x" }] : [],
  simulator,
  step: 0,
  semantic: "skipped",
});

describe("ServerMetrics counted through cached label sets", () => {
  it("serves the values plain prom-client calls make, through resets too", async () => {
    const metrics = new ServerMetrics();
    const plain = reference();
    // Durations whose float sums depend on the order they are added in.
    const durations = [0.0004, 0.0031, 0.1, 0.2, 7.5, 200, 0.30000000000000004, 1e-9, 0.025];
    const feed = (round: number) => {
      for (let i = 0; i < 60; i++) {
        const seconds = (durations[i % durations.length] as number) * (1 + round / 7);
        const status = (["ok", "ok", "invalid", "error"] as const)[i % 4] as CallOutcome["status"];
        const tool = i % 5 === 0 ? "balance" : "transfer";
        metrics.observeToolCall({ sessionId: "s", tool, seconds, outcome: outcome(status) });
        plain.toolCalls.inc({ tool, simulator: "code", status });
        plain.toolDuration.observe({ tool, simulator: "code", status }, seconds);
        if (i % 6 === 0) {
          metrics.observeToolCall({ sessionId: "s", tool, seconds, error: new Error("gone") });
          plain.toolCalls.inc({ tool, simulator: "none", status: "rejected" });
          plain.toolDuration.observe({ tool, simulator: "none", status: "rejected" }, seconds);
        }
        const httpStatus = i % 7 === 0 ? 404 : 200;
        metrics.requestsInFlight(1);
        plain.inFlight.inc(1);
        if (httpStatus === 200 && i % 2 === 0) metrics.observeHttpOk("POST", "/sessions/{id}/calls", seconds);
        else
          metrics.observeHttp({ method: "POST", route: "/sessions/{id}/calls", status: httpStatus, seconds });
        plain.http.inc({ method: "POST", route: "/sessions/{id}/calls", status: String(httpStatus) });
        plain.httpDuration.observe({ method: "POST", route: "/sessions/{id}/calls" }, seconds);
        if (i % 3 !== 0) {
          metrics.requestsInFlight(-1);
          plain.inFlight.dec(1);
        }
      }
    };
    feed(0);
    expect(await comparable(metrics)).toBe(await referenceText(plain));
    feed(1);
    expect(await comparable(metrics)).toBe(await referenceText(plain));
    // A reset empties prom-client's maps: later calls must land in the new entries, not the old ones.
    metrics.registry.resetMetrics();
    plain.toolCalls.reset();
    plain.toolDuration.reset();
    plain.http.reset();
    plain.httpDuration.reset();
    feed(2);
    const text = await comparable(metrics);
    // The in-flight gauge is read from the server's own count (a reset does not change what is in flight).
    const withoutGauge = (value: string) =>
      value
        .split("\n")
        .filter((line) => !line.startsWith("in_flight"))
        .join("\n");
    expect(withoutGauge(text)).toBe(withoutGauge(await referenceText(plain)));
    expect(text).toContain("in_flight 60");
    expect(text).toMatch(/tool_calls\{tool="transfer",simulator="code",status="ok"\} \d+/);
  });
});
