import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  MemoryStore,
  openStore,
  POSTGRES_STORE_SCHEMA_VERSION,
  PostgresStore,
  type SessionRecord,
  SqliteStore,
  type Store,
} from "../../src/sessions/index.js";
import { postgresAvailable, scratchDatabase } from "../helpers/postgres.js";

/**
 * One contract, every store: what the engine relies on. Memory and SQLite always run; Postgres runs when
 * TERRARIUM_TEST_POSTGRES names a server (a fresh database for this file, a fresh schema per store).
 */
const withPostgres = postgresAvailable("Postgres store contract");
let database: Awaited<ReturnType<typeof scratchDatabase>> | undefined;
let schemas = 0;
const opened: Store[] = [];
beforeAll(async () => {
  if (withPostgres) database = await scratchDatabase("terrarium_store");
}, 30_000);
afterAll(async () => {
  for (const store of opened) await store.close().catch(() => undefined);
  await database?.drop();
}, 30_000);

/** A Postgres store in a schema of its own (so tests reusing session ids never meet). */
function postgresStore(schema = `contract_${++schemas}`): PostgresStore {
  const store = new PostgresStore((database as { url: string }).url, { schema, poolSize: 4 });
  opened.push(store);
  return store;
}

const stores: Array<[string, () => Store]> = [
  ["memory", () => new MemoryStore()],
  ["sqlite", () => new SqliteStore(join(mkdtempSync(join(tmpdir(), "terrarium-store-")), "sessions.sqlite"))],
  ...(withPostgres ? [["postgres", () => postgresStore()] as [string, () => Store]] : []),
];

const record = (id: string, owner?: string): SessionRecord => ({
  id,
  createdAt: "2025-01-01T00:00:00.000Z",
  seed: "1",
  ...(owner ? { owner } : {}),
});
const step = (name: string, at = "2025-01-01T00:00:01.000Z") => ({
  at,
  request: { name, arguments: { n: 1 } },
  result: { status: "ok" as const, observation: { ok: true }, changes: [], errors: [] },
  simulator: "code",
});

