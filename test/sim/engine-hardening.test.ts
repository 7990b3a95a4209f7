import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { type Clock, ManualClock } from "../../src/core/index.js";
import { BUILTIN_ENVIRONMENTS, type Environment } from "../../src/envs/index.js";
import { SqliteStore, type Store } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";

/** Bad input reaching the engine from code (the HTTP layer checks first; library users get the same). */
const bank = BUILTIN_ENVIRONMENTS.bank as Environment;
const transfer = {
  name: "transfer",
  arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 },
};

async function bankEngine(options: { store?: Store; clock?: Clock } = {}) {
  return new Engine({
    catalog: new Catalog(bank.tools),
    simulators: [new CodeSimulator(bank, "t")],
    initialState: await bank.initialState(),
    clock: options.clock ?? new ManualClock("2025-03-01T00:00:00Z", 1000),
    seed: 1,
    ...(options.store ? { store: options.store } : {}),
  });
}

const nested = (depth: number) => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

describe("engine: states it admits", () => {
  it("refuses non-object states for an environment whose tools read fields, and absurd nesting", async () => {
    const engine = await bankEngine();
    for (const state of [[1, 2], "text", 42]) {
      await expect(engine.createSession({ state })).rejects.toThrow(/the state must be a JSON object, got/);
    }
    const session = await engine.createSession();
    await expect(engine.setState(session.id, [1])).rejects.toThrow(
      "the state must be a JSON object, got an array",
    );
    await expect(engine.setState(session.id, { deep: nested(3000) })).rejects.toThrow(
      /nested deeper than 512/,
    );
    expect(await engine.history(session.id)).toEqual([]);
    expect((await engine.store.snapshots(session.id)).length).toBe(1);
    expect(await engine.store.listSessions()).toHaveLength(1);
  });
});

describe("engine: import, export, replay", () => {
  it("exports without the owner and imports under the caller, ignoring an owner in the document", async () => {
    const engine = await bankEngine();
    const session = await engine.createSession({ owner: "hash-of-alice" });
    await engine.call(session.id, transfer);
    const exported = await engine.exportSession(session.id);
    expect(JSON.stringify(exported)).not.toContain("hash-of-alice");
    const forged = { ...exported, session: { ...exported.session, owner: "hash-of-alice" } };
    const imported = await engine.importSession(forged, "hash-of-bob");
    expect(imported.owner).toBe("hash-of-bob");
    const anonymous = await engine.importSession(forged);
    expect(anonymous.owner).toBeUndefined();
    expect(await engine.state(imported.id)).toEqual(await engine.state(session.id));
    expect(await engine.history(imported.id)).toEqual(await engine.history(session.id));
  });

  it("refuses a broken export with the place it breaks, and stores nothing of it", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "terrarium-import-")), "s.sqlite");
    const engine = await bankEngine({ store: new SqliteStore(path) });
    const session = await engine.createSession();
    for (let i = 0; i < 3; i++) await engine.call(session.id, transfer);
    const good = await engine.exportSession(session.id);
    const before = (await engine.store.listSessions()).length;
    const broken: Array<[unknown, RegExp, string]> = [
      [{ ...good, schemaVersion: 99 }, /schemaVersion must be 1/, "/schemaVersion"],
      [{ ...good, snapshots: [] }, /snapshots/, "/snapshots"],
      [
        { ...good, snapshots: good.snapshots.map((s, i) => (i === 2 ? { ...s, index: 7 } : s)) },
        /snapshot 2 has index 7/,
        "/snapshots/2/index",
      ],
      [
        { ...good, snapshots: good.snapshots.map((s, i) => (i === 3 ? { ...s, state: nested(3000) } : s)) },
        /snapshot 3: the value is nested deeper/,
        "/snapshots/3/state",
      ],
      [
        { ...good, history: good.history.map((h, i) => (i === 1 ? { ...h, snapshot: 40 } : h)) },
        /names snapshot 40/,
        "/history/1/snapshot",
      ],
      [{ ...good, history: [{ index: 0 }] }, /history\/0/, "/history/0/at"],
      ["not even an object", /the document/, ""],
    ];
    for (const [document, message, pointer] of broken) {
      const error = await engine.importSession(document).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(message) });
      expect((error as { where?: { pointer?: string } }).where?.pointer).toBe(pointer);
    }
    expect((await engine.store.listSessions()).length).toBe(before);
    await engine.close();
  });

  it("refuses a replay whose policy cannot answer the calls before creating anything", async () => {
    const engine = await bankEngine();
    const session = await engine.createSession();
    await engine.call(session.id, transfer);
    await expect(engine.replay(session.id, "llm")).rejects.toThrow(/the "llm" simulator is not available/);
    expect(await engine.store.listSessions()).toHaveLength(1);
    const { session: replayed, outcomes } = await engine.replay(session.id, "code");
    expect(outcomes.map((o) => o.status)).toEqual(["ok"]);
    const balances = async (id: string) => (await engine.state(id)) as { accounts: unknown };
    expect((await balances(replayed.id)).accounts).toEqual((await balances(session.id)).accounts);
    expect(await engine.store.listSessions()).toHaveLength(2);
  });
});

