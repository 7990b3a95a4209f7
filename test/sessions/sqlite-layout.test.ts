import { mkdtempSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { ManualClock } from "../../src/core/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { SqliteStore } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";

const Database = createRequire(import.meta.url)("better-sqlite3") as typeof BetterSqlite3;
const retail = BUILTIN_ENVIRONMENTS["tau2-retail"] as NonNullable<
  (typeof BUILTIN_ENVIRONMENTS)["tau2-retail"]
>;
const tempFile = () => join(mkdtempSync(join(tmpdir(), "terrarium-layout-")), "sessions.sqlite");
/** Bytes in the database file once the WAL is folded into it (closing the store does that). */
const fileBytes = (path: string) => statSync(path).size;

async function retailEngine(path: string) {
  const initialState = await retail.initialState();
  return new Engine({
    catalog: new Catalog(retail.tools),
    simulators: [new CodeSimulator(retail, "layout")],
    store: new SqliteStore(path),
    clock: new ManualClock("2025-03-01T00:00:00Z", 1000),
    initialState,
    seed: 1,
  });
}

const move = (i: number) => ({
  name: "modify_user_address",
  arguments: {
    user_id: "noah_brown_6181",
    address1: `${i} Main St`,
    address2: `Apt ${i}`,
    city: "Springfield",
    state: "IL",
    country: "USA",
    zip: String(60000 + i),
  },
});

describe("SQLite store layout: changes, checkpoints, shared states", () => {
  it("stores 50 writes on a tau2-retail session as changes: under 5 MB, every snapshot exact", async () => {
    const path = tempFile();
    const engine = await retailEngine(path);
    const session = await engine.createSession();
    const states: unknown[] = [await engine.state(session.id)];
    for (let i = 1; i <= 50; i++) {
      const outcome = await engine.call(session.id, move(i));
      expect(outcome.status).toBe("ok");
      states.push(await engine.state(session.id));
    }
    await engine.close();
    const initialBytes = JSON.stringify(states[0]).length;
    const added = fileBytes(path) - initialBytes;
    expect(added).toBeLessThan(5 * 1024 * 1024);

    // A fresh store (nothing cached) rebuilds every snapshot from its checkpoint and changes.
    const reopened = new SqliteStore(path);
    const snapshots = await reopened.snapshots(session.id);
    expect(snapshots).toHaveLength(51);
    for (const index of [0, 1, 25, 50]) {
      expect(JSON.stringify((await reopened.snapshot(session.id, index))?.state)).toBe(
        JSON.stringify(states[index]),
      );
    }
    expect(JSON.stringify(snapshots.map((s) => s.state))).toBe(JSON.stringify(states));
    await reopened.close();
  });

  it("stores a state that many sessions start from once, and frees it with the last session", async () => {
    const path = tempFile();
    const engine = await retailEngine(path);
    const sessions = [];
    for (let i = 0; i < 40; i++) sessions.push(await engine.createSession());
    await engine.close();
    const stateBytes = JSON.stringify(await retail.initialState()).length;
    expect(fileBytes(path)).toBeLessThan(stateBytes * 1.5);

    const db = new Database(path);
    expect((db.prepare("SELECT COUNT(*) AS n FROM states").get() as { n: number }).n).toBe(1);
    db.close();
    const reopened = new SqliteStore(path);
    for (const session of sessions) await reopened.deleteSession(session.id);
    await reopened.close();
    const after = new Database(path);
    expect((after.prepare("SELECT COUNT(*) AS n FROM states").get() as { n: number }).n).toBe(0);
    after.close();
  });

  it("opens a database written in the first layout (one full state per snapshot) without losing anything", async () => {
    const path = tempFile();
    const db = new Database(path);
    db.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO meta VALUES ('schemaVersion', '1');
      CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT, record TEXT NOT NULL);
      CREATE TABLE snapshots (session TEXT NOT NULL, idx INTEGER NOT NULL, at TEXT NOT NULL, reason TEXT NOT NULL, state TEXT NOT NULL, PRIMARY KEY (session, idx));
      CREATE TABLE history (session TEXT NOT NULL, idx INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (session, idx));`);
    db.prepare("INSERT INTO sessions VALUES (?, NULL, ?)").run(
      "old",
      JSON.stringify({ id: "old", createdAt: "2025-01-01T00:00:00.000Z", seed: "1" }),
    );
    const insert = db.prepare("INSERT INTO snapshots VALUES ('old', ?, '2025-01-01T00:00:00.000Z', ?, ?)");
    insert.run(0, "initial", JSON.stringify({ n: 0 }));
    insert.run(1, "step", JSON.stringify({ n: 1 }));
    insert.run(2, "reset", JSON.stringify({ n: 0 }));
    db.close();

    const store = new SqliteStore(path);
    expect((await store.snapshots("old")).map((s) => [s.reason, s.state])).toEqual([
      ["initial", { n: 0 }],
      ["step", { n: 1 }],
      ["reset", { n: 0 }],
    ]);
    await store.appendStep(
      "old",
      {
        at: "2025-01-01T00:00:01.000Z",
        request: { name: "inc", arguments: {} },
        result: { status: "ok", observation: null, changes: [], errors: [] },
        simulator: "code",
      },
      { state: { n: 1 }, reason: "step" },
    );
    expect((await store.latestSnapshot("old")).state).toEqual({ n: 1 });
    await store.close();
    const check = new Database(path);
    expect(check.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").get()).toEqual({ value: "2" });
    expect((check.prepare("SELECT COUNT(*) AS n FROM states").get() as { n: number }).n).toBe(2);
    check.close();
  });
});
