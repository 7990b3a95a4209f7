import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Catalog, loadToolFile } from "../../src/catalog/index.js";
import { canonicalJson, ManualClock } from "../../src/core/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { SqliteStore } from "../../src/sessions/index.js";
import { applyTolerantly, CodeSimulator, Engine, type Simulator } from "../../src/sim/index.js";
import { SchemaCompiler } from "../../src/validate/index.js";
import { toolFixture } from "../helpers/paths.js";

const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;
const bankEngine = (options: Partial<ConstructorParameters<typeof Engine>[0]> = {}) =>
  new Engine({
    catalog: new Catalog(bank.tools),
    simulators: [new CodeSimulator(bank, "t")],
    clock: new ManualClock("2025-03-01T00:00:00Z", 1000),
    seed: 1,
    ...options,
  });
const transfer = (amount: number) => ({
  name: "transfer",
  arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount },
});

describe("engine with the schema simulator (offline default)", () => {
  it("answers schema-valid results without changing the state, and records every call", async () => {
    const catalog = new Catalog(await loadToolFile(toolFixture("petstore.openapi.yaml")));
    const engine = new Engine({ catalog, seed: 7, clock: new ManualClock() });
    const session = await engine.createSession({ state: { pets: {} } });
    const listed = await engine.call(session.id, { name: "listPets", arguments: { limit: 2 } });
    expect(listed).toMatchObject({ status: "ok", simulator: "schema", changes: [], errors: [], step: 0 });
    expect(
      new SchemaCompiler().compile(catalog.get("listPets")?.outputSchema ?? {})(listed.observation),
    ).toBe(true);
    const invalid = await engine.call(session.id, { name: "listPets", arguments: { limit: 500 } });
    expect(invalid).toMatchObject({
      status: "invalid",
      simulator: "validator",
      errors: [{ path: "/limit", rule: "maximum" }],
    });
    const unknown = await engine.call(session.id, { name: "listPet", arguments: {} });
    expect(unknown.errors[0]).toMatchObject({
      rule: "unknown_tool",
      message: expect.stringMatching(/^there is no tool named "listPet"; the closest tools are "listPets", /),
    });
    expect((await engine.history(session.id)).map((h) => h.result.status)).toEqual([
      "ok",
      "invalid",
      "invalid",
    ]);
    expect(await engine.state(session.id)).toEqual({ pets: {} });
  });

  it("gives the same answers for the same seed", async () => {
    const catalog = new Catalog(await loadToolFile(toolFixture("orders.openapi.json")));
    const run = async () => {
      const engine = new Engine({ catalog, seed: 3, clock: new ManualClock() });
      const session = await engine.createSession();
      return engine.call(session.id, { name: "search_orders", arguments: { status: "pending" } });
    };
    expect(canonicalJson(await run())).toBe(canonicalJson(await run()));
  });
});

