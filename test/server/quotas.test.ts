import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Tool } from "../../src/catalog/tool.js";
import { hashToken } from "../../src/core/token-hash.js";
import { createApp } from "../../src/server/index.js";
import { DEFAULT_TOKEN_QUOTAS, QuotaGuard, tokenQuotas } from "../../src/server/quotas.js";
import { MemoryStore, PostgresStore, type Store } from "../../src/sessions/index.js";
import { Engine } from "../../src/sim/engine.js";
import { buildEngine } from "../../src/sim/index.js";
import type { SimulationResult, Simulator } from "../../src/sim/types.js";
import { postgresAvailable, scratchDatabase } from "../helpers/postgres.js";

/** Per-token caps on stored sessions and replays in flight: one tenant cannot take what the others need. */
const json = { "content-type": "application/json" };
const auth = (token: string) => ({ authorization: `Bearer ${token}`, ...json });

let bank: Engine;
beforeAll(async () => {
  bank = (await buildEngine({ sources: ["bank"], seed: "1" })).engine;
});
afterAll(() => bank.close());

describe("sessions per token", () => {
  it("one session past the cap is a 429 naming the cap and DELETE; other tokens and Gecko's route too", async () => {
    const engine = new Engine({ catalog: bank.catalog, store: new MemoryStore() });
    const app = createApp(engine, { tokens: ["alpha", "beta"] });
    const alpha = hashToken("alpha");
    // The default cap, filled to one short of it directly in the store (as another replica would).
    const cap = DEFAULT_TOKEN_QUOTAS.sessions;
    for (let i = 1; i < cap; i++)
      await engine.store.createSession(
        { id: `pre-${i}`, createdAt: "2025-01-01T00:00:00Z", seed: "1", owner: alpha },
        {},
      );
    const create = (token: string) => app.request("/sessions", { method: "POST", headers: auth(token) });
    const last = await create("alpha");
    expect(last.status).toBe(201);
    const { id } = (await last.json()) as { id: string };

    const refused = await create("alpha");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBeNull();
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("QUOTA_EXCEEDED");
    expect(body.error.message).toContain(`--max-sessions-per-token ${cap}`);
    expect(body.error.message).toContain("DELETE /sessions/{id}");
    // Every route that stores a session is counted: fork, import, Gecko's /session-id.
    expect(
      (await app.request(`/sessions/${id}/fork`, { method: "POST", headers: auth("alpha") })).status,
    ).toBe(429);
    const exported = await (await app.request(`/sessions/${id}/export`, { headers: auth("alpha") })).json();
    const imported = await app.request("/sessions/import", {
      method: "POST",
      headers: auth("alpha"),
      body: JSON.stringify(exported),
    });
    expect(imported.status).toBe(429);
    const gecko = await app.request("/session-id", { headers: auth("alpha") });
    expect(gecko.status).toBe(429);
    expect(((await gecko.json()) as { detail: string }).detail).toContain("--max-sessions-per-token");
    expect(await engine.store.countSessions(alpha)).toBe(cap);

    // Another token is not affected.
    expect((await create("beta")).status).toBe(201);
    // Deleting frees room.
    expect((await app.request(`/sessions/${id}`, { method: "DELETE", headers: auth("alpha") })).status).toBe(
      204,
    );
    expect((await create("alpha")).status).toBe(201);
  });

  it("concurrent creations by one token cannot pass the check together", async () => {
    const store = new MemoryStore();
    const guard = new QuotaGuard(store, { sessions: 3 });
    let made = 0;
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () =>
        guard.createSessions("tenant", async () => {
          await store.createSession(
            { id: `s${++made}`, createdAt: "2025-01-01T00:00:00Z", seed: "1", owner: "tenant" },
            {},
          );
        }),
      ),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(3);
    expect(await store.countSessions("tenant")).toBe(3);
    // An open server has no tenants to tell apart: no cap.
    for (let i = 0; i < 5; i++) await guard.createSessions(undefined, async () => undefined);
  });

  it("refuses caps that make no sense", () => {
    expect(tokenQuotas({})).toEqual(DEFAULT_TOKEN_QUOTAS);
    expect(tokenQuotas({ sessions: 5 })).toEqual({ ...DEFAULT_TOKEN_QUOTAS, sessions: 5 });
    expect(() => tokenQuotas({ sessions: 0 })).toThrow(
      /--max-sessions-per-token must be a whole number of at least 1/,
    );
    expect(() => tokenQuotas({ replays: 1.5 })).toThrow(/--max-replays-per-token/);
  });
});

