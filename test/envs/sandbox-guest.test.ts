import { describe, expect, it } from "vitest";
import {
  type GuestHost,
  type GuestOutcome,
  type GuestRequest,
  SandboxEngine,
} from "../../src/envs/sandbox/engine.js";
import type { WasmMemory } from "../../src/envs/sandbox/heap.js";
import type { SandboxPool } from "../../src/envs/sandbox/pool.js";
import { defineSandboxedEnvironment } from "../../src/envs/sandbox/quickjs.js";
import { DerivedSnapshot, HeapSnapshot } from "../../src/envs/sandbox/snapshot.js";
import { runOnPlainCopy } from "../helpers/sandbox-reference.js";

/** WebAssembly.Memory (the project's type libraries do not declare WebAssembly). */
const MemoryClass = (
  globalThis as unknown as {
    WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory };
  }
).WebAssembly.Memory;

/**
 * What the guest's cheaper paths (issue 25, fourth round) must keep: clock readings shown by ctx.now() as
 * the host would show them, values drawn ahead taken in order and counted exactly, Object.prototype
 * guarded (its properties cannot be deleted, hidden or made accessors; any other change fails the call),
 * the lazy draft's direct writes giving the same state as the same code on a plain object, and a tool
 * image restored from its whole copy byte for byte as from its chunks.
 */

const LIMITS = { timeLimitMs: 2000, memoryLimitBytes: 8 * 1024 * 1024 };

/** A host that answers what the tapes do not hold, and says so. */
const HOST: GuestHost = {
  now: () => "host-now",
  clock: () => -42,
  random: () => 0.5,
  id: (prefix?: string) => (prefix ? `${prefix}_host` : "host"),
};

function returned(outcome: GuestOutcome): unknown {
  expect(outcome.kind, JSON.stringify(outcome)).toBe("returned");
  return (outcome as { observation: unknown }).observation;
}

describe("sandbox guest: values drawn ahead", () => {
  it("shows each clock reading as V8's ISO text, and asks the host from the first reading without one", async () => {
    const engine = await SandboxEngine.load();
    const readings = [
      0, -1, 1.5, 1735689600123, 8.64e15, -8.64e15, 253402300800000, 253402300799999, -62198755200000,
      -62198755200001, 1e15,
    ];
    const code = `(ctx) => { const out = []; for (let i = 0; i < ${readings.length}; i++) out.push(ctx.now()); return out; }`;
    const outcome = engine.run(
      {
        code,
        input: '{"state":{},"args":{}}',
        changes: true,
        tapes: { clock: readings, random: [], ids: [] },
      },
      HOST,
      LIMITS,
    );
    expect(returned(outcome)).toEqual(readings.map((reading) => new Date(reading).toISOString()));
    // A reading past Date's range ends the tape: that reading and the ones after it come from the host.
    const broken = [1000, 8.64e15 + 1, 2000];
    const mixed = engine.run(
      {
        code: "(ctx) => [ctx.now(), Date.now(), ctx.now(), new Date().getTime()]",
        input: '{"state":{},"args":{}}',
        changes: true,
        tapes: { clock: broken, random: [], ids: [] },
      },
      HOST,
      LIMITS,
    );
    expect(returned(mixed)).toEqual([new Date(1000).toISOString(), -42, "host-now", -42]);
  });

  it("gives ids and random numbers exactly, whatever the ids hold, and counts what the call took", async () => {
    const engine = await SandboxEngine.load();
    const ids = ["a,b", "line\nbreak", "", "[x]", "é ü 🙂", '"quoted"', "plain"];
    const random = [0.1, 0.123456789012345, 1e-300, 0.9999999999999999];
    const code = `(ctx) => {
      const out = [];
      for (let i = 0; i < ${ids.length}; i++) out.push(ctx.id());
      out.push(ctx.id("p"));
      for (let i = 0; i < 5; i++) out.push(Math.random());
      return out;
    }`;
    const raw = engine.execute(
      { code, input: '{"state":{},"args":{}}', changes: true, tapes: { clock: [], random, ids } },
      HOST,
      LIMITS,
    );
    expect(raw.kind === "ran" && raw.used).toEqual({ clock: 0, random: 5, ids: ids.length + 1 });
    expect(raw.kind === "ran" && JSON.parse(raw.text ?? "null").observation).toEqual([
      ...ids,
      "p_host",
      ...random,
      0.5,
    ]);
    // An async tool's count is read after its promise settled, the same way.
    const later = engine.execute(
      {
        code: "async (ctx) => { await null; ctx.id(); await null; return [ctx.id(), ctx.random()]; }",
        input: '{"state":{},"args":{}}',
        changes: true,
        tapes: { clock: [], random: [0.25], ids: ["one", "two"] },
      },
      HOST,
      LIMITS,
    );
    expect(later.kind === "ran" && later.used).toEqual({ clock: 0, random: 1, ids: 2 });
    expect(later.kind === "ran" && JSON.parse(later.text ?? "null").observation).toEqual(["two", 0.25]);
  });
});

