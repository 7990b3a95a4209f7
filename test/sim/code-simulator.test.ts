import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { loadPythonEnvironment } from "../../src/envs/python/environment.js";
import { Engine } from "../../src/sim/index.js";
import { CodeSimulator, DEFAULT_MAX_LIVE_INSTANCES } from "../../src/sim/simulators/code.js";
import { FIXTURES } from "../helpers/paths.js";

const engines: Engine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

async function counterEngine(maxLiveInstances?: number) {
  const environment = await loadPythonEnvironment(join(FIXTURES, "python", "counter.yaml"));
  const simulator = new CodeSimulator(
    environment,
    "t",
    maxLiveInstances === undefined ? {} : { maxLiveInstances },
  );
  const engine = new Engine({
    catalog: new Catalog(environment.tools),
    simulators: [simulator],
    seed: 1,
    initialState: await environment.initialState(),
  });
  engines.push(engine);
  return { engine, simulator, environment };
}

const add = (n: number) => ({ name: "add", arguments: { n } });
const peek = { name: "peek", arguments: {} };

describe("the code simulator's live instances", () => {
  it("keeps at most maxLiveInstances, closes the least recently used, and rebuilds it exactly on demand", async () => {
    const { engine, simulator, environment } = await counterEngine(2);
    const [s1, s2, s3] = [
      await engine.createSession(),
      await engine.createSession(),
      await engine.createSession(),
    ];
    await engine.call(s1.id, add(1));
    await engine.call(s2.id, add(2));
    await engine.call(s2.id, add(20));
    await engine.call(s3.id, add(3));
    // s1 was the least recently used: its instance (and its Python process) is closed.
    expect(simulator.liveInstances).toBe(2);
    expect(environment.openInstances).toBe(2);
    // Called again, s1 is rebuilt by replaying its calls (the hidden count proves it is not a guess) ...
    expect((await engine.call(s1.id, peek)).observation).toEqual({ total: 1, rolls: [], calls: 1 });
    // ... and s2, now the least recently used, made room.
    expect(simulator.liveInstances).toBe(2);
    expect(environment.openInstances).toBe(2);
    expect((await engine.call(s2.id, peek)).observation).toEqual({ total: 22, rolls: [], calls: 2 });
    expect((await engine.call(s3.id, add(1))).observation).toBe(4);
    expect(simulator.liveInstances).toBe(2);
  });

  it("never closes an instance while a call runs on it", async () => {
    const { engine, simulator } = await counterEngine(1);
    const [busy, other] = [await engine.createSession(), await engine.createSession()];
    await engine.call(busy.id, add(1));
    const slow = engine.call(busy.id, { name: "stall", arguments: { seconds: 0.5 } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const quick = await engine.call(other.id, add(5));
    expect(quick).toMatchObject({ status: "ok", observation: 5 });
    expect(await slow).toMatchObject({ status: "ok", observation: "awake" });
    expect(simulator.liveInstances).toBe(1);
    expect((await engine.call(busy.id, peek)).observation).toEqual({ total: 1, rolls: [], calls: 1 });
  });

  it("defaults to 64 and bounds TypeScript environments the same way", async () => {
    expect(DEFAULT_MAX_LIVE_INSTANCES).toBe(64);
    const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;
    const simulator = new CodeSimulator(bank, "t", { maxLiveInstances: 1 });
    const engine = new Engine({ catalog: new Catalog(bank.tools), simulators: [simulator], seed: 1 });
    engines.push(engine);
    const initial = await bank.initialState();
    const [a, b] = [
      await engine.createSession({ state: initial }),
      await engine.createSession({ state: initial }),
    ];
    const transfer = (amount: number) => ({
      name: "transfer",
      arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount },
    });
    for (const amount of [10, 20, 30]) {
      expect((await engine.call(a.id, transfer(amount))).status).toBe("ok");
      expect((await engine.call(b.id, transfer(amount * 2))).status).toBe("ok");
      expect(simulator.liveInstances).toBe(1);
    }
    const balance = async (id: string) => ((await engine.state(id)) as any).accounts["ACC-1001"].balance;
    const start = (initial as any).accounts["ACC-1001"].balance;
    expect([await balance(a.id), await balance(b.id)]).toEqual([start - 60, start - 120]);
  });
});
