import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { TerrariumError } from "../../src/core/errors.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { createApp } from "../../src/server/app.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { MemoryStore, PostgresStore, type Snapshot } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";

/**
 * Answers never carry internals: a store failing with a driver's text (`connect ECONNREFUSED
 * 127.0.0.1:55432`) gives a 500 with the code, a generic message and a request id, in every route group's
 * shape; the text goes to the log, one line with that id. A store that is away gives 503
 * STORE_UNAVAILABLE with Retry-After. Every answer carries x-request-id.
 */
const INTERNAL_TEXT = "connect ECONNREFUSED 127.0.0.1:55432";
const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;

/** A memory store whose reads fail, after the session exists, with `failure()`. */
class FailingStore extends MemoryStore {
  failing: (() => Error) | undefined;

  override async latestSnapshot(id: string): Promise<Snapshot> {
    if (this.failing) throw this.failing();
    return super.latestSnapshot(id);
  }
}

async function appOver(store: MemoryStore | PostgresStore) {
  const engine = new Engine({
    catalog: new Catalog(bank.tools),
    simulators: [new CodeSimulator(bank)],
    store,
    initialState: await bank.initialState(),
  });
  const lines: string[] = [];
  const metrics = new ServerMetrics();
  const app = createApp(engine, { log: (line) => lines.push(line), metrics });
  return { app, engine, lines, metrics };
}

async function send(
  app: Awaited<ReturnType<typeof appOver>>["app"],
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await app.request(path, {
    method,
    headers: { "content-type": "application/json", ...options.headers },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}

const TRANSFER = { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 };

describe("answers to clients never carry internals", () => {
  it("a store failing with a driver's text: 500 with code, generic message and request id; logged once with that id", async () => {
    const store = new FailingStore();
    const { app, engine, lines } = await appOver(store);
    const session = await engine.createSession({});
    store.failing = () => Object.assign(new Error(INTERNAL_TEXT), { code: "ECONNREFUSED" });
    const answers = [
      await send(app, "POST", `/sessions/${session.id}/calls`, {
        body: { name: "transfer", arguments: TRANSFER },
      }),
      await send(app, "GET", `/sessions/${session.id}/state`),
      await send(app, "GET", "/get-session-state", { headers: { "x-session-id": session.id } }),
      await send(app, "POST", "/transfer", { body: TRANSFER, headers: { "x-session-id": session.id } }),
    ];
    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(500);
      expect(answer.text).not.toMatch(/ECONNREFUSED|55432|127\.0\.0\.1|at .*\.ts/);
      const id = answer.headers.get("x-request-id") as string;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(answer.text).toContain(id);
      // The log has the failure itself, on one line naming the same request.
      const logged = lines.filter((line) => line.includes(id));
      expect(logged).toHaveLength(1);
      expect(logged[0]).toContain(INTERNAL_TEXT);
      expect(logged[0]).not.toContain("\n");
    }
    // terrarium's shape: exactly the code, a generic message and the id.
    expect(answers[0]?.body).toEqual({
      error: {
        code: "INTERNAL",
        message: expect.stringMatching(/^internal error/),
        requestId: answers[0]?.headers.get("x-request-id"),
      },
    });
    // Gecko's and the tools' shape: {detail} with the id.
    expect(answers[2]?.body).toEqual({
      detail: `internal error (request id ${answers[2]?.headers.get("x-request-id")})`,
    });
    expect(answers[3]?.body.detail).toMatch(/^internal error \(request id /);
  });

  it("a store that is away: 503 STORE_UNAVAILABLE with Retry-After, in each group's shape", async () => {
    const store = new FailingStore();
    const { app, engine, lines } = await appOver(store);
    const session = await engine.createSession({});
    store.failing = () =>
      new TerrariumError(
        "STORE_UNAVAILABLE",
        "the session store is not available right now; try again shortly",
        {
          cause: new Error(INTERNAL_TEXT),
        },
      );
    const rest = await send(app, "POST", `/sessions/${session.id}/calls`, {
      body: { name: "transfer", arguments: TRANSFER },
    });
    expect(rest.status).toBe(503);
    expect(rest.headers.get("retry-after")).toBe("1");
    expect(rest.body).toEqual({
      error: {
        code: "STORE_UNAVAILABLE",
        message: "the session store is not available right now; try again shortly",
        requestId: rest.headers.get("x-request-id"),
      },
    });
    const tool = await send(app, "POST", "/transfer", {
      body: TRANSFER,
      headers: { "x-session-id": session.id },
    });
    expect(tool.status).toBe(503);
    expect(tool.headers.get("retry-after")).toBe("1");
    expect(tool.body).toEqual({ detail: "the session store is not available right now; try again shortly" });
    for (const answer of [rest, tool]) expect(answer.text).not.toMatch(/ECONNREFUSED|55432/);
    // An outage is the store's to log (once), not one line per request.
    expect(lines).toEqual([]);
  });

  it("a Postgres store whose server is gone: 503 without host or port, the process unharmed", async () => {
    const port = await closedPort();
    const logged: string[] = [];
    const store = new PostgresStore(`postgres://nobody:secret@127.0.0.1:${port}/nowhere`, {
      log: (line) => logged.push(line),
      connectTimeoutMs: 5000,
    });
    const { app, metrics } = await appOver(store);
    try {
      const created = await send(app, "POST", "/sessions", { body: {} });
      expect(created.status, created.text).toBe(503);
      expect(created.body.error.code).toBe("STORE_UNAVAILABLE");
      expect(created.text).not.toMatch(new RegExp(`${port}|127\\.0\\.0\\.1|ECONNREFUSED|secret|nobody`));
      const listed = await send(app, "GET", "/get-session-state", { headers: { "x-session-id": "x" } });
      expect(listed.status).toBe(503);
      expect(listed.text).not.toMatch(new RegExp(`${port}|ECONNREFUSED`));
      // Logged once for the outage, with where (no password) and why; counted by operation and kind.
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}.*ECONNREFUSED`));
      expect(logged[0]).not.toContain("secret");
      const text = await metrics.render();
      expect(text).toMatch(/terrarium_store_errors_total\{operation="createSession",kind="connect"\} 1/);
      expect(text).toMatch(/terrarium_errors_total\{source="http",code="STORE_UNAVAILABLE"\} 2/);
      const ready = await send(app, "GET", "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.body.checks.store).toBe("failing");
    } finally {
      await store.close();
    }
  });

  it("every answer carries x-request-id: a sane one the client sent, else a new one", async () => {
    const { app } = await appOver(new MemoryStore());
    const kept = await send(app, "GET", "/livez", { headers: { "x-request-id": "lb-7f3a.42" } });
    expect(kept.headers.get("x-request-id")).toBe("lb-7f3a.42");
    for (const bad of ["a b", "x".repeat(200), "é", "a\tb"]) {
      const replaced = await send(app, "GET", "/livez", { headers: { "x-request-id": bad } });
      expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
    const first = await send(app, "GET", "/nowhere");
    const second = await send(app, "GET", "/nowhere");
    expect(first.status).toBe(404);
    expect(first.headers.get("x-request-id")).not.toBe(second.headers.get("x-request-id"));
    const tooLarge = await app.request("/sessions", {
      method: "POST",
      headers: { "content-length": "9999999999" },
      body: "{}",
    });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

/** A port nobody listens on (taken and released). */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