describe("sandbox guest: Object.prototype", () => {
  const tool = (name: string, code: string) => ({
    name,
    description: name,
    effect: "write" as const,
    code,
  });
  const environment = defineSandboxedEnvironment({
    kind: "quickjs",
    name: "guarded",
    description: "Tools that reach for Object.prototype.",
    initialState: { counter: 0 },
    tools: [
      tool("delete", "(ctx) => { ctx.state.counter = 1; delete Object.prototype.toString; return 'done'; }"),
      tool(
        "accessor",
        "(ctx) => { ctx.state.counter = 2; Object.defineProperty(Object.prototype, 'valueOf', { get() { return 1; } }); }",
      ),
      tool(
        "hide",
        "(ctx) => { ctx.state.counter = 3; Object.defineProperty(Object.prototype, 'hasOwnProperty', { enumerable: true }); }",
      ),
      tool(
        "read_only",
        "(ctx) => { ctx.state.counter = 4; Object.defineProperty(Object.prototype, 'toString', { writable: false }); }",
      ),
      tool("replace", "(ctx) => { ctx.state.counter = 5; Object.prototype.toLocaleString = () => 'x'; }"),
      tool("freeze", "(ctx) => { ctx.state.counter = 6; Object.freeze(Object.prototype); }"),
      tool("symbol", "(ctx) => { ctx.state.counter = 7; Object.prototype[Symbol.iterator] = null; }"),
      tool(
        "hidden_key",
        "(ctx) => { ctx.state.counter = 8; Object.defineProperty(Object.prototype, 'quiet', { value: 1 }); }",
      ),
      tool(
        "put_back",
        "(ctx) => { const saved = Object.prototype.toString; Object.prototype.toString = () => 'x'; Object.prototype.toString = saved; ctx.state.counter = 9; return 'ok'; }",
      ),
      tool(
        "caught",
        "(ctx) => { try { delete Object.prototype.valueOf; } catch (error) { ctx.state.counter = 10; return String(error.name); } }",
      ),
    ],
  });

  it("refuses to delete a property, hide it or make it an accessor, and leaves the state as it was", async () => {
    const instance = await environment.create({ seed: 1 });
    for (const name of ["delete", "accessor", "hide"]) {
      const transition = await instance.step({ name });
      expect(transition.success, name).toBe(false);
      expect((transition.observation as { error: string }).error, name).toMatch(
        /^the tool raised an error: TypeError: /,
      );
    }
    expect(await instance.state()).toEqual({ counter: 0 });
  });

  it("fails a call that changes a value, makes a property read-only, freezes it or adds a key", async () => {
    const instance = await environment.create({ seed: 1 });
    const changed: Record<string, string> = {
      read_only: '"toString"',
      replace: '"toLocaleString"',
      freeze: '"toString"',
      symbol: "Symbol(Symbol.iterator)",
      hidden_key: '"quiet"',
    };
    for (const [name, key] of Object.entries(changed)) {
      const transition = await instance.step({ name });
      expect((transition.observation as { error: string }).error, name).toBe(
        `the tool changed the built-in Object.prototype (${key}), which sandboxed tools may not do`,
      );
    }
    expect(await instance.state()).toEqual({ counter: 0 });
  });

  it("lets a call that put everything back, or caught the refusal, succeed", async () => {
    const instance = await environment.create({ seed: 1 });
    const back = await instance.step({ name: "put_back" });
    expect(back.observation).toBe("ok");
    const caught = await instance.step({ name: "caught" });
    expect(caught.observation).toBe("TypeError");
    expect(await instance.state()).toEqual({ counter: 10 });
  });
});