describe("sessions per token across replicas sharing Postgres", () => {
  const withPostgres = postgresAvailable("session quotas across replicas");
  let database: Awaited<ReturnType<typeof scratchDatabase>> | undefined;
  const stores: Store[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close().catch(() => undefined);
    await database?.drop();
  });

  it.skipIf(!withPostgres)(
    "counts in the database: what one replica created counts on the other",
    async () => {
      database = await scratchDatabase("terrarium_quotas");
      const a = new PostgresStore(database.url, { poolSize: 2 });
      const b = new PostgresStore(database.url, { poolSize: 2 });
      stores.push(a, b);
      const record = (id: string, owner?: string) => ({
        id,
        createdAt: "2025-01-01T00:00:00Z",
        seed: "1",
        ...(owner ? { owner } : {}),
      });
      const guardA = new QuotaGuard(a, { sessions: 2 });
      const guardB = new QuotaGuard(b, { sessions: 2 });
      await guardB.createSessions("tenant", () => b.createSession(record("one", "tenant"), {}));
      await guardA.createSessions("tenant", () => a.createSession(record("two", "tenant"), {}));
      await b.createSession(record("other", "someone-else"), {});
      await b.createSession(record("open"), {});
      expect(await a.countSessions("tenant")).toBe(2);
      expect(await a.countSessions()).toBe(4);
      await expect(guardA.createSessions("tenant", async () => undefined)).rejects.toMatchObject({
        code: "QUOTA_EXCEEDED",
      });
      await expect(guardB.createSessions("tenant", async () => undefined)).rejects.toMatchObject({
        code: "QUOTA_EXCEEDED",
      });
      await b.deleteSession("one");
      expect(await guardA.createSessions("tenant", async () => "room")).toBe("room");
    },
    60_000,
  );
});

/** An `llm` simulator whose answers wait until the test releases them. */
class HeldSimulator implements Simulator {
  readonly name = "llm" as const;
  private release!: () => void;
  private readonly gate = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  private entered = 0;
  private readonly waiters: Array<{ count: number; resolve: () => void }> = [];
  handles(_tool: Tool): boolean {
    return true;
  }
  async simulate(): Promise<SimulationResult> {
    this.entered++;
    for (const waiter of this.waiters.filter((w) => this.entered >= w.count)) waiter.resolve();
    await this.gate;
    return { status: "ok", observation: { held: true }, changes: [] };
  }
  /** Resolves once `count` calls are being held. */
  holding(count: number): Promise<void> {
    return this.entered >= count
      ? Promise.resolve()
      : new Promise((resolve) => this.waiters.push({ count, resolve }));
  }
  open(): void {
    this.release();
  }
}

describe("replays in flight per token", () => {
  it("a third replay while two run is a 429 with Retry-After; another token's replay runs", async () => {
    const held = new HeldSimulator();
    const engine = new Engine({
      catalog: bank.catalog,
      store: new MemoryStore(),
      simulators: [held],
      policy: "schema",
    });
    const app = createApp(engine, { tokens: ["alpha", "beta"] });
    const recorded = async (token: string) => {
      const { id } = (await (
        await app.request("/sessions", { method: "POST", headers: auth(token) })
      ).json()) as {
        id: string;
      };
      const call = await app.request(`/sessions/${id}/calls`, {
        method: "POST",
        headers: auth(token),
        body: JSON.stringify({ name: "get_account", arguments: { account_id: "ACC-1001" } }),
      });
      expect(call.status).toBe(200);
      return id;
    };
    const replay = (token: string, id: string) =>
      app.request(`/sessions/${id}/replay`, {
        method: "POST",
        headers: auth(token),
        body: JSON.stringify({ simulator: "llm" }),
      });
    const mine = await recorded("alpha");
    const theirs = await recorded("beta");
    const running = [replay("alpha", mine), replay("alpha", mine)];
    await held.holding(2);

    const refused = await replay("alpha", mine);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("QUOTA_EXCEEDED");
    expect(body.error.message).toContain(`--max-replays-per-token ${DEFAULT_TOKEN_QUOTAS.replays}`);

    const other = replay("beta", theirs);
    await held.holding(3);
    held.open();
    for (const answer of await Promise.all([...running, other])) expect(answer.status).toBe(201);
    // Finished replays free their places.
    expect((await replay("alpha", mine)).status).toBe(201);
    await engine.close();
  });
});
