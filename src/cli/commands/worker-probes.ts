import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Gauge } from "prom-client";
import type { Models } from "../../models/hub.js";
import type { ItemResult, QueueWorker, RedisJobQueue } from "../../queue/index.js";
import { METRIC_PREFIX, ServerMetrics } from "../../server/metrics.js";

/**
 * A worker's own small HTTP server (`terrarium worker --metrics-port`), for Prometheus and Kubernetes:
 *
 * - `GET /metrics`: Prometheus text. Besides Node's process metrics and the model-call metrics of
 *   `terrarium serve` (the registry of `ServerMetrics`, so both name them alike):
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `terrarium_worker_items_total` | counter | kind, outcome (succeeded, failed) |
 * | `terrarium_worker_items_in_flight` | gauge | — |
 * | `terrarium_worker_redis_up` | gauge | — |
 * | `terrarium_worker_redis_reconnects_total` | counter | — |
 *
 * - `GET /livez`: 200 while the process runs (it never touches Redis).
 * - `GET /readyz`: 200 when Redis answers a PING within a second and the worker is not stopping, else 503
 *   with the reason.
 */
export interface WorkerProbes {
  /** Where it listens: `http://host:port`. */
  readonly url: string;
  readonly port: number;
  /** Counts an item this worker finished (from `WorkOptions.onItem`). */
  observeItem(result: ItemResult<unknown>, kind: string): void;
  /** Wraps a worker's model factory so that its model calls are counted. */
  watchModels(models: Models): Models;
  close(): Promise<void>;
}

/** The kind label of an item whose kind this worker has no handler for (kinds come from Redis). */
const UNKNOWN_KIND = "(unknown)";

export async function startWorkerProbes(options: {
  host: string;
  port: number;
  queue: RedisJobQueue;
  /** The worker, once started (probes may come before it is). */
  worker: () => QueueWorker | undefined;
  kinds: readonly string[];
}): Promise<WorkerProbes> {
  const metrics = new ServerMetrics({ processMetrics: true });
  const registers = [metrics.registry];
  const known = new Set(options.kinds);
  const items = new Counter({
    name: `${METRIC_PREFIX}worker_items_total`,
    help: "Work items this worker finished, by kind and outcome (failed: every attempt failed, or the run's budget was spent).",
    labelNames: ["kind", "outcome"],
    registers,
  });
  for (const kind of known) for (const outcome of ["succeeded", "failed"]) items.inc({ kind, outcome }, 0);
  new Gauge({
    name: `${METRIC_PREFIX}worker_items_in_flight`,
    help: "Work items in this worker's hands now.",
    registers,
    collect() {
      this.set(options.worker()?.active ?? 0);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}worker_redis_up`,
    help: "1 when every Redis connection of the worker is up, 0 during an outage.",
    registers,
    collect() {
      this.set(options.queue.reachable ? 1 : 0);
    },
  });
  let counted = 0;
  new Counter({
    name: `${METRIC_PREFIX}worker_redis_reconnects_total`,
    help: "Redis connections of the worker that dropped and came back.",
    registers,
    collect() {
      const now = options.queue.reconnects;
      if (now > counted) this.inc(now - counted);
      counted = now;
    },
  });

  const ready = async (): Promise<string | undefined> => {
    if (options.worker()?.stopping) return "stopping";
    if (!(await options.queue.ping(1000))) return "redis does not answer";
    return undefined;
  };
  const send = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
    res.end(body);
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/metrics" && path !== "/livez" && path !== "/readyz")
      return send(res, 404, "text/plain; charset=utf-8", "not found: try /metrics, /livez or /readyz\n");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      return send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
    }
    if (path === "/livez") return send(res, 200, "text/plain; charset=utf-8", "ok\n");
    if (path === "/readyz") {
      const reason = await ready();
      return send(res, reason ? 503 : 200, "text/plain; charset=utf-8", `${reason ?? "ready"}\n`);
    }
    send(res, 200, metrics.contentType, await metrics.render());
  };
  const server = createServer((req, res) => {
    // The request body is never read: probes have none.
    req.resume();
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.destroy();
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    observeItem(result, kind) {
      items.inc({ kind: known.has(kind) ? kind : UNKNOWN_KIND, outcome: result.ok ? "succeeded" : "failed" });
    },
    watchModels(models) {
      metrics.watchLedger(models.ledger);
      return models;
    },
    close: () =>
      new Promise<void>((resolve) => {
        metrics.dispose();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