/**
 * The lazy draft's direct paths: a write to a draft goes straight to its object when nothing up the
 * prototype chain has a say, and the changes of a node are listed without the key-order check when no
 * key can have moved. Each tool runs in the sandbox and on a plain JSON copy; the states must match.
 */
const INITIAL = {
  count: 1,
  items: { a: { n: 1 }, "2": { n: 2 }, b: { n: 3 } },
  flat: { x: 1, y: 2 },
  list: [1, 2],
};

const TOOLS: Record<string, string> = {
  read_then_write: "(ctx) => { ctx.state.flat.x = ctx.state.flat.y + 1; ctx.state.flat.z = 3; }",
  index_key_after_read: "(ctx) => { const n = ctx.state.items.a.n; ctx.state.items['1'] = { n }; }",
  index_key_unread: "(ctx) => { ctx.state.items['0'] = 1; ctx.state.items.c = 2; }",
  index_key_define:
    "(ctx) => { ctx.state.flat.x; Object.defineProperty(ctx.state.flat, '5', { value: 5, enumerable: true, writable: true, configurable: true }); }",
  prototype_named_keys:
    "(ctx) => { ctx.state.flat.x; ctx.state.flat.constructor = 1; ctx.state.flat.toString = 'two'; ctx.state.valueOf = 3; }",
  overwrite_unread_child: "(ctx) => { ctx.state.count = 2; ctx.state.items = { fresh: true }; }",
  overwrite_unread_array: "(ctx) => { ctx.state.flat.x; ctx.state.list = [3]; }",
  delete_after_read: "(ctx) => { ctx.state.flat.x; delete ctx.state.flat.x; ctx.state.flat.w = 0; }",
  delete_readd_after_read:
    "(ctx) => { const x = ctx.state.flat.x; delete ctx.state.flat.x; ctx.state.flat.x = x + 1; }",
  write_then_read: "(ctx) => { ctx.state.flat.q = 1; return Object.keys(ctx.state.flat).join(); }",
  inherited_receiver:
    "(ctx) => { const child = Object.create(ctx.state.flat); child.x = 9; ctx.state.flat.y = child.x; }",
  read_only_key:
    "(ctx) => { Object.defineProperty(ctx.state.flat, 'x', { writable: false }); try { ctx.state.flat.x = 5; } catch (error) { ctx.state.count = error.name; } }",
  sealed_add:
    "(ctx) => { Object.seal(ctx.state.flat); try { ctx.state.flat.k = 1; } catch (error) { ctx.state.count = error.name; } }",
  same_key_twice:
    "(ctx) => { ctx.state.count = 5; ctx.state.count = 6; ctx.state.items.a.n = 7; ctx.state.items.a.n = 8; }",
  deep_unread_writes:
    "(ctx) => { ctx.state.items.a.m = 1; ctx.state.items.b.n = 4; ctx.state.items['2'].n = 5; }",
};

describe("sandbox guest: the lazy draft's direct writes", () => {
  const environment = defineSandboxedEnvironment({
    kind: "quickjs",
    name: "direct",
    description: "Tools that write in every way.",
    initialState: INITIAL,
    tools: Object.entries(TOOLS).map(([name, code]) => ({
      name,
      description: name,
      effect: "write" as const,
      code,
    })),
  });
  for (const [name, code] of Object.entries(TOOLS)) {
    it(`gives the state and the result plain objects give: ${name}`, async () => {
      const instance = await environment.create({ seed: 1 });
      const transition = await instance.step({ name });
      const expected = runOnPlainCopy(code, INITIAL);
      expect(transition.success, JSON.stringify(transition.observation)).toBe(true);
      expect(JSON.stringify(transition.after)).toBe(expected.state);
      expect(JSON.stringify(transition.observation)).toBe(expected.observation);
    });
  }
});

