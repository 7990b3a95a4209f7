import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken } from "../../src/core/token-hash.js";
import {
  DEFAULT_MAX_MCP_SESSIONS_PER_TOKEN,
  McpHttpEndpoint,
  type McpSessionEnded,
} from "../../src/mcp/server.js";
import { createApp } from "../../src/server/index.js";
import { QuotaGuard } from "../../src/server/quotas.js";
import type { Engine } from "../../src/sim/engine.js";
import { buildEngine } from "../../src/sim/index.js";

/**
 * MCP tenants cannot starve each other: a token's live MCP sessions are capped well under the server's
 * cap, idle sessions go on a timer with the engine sessions they made, and initialize stores nothing.
 */
const HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" };
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
const transfer = { from_account: "ACC-1001", to_account: "ACC-1002", amount: 25 };
const callTransfer = (id = 1) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "transfer", arguments: transfer },
});

let engine: Engine;
beforeAll(async () => {
  engine = (await buildEngine({ sources: ["bank"], seed: "1" })).engine;
});
afterAll(() => engine.close());

/** Every stored session goes between tests, so each test counts from zero. */
async function clearStore(): Promise<void> {
  for (const record of await engine.store.listSessions()) await engine.store.deleteSession(record.id);
}

describe("MCP sessions per token", () => {
  it("one token at its cap gets a 429 JSON-RPC error; another token still initializes", async () => {
    await clearStore();
    // The defaults: the server's cap (1000) is out of one token's reach.
    const app = createApp(engine, { tokens: ["alpha", "beta"] });
    const init = (token: string) =>
      app.request("/mcp", {
        method: "POST",
        headers: { ...HEADERS, authorization: `Bearer ${token}` },
        body: JSON.stringify(INITIALIZE),
      });
    expect(DEFAULT_MAX_MCP_SESSIONS_PER_TOKEN).toBeLessThan(1000);
    for (let i = 0; i < DEFAULT_MAX_MCP_SESSIONS_PER_TOKEN; i++)
      expect((await init("alpha")).status).toBe(200);
    const refused = await init("alpha");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as { error: { code: number; message: string; data: unknown } };
    expect(body.error.code).toBe(-32000);
    expect(body.error.data).toEqual({ code: "QUOTA_EXCEEDED" });
    expect(body.error.message).toContain(
      `--max-mcp-sessions-per-token ${DEFAULT_MAX_MCP_SESSIONS_PER_TOKEN}`,
    );
    expect(body.error.message).toContain("DELETE /mcp");
    const other = await init("beta");
    expect(other.status).toBe(200);
    const session = other.headers.get("mcp-session-id") as string;
    // beta's session works, and a hundred initializes stored nothing.
    const called = await app.request("/mcp", {
      method: "POST",
      headers: { ...HEADERS, authorization: "Bearer beta", "mcp-session-id": session },
      body: JSON.stringify(callTransfer()),
    });
    expect(called.status).toBe(200);
    expect(await engine.store.listSessions()).toHaveLength(1);
  });

  it("the per-token cap is configurable, and ending a session makes room", async () => {
    await clearStore();
    const app = createApp(engine, { tokens: ["alpha"], mcp: { maxSessionsPerToken: 2 } });
    const auth = { authorization: "Bearer alpha" };
    const init = () =>
      app.request("/mcp", {
        method: "POST",
        headers: { ...HEADERS, ...auth },
        body: JSON.stringify(INITIALIZE),
      });
    const first = await init();
    expect((await init()).status).toBe(200);
    expect((await init()).status).toBe(429);
    const ended = await app.request("/mcp", {
      method: "DELETE",
      headers: { ...auth, "mcp-session-id": first.headers.get("mcp-session-id") as string },
    });
    expect(ended.status).toBe(200);
    expect((await init()).status).toBe(200);
  });

  it("refuses caps and idle times that make no sense", () => {
    expect(() => new McpHttpEndpoint(engine, { maxSessionsPerToken: 0 })).toThrow(
      /--max-mcp-sessions-per-token must be a whole number of at least 1/,
    );
    expect(() => new McpHttpEndpoint(engine, { idleMs: -5 })).toThrow(
      /--mcp-idle-timeout must be a positive time/,
    );
    expect(() => new McpHttpEndpoint(engine, { idleMs: Number.NaN })).toThrow(
      /CONFIG_INVALID|--mcp-idle-timeout/,
    );
  });
});