describe("engine with the code simulator", () => {
  it("applies a write as one snapshot, rejects a guarded call without one, and forks and resets", async () => {
    const engine = bankEngine();
    const session = await engine.createSession({ state: await bank.initialState() });
    const moved = await engine.call(session.id, transfer(100));
    expect(moved).toMatchObject({ status: "ok", simulator: "code", step: 0 });
    // Two balances, the transfer record, and two counters.
    expect(moved.changes).toHaveLength(5);
    const state = (await engine.state(session.id)) as any;
    expect(state.accounts["ACC-1001"].balance).toBe(2400);
    const refused = await engine.call(session.id, transfer(5000));
    expect(refused).toMatchObject({
      status: "tool_error",
      observation: { error: "amount exceeds the daily limit of 1000" },
      changes: [],
    });
    const history = await engine.history(session.id);
    expect(history.map((h) => [h.result.status, h.snapshot])).toEqual([
      ["ok", 1],
      ["tool_error", undefined],
    ]);

    const fork = await engine.fork(session.id, 0);
    expect(fork.parent).toEqual({ session: session.id, snapshot: 0 });
    expect(((await engine.state(fork.id)) as any).accounts["ACC-1001"].balance).toBe(2500);
    await engine.call(fork.id, transfer(1));
    expect(((await engine.state(session.id)) as any).accounts["ACC-1001"].balance).toBe(2400);

    await engine.reset(session.id);
    expect(((await engine.state(session.id)) as any).accounts["ACC-1001"].balance).toBe(2500);
    // After a reset the live environment instance is rebuilt from the stored state.
    await engine.call(session.id, transfer(10));
    expect(((await engine.state(session.id)) as any).accounts["ACC-1001"].balance).toBe(2490);

    const exported = await engine.exportSession(session.id);
    expect(exported.schemaVersion).toBe(1);
    expect(exported.snapshots.map((s) => s.reason)).toEqual(["initial", "step", "reset", "step"]);
  });

  it("routes by policy: reads to schema, writes to code", async () => {
    const engine = bankEngine({ policy: { read: "schema", write: "code" } });
    const session = await engine.createSession({ state: await bank.initialState() });
    expect(
      (await engine.call(session.id, { name: "get_account", arguments: { account_id: "ACC-1001" } }))
        .simulator,
    ).toBe("schema");
    expect((await engine.call(session.id, transfer(1))).simulator).toBe("code");
  });

  it("records a simulator failure as an error and leaves the state untouched", async () => {
    const failing: Simulator = {
      name: "llm",
      handles: () => true,
      simulate: async () => {
        throw new Error("the model gave up");
      },
    };
    const engine = bankEngine({ simulators: [failing], policy: "llm" });
    const session = await engine.createSession({ state: { untouched: true } });
    const outcome = await engine.call(session.id, transfer(1));
    expect(outcome).toMatchObject({
      status: "error",
      observation: { error: "the model gave up" },
      simulator: "llm",
    });
    expect(await engine.state(session.id)).toEqual({ untouched: true });
  });

  it("keeps 30 concurrent sessions apart: each final state is the replay of its own history", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "terrarium-engine-")), "s.sqlite");
    const engine = bankEngine({ store: new SqliteStore(path) });
    const initial = await bank.initialState();
    const sessions = await Promise.all(
      Array.from({ length: 30 }, () => engine.createSession({ state: initial })),
    );
    await Promise.all(
      sessions.map(async (session, s) => {
        await Promise.all(
          Array.from({ length: 20 }, (_, i) => engine.call(session.id, transfer(((s + i) % 7) + 1))),
        );
      }),
    );
    for (const session of sessions) {
      let replayed: unknown = initial;
      for (const entry of await engine.history(session.id))
        replayed = applyTolerantly(replayed, entry.result.changes as never).state;
      expect(canonicalJson(await engine.state(session.id))).toBe(canonicalJson(replayed));
      expect((await engine.history(session.id)).length).toBe(20);
    }
    await engine.close();
  });
});

describe("tolerant application of model-proposed changes", () => {
  it("creates parents, turns a replace of a missing path into an add, and skips a missing remove", () => {
    const { state, applied } = applyTolerantly({ a: {} }, [
      { op: "add", path: "/users/u1/name", after: "Ada" },
      { op: "replace", path: "/a/count", after: 1 },
      { op: "remove", path: "/nothing/here" },
      { op: "add", path: "/list/-", after: "x" },
      { op: "add", path: "/pets/77/name", after: "Tom" },
      { op: "add", path: "/tags/-/label", after: "new" },
    ]);
    expect(state).toEqual({
      a: { count: 1 },
      users: { u1: { name: "Ada" } },
      list: ["x"],
      pets: { "77": { name: "Tom" } },
      tags: [{ label: "new" }],
    });
    expect(applied.map((c) => c.op)).toEqual(["add", "add", "add", "add", "add"]);
  });
});

describe("session export, import and replay", () => {
  it("imports an export as an identical new session, and replays its calls with another simulator", async () => {
    const engine = bankEngine();
    const session = await engine.createSession({ state: await bank.initialState() });
    await engine.call(session.id, transfer(10));
    await engine.call(session.id, { name: "get_account", arguments: { account_id: "ACC-1001" } });
    await engine.setState(session.id, { ...((await engine.state(session.id)) as object), note: "edited" });
    await engine.call(session.id, transfer(5000));
    await engine.call(session.id, transfer(20));
    const exported = JSON.parse(JSON.stringify(await engine.exportSession(session.id)));

    const imported = await engine.importSession(exported);
    const again = await engine.exportSession(imported.id);
    expect(again.snapshots).toEqual(exported.snapshots);
    expect(again.history).toEqual(exported.history);
    expect(again.session.metadata).toEqual({ importedFrom: session.id });
    await expect(engine.importSession({ schemaVersion: 9 } as never)).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });

    const { session: replayed, outcomes } = await engine.replay(session.id, "schema");
    expect(outcomes.map((o) => o.simulator)).toEqual(["schema", "schema", "schema", "schema"]);
    // The schema simulator never changes the state: the replay stays at the first snapshot.
    expect(await engine.state(replayed.id)).toEqual(exported.snapshots[0].state);
    const { outcomes: exact } = await engine.replay(session.id, "code");
    expect(exact.map((o) => o.status)).toEqual(["ok", "ok", "tool_error", "ok"]);
  });
});
