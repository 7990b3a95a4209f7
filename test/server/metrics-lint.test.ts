import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { createApp } from "../../src/server/app.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { startServer } from "../../src/server/start.js";
import { MemoryStore, type Snapshot } from "../../src/sessions/index.js";
import type { StoreEvent } from "../../src/sessions/types.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";
import { requires } from "../helpers/requirements.js";

/**
 * GET /metrics passes `promtool check metrics` (Prometheus' own linter) without a warning: Node's gauges
 * included (prom-client's `nodejs_active_*_total` gauges are left out: a gauge named like a counter), and
 * the store's failure counter and lock-wait histogram once they have samples.
 */
const PROMTOOL = [
  "/usr/bin/promtool",
  ...(process.env.PATH ?? "").split(delimiter).map((dir) => join(dir, "promtool")),
].find((path) => path !== "promtool" && existsSync(path));
if (!PROMTOOL) {
  const missing = "promtool not found (apt-get install -y prometheus)";
  if (requires("TERRARIUM_REQUIRE_SERVICES"))
    throw new Error(`metrics lint: TERRARIUM_REQUIRE_SERVICES is set but ${missing}`);
  console.warn(`skipped: metrics lint with promtool: ${missing}`);
}

const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;

function promtool(text: string): { status: number | null; output: string } {
  const result = spawnSync(PROMTOOL as string, ["check", "metrics"], { input: text, encoding: "utf8" });
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

/** A memory store that reports what a shared store does: failures by operation and kind, lock waits. */
class WatchedStore extends MemoryStore {
  private readonly watchers = new Set<(event: StoreEvent) => void>();
  watch(watcher: (event: StoreEvent) => void) {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }
  async withSessionLock<T>(_id: string, run: () => Promise<T>): Promise<T> {
    for (const watcher of this.watchers) watcher({ type: "lock-wait", seconds: 0.003 });
    return run();
  }
  override async latestSnapshot(id: string): Promise<Snapshot> {
    for (const watcher of this.watchers)
      watcher({ type: "failure", operation: "latestSnapshot", kind: "lost" });
    return super.latestSnapshot(id);
  }
}

let served: Awaited<ReturnType<typeof startServer>> | undefined;
beforeAll(async () => {
  served = await startServer({ sources: ["bank"], port: 0, seed: "lint" });
});
afterAll(async () => {
  await served?.close();
});

describe("GET /metrics", () => {
  it("leaves out the Node gauges named like counters; store metrics appear once they have samples", async () => {
    const metrics = new ServerMetrics({ processMetrics: true });
    const store = new WatchedStore();
    const engine = new Engine({
      catalog: new Catalog(bank.tools),
      simulators: [new CodeSimulator(bank)],
      store,
    });
    const app = createApp(engine, { metrics });
    const { id } = (await (await app.request("/sessions", { method: "POST" })).json()) as { id: string };
    const called = await app.request(`/sessions/${id}/calls`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "get_account", arguments: { account_id: "ACC-1001" } }),
    });
    expect(called.status).toBe(200);
    const text = await metrics.render();
    expect(text).not.toMatch(/^nodejs_active_(handles|requests|resources)_total/m);
    expect(text).toMatch(/^nodejs_active_handles\{type="/m);
    expect(text).toMatch(/^terrarium_store_errors_total\{operation="latestSnapshot",kind="lost"\} 1$/m);
    expect(text).toMatch(/^terrarium_session_lock_wait_seconds_count 1$/m);
    expect(text).toMatch(/^terrarium_session_lock_wait_seconds_bucket\{le="0.005"\} 1$/m);
    if (PROMTOOL) expect(promtool(text)).toEqual({ status: 0, output: "" });
  });

  it.runIf(PROMTOOL)(
    "as served by terrarium serve, after traffic, passes promtool check metrics",
    async () => {
      const server = served as NonNullable<typeof served>;
      const { id } = (await (await fetch(`${server.url}/sessions`, { method: "POST" })).json()) as {
        id: string;
      };
      await fetch(`${server.url}/sessions/${id}/calls`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          name: "transfer",
          arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 },
        }),
      });
      expect((await fetch(`${server.url}/nowhere`)).status).toBe(404);
      const text = await (await fetch(`${server.url}/metrics`)).text();
      expect(text).toContain("nodejs_heap_size_used_bytes");
      expect(promtool(text)).toEqual({ status: 0, output: "" });
    },
  );
});