describe("MCP engine sessions", () => {
  const post = (endpoint: McpHttpEndpoint, body: unknown, owner?: string, session?: string) =>
    endpoint.handle(
      new Request("http://terrarium/mcp", {
        method: "POST",
        headers: { ...HEADERS, ...(session ? { "mcp-session-id": session } : {}) },
        body: JSON.stringify(body),
      }),
      owner,
      body,
    );
  const remove = (endpoint: McpHttpEndpoint, session: string, owner?: string) =>
    endpoint.handle(
      new Request("http://terrarium/mcp", { method: "DELETE", headers: { "mcp-session-id": session } }),
      owner,
    );

  it("initialize, tools/list and DELETE leave no stored session; concurrent first calls make exactly one", async () => {
    await clearStore();
    const endpoint = new McpHttpEndpoint(engine);
    try {
      const opened = await post(endpoint, INITIALIZE, "owner-a");
      const session = opened.headers.get("mcp-session-id") as string;
      expect(
        (await post(endpoint, { jsonrpc: "2.0", id: 1, method: "tools/list" }, "owner-a", session)).status,
      ).toBe(200);
      expect(await engine.store.listSessions()).toEqual([]);
      expect((await remove(endpoint, session, "owner-a")).status).toBe(200);
      expect(await engine.store.listSessions()).toEqual([]);

      const second = (await post(endpoint, INITIALIZE, "owner-a")).headers.get("mcp-session-id") as string;
      const answers = await Promise.all(
        [1, 2, 3].map((id) => post(endpoint, callTransfer(id), "owner-a", second)),
      );
      for (const answer of answers) expect(answer.status).toBe(200);
      const stored = await engine.store.listSessions("owner-a");
      expect(stored).toHaveLength(1);
      expect(stored[0]?.metadata).toEqual({ mcpSession: second });
      expect(await engine.store.history(stored[0]?.id as string)).toHaveLength(3);
      expect((await remove(endpoint, second, "owner-a")).status).toBe(200);
      expect(await engine.store.listSessions()).toEqual([]);
    } finally {
      await endpoint.close();
    }
  });

  it("an idle session is reclaimed on a timer, with the engine session it made", async () => {
    await clearStore();
    const endpoint = new McpHttpEndpoint(engine, { idleMs: 100 });
    try {
      const ended = new Promise<McpSessionEnded>((resolve) => endpoint.onSessionEnded(resolve));
      const session = (await post(endpoint, INITIALIZE, "owner-b")).headers.get("mcp-session-id") as string;
      expect((await post(endpoint, callTransfer(), "owner-b", session)).status).toBe(200);
      const [record] = await engine.store.listSessions("owner-b");
      expect(record).toBeDefined();
      // Nobody asks for room: only the timer can end it.
      const event = await ended;
      expect(event).toEqual({
        mcpSession: session,
        owner: "owner-b",
        reason: "idle",
        engineSession: record?.id,
      });
      expect(await engine.store.getSession(record?.id as string)).toBeUndefined();
      expect(endpoint.size).toBe(0);
      const stale = await post(endpoint, callTransfer(), "owner-b", session);
      expect(stale.status).toBe(404);
    } finally {
      await endpoint.close();
    }
  });

  it("the first call answers QUOTA_EXCEEDED when the token holds all the sessions it may store", async () => {
    await clearStore();
    const endpoint = new McpHttpEndpoint(engine, { quotas: new QuotaGuard(engine.store, { sessions: 1 }) });
    try {
      const owner = hashToken("gamma");
      await engine.createSession({ owner });
      const session = (await post(endpoint, INITIALIZE, owner)).headers.get("mcp-session-id") as string;
      const answer = await post(endpoint, callTransfer(), owner, session);
      const body = (await answer.json()) as { error?: { message: string; data?: unknown } };
      expect(body.error?.data).toEqual({ code: "QUOTA_EXCEEDED" });
      expect(body.error?.message).toContain("--max-sessions-per-token 1");
      expect(await engine.store.countSessions(owner)).toBe(1);
      // Room made: the next call gets its session.
      await clearStore();
      const retried = (await (await post(endpoint, callTransfer(2), owner, session)).json()) as {
        result?: unknown;
      };
      expect(retried.result).toBeDefined();
      expect(await engine.store.countSessions(owner)).toBe(1);
    } finally {
      await endpoint.close();
    }
  });
});