for (const [name, make] of stores) {
  describe(`${name} store`, () => {
    it("keeps append-only snapshots and history, a step and its snapshot together", async () => {
      const store = make();
      await store.createSession(record("s1"), { count: 0 });
      expect(await store.latestSnapshot("s1")).toEqual({
        index: 0,
        at: "2025-01-01T00:00:00.000Z",
        reason: "initial",
        state: { count: 0 },
      });
      const read = await store.appendStep("s1", step("get"));
      expect(read).toMatchObject({ index: 0 });
      expect(read.snapshot).toBeUndefined();
      const write = await store.appendStep("s1", step("inc"), { state: { count: 1 }, reason: "step" });
      expect(write).toMatchObject({ index: 1, snapshot: 1 });
      await store.appendSnapshot("s1", { count: 5 }, "set", "2025-01-01T00:00:02.000Z");
      expect((await store.latestSnapshot("s1")).state).toEqual({ count: 5 });
      expect((await store.snapshot("s1", 1))?.state).toEqual({ count: 1 });
      expect((await store.snapshots("s1")).map((s) => s.reason)).toEqual(["initial", "step", "set"]);
      expect((await store.history("s1")).map((h) => h.request.name)).toEqual(["get", "inc"]);
      await store.close();
    });

    it("isolates sessions, filters by owner, deletes, and names unknown sessions", async () => {
      const store = make();
      await store.createSession(record("a", "alice"), { v: "a" });
      await store.createSession(record("b", "bob"), { v: "b" });
      await store.appendStep("a", step("x"), { state: { v: "a2" }, reason: "step" });
      expect((await store.latestSnapshot("b")).state).toEqual({ v: "b" });
      expect((await store.listSessions("alice")).map((s) => s.id)).toEqual(["a"]);
      expect((await store.listSessions()).map((s) => s.id)).toEqual(["a", "b"]);
      expect(await store.deleteSession("a")).toBe(true);
      expect(await store.getSession("a")).toBeUndefined();
      await expect(store.latestSnapshot("a")).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
      await expect(store.appendStep("a", step("x"))).rejects.toMatchObject({ code: "UNKNOWN_SESSION" });
      await store.close();
    });

    it("does not let callers change stored values through returned objects (states are frozen)", async () => {
      const store = make();
      const given = { list: [1] };
      await store.createSession(record("c"), given);
      given.list.push(3);
      const snapshot = await store.latestSnapshot("c");
      expect(() => (snapshot.state as { list: number[] }).list.push(2)).toThrow(TypeError);
      expect((await store.latestSnapshot("c")).state).toEqual({ list: [1] });
      await store.close();
    });

    it("gives back every snapshot exactly, however many steps and checkpoints lie between", async () => {
      const store = make();
      await store.createSession(record("h"), { items: {}, log: [] });
      const expected: unknown[] = [{ items: {}, log: [] }];
      let state: { items: Record<string, number>; log: string[] } = { items: {}, log: [] };
      for (let i = 1; i <= 230; i++) {
        state = structuredClone(state);
        if (i % 7 === 0) delete state.items[`k${i - 6}`];
        else state.items[`k${i}`] = i;
        state.log.push(`step ${i}`);
        if (i % 50 === 0) await store.appendSnapshot("h", state, "set", "2025-01-01T00:00:02.000Z");
        else await store.appendStep("h", step("inc"), { state, reason: "step" });
        expected.push(structuredClone(state));
      }
      for (const index of [0, 1, 49, 50, 99, 100, 101, 150, 229, 230])
        expect((await store.snapshot("h", index))?.state).toEqual(expected[index]);
      expect((await store.snapshots("h")).map((s) => s.state)).toEqual(expected);
      expect((await store.latestSnapshot("h")).index).toBe(230);
      await store.close();
    });

    it("imports a whole session at once, and refuses a second session with the same id", async () => {
      const store = make();
      const entry = { ...step("inc"), index: 0, snapshot: 1 };
      const contents = {
        snapshots: [
          { index: 0, at: "2025-01-01T00:00:00.000Z", reason: "initial" as const, state: { n: 0 } },
          { index: 1, at: "2025-01-01T00:00:01.000Z", reason: "step" as const, state: { n: 1 } },
        ],
        history: [entry],
      };
      await store.importSession(record("i"), contents);
      expect((await store.snapshots("i")).map((s) => s.state)).toEqual([{ n: 0 }, { n: 1 }]);
      expect(await store.history("i")).toEqual([entry]);
      await expect(store.importSession(record("i"), contents)).rejects.toThrow();
      expect(await store.history("i")).toEqual([entry]);
      // All or nothing: a session whose second snapshot cannot be stored leaves no trace.
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const broken = {
        snapshots: [
          contents.snapshots[0] as (typeof contents.snapshots)[0],
          { ...contents.snapshots[1], state: cyclic },
        ],
        history: [entry],
      };
      await expect(store.importSession(record("j"), broken as typeof contents)).rejects.toThrow();
      expect(await store.getSession("j")).toBeUndefined();
      expect((await store.listSessions()).map((s) => s.id)).toEqual(["i"]);
      await store.close();
    });

    it("creates sessions once: a second create with the same id is refused and changes nothing", async () => {
      const store = make();
      await store.createSession(record("d", "alice"), { n: 1 });
      await expect(store.createSession(record("d", "bob"), { n: 2 })).rejects.toThrow();
      expect(await store.getSession("d")).toEqual(record("d", "alice"));
      expect((await store.latestSnapshot("d")).state).toEqual({ n: 1 });
      expect(await store.snapshot("d", 5)).toBeUndefined();
      expect(await store.snapshot("d", -1)).toBeUndefined();
      await store.close();
    });

    it("keeps forks' parents, metadata and snapshot reasons as given", async () => {
      const store = make();
      const fork: SessionRecord = {
        ...record("f"),
        parent: { session: "p", snapshot: 3 },
        metadata: { importedFrom: "x", tags: ["a"] },
      };
      await store.createSession(fork, { k: "v" });
      expect(await store.getSession("f")).toEqual(fork);
      expect((await store.latestSnapshot("f")).reason).toBe("fork");
      const appended = await store.appendSnapshot("f", { k: "w" }, "reset", "2025-01-01T00:00:05.000Z");
      expect(appended).toMatchObject({ index: 1, reason: "reset", state: { k: "w" } });
      await store.close();
    });
  });
}

describe("sqlite store durability", () => {
  it("reopens with everything that was written", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "terrarium-store-")), "s.sqlite");
    const first = new SqliteStore(path);
    await first.createSession(record("p"), { n: 0 });
    await first.appendStep("p", step("inc"), { state: { n: 1 }, reason: "step" });
    await first.close();
    const second = new SqliteStore(path);
    expect((await second.latestSnapshot("p")).state).toEqual({ n: 1 });
    expect(await second.history("p")).toHaveLength(1);
    await second.close();
  });
});

describe("history windows", () => {
  for (const [name, make] of stores) {
    it(`${name}: returns only the last entries, in order`, async () => {
      const store = make();
      await store.createSession(record("w"), {});
      for (const n of ["a", "b", "c", "d"]) await store.appendStep("w", step(n));
      expect((await store.history("w", 2)).map((h) => [h.index, h.request.name])).toEqual([
        [2, "c"],
        [3, "d"],
      ]);
      expect(await store.history("w", 10)).toHaveLength(4);
      await store.close();
    });
  }
});

