import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { DEFAULT_MAX_JSON_DEPTH, parseJsonText } from "../../src/core/checked-json.js";
import { ManualClock } from "../../src/core/index.js";
import { DEFAULT_MAX_JSON_DEPTH as CORE_MAX_JSON_DEPTH } from "../../src/core/json-limits.js";
import { defineEnvironment } from "../../src/envs/define.js";
import { CodeSimulator, Engine, type EngineOptions } from "../../src/sim/index.js";
import { jsonDepth, jsonSize } from "../../src/sim/limits.js";

/**
 * What the engine stores can always be exported and imported back: a result, a change or a state nested
 * deeper than a session export may be (the server's body limit, which imports go through) is refused when
 * it is produced, as a failed call with TOO_LARGE, the state untouched. Results larger than
 * maxResultBytes are refused the same way.
 */
const nested = (depth: number): unknown => {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

const deep = defineEnvironment<{ count: number; deep?: unknown }>({
  name: "deep",
  description: "Results and states of any depth and size.",
  initialState: { count: 0 },
  tools: {
    bump: {
      description: "Adds one.",
      effect: "write",
      run: ({ state }) => {
        state.count++;
        return state.count;
      },
    },
    nest: {
      description: "A result nested `depth` levels, after a change that must not be kept when it is refused.",
      input: { type: "object", properties: { depth: { type: "integer" } }, required: ["depth"] },
      effect: "write",
      run: ({ state, args }) => {
        state.count += 100;
        return nested(args.depth);
      },
    },
    nest_state: {
      description: "Stores a value nested `depth` levels under /deep.",
      input: { type: "object", properties: { depth: { type: "integer" } }, required: ["depth"] },
      effect: "write",
      run: ({ state, args }) => {
        state.deep = nested(args.depth);
        return "stored";
      },
    },
    blob: {
      description: "A string result of `bytes` bytes.",
      input: { type: "object", properties: { bytes: { type: "integer" } }, required: ["bytes"] },
      effect: "read",
      run: ({ args }) => "x".repeat(args.bytes),
    },
  },
});

async function deepEngine(options: Partial<EngineOptions> = {}): Promise<Engine> {
  return new Engine({
    catalog: new Catalog(deep.tools),
    simulators: [new CodeSimulator(deep, "t")],
    initialState: await deep.initialState(),
    clock: new ManualClock("2025-03-01T00:00:00Z", 1000),
    seed: 1,
    ...options,
  });
}

/** The export as the server sends it, read back through the server's own body check, and imported. */
async function roundTrip(engine: Engine, id: string) {
  const text = JSON.stringify(await engine.exportSession(id));
  const imported = await engine.importSession(parseJsonText(text));
  return { imported, text };
}

describe("engine: results a session export can hold", () => {
  it("agrees with the server on the import limit", () => {
    expect(CORE_MAX_JSON_DEPTH).toBe(DEFAULT_MAX_JSON_DEPTH);
  });

  it("refuses a result nested deeper than an export can hold, keeps the state, and the export imports back", async () => {
    const engine = await deepEngine();
    const session = await engine.createSession();
    await engine.call(session.id, { name: "bump" });
    // 256 levels in the document, 4 of them the export's own: a result may nest 252.
    const fits = await engine.call(session.id, { name: "nest", arguments: { depth: 252 } });
    expect(fits.status).toBe("ok");
    const refused = await engine.call(session.id, { name: "nest", arguments: { depth: 253 } });
    expect(refused).toMatchObject({
      status: "error",
      changes: [],
      observation: {
        error:
          "the tool's result is nested deeper than 252 levels (a session export, limited to 256, could not hold it)",
      },
      errors: [{ rule: "TOO_LARGE" }],
    });
    expect(await engine.state(session.id)).toEqual({ count: 101 });
    // The instance was rebuilt from the store: the refused call's change is nowhere.
    expect((await engine.call(session.id, { name: "bump" })).observation).toBe(102);
    const { imported, text } = await roundTrip(engine, session.id);
    expect(jsonDepth(JSON.parse(text), 1000)).toBe(256);
    expect(await engine.history(imported.id)).toEqual(await engine.history(session.id));
    expect(await engine.state(imported.id)).toEqual({ count: 102 });
    await engine.close();
  });

  it("refuses a change that would nest the state or its history entry too deep", async () => {
    const engine = await deepEngine();
    const message =
      "the tool's change at /deep would nest the state or the session's history deeper than a session export (limited to 256 levels) can hold";
    // A change's value sits 6 levels into the export ({history: [{result: {changes: [{after}]}}]}): 250 fit.
    const fresh = await engine.createSession();
    const refused = await engine.call(fresh.id, { name: "nest_state", arguments: { depth: 251 } });
    expect(refused).toMatchObject({
      status: "error",
      observation: { error: message },
      errors: [{ rule: "TOO_LARGE" }],
    });
    expect(await engine.state(fresh.id)).toEqual({ count: 0 });
    // Grown a level at a time, each change is small, but the state may nest only 253 levels (3 are the export's).
    const session = await engine.createSession();
    for (const depth of [250, 251, 252]) {
      expect((await engine.call(session.id, { name: "nest_state", arguments: { depth } })).status).toBe("ok");
    }
    expect(jsonDepth(await engine.state(session.id), 1000)).toBe(253);
    const deeper = await engine.call(session.id, { name: "nest_state", arguments: { depth: 253 } });
    expect(deeper).toMatchObject({ status: "error", errors: [{ rule: "TOO_LARGE" }] });
    expect(jsonDepth(await engine.state(session.id), 1000)).toBe(253);
    const { imported, text } = await roundTrip(engine, session.id);
    expect(jsonDepth(JSON.parse(text), 1000)).toBe(256);
    expect(await engine.state(imported.id)).toEqual(await engine.state(session.id));
    await engine.close();
  });

  it("refuses states set from outside that an export could not hold", async () => {
    const engine = await deepEngine();
    const session = await engine.createSession();
    await expect(engine.setState(session.id, { count: 0, deep: nested(253) })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message:
        "the state is nested deeper than 253 levels (a session export, limited to 256, could not hold it)",
    });
    await engine.setState(session.id, { count: 0, deep: nested(252) });
    const { imported } = await roundTrip(engine, session.id);
    expect(await engine.state(imported.id)).toEqual(await engine.state(session.id));
    await engine.close();
  });

  it("refuses arguments nested too deep before recording anything", async () => {
    const engine = await deepEngine();
    const session = await engine.createSession();
    await expect(
      engine.call(session.id, { name: "bump", arguments: { x: nested(252) } }),
    ).rejects.toMatchObject({
      code: "TOO_LARGE",
      message: expect.stringContaining("nested deeper than 252 levels"),
    });
    expect(await engine.history(session.id)).toEqual([]);
    await engine.close();
  });

  it("follows a configured depth limit", async () => {
    const engine = await deepEngine({ maxJsonDepth: 32 });
    const session = await engine.createSession();
    expect((await engine.call(session.id, { name: "nest", arguments: { depth: 28 } })).status).toBe("ok");
    expect((await engine.call(session.id, { name: "nest", arguments: { depth: 29 } })).errors).toMatchObject([
      { rule: "TOO_LARGE" },
    ]);
    const text = JSON.stringify(await engine.exportSession(session.id));
    expect(() => parseJsonText(text, 32)).not.toThrow();
    await engine.close();
  });
});

