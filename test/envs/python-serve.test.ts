import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { canonicalJson } from "../../src/core/index.js";
import { loadPythonEnvironment, type PythonEnvironment } from "../../src/envs/python/environment.js";
import { SqliteStore } from "../../src/sessions/index.js";
import { applyTolerantly, CodeSimulator, Engine } from "../../src/sim/index.js";
import { FIXTURES } from "../helpers/paths.js";

/**
 * Python environments behind the engine, as `serve` runs them: live instances per session that are
 * rebuilt (fork, reset, restart) from the store, failed calls that leave no trace, isolation between
 * sessions, and a protocol that tool code cannot corrupt.
 */
const PY = join(FIXTURES, "python");
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close().catch(() => undefined);
});

const tempDb = () => join(mkdtempSync(join(tmpdir(), "terrarium-pyserve-")), "sessions.sqlite");

async function serve(descriptor: string, db = tempDb()) {
  const environment = await loadPythonEnvironment(join(PY, descriptor));
  const simulator = new CodeSimulator(environment, "t");
  const engine = new Engine({
    catalog: new Catalog(environment.tools),
    store: new SqliteStore(db),
    simulators: [simulator],
    seed: 1,
    initialState: await environment.initialState(),
  });
  let closed = false;
  const handle = {
    engine,
    environment,
    simulator,
    db,
    async close() {
      if (closed) return;
      closed = true;
      await engine.close();
    },
  };
  open.push(handle);
  return handle;
}

type Peek = { total: number; rolls: number[]; calls: number };

/** What the live Python object holds (hidden count included), next to the stored state. */
async function peek(engine: Engine, session: string): Promise<Peek> {
  const outcome = await engine.call(session, { name: "peek", arguments: {} });
  expect(outcome.status).toBe("ok");
  return outcome.observation as Peek;
}

/** The live object agrees with the stored state, and its hidden count with the calls that succeeded. */
async function expectConsistent(engine: Engine, session: string, calls: number) {
  const state = (await engine.state(session)) as { total: number; rolls: number[] };
  expect(await peek(engine, session)).toEqual({ total: state.total, rolls: state.rolls, calls });
}

/** The state a session's stored history gives when its changes are applied to its first snapshot. */
async function replayOfHistory(engine: Engine, session: string): Promise<unknown> {
  const exported = await engine.exportSession(session);
  let state = exported.snapshots[0]?.state;
  for (const entry of exported.history) state = applyTolerantly(state, entry.result.changes as never[]).state;
  return state;
}

/** A class built from a config (which it ignores): the old state-as-config rebuild did not fail outright. */
const TAKES_CONFIG = "counter-config-ignoring.yaml";
const add = (n: number) => ({ name: "add", arguments: { n } });
const roll = { name: "roll", arguments: {} };

