import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { isRecord } from "../../src/core/persistent-record.js";
import { MemoryStore, SqliteStore, type Store } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";
import { journal } from "../helpers/journal-env.js";

/**
 * A map that grows by a key per write (a bank's transfers) is a persistent record once large, so the
 * whole write, the environment's step included, costs about the same at the 6,000th call as at the 50th;
 * copying the map made it grow with the map (about 5 times at 6,000 keys). The states the stores give
 * back (the latest, older snapshots, a cold read from the file) are the same JSON as the steps made.
 */

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

describe("a state that grows by a key per write", () => {
  for (const [name, open] of [
    ["memory", () => ({ store: new MemoryStore() as Store, file: undefined })],
    [
      "SQLite",
      () => {
        const dir = mkdtempSync(join(tmpdir(), "terrarium-growth-"));
        dirs.push(dir);
        const file = join(dir, "sessions.sqlite");
        return { store: new SqliteStore(file) as Store, file };
      },
    ],
  ] as const) {
    it(`${name} store: the whole write costs about the same at 6,000 keys as at 50, and reads back exactly`, async () => {
      const { store, file } = open();
      const engine = new Engine({
        catalog: new Catalog(journal.tools),
        simulators: [new CodeSimulator(journal)],
        store,
        seed: 1,
      });
      let n = 0;
      const write = async (session: string) => {
        n++;
        const started = performance.now();
        const outcome = await engine.call(session, { name: "add_entry", arguments: { n } });
        expect(outcome.status).toBe("ok");
        return performance.now() - started;
      };
      const initial = await journal.initialState();
      const old = await engine.createSession({ state: initial });
      for (let i = 0; i < 5950; i++) await write(old.id);
      const fresh = await engine.createSession({ state: initial });
      const early: number[] = [];
      const late: number[] = [];
      for (let i = 0; i < 100; i++) {
        early.push(await write(fresh.id));
        late.push(await write(old.id));
      }
      expect(median(late) / median(early)).toBeLessThan(2);

      const state = (await engine.state(old.id)) as { entries: Record<string, unknown>; count: number };
      expect(isRecord(state.entries)).toBe(true);
      expect(state.count).toBe(6050);
      const text = JSON.stringify(state);
      const keys = Object.keys(state.entries);
      expect(keys.length).toBe(6050);
      // Insertion order: the keys as the writes added them.
      const parsed = JSON.parse(text) as { entries: Record<string, { n: number }> };
      const order = Object.values(parsed.entries).map((entry) => entry.n);
      expect(order).toEqual([...order].sort((a, b) => a - b));
      const older = await store.snapshot(old.id, 3000);
      expect(older).toBeDefined();
      expect(Object.keys((older as { state: { entries: object } }).state.entries).length).toBe(3000);
      await engine.close();
      if (file !== undefined) {
        // A cold read: the checkpoint and the changes after it, from the file.
        const reopened = new SqliteStore(file);
        expect(JSON.stringify((await reopened.latestSnapshot(old.id))?.state)).toBe(text);
        await reopened.close();
      }
    }, 180_000);
  }
});