describe("engine: results by size", () => {
  it("refuses a result over maxResultBytes (10 MB by default) as a failed call", async () => {
    const engine = await deepEngine();
    const session = await engine.createSession();
    const refused = await engine.call(session.id, { name: "blob", arguments: { bytes: 11 * 1024 * 1024 } });
    expect(refused).toMatchObject({
      status: "error",
      observation: { error: "the tool's result is larger than the limit of 10 MB of JSON (maxResultBytes)" },
      errors: [{ rule: "TOO_LARGE" }],
    });
    expect((await engine.call(session.id, { name: "blob", arguments: { bytes: 1024 } })).status).toBe("ok");
    const small = await deepEngine({ maxResultBytes: 1000 });
    const other = await small.createSession();
    expect((await small.call(other.id, { name: "blob", arguments: { bytes: 996 } })).status).toBe("ok");
    expect((await small.call(other.id, { name: "blob", arguments: { bytes: 999 } })).errors).toMatchObject([
      {
        rule: "TOO_LARGE",
        message: "the tool's result is larger than the limit of 1000 bytes of JSON (maxResultBytes)",
      },
    ]);
    await engine.close();
  });

  it("measures JSON the way JSON.stringify writes it, and stops early on huge values", () => {
    for (const value of [
      { a: [1, 2.5, "three", null, true, false], ké: { nested: ["é"] } },
      [],
      {},
      "text",
      [[[]]],
    ]) {
      expect(jsonSize(value, 1e9)).toBe(Buffer.byteLength(JSON.stringify(value)));
    }
    const huge = Array.from({ length: 1000 }, () => "x".repeat(1000));
    expect(jsonSize(huge, 5000)).toBeLessThan(10_000);
    expect(jsonSize(huge, 5000)).toBeGreaterThan(5000);
    expect(jsonDepth(nested(100_000), 300)).toBe(301);
  });
});
