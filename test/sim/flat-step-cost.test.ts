import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { defineEnvironment, type Environment } from "../../src/envs/index.js";
import { MemoryStore, SqliteStore, type Store } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";
import { journal } from "../helpers/journal-env.js";

/**
 * A write must cost the same at a session's 5,000th call as at its 50th: nothing on the write path may
 * walk the session's history or its chain of snapshots. Wall time against a constant would fail on a
 * loaded machine, so the two are measured side by side: a fresh session and one grown to 4,950 writes
 * take turns, call for call, so both see the same load, and the medians of their times are compared.
 */
const ACCOUNTS = 1000;
const ledger = defineEnvironment<{ balances: Record<string, number>; writes: number }>({
  name: "ledger",
  description: "Balances of many accounts; a write sets one.",
  initialState: {
    balances: Object.fromEntries(Array.from({ length: ACCOUNTS }, (_, i) => [`a${i}`, 100])),
    writes: 0,
  },
  tools: {
    set_balance: {
      description: "Set one account's balance.",
      effect: "write",
      input: {
        properties: { account: { type: "string" }, balance: { type: "number" } },
        required: ["account", "balance"],
      },
      run: ({ state, args }) => {
        state.balances[args.account] = args.balance;
        state.writes += 1;
        return { balance: args.balance };
      },
    },
  },
});

/** The code simulator, noting how long its last step took (the environment's own work). */
class TimedCodeSimulator extends CodeSimulator {
  last = 0;
  override async simulate(context: Parameters<CodeSimulator["simulate"]>[0]) {
    const started = performance.now();
    try {
      return await super.simulate(context);
    } finally {
      this.last = performance.now() - started;
    }
  }
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/**
 * Median time of writes 1..100 of a fresh session and of writes 4,951..5,050 of an older one, taking
 * turns. With `engineOnly`, the environment's own step is left out: what remains is the engine's and the
 * store's share (reads, checks, the write), which must stay flat even when the state grows.
 */
async function writeCostRatio(
  store: Store,
  environment: Environment,
  call: (n: number) => { name: string; arguments: Record<string, unknown> },
  engineOnly = false,
): Promise<number> {
  const simulator = new TimedCodeSimulator(environment);
  const engine = new Engine({
    catalog: new Catalog(environment.tools),
    simulators: [simulator],
    store,
    seed: 1,
  });
  const initial = await environment.initialState();
  let n = 0;
  const write = async (session: string) => {
    n++;
    const started = performance.now();
    const outcome = await engine.call(session, call(n));
    const took = performance.now() - started - (engineOnly ? simulator.last : 0);
    expect(outcome.status).toBe("ok");
    return took;
  };
  const old = await engine.createSession({ state: initial });
  for (let i = 0; i < 4950; i++) await write(old.id);
  const fresh = await engine.createSession({ state: initial });
  const early: number[] = [];
  const late: number[] = [];
  for (let i = 0; i < 100; i++) {
    early.push(await write(fresh.id)); // its writes 1..100
    late.push(await write(old.id)); // its writes 4,951..5,050
  }
  const [last] = await store.history(old.id, 1);
  expect(last?.index).toBe(5049);
  expect(last?.snapshot).toBe(5050);
  await engine.close();
  return median(late) / median(early);
}

const setBalance = (n: number) => ({
  name: "set_balance",
  arguments: { account: `a${n % ACCOUNTS}`, balance: n },
});
const addEntry = (n: number) => ({ name: "add_entry", arguments: { n } });

function sqliteStore(): Store {
  const dir = mkdtempSync(join(tmpdir(), "terrarium-flat-"));
  dirs.push(dir);
  return new SqliteStore(join(dir, "sessions.sqlite"));
}

describe("the cost of a write does not grow with the session", () => {
  for (const [name, open] of [
    ["memory", () => new MemoryStore()],
    ["SQLite", sqliteStore],
  ] as const) {
    it(`${name} store: the 5,000th write costs about what the 50th does`, async () => {
      expect(await writeCostRatio(open(), ledger, setBalance)).toBeLessThan(2);
    }, 120_000);

    it(`${name} store: with a state that grows every write, the engine's and store's share stays flat`, async () => {
      // Before: about 30 times (the engine applied the changes again and compared the states, the stores
      // diffed them; every one of those passes walks the growing map).
      expect(await writeCostRatio(open(), journal, addEntry, true)).toBeLessThan(2);
    }, 120_000);
  }
});

describe("the memory store's snapshots kept as changes", () => {
  it("gives back every snapshot exactly, whatever a caller later does to the outcomes it was given", async () => {
    const store = new MemoryStore();
    const engine = new Engine({
      catalog: new Catalog(journal.tools),
      simulators: [new CodeSimulator(journal)],
      store,
    });
    const session = await engine.createSession({ state: await journal.initialState() });
    const states: unknown[] = [await engine.state(session.id)];
    for (let n = 0; n < 300; n++) {
      const outcome = await engine.call(session.id, addEntry(n));
      states.push(await engine.state(session.id));
      // A careless caller: the store must not share these objects with it.
      for (const change of outcome.changes as Array<Record<string, unknown>>) {
        change.path = "/vandalised";
        change.after = "vandalised";
      }
    }
    const snapshots = await store.snapshots(session.id);
    expect(snapshots.map((snapshot) => snapshot.state)).toEqual(states);
    for (const index of [0, 1, 57, 150, 299, 300])
      expect((await store.snapshot(session.id, index))?.state).toEqual(states[index]);
    await engine.close();
  });
});
