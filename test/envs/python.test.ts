import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Environment } from "../../src/envs/index.js";
import { loadPythonEnvironment, type PythonEnvironment } from "../../src/envs/python/environment.js";
import { FIXTURES } from "../helpers/paths.js";

const PY = join(FIXTURES, "python");
const opened: Environment[] = [];
async function open(name: string): Promise<Environment> {
  const environment = await loadPythonEnvironment(join(PY, name));
  opened.push(environment);
  return environment;
}
afterAll(async () => {
  for (const environment of opened) await environment.close?.();
});

describe("Python environments through the bridge", () => {
  it("loads a class from a file, derives tools from signatures and docstrings, and serialises odd types", async () => {
    const env = await open("warehouse.yaml");
    expect(env.name).toBe("warehouse");
    expect(env.description).toBe("Stock across warehouses; orders reserve stock.");
    expect(env.source.kind).toBe("python");
    expect(env.source.code).toContain("class WarehouseEnv");
    const stock = env.tools.find((tool) => tool.name === "stock");
    expect(stock).toMatchObject({
      description: "Total quantity of a SKU across warehouses.",
      inputSchema: {
        type: "object",
        properties: { sku: { type: "string", description: "the stock keeping unit to count" } },
        required: ["sku"],
        additionalProperties: false,
      },
    });
    expect(env.tools.find((tool) => tool.name === "move")?.inputSchema.properties).toMatchObject({
      quantity: { type: "integer", default: 1 },
    });
    expect(env.tools.map((tool) => tool.name).sort()).toEqual([
      "die",
      "explode",
      "move",
      "place_order",
      "stall",
      "stock",
    ]);
    expect(await env.initialState()).toEqual({
      warehouses: {
        north: { bins: { A1: 10, B2: 3 }, tags: ["cold"] },
        south: { bins: { A1: 1 }, tags: [] },
      },
      orders: {},
      next_order: 1,
      opened: "2024-05-01",
      unit_price: 2.5,
      flags: ["audited", "insured"],
      location: [52.5, 13.4],
    });
  });

  it("steps with changes in both formats, reports returned errors and raised exceptions as failures", async () => {
    const env = await open("warehouse.yaml");
    const instance = await env.create({ seed: 7 });
    const moved = await instance.step({
      name: "move",
      arguments: { sku: "A1", source: "north", target: "south", quantity: 4 },
    });
    expect(moved).toMatchObject({ success: true, observation: { success: true, moved: 4 }, delta: 2 });
    expect(moved.envChanges).toEqual([
      { path: "warehouses.north.bins.A1", type: "modified", before: 10, after: 6 },
      { path: "warehouses.south.bins.A1", type: "modified", before: 1, after: 5 },
    ]);
    const short = await instance.step({
      name: "move",
      arguments: { sku: "B2", source: "south", target: "north" },
    });
    expect(short).toMatchObject({
      success: false,
      observation: { error: "not enough B2 in south" },
      delta: 0,
    });
    const raised = await instance.step({ name: "explode", arguments: { reason: "testing" } });
    expect(raised.success).toBe(false);
    expect((raised.observation as { error: string }).error).toMatch(
      /Traceback[\s\S]*ValueError: cannot do that: testing/,
    );
    const invalid = await instance.step({ name: "move", arguments: { sku: "A1" } });
    expect(invalid.observation).toMatchObject({ error: "invalid call" });
    const order = await instance.step({ name: "place_order", arguments: { sku: "A1", quantity: 2 } });
    expect(order.observation).toBe("O1");
    expect(order.delta).toBe(2); // orders.O1 added, next_order modified
    expect((order.after as { orders: Record<string, { lines: string[] }> }).orders.O1?.lines).toEqual([
      "A1",
      "A1",
    ]);
    await instance.close();
  });

  it("loads a class by module from a pythonPath, with an object graph whose back-references become refs", async () => {
    const env = await open("tree.yaml");
    const instance = await env.create();
    const state = (await instance.state()) as { root: any; size: number };
    expect(state.size).toBe(4);
    expect(state.root.name).toBe("root");
    expect(state.root.parent).toBeNull();
    expect(state.root.children[1].children[0]).toEqual({
      name: "lib",
      parent: { $ref: "#/root/children/1" },
      children: [],
    });
    const added = await instance.step({ name: "add_child", arguments: { parent: "docs", name: "guide" } });
    expect(added).toMatchObject({ success: true, observation: "added guide", delta: 2 });
    expect(added.envChanges.map((change) => change.path)).toEqual(["root.children", "size"]);
    const missing = await instance.step({ name: "add_child", arguments: { parent: "nope", name: "x" } });
    expect(missing).toMatchObject({ success: false, observation: { error: "no node nope" } });
  });

  it("forks a deep copy and builds an instance from a recorded state", async () => {
    const env = await open("warehouse.yaml");
    const a = await env.create();
    await a.step({ name: "move", arguments: { sku: "A1", source: "north", target: "south", quantity: 1 } });
    const b = await a.fork();
    await b.step({ name: "move", arguments: { sku: "A1", source: "north", target: "south", quantity: 1 } });
    const bins = async (i: typeof a) => ((await i.state()) as any).warehouses.north.bins.A1;
    expect([await bins(a), await bins(b)]).toEqual([9, 8]);
    const recorded = {
      ...((await a.state()) as object),
      warehouses: { east: { bins: { Z9: 5 }, tags: [] } },
      next_order: 40,
    };
    const c = await env.create({ state: recorded });
    expect(await c.state()).toEqual(recorded);
    const order = await c.step({ name: "place_order", arguments: { sku: "Z9", quantity: 1 } });
    expect(order.observation).toBe("O40");
    // A state the class cannot be built at (its constructor sets "opened" itself) is refused, not guessed.
    const partial = { warehouses: { east: { bins: { Z9: 5 }, tags: [] } }, orders: {}, next_order: 40 };
    await expect(env.create({ state: partial })).rejects.toThrow(
      /^WarehouseEnv cannot start from this state: built with it as its config, it has \/opened, which the state lacks/,
    );
  });

  it("stops a call that runs past the time limit, restores the state and goes on", async () => {
    const env = await open("warehouse.yaml");
    const instance = await env.create();
    await instance.step({
      name: "move",
      arguments: { sku: "A1", source: "north", target: "south", quantity: 2 },
    });
    const stalled = await instance.step({ name: "stall", arguments: { seconds: 30 } });
    expect(stalled.success).toBe(false);
    expect(stalled.observation).toEqual({
      error:
        "the call ran longer than 1500 ms and was stopped; the environment was restored to its state before the call",
    });
    // The bridge was restarted and the instance rebuilt by replaying its calls.
    const next = await instance.step({ name: "stock", arguments: { sku: "A1" } });
    expect(next.observation).toEqual({ sku: "A1", total: 11 });
    expect((next.after as any).warehouses.north.bins.A1).toBe(8);
  });

  it("survives a crash of the Python process without losing any instance", async () => {
    const env = (await open("warehouse.yaml")) as PythonEnvironment;
    const first = await env.create({ seed: 3 });
    const second = await env.create();
    const ticket1 = await first.step({ name: "place_order", arguments: { sku: "A1", quantity: 1 } });
    await second.step({
      name: "move",
      arguments: { sku: "B2", source: "north", target: "south", quantity: 3 },
    });
    const died = await first.step({ name: "die", arguments: {} });
    expect(died.success).toBe(false);
    expect((died.observation as { error: string }).error).toMatch(/^the Python process died during the call/);
    // Both instances come back exactly as they were, seeded randomness included.
    expect(await first.state()).toEqual(ticket1.after);
    const after = await second.step({ name: "stock", arguments: { sku: "B2" } });
    expect((after.after as any).warehouses.south.bins.B2).toBe(3);
    const replayed = await first.step({ name: "stock", arguments: { sku: "A1" } });
    expect(replayed.after).toEqual(ticket1.after);
    env.crashForTesting();
    const again = await second.step({ name: "stock", arguments: { sku: "B2" } });
    expect(again.observation).toEqual({ sku: "B2", total: 3 });
  });

  it("reports a descriptor or class problem with the file", async () => {
    await expect(loadPythonEnvironment(join(FIXTURES, "tools", "openai-tools.json"))).rejects.toMatchObject({
      code: "CONFIG_INVALID",
    });
  });
});

describe("Python observation text", () => {
  it("keeps Python's str() of a result for EnvSimBench", async () => {
    const env = await open("warehouse.yaml");
    const instance = await env.create();
    const moved = await instance.step({
      name: "move",
      arguments: { sku: "A1", source: "north", target: "south", quantity: 1 },
    });
    expect(moved.observation).toEqual({ success: true, moved: 1 });
    expect(moved.observationText).toBe("{'success': True, 'moved': 1}");
    const { toSample } = await import("../../src/bench/envsim/collect.js");
    expect(toSample(env, "t", 1, moved).observationText).toBe("{'success': True, 'moved': 1}");
  });
});