describe("Python environments under the engine", () => {
  it("a class with a no-argument constructor keeps working after every rebuild (fork, reset)", async () => {
    const { engine } = await serve("counter.yaml");
    const session = await engine.createSession();
    expect((await engine.call(session.id, add(2))).status).toBe("ok");
    expect((await engine.call(session.id, roll)).status).toBe("ok");
    expect((await engine.call(session.id, add(3))).status).toBe("ok");
    await expectConsistent(engine, session.id, 3);

    // A fork of the latest snapshot and one of snapshot 1 (after add 2) are rebuilt by replay.
    const latest = await engine.fork(session.id);
    const added = await engine.call(latest.id, add(10));
    expect(added).toMatchObject({ status: "ok", observation: 15 });
    await expectConsistent(engine, latest.id, 4);
    const early = await engine.fork(session.id, 1);
    await expectConsistent(engine, early.id, 1);
    expect(await engine.state(early.id)).toEqual({ total: 2, rolls: [] });

    // A reset goes back to a fresh object.
    await engine.reset(session.id);
    await expectConsistent(engine, session.id, 0);
    expect((await engine.call(session.id, add(1))).observation).toBe(1);
    // The fork is untouched by its parent's reset.
    expect(canonicalJson(await engine.state(latest.id))).toBe(
      canonicalJson(await replayOfHistory(engine, latest.id)),
    );
  });

  it("a failed call that changed the object before failing leaves no trace (engine and env run)", async () => {
    const { engine, environment } = await serve(TAKES_CONFIG);
    const session = await engine.createSession();
    await engine.call(session.id, add(5));
    const raised = await engine.call(session.id, { name: "add_then_fail", arguments: { n: 7 } });
    expect(raised.status).toBe("tool_error");
    expect((raised.observation as { error: string }).error).toMatch(/RuntimeError: failed after changing/);
    const refused = await engine.call(session.id, { name: "add_then_refuse", arguments: { n: 3 } });
    expect(refused).toMatchObject({ status: "tool_error", changes: [] });
    expect(await engine.state(session.id)).toEqual({ total: 5, rolls: [] });
    await expectConsistent(engine, session.id, 1);
    expect((await engine.call(session.id, add(1))).observation).toBe(6);
    expect(canonicalJson(await engine.state(session.id))).toBe(
      canonicalJson(await replayOfHistory(engine, session.id)),
    );

    // The same through the environment directly, as `env run` uses it.
    const instance = await environment.create({ seed: 1 });
    await instance.step(add(2));
    const failed = await instance.step({ name: "add_then_fail", arguments: { n: 40 } });
    expect(failed).toMatchObject({ success: false, changes: [], after: { total: 2, rolls: [] } });
    const next = await instance.step({ name: "peek", arguments: {} });
    expect(next.observation).toEqual({ total: 2, rolls: [], calls: 1 });
    await instance.close();
  });

  for (const descriptor of ["counter.yaml", "counter-config-ignoring.yaml"]) {
    it(`a server restart rebuilds sessions and forks by replaying their calls with their seeds (${descriptor})`, async () => {
      const first = await serve(descriptor);
      const a = await first.engine.createSession();
      await first.engine.call(a.id, add(4));
      await first.engine.call(a.id, roll);
      await first.engine.call(a.id, roll);
      await first.engine.call(a.id, { name: "add_then_fail", arguments: { n: 1 } });
      await first.engine.call(a.id, add(6));
      const b = await first.engine.fork(a.id, 2); // after add 4 and one roll
      await first.engine.call(b.id, roll);
      // A reset session's lineage starts again from its first snapshot.
      const c = await first.engine.createSession();
      await first.engine.call(c.id, add(50));
      await first.engine.reset(c.id);
      await first.engine.call(c.id, add(7));
      await first.engine.call(c.id, roll);
      const before = { a: await first.engine.state(a.id), b: await first.engine.state(b.id) };
      await first.close();

      const second = await serve(descriptor, first.db);
      expect(await second.engine.state(a.id)).toEqual(before.a);
      await expectConsistent(second.engine, a.id, 4);
      await expectConsistent(second.engine, b.id, 3);
      await expectConsistent(second.engine, c.id, 2);
      expect((await second.engine.state(c.id)) as { total: number }).toMatchObject({ total: 7 });
      expect(await second.engine.state(b.id)).toEqual(before.b);
      // Every call that succeeded was stored with the seed it ran under.
      const history = await second.engine.history(a.id);
      expect(history.filter((entry) => entry.result.status === "ok").every((entry) => entry.seed)).toBe(true);
      const rolled = await second.engine.call(a.id, roll);
      expect(rolled.status).toBe("ok");
      for (const id of [a.id, b.id])
        expect(canonicalJson(await second.engine.state(id))).toBe(
          canonicalJson(await replayOfHistory(second.engine, id)),
        );
    });
  }

  it("a state set from outside is taken through set_state, and refused with a clear error without it", async () => {
    const settable = await serve("counter-settable.yaml");
    const s = await settable.engine.createSession();
    await settable.engine.call(s.id, add(1));
    await settable.engine.setState(s.id, { total: 42, rolls: [7], calls: 3 });
    expect((await settable.engine.call(s.id, add(1))).observation).toBe(43);
    expect(await settable.engine.state(s.id)).toEqual({ total: 43, rolls: [7], calls: 4 });
    expect(settable.environment.tools.map((tool) => tool.name)).not.toContain("set_state");

    const plain = await serve("counter.yaml");
    const p = await plain.engine.createSession();
    await plain.engine.call(p.id, add(1));
    await plain.engine.setState(p.id, { total: 42, rolls: [] });
    const refused = await plain.engine.call(p.id, add(1));
    expect(refused.status).toBe("error");
    expect((refused.observation as { error: string }).error).toMatch(
      /^cannot rebuild the session: its calls start from a state \(set from outside, or changed by another simulator\) that Counter cannot be built at: with it as its config, it raised TypeError: .*Give the class set_state\(state\)/,
    );
    expect(await plain.engine.state(p.id)).toEqual({ total: 42, rolls: [] });
    // Setting the first state again is a reset: reachable, so calls go on.
    await plain.engine.setState(p.id, { total: 0, rolls: [] });
    expect((await plain.engine.call(p.id, add(2))).observation).toBe(2);
    await plain.engine.call(p.id, add(5));
    // So is a state the session had before (an undo): its lineage continues from there.
    await plain.engine.setState(p.id, { total: 2, rolls: [] });
    expect((await plain.engine.call(p.id, add(10))).observation).toBe(12);
    await expectConsistent(plain.engine, p.id, 2);
  });

  it("a call that hangs in one session does not fail or hold up calls of other sessions", async () => {
    const { engine } = await serve(TAKES_CONFIG);
    const [slow, fast] = [await engine.createSession(), await engine.createSession()];
    await engine.call(slow.id, add(1));
    await engine.call(fast.id, add(1));
    let fastDoneAt = 0;
    const hanging = engine.call(slow.id, { name: "stall", arguments: { seconds: 30 } }).then((outcome) => ({
      outcome,
      at: Date.now(),
    }));
    const others = (async () => {
      const outcomes = [];
      for (let i = 0; i < 3; i++) outcomes.push(await engine.call(fast.id, add(1)));
      fastDoneAt = Date.now();
      return outcomes;
    })();
    const [stalled, quick] = await Promise.all([hanging, others]);
    expect(quick.map((outcome) => outcome.status)).toEqual(["ok", "ok", "ok"]);
    expect(fastDoneAt).toBeLessThan(stalled.at);
    expect(stalled.outcome.status).toBe("tool_error");
    expect((stalled.outcome.observation as { error: string }).error).toMatch(
      /^the call ran longer than 1500 ms and was stopped; the environment was restored/,
    );
    await expectConsistent(engine, slow.id, 1);
    await expectConsistent(engine, fast.id, 4);
  });

  it("tool code writing to stdout without a newline, or reading stdin, cannot touch the protocol", async () => {
    const { engine } = await serve(TAKES_CONFIG);
    const session = await engine.createSession();
    // Before, a write to the protocol's stdout corrupted the reply and the call ran into its time limit.
    const chatty = await engine.call(session.id, { name: "chatty", arguments: {} });
    expect(chatty).toMatchObject({ status: "ok", observation: "said" });
    const asked = await engine.call(session.id, { name: "ask", arguments: {} });
    expect(asked.status).toBe("tool_error");
    expect((asked.observation as { error: string }).error).toMatch(/EOFError/);
    const exited = await engine.call(session.id, { name: "quit_now", arguments: {} });
    expect(exited.status).toBe("tool_error");
    expect((exited.observation as { error: string }).error).toMatch(/SystemExit: 3/);
    expect((await engine.call(session.id, add(2))).observation).toBe(2);
  });

  it("numbers JSON cannot hold exactly are refused with the reason, never rounded", async () => {
    const { engine } = await serve(TAKES_CONFIG);
    const session = await engine.createSession();
    await engine.call(session.id, add(3));
    const big = await engine.call(session.id, { name: "big", arguments: {} });
    expect(big.status).toBe("tool_error");
    expect((big.observation as { error: string }).error).toBe(
      "the call's result was refused: the integer 1267650600228229401496703205376 at / cannot be sent as JSON " +
        "exactly: JSON numbers hold integers exactly only up to 2**53 - 1 (JavaScript reads them as doubles); " +
        "return it as a string",
    );
    const infinite = await engine.call(session.id, { name: "infinite", arguments: {} });
    expect((infinite.observation as { error: string }).error).toMatch(
      /^the call's result was refused: the float inf at \/ cannot be sent as JSON exactly: JSON has no infinity/,
    );
    const stored = await engine.call(session.id, { name: "store_big", arguments: {} });
    expect(stored.status).toBe("tool_error");
    expect((stored.observation as { error: string }).error).toMatch(
      /^the call's state was refused: the integer 1267650600228229401496703205376 at \/total/,
    );
    expect(await engine.state(session.id)).toEqual({ total: 3, rolls: [] });
    await expectConsistent(engine, session.id, 1);
  });
});

