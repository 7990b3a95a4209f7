import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { applyChanges, ManualClock } from "../../src/core/index.js";
import { BUILTIN_ENVIRONMENTS, type Environment, loadEnvironment } from "../../src/envs/index.js";
import { Models, parseConfig } from "../../src/models/index.js";
import { applyTolerantly, CodeSimulator, Engine, LlmSimulator } from "../../src/sim/index.js";
import { FIXTURES } from "../helpers/paths.js";
import { type ScriptedLlmServer, startScriptedLlmServer } from "../helpers/scripted-llm-server.js";

/**
 * The three routes by which a hostile key once reached the server's Object.prototype — sandboxed tool
 * code, a Python tool storing under a caller's key, and an llm simulator's answer — and the reads that
 * mistook a prototype member for data. Keys such as `__proto__` are ordinary data keys now.
 */
const polluted = () => ({}) as Record<string, unknown>;
let closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers) await close();
  closers = [];
  expect(polluted().polluted).toBeUndefined();
});

function engineFor(environment: Environment, initialState: unknown) {
  const engine = new Engine({
    catalog: new Catalog(environment.tools),
    simulators: [new CodeSimulator(environment, "hostile")],
    clock: new ManualClock("2025-03-01T00:00:00Z", 1000),
    initialState,
    seed: 1,
  });
  closers.push(() => engine.close());
  return engine;
}

/** A key named `__proto__` as own data, read without touching any prototype. */
const own = (value: unknown, key: string) => Object.getOwnPropertyDescriptor(value, key)?.value;

describe("prototype pollution", () => {
  it("sandboxed JavaScript: a state key named __proto__ and a write under it stay data", async () => {
    const environment = await loadEnvironment(join(FIXTURES, "hostile", "hostile.quickjs.yaml"));
    const engine = engineFor(environment, await environment.initialState());
    const session = await engine.createSession();
    expect((await engine.call(session.id, { name: "plant", arguments: {} })).status).toBe("ok");
    expect((await engine.call(session.id, { name: "write_under", arguments: {} })).status).toBe("ok");
    expect(polluted().polluted).toBeUndefined();
    const state = await engine.state(session.id);
    expect(own(state, "__proto__")).toEqual({ polluted: "yes" });
    expect(JSON.parse(JSON.stringify(state))).toEqual(
      JSON.parse('{"counter":1,"__proto__":{"polluted":"yes"}}'),
    );
    // Other calls and sessions go on as before.
    const other = await engine.createSession();
    expect(await engine.call(other.id, { name: "bump", arguments: {} })).toMatchObject({
      status: "ok",
      observation: 1,
    });
  });

  it("Python: values stored under a caller's key __proto__ stay in the state", async () => {
    const environment = await loadEnvironment(join(FIXTURES, "hostile", "keyed-store.yaml"));
    const engine = engineFor(environment, await environment.initialState());
    const session = await engine.createSession();
    for (const field of ["polluted", "second"]) {
      const outcome = await engine.call(session.id, {
        name: "put",
        arguments: { key: "__proto__", field, value: "yes" },
      });
      expect(outcome.status).toBe("ok");
    }
    expect(polluted().polluted).toBeUndefined();
    expect(polluted().second).toBeUndefined();
    const state = (await engine.state(session.id)) as { items: unknown };
    expect(own(state.items, "__proto__")).toEqual({ polluted: "yes", second: "yes" });
  });

  describe("an llm simulator's changes", () => {
    let server: ScriptedLlmServer | undefined;
    afterEach(() => server?.close());

    it("writes a change at /__proto__/polluted into a key of that name", async () => {
      const catalog = Catalog.fromDocument([
        { name: "note", description: "Write a note.", parameters: { type: "object", properties: {} } },
      ]);
      const answer = (changes: unknown[]) => ({
        reply: { content: JSON.stringify({ status: "ok", observation: { ok: true }, changes }) },
      });
      server = await startScriptedLlmServer([
        answer([{ op: "add", path: "/__proto__/polluted", value: "yes" }]),
        answer([{ op: "replace", path: "/constructor/prototype/polluted", value: "yes" }]),
      ]);
      const models = new Models({
        config: parseConfig({
          providers: {
            scripted: { type: "openai-compatible", baseURL: server.baseURL, structuredOutputs: true },
          },
          roles: { simulator: "scripted:sim" },
          retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 2 },
        }),
        cache: null,
      });
      const engine = new Engine({
        catalog,
        simulators: [new LlmSimulator(models, { mode: "merged" })],
        seed: 1,
        clock: new ManualClock(),
      });
      closers.push(() => engine.close());
      const session = await engine.createSession({ state: { notes: {} } });
      expect((await engine.call(session.id, { name: "note", arguments: {} })).status).toBe("ok");
      expect((await engine.call(session.id, { name: "note", arguments: {} })).status).toBe("ok");
      expect(polluted().polluted).toBeUndefined();
      expect(JSON.stringify(await engine.state(session.id))).toBe(
        '{"notes":{},"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}',
      );
    });
  });

  it("patch appliers treat every key as own data", () => {
    const hostile = [
      { op: "add" as const, path: "/__proto__/polluted", after: "yes" },
      { op: "add" as const, path: "/a/constructor/prototype/polluted", after: "yes" },
    ];
    const { state } = applyTolerantly({ a: {} }, hostile);
    expect(JSON.stringify(state)).toBe(
      '{"a":{"constructor":{"prototype":{"polluted":"yes"}}},"__proto__":{"polluted":"yes"}}',
    );
    const exact = applyChanges(JSON.parse('{"__proto__": {}}'), [hostile[0] as (typeof hostile)[0]]);
    expect(JSON.stringify(exact)).toBe('{"__proto__":{"polluted":"yes"}}');
    // The exact applier refuses paths through missing keys rather than following a prototype.
    expect(() => applyChanges({}, [hostile[0] as (typeof hostile)[0]])).toThrow(/does not exist/);
    expect(polluted().polluted).toBeUndefined();
  });

  it("validation sees only own arguments: __proto__ is an unknown argument, a declared constructor is checked", async () => {
    const catalog = Catalog.fromDocument([
      {
        name: "make",
        description: "Make something.",
        parameters: {
          type: "object",
          properties: { constructor: { type: "integer" }, name: { type: "string" } },
          required: ["constructor"],
        },
      },
    ]);
    const engine = new Engine({ catalog, seed: 1, clock: new ManualClock() });
    closers.push(() => engine.close());
    const session = await engine.createSession();
    const call = async (json: string) =>
      (await engine.call(session.id, { name: "make", arguments: JSON.parse(json) })).errors;
    expect(await call("{}")).toMatchObject([
      { rule: "required", message: 'missing required argument "constructor"' },
    ]);
    expect(await call('{"constructor": "x"}')).toMatchObject([{ path: "/constructor", rule: "type" }]);
    expect(await call('{"constructor": 1, "__proto__": {"polluted": 1}}')).toMatchObject([
      { rule: "unknown_argument", message: expect.stringContaining('unknown argument "__proto__"') },
    ]);
    expect(await call('{"constructor": 1, "name": "ok"}')).toEqual([]);
  });

  it("tools read only what the state holds: no account is named __proto__ or constructor", async () => {
    const bank = BUILTIN_ENVIRONMENTS.bank as Environment;
    const engine = engineFor(bank, await bank.initialState());
    const session = await engine.createSession();
    for (const account_id of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      const outcome = await engine.call(session.id, { name: "get_account", arguments: { account_id } });
      expect(outcome).toMatchObject({
        status: "tool_error",
        observation: { error: `no account ${account_id}` },
      });
    }
  });
});
