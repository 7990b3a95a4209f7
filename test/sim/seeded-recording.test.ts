import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { MemoryStore, SqliteStore, type Store } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";

/**
 * A seeded run repeats byte for byte, across versions of the engine too: a seeded bank session (valid and
 * invalid calls, guards that fail, ids and times drawn by tools, a reset, a fork, a replay) is compared
 * with a recording made before the step's fast paths (lazy random sources, cheaper limit checks, the
 * stores' shorter write path). Any change to what a call records, in the history or the snapshots, fails
 * here. `RECORD=1` writes the recording again (only after a change that is meant to alter histories).
 */
const RECORDING = join(import.meta.dirname, "fixtures", "seeded-bank-session.json");

const calls: Array<{ name: string; arguments?: unknown }> = [];
for (let i = 0; i < 24; i++) {
  const memo = `m${i}`;
  calls.push(
    [
      { name: "open_account", arguments: { owner: `Owner ${i}`, deposit: 100 + i, currency: "USD" } },
      {
        name: "transfer",
        arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1.25, memo },
      },
      {
        name: "transfer",
        arguments: JSON.stringify({ from_account: "ACC-1002", to_account: "ACC-1001", amount: 0.5 }),
      },
      { name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: -1 } },
      { name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-2001", amount: 5 } },
      { name: "get_account", arguments: { account_id: "ACC-1001" } },
      { name: "nope", arguments: {} },
      { name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 5000 } },
      { name: "list_accounts", arguments: { owner: "Maria Lopez" } },
      {
        name: "transfer",
        arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 2, x: [1] },
      },
      { name: "freeze_account", arguments: { account_id: "ACC-9" } },
      { name: "transfer", arguments: "not json" },
    ][i % 12] as { name: string; arguments?: unknown },
  );
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function record(store: Store): Promise<unknown> {
  const bank = BUILTIN_ENVIRONMENTS.bank;
  if (!bank) throw new Error("the bank environment is missing");
  const engine = new Engine({
    catalog: new Catalog(bank.tools),
    store,
    simulators: [new CodeSimulator(bank, "7")],
    initialState: await bank.initialState(),
    seed: 7,
  });
  try {
    const session = await engine.createSession();
    const outcomes = [];
    for (const call of calls) outcomes.push(await engine.call(session.id, call));
    await engine.reset(session.id);
    for (const call of calls.slice(0, 3)) outcomes.push(await engine.call(session.id, call));
    const fork = await engine.fork(session.id, 3);
    for (const call of calls.slice(0, 2)) outcomes.push(await engine.call(fork.id, call));
    const replay = await engine.replay(session.id, "code");
    return {
      outcomes,
      session: await engine.exportSession(session.id),
      fork: await engine.exportSession(fork.id),
      replay: replay.outcomes,
    };
  } finally {
    await engine.close();
  }
}

describe("a seeded session", () => {
  it.each(["memory", "sqlite"])("records exactly what it recorded before (%s store)", async (kind) => {
    let store: Store;
    if (kind === "memory") store = new MemoryStore();
    else {
      const dir = mkdtempSync(join(tmpdir(), "terrarium-recording-"));
      dirs.push(dir);
      store = new SqliteStore(join(dir, "sessions.db"));
    }
    const text = JSON.stringify(await record(store));
    if (process.env.RECORD === "1" && kind === "memory") writeFileSync(RECORDING, `${text}\n`);
    expect(text).toBe(readFileSync(RECORDING, "utf8").trimEnd());
  });
});
