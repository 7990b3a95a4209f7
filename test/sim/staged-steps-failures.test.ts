import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { loadPythonEnvironment } from "../../src/envs/python/environment.js";
import { watchEngineCalls } from "../../src/server/metrics.js";
import { MemoryStore, SqliteStore } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";
import type { Simulator } from "../../src/sim/types.js";
import { FIXTURES } from "../helpers/paths.js";
import { scratchSqliteFiles } from "../helpers/sqlite-files.js";

/**
 * Failures around staged steps (a session's calls pipelined to the store): a batch that fails at COMMIT,
 * a failed write behind a live instance with hidden state, and the server's wrapper of `engine.call`
 * keeping the engine's owner check. Each failed before the fix it names.
 */
const file = scratchSqliteFiles("terrarium-staged-failures-");
const bank = BUILTIN_ENVIRONMENTS.bank;
if (!bank) throw new Error("the bank environment is missing");

/** Changes without the new state (a model or proxy's shape): the store diffs each step from the state before. */
const tolerant: Simulator = {
  name: "llm",
  readsHistory: false,
  handles: () => true,
  simulate: async ({ state }) => {
    const n = (state as { n: number }).n;
    return {
      status: "ok",
      observation: { n },
      changes: [{ op: "replace", path: "/n", before: n, after: n + 1 }],
    };
  },
};

describe("staged steps when something fails", () => {
  it("a group commit that fails at COMMIT leaves no snapshot behind, not even in the store's cache", async () => {
    const path = file();
    const store = new SqliteStore(path);
    const engine = new Engine({
      catalog: new Catalog(bank?.tools ?? []),
      store,
      simulators: [tolerant],
      policy: "llm",
      initialState: { n: 0 },
    });
    const { id } = await engine.createSession();
    // A failure SQLite reports at COMMIT (as a full disk or an I/O error would): a deferred foreign key
    // that the second call's history entry breaks. Every statement of the batch succeeds; COMMIT does not.
    (store as unknown as { db: Database.Database }).db.pragma("foreign_keys = ON");
    const other = new Database(path);
    other.exec(`
      CREATE TABLE parent (id INTEGER PRIMARY KEY);
      CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
      CREATE TRIGGER fail_at_commit AFTER INSERT ON history WHEN NEW.idx = 1 BEGIN INSERT INTO child VALUES (42); END;`);
    const request = { name: "get_account", arguments: { account_id: "ACC-1001" } };
    // Two calls on one session: staged, they go to the store in the same batch.
    const settled = await Promise.allSettled([engine.call(id, request), engine.call(id, request)]);
    expect(settled.map((result) => result.status)).toEqual(["rejected", "rejected"]);
    other.exec("DROP TRIGGER fail_at_commit");
    other.close();

    // Nothing of the batch is in the file...
    const fresh = new SqliteStore(path);
    expect(await fresh.snapshot(id, 1)).toBeUndefined();
    await fresh.close();
    // ...so nothing of it may be read or forked from through the store that wrote it. The second write's
    // diff reads the first one's uncommitted snapshot (into the store's cache of latest states): a failed
    // batch must drop it, or snapshot 1 reads back as a state never stored, and a fork stores it.
    expect(await store.snapshot(id, 1)).toBeUndefined();
    await expect(engine.fork(id, 1)).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await engine.close();
  });

  it("the server's call watcher keeps the engine's own owner check (options are passed on)", async () => {
    const engine = new Engine({
      catalog: new Catalog(bank?.tools ?? []),
      store: new MemoryStore(),
      simulators: [new CodeSimulator(bank as NonNullable<typeof bank>)],
      initialState: await bank?.initialState(),
    });
    const { id } = await engine.createSession({ owner: "alice" });
    const request = { name: "get_account", arguments: { account_id: "ACC-1001" } };
    await expect(engine.call(id, request, { owner: "mallory" })).rejects.toMatchObject({
      code: "UNKNOWN_SESSION",
    });
    // createApp always wraps engine.call this way (metrics): the wrapper once dropped `options`.
    watchEngineCalls(engine, () => {});
    await expect(engine.call(id, request, { owner: "mallory" })).rejects.toMatchObject({
      code: "UNKNOWN_SESSION",
    });
    await engine.close();
  });
  it("a replaying environment's live instance holds no trace of calls that were not stored", async () => {
    // The counter keeps a hidden count of its calls; only a replay of the stored calls brings it back,
    // so the live instance must hold exactly the stored calls' effects.
    const env = await loadPythonEnvironment(join(FIXTURES, "python", "counter.yaml"));
    const path = file();
    const open = () =>
      new Engine({
        catalog: new Catalog(env.tools),
        store: new SqliteStore(path),
        simulators: [new CodeSimulator(env, "t")],
        seed: 3,
      });
    const engine = open();
    const { id } = await engine.createSession({ state: { total: 0, rolls: [] } });
    await engine.call(id, { name: "add", arguments: { n: 1 } });
    // The second call's write fails; the third, staged on it, is refused. Neither changes the visible state.
    const other = new Database(path);
    other.exec(
      "CREATE TRIGGER refuse_second BEFORE INSERT ON history WHEN NEW.idx = 1 BEGIN SELECT RAISE(ABORT, 'disk says no'); END",
    );
    const settled = await Promise.allSettled([
      engine.call(id, { name: "add", arguments: { n: 0 } }),
      engine.call(id, { name: "add", arguments: { n: 0 } }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(["rejected", "rejected"]);
    other.exec("DROP TRIGGER refuse_second");
    other.close();
    const live = await engine.call(id, { name: "peek", arguments: {} });
    // What the stored session is: a fresh engine rebuilds the instance from the stored calls.
    const fresh = open();
    const rebuilt = await fresh.call(id, { name: "peek", arguments: {} });
    expect(rebuilt.status).toBe("ok");
    await fresh.close(); // closes the environment too
    // Without dropping the instance at every failed write: {calls: 3} live against {calls: 1} stored.
    expect(live.observation).toEqual(rebuilt.observation);
    await engine.store.close();
  }, 60_000);
});