describe("Python instances and their processes", () => {
  it("each instance has its own process; a crash is repaired by replay with no KeyError", async () => {
    const environment: PythonEnvironment = await loadPythonEnvironment(join(PY, TAKES_CONFIG));
    open.push(environment);
    const one = await environment.create({ seed: 1 });
    const two = await environment.create({ seed: 2 });
    await one.step(roll);
    await two.step(add(5));
    environment.crashForTesting();
    const [a, b] = await Promise.all([
      one.step({ name: "peek", arguments: {} }),
      two.step({ name: "peek", arguments: {} }),
    ]);
    expect(a.success && b.success).toBe(true);
    expect((a.observation as Peek).calls).toBe(1);
    expect(b.observation).toEqual({ total: 5, rolls: [], calls: 1 });
  });

  it("an object that can be neither pickled nor copied is undone by replay after a failed call", async () => {
    const environment = await loadPythonEnvironment(join(PY, "counter-unpicklable.yaml"));
    open.push(environment);
    const instance = await environment.create({ seed: 1 });
    await instance.step(add(2));
    await instance.step(roll);
    const rolled = (await instance.state()) as { rolls: number[] };
    const failed = await instance.step({ name: "add_then_fail", arguments: { n: 9 } });
    expect(failed).toMatchObject({ success: false, changes: [] });
    const next = await instance.step({ name: "peek", arguments: {} });
    expect(next.observation).toEqual({ total: 2, rolls: rolled.rolls, calls: 2 });
  });

  it("a refused reset leaves the instance where it was", async () => {
    const environment = await loadPythonEnvironment(join(PY, "counter.yaml"));
    open.push(environment);
    const instance = await environment.create();
    await instance.step(add(3));
    await expect(instance.reset({ total: 8, rolls: [] })).rejects.toThrow(
      /^Counter cannot start from this state: built with it as its config, it raised TypeError/,
    );
    expect(await instance.state()).toEqual({ total: 3, rolls: [] });
    const next = await instance.step({ name: "peek", arguments: {} });
    expect(next.observation).toEqual({ total: 3, rolls: [], calls: 1 });
  });
});