describe.runIf(withPostgres)("postgres store: migrations, replicas, locks", () => {
  it("migrates once when several stores open the same database at once, and records the version", async () => {
    const schema = `migrate_${Date.now().toString(36)}`;
    const replicas = [
      postgresStore(schema),
      postgresStore(schema),
      postgresStore(schema),
      postgresStore(schema),
    ];
    expect(await Promise.all(replicas.map((store) => store.schemaVersion()))).toEqual(
      replicas.map(() => POSTGRES_STORE_SCHEMA_VERSION),
    );
    const client = new pg.Client({ connectionString: database?.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT version FROM ${schema}.terrarium_migrations ORDER BY version`,
      );
      expect(rows.map((row) => row.version)).toEqual([1]);
      // A database at a layout this code does not know is refused, naming where it is.
      await client.query(
        `INSERT INTO ${schema}.terrarium_migrations (version, description) VALUES (99, 'future')`,
      );
    } finally {
      await client.end();
    }
    await expect(PostgresStore.open((database as { url: string }).url, { schema })).rejects.toThrow(
      /layout version 99, newer than this terrarium knows/,
    );
  });

  it("shares sessions between stores: each reads what the others wrote, never a stale cached state", async () => {
    const schema = `shared_${Date.now().toString(36)}`;
    const [a, b] = [postgresStore(schema), postgresStore(schema)];
    await a.createSession(record("s"), { n: 0 });
    expect((await b.latestSnapshot("s")).state).toEqual({ n: 0 });
    await b.appendStep("s", step("inc"), { state: { n: 1 }, reason: "step" });
    expect(await a.latestSnapshot("s")).toMatchObject({ index: 1, state: { n: 1 } });
    await a.appendStep("s", step("inc"), { state: { n: 2 }, reason: "step" });
    await a.appendSnapshot("s", { n: 9 }, "set", "2025-01-01T00:00:03.000Z");
    expect(await b.latestSnapshot("s")).toMatchObject({ index: 3, state: { n: 9 } });
    expect((await b.snapshots("s")).map((s) => s.state)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }, { n: 9 }]);
    expect((await a.history("s")).map((h) => [h.index, h.snapshot])).toEqual([
      [0, 1],
      [1, 2],
    ]);
  });

  it("never gives two racing writes the same index, even without the session lock", async () => {
    const schema = `race_${Date.now().toString(36)}`;
    const [a, b] = [postgresStore(schema), postgresStore(schema)];
    await a.createSession(record("r"), { n: 0 });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).appendStep("r", step(`w${i}`), { state: { n: i + 1 }, reason: "step" }),
      ),
    );
    const history = await a.history("r");
    expect(history.map((h) => h.index)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(history.map((h) => h.snapshot).sort((x, y) => (x as number) - (y as number))).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    expect((await b.snapshots("r")).map((s) => s.index)).toEqual(Array.from({ length: 21 }, (_, i) => i));
  });

  it("serialises work on one session across stores with withSessionLock, and not across sessions", async () => {
    const schema = `lock_${Date.now().toString(36)}`;
    const [a, b] = [postgresStore(schema), postgresStore(schema)];
    const events: string[] = [];
    const hold = (store: PostgresStore, id: string, label: string, ms: number) =>
      store.withSessionLock(id, async () => {
        events.push(`${label}+`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        events.push(`${label}-`);
      });
    await Promise.all([hold(a, "x", "a", 150), hold(b, "x", "b", 10)]);
    expect([events.slice(0, 2), events.slice(2)].map((pair) => pair[0]?.[0] === pair[1]?.[0])).toEqual([
      true,
      true,
    ]);
    // Two sessions do not wait for each other: b's short hold on z ends while a still holds y.
    events.length = 0;
    await Promise.all([hold(a, "y", "a", 400), hold(b, "z", "b", 10)]);
    expect(events.indexOf("b-")).toBeLessThan(events.indexOf("a-"));
    // A failure inside releases the lock.
    await expect(a.withSessionLock("x", async () => Promise.reject(new Error("boom")))).rejects.toThrow(
      "boom",
    );
    await b.withSessionLock("x", async () => events.push("after"));
    expect(events).toContain("after");
  });

  it("is what --db picks for postgres:// URLs; bad URLs and unreachable servers are named", async () => {
    const store = await openStore((database as { url: string }).url);
    opened.push(store);
    expect(store).toBeInstanceOf(PostgresStore);
    expect(await openStore()).toBeInstanceOf(MemoryStore);
    await expect(openStore("redis://127.0.0.1:6379")).rejects.toThrow(/SQLite file or a postgres:\/\/ URL/);
    await expect(openStore("postgres:///db")).rejects.toThrow(/names no host/);
    const failure = openStore("postgresql://nobody:secret@127.0.0.1:1/nowhere");
    await expect(failure).rejects.toThrow(
      /cannot connect to Postgres at postgres:\/\/nobody@127\.0\.0\.1:1\/nowhere/,
    );
    await expect(failure).rejects.not.toThrow(/secret/);
  });
});