describe("engine: session time", () => {
  it("never goes backwards, across a restart with an earlier clock or a state set from outside", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "terrarium-time-")), "s.sqlite");
    const first = await bankEngine({
      store: new SqliteStore(path),
      clock: new ManualClock("2025-06-01T00:00:00Z", 1000),
    });
    const session = await first.createSession();
    await first.call(session.id, transfer);
    await first.setState(session.id, await bank.initialState());
    await first.close();
    // The restarted server's clock is behind the session's last record (a seeded clock starts over).
    const second = await bankEngine({
      store: new SqliteStore(path),
      clock: new ManualClock("2025-01-01T00:00:00Z", 1000),
    });
    await second.call(session.id, transfer);
    await second.setState(session.id, await bank.initialState());
    await second.call(session.id, transfer);
    const times = [
      ...(await second.history(session.id)).map((h) => h.at),
      ...(await second.store.snapshots(session.id)).map((s) => s.at),
    ];
    const history = (await second.history(session.id)).map((h) => Date.parse(h.at));
    const snapshots = (await second.store.snapshots(session.id)).map((s) => Date.parse(s.at));
    for (const series of [history, snapshots])
      for (let i = 1; i < series.length; i++) expect(series[i]).toBeGreaterThan(series[i - 1] as number);
    expect(times.every((at) => at >= "2025-06-01")).toBe(true);
    await second.close();
  });

  it("gives tools the session's time: real time when unseeded, the seeded clock otherwise", async () => {
    const createdAt = async (seed?: number) => {
      const engine = new Engine({
        catalog: new Catalog(bank.tools),
        simulators: [new CodeSimulator(bank)],
        initialState: await bank.initialState(),
        ...(seed !== undefined ? { seed } : {}),
      });
      const session = await engine.createSession();
      const outcome = await engine.call(session.id, transfer);
      const id = (outcome.observation as { transfer_id: string }).transfer_id;
      const state = (await engine.state(session.id)) as { transfers: Record<string, { created_at: string }> };
      const [entry] = await engine.history(session.id);
      await engine.close();
      return { tool: state.transfers[id]?.created_at as string, recorded: entry?.at as string };
    };
    const started = Date.now();
    const unseeded = await createdAt();
    expect(Date.parse(unseeded.tool)).toBeGreaterThanOrEqual(started - 1000);
    expect(Date.parse(unseeded.tool)).toBeLessThanOrEqual(Date.now() + 1000);
    const seeded = await createdAt(5);
    expect(seeded).toEqual(await createdAt(5));
    expect(seeded.tool >= seeded.recorded).toBe(true);
  });
});
