import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../../src/server/index.js";

/**
 * `terrarium serve` over a QuickJS environment whose tool loops forever: the loops run in the sandbox's
 * worker threads, so the server's own event loop keeps answering while ten of them run.
 */
const LOOPS = fileURLToPath(new URL("../fixtures/sandbox/loops.quickjs.yaml", import.meta.url));
/** The descriptor sets no limit, so the sandbox's default applies. */
const LOOP_MS = 1000;

let server: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  server = await startServer({ sources: [LOOPS], port: 0, seed: "1" });
});
afterAll(async () => {
  await server?.close();
});

async function post(path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(server.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
  return { status: response.status, body: await response.json() };
}

async function timedHealth(): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${server.url}/health`);
  await response.text();
  return { status: response.status, ms: performance.now() - started };
}

describe("serve: sandboxed tools that loop", () => {
  it("answers /health quickly while ten sessions run endless loops", async () => {
    const sessions: string[] = [];
    for (let i = 0; i < 11; i++) sessions.push((await post("/sessions")).body.id);
    // One call first, so the pool's workers have loaded before the clock starts.
    expect((await post(`/sessions/${sessions[10]}/calls`, { name: "bump" })).body.status).toBe("ok");

    const started = performance.now();
    const loops = sessions.slice(0, 10).map((id) => post(`/sessions/${id}/calls`, { name: "spin" }));
    const health: Array<{ status: number; ms: number }> = [];
    // Sample /health across the loops' lifetime, from their start to past their time limit.
    while (performance.now() - started < LOOP_MS * 0.9) {
      health.push(await timedHealth());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const cheapStarted = performance.now();
    const cheap = await post(`/sessions/${sessions[10]}/calls`, { name: "bump" });
    const cheapMs = performance.now() - cheapStarted;

    const results = await Promise.all(loops);
    const allMs = performance.now() - started;
    for (const result of results) {
      expect(result.status).toBe(200);
      expect(result.body).toMatchObject({
        status: "tool_error",
        observation: { error: `the tool ran longer than ${LOOP_MS} ms and was stopped` },
      });
    }
    expect(cheap.body).toMatchObject({ status: "ok", observation: { counter: 2 } });

    expect(health.length).toBeGreaterThanOrEqual(3);
    for (const sample of health) {
      expect(sample.status).toBe(200);
      expect(sample.ms).toBeLessThan(200);
    }
    const worst = Math.max(...health.map((sample) => sample.ms));
    console.info(
      `/health under 10 loops: ${health.map((sample) => sample.ms.toFixed(0)).join(" ")} ms (worst ${worst.toFixed(1)}); cheap call ${cheapMs.toFixed(0)} ms; loops done in ${allMs.toFixed(0)} ms`,
    );
  }, 30_000);
});
