import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { createApp, type ReadinessCheck } from "../../src/server/app.js";
import { Drain } from "../../src/server/shutdown.js";
import { MemoryStore } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";

/**
 * GET /livez says the process answers (never asking the store, no token, draining or not); GET /readyz
 * says whether traffic should come here: the store answers a ping, the server is not draining, and the
 * readiness checks it was given answer. Verdicts are reused briefly, so probes cannot load the store.
 */
const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;

/** A memory store that counts pings and every other read, and whose ping can be made to fail. */
class ProbedStore extends MemoryStore {
  pings = 0;
  reads = 0;
  down = false;

  override async ping(): Promise<void> {
    this.pings++;
    if (this.down) throw new Error("connect ECONNREFUSED 10.1.2.3:5432");
  }

  override async listSessions(owner?: string) {
    this.reads++;
    return super.listSessions(owner);
  }

  override async getSession(id: string) {
    this.reads++;
    return super.getSession(id);
  }
}

function appWith(
  options: {
    readiness?: ReadinessCheck[];
    tokens?: string[];
    drain?: Drain;
    readinessTimeoutMs?: number;
  } = {},
) {
  const store = new ProbedStore();
  const engine = new Engine({
    catalog: new Catalog(bank.tools),
    simulators: [new CodeSimulator(bank)],
    store,
  });
  const lines: string[] = [];
  const app = createApp(engine, { ...options, log: (line) => lines.push(line) });
  const get = async (path: string) => {
    const response = await app.request(path);
    return { status: response.status, headers: response.headers, body: (await response.json()) as any };
  };
  return { app, store, lines, get };
}

/** Polls until `condition` holds (no fixed sleeps: the verdict cache lapses on its own time). */
async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("GET /livez", () => {
  it("answers 200 without a token, without touching the store, even while draining", async () => {
    const drain = new Drain();
    const { store, get } = appWith({ tokens: ["secret"], drain });
    expect(await get("/livez")).toMatchObject({ status: 200, body: { status: "alive" } });
    store.down = true;
    expect((await get("/livez")).status).toBe(200);
    drain.start();
    expect((await get("/livez")).status).toBe(200);
    expect(store.pings + store.reads).toBe(0);
  });
});

describe("GET /readyz", () => {
  it("is 200 when the store answers, 503 naming the store (never why) when it does not, and 200 again", async () => {
    const { store, get, lines } = appWith({ tokens: ["secret"] });
    expect(await get("/readyz")).toMatchObject({
      status: 200,
      body: { status: "ready", checks: { store: "ok", draining: "ok" } },
    });
    store.down = true;
    await until(async () => (await get("/readyz")).status === 503, "readyz to see the store down");
    const down = await get("/readyz");
    expect(down.body).toMatchObject({
      status: "not ready",
      checks: { store: "failing", draining: "ok" },
      error: {
        code: "STORE_UNAVAILABLE",
        message: "not ready: store",
        requestId: down.headers.get("x-request-id"),
      },
    });
    expect(down.headers.get("retry-after")).toBe("1");
    expect(JSON.stringify(down.body)).not.toMatch(/ECONNREFUSED|10\.1\.2\.3/);
    // The reason is logged, once when it starts failing and once when it recovers.
    store.down = false;
    await until(async () => (await get("/readyz")).status === 200, "readyz to see the store back");
    expect(lines.filter((line) => line.includes("readiness"))).toEqual([
      expect.stringMatching(/readiness: store fails: connect ECONNREFUSED 10\.1\.2\.3:5432/),
      expect.stringMatching(/readiness: store answers again/),
    ]);
  });

  it("is 503 while draining, naming it", async () => {
    const drain = new Drain();
    const { get } = appWith({ drain });
    expect((await get("/readyz")).status).toBe(200);
    drain.start();
    const draining = await get("/readyz");
    expect(draining.status).toBe(503);
    expect(draining.body).toMatchObject({
      checks: { draining: "draining", store: "ok" },
      error: { code: "SHUTTING_DOWN", message: "not ready: draining" },
    });
  });

  it("asks the readiness checks it is given, by name, and counts one that hangs as failed", async () => {
    let queueUp = true;
    async function queue() {
      if (!queueUp) throw new Error("redis: connect ECONNREFUSED");
    }
    const hanging = { name: "models", check: () => new Promise<void>(() => undefined) };
    const { get } = appWith({ readiness: [queue, hanging], readinessTimeoutMs: 200 });
    const first = await get("/readyz");
    expect(first.status).toBe(503);
    expect(first.body.checks).toEqual({ draining: "ok", store: "ok", queue: "ok", models: "failing" });
    expect(first.body.error.message).toBe("not ready: models");
    const { get: getOther } = appWith({ readiness: [queue] });
    queueUp = false;
    const down = await getOther("/readyz");
    expect(down.status).toBe(503);
    expect(down.body.checks.queue).toBe("failing");
    expect(JSON.stringify(down.body)).not.toContain("redis");
  });

  it("refuses a readiness check named like a built-in one", () => {
    expect(() => appWith({ readiness: [{ name: "store", check: async () => undefined }] })).toThrow(
      /readiness check's name/,
    );
    expect(() => appWith({ readinessTimeoutMs: 0 })).toThrow(/readinessTimeoutMs/);
  });

  it("pings the store at most once however many probes arrive at once", async () => {
    const { store, get } = appWith();
    const answers = await Promise.all(Array.from({ length: 50 }, () => get("/readyz")));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(store.pings).toBe(1);
    expect(store.reads).toBe(0);
  });

  it("is listed in /openapi.json with /livez, both needing no token; /health is unchanged", async () => {
    const { app, get } = appWith({ tokens: ["secret"] });
    const document = (await (
      await app.request("/openapi.json", { headers: { authorization: "Bearer secret" } })
    ).json()) as any;
    expect(document.paths["/livez"]?.get).toBeDefined();
    expect(document.paths["/readyz"]?.get?.responses).toHaveProperty("503");
    const health = await get("/health");
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: "ok", service: "terrarium", ok: true });
    // Other routes still need the token.
    expect((await app.request("/tools")).status).toBe(401);
  });
});