describe("sandbox guest: tool images restored whole", () => {
  it("writes back the same bytes from a whole copy as from the base and the chunks", () => {
    const memory = new MemoryClass({ initial: 4, maximum: 16 });
    const bytes = () => new Uint8Array(memory.buffer);
    const layout = { staticEnd: 8192, heapStart: 65536 };
    for (let i = 0; i < 8192; i++) bytes()[i] = i % 251;
    for (let i = 65536; i < 65536 + 30000; i++) bytes()[i] = (i * 7) % 253 || 1;
    const base = new HeapSnapshot(memory, layout);
    DerivedSnapshot.clearTail(memory, base);
    // The work: a change in the static part, two in the heap, and memory written past the base's heap.
    bytes()[100] = 0;
    bytes()[70000] = 0xee;
    bytes()[90000] = 0xee;
    for (let i = 0; i < 5000; i++) bytes()[base.heapEnd + i] = 9;
    const image = new DerivedSnapshot(memory, base);
    const expected = bytes().slice();
    const scribble = () => {
      for (let i = 0; i < memory.buffer.byteLength; i += 97) bytes()[i] = 0x5a;
    };
    const visible = () => [
      ...bytes().subarray(0, layout.staticEnd),
      ...bytes().subarray(65536, 65536 + 40000),
    ];
    const want = [...expected.subarray(0, layout.staticEnd), ...expected.subarray(65536, 65536 + 40000)];
    scribble();
    image.restore();
    expect(visible()).toEqual(want);
    image.keepWhole();
    expect(image.keptWhole).toBe(true);
    scribble();
    image.restore();
    expect(visible()).toEqual(want);
    image.dropWhole();
    scribble();
    image.restore();
    expect(visible()).toEqual(want);
  });

  it("keeps whole copies for the images used last only, and answers the same from either", async () => {
    const engine = await SandboxEngine.load();
    const request = (code: string, count: number): GuestRequest => ({
      code,
      input: JSON.stringify({ state: { count }, args: {} }),
      changes: true,
    });
    const codes = Array.from({ length: 12 }, (_, i) => `(ctx) => { ctx.state.count += ${i}; return ${i}; }`);
    for (let round = 0; round < 2; round++) {
      codes.forEach((code, i) => {
        expect(engine.run(request(code, 100), HOST, LIMITS)).toEqual({
          kind: "returned",
          observation: i,
          changes: [[0, ["count"], 100 + i]],
        });
      });
    }
    const warm = (engine as unknown as { warm: { whole: unknown[]; images: Map<string, unknown> } }).warm;
    expect(warm.images.size).toBe(12);
    expect(warm.whole.length).toBe(8);
  });
});

/** A pool whose every call answers with the given changes, as the guest's report would. */
function answering(changes: unknown): SandboxPool {
  return {
    warm: async () => undefined,
    run: async () => ({ kind: "returned", observation: "ok", changes }) satisfies GuestOutcome,
  } as unknown as SandboxPool;
}

describe("sandbox guest: applying the reported changes", () => {
  const make = (changes: unknown) =>
    defineSandboxedEnvironment(
      {
        kind: "quickjs",
        name: "applied",
        description: "Changes given by a scripted pool.",
        initialState: { count: 1, nested: { a: { n: 1 }, list: [1, 2] }, flag: true },
        tools: [{ name: "apply", description: "apply", effect: "write", code: "(ctx) => null" }],
      },
      { pool: answering(changes) },
    );

  it("records only what differs: a value written back as it was is no change, before or after a real one", async () => {
    const instance = await make([
      [0, ["count"], 1],
      [0, ["nested", "a", "n"], 2],
      [0, ["flag"], true],
      [0, ["nested", "list"], [1, 2]],
      [0, ["count"], 1],
    ]).create({ seed: 1 });
    const transition = await instance.step({ name: "apply" });
    expect(transition.success).toBe(true);
    expect(transition.changes).toEqual([{ op: "replace", path: "/nested/a/n", before: 1, after: 2 }]);
  });

  it("refuses a path that does not lead through objects of the state, and keeps the state", async () => {
    for (const path of [
      ["missing", "x"],
      ["count", "x"],
      ["nested", "list", "0"],
      ["nested", "a", "n", "x"],
    ]) {
      const instance = await make([
        [0, ["count"], 5],
        [0, path, 1],
      ]).create({ seed: 1 });
      const transition = await instance.step({ name: "apply" });
      expect(transition.success, path.join("/")).toBe(false);
      expect(transition.observation).toEqual({
        error: "the sandbox could not read what the tool did: a malformed change",
      });
      expect(await instance.state()).toEqual({ count: 1, nested: { a: { n: 1 }, list: [1, 2] }, flag: true });
    }
  });
});
