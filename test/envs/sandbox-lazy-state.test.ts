import { describe, expect, it } from "vitest";
import { defineSandboxedEnvironment, type SandboxedToolDescriptor } from "../../src/envs/sandbox/quickjs.js";
import { runOnPlainCopy } from "../helpers/sandbox-reference.js";

/**
 * A sandboxed tool sees the state as a lazy draft (prelude.ts): parts are read from the worker when the
 * tool first reads them, writes alone read nothing, and only what the tool changed comes back. Whatever
 * the tool does, the new state must be exactly what the same code makes of a plain copy of the state,
 * key order included. Each tool below runs in the sandbox and, as the reference, on a JSON copy of the
 * state in this thread; the two new states must have the same JSON text.
 */

const INITIAL = {
  count: 1,
  title: "start",
  items: { a: { n: 1, tags: ["x"] }, b: { n: 2, tags: [] }, c: { n: 3, tags: ["y", "z"] } },
  list: [1, { deep: true }, [2, 3]],
  nested: { one: { two: { three: 3 } } },
  ["__proto__"]: { kept: "as data" },
};

const TOOLS: Record<string, string> = {
  write_only: "(ctx) => { ctx.state.items.d = { n: 4 }; ctx.state.count = 2; }",
  read_then_write: "(ctx) => { ctx.state.items.a.n += ctx.state.items.b.n; }",
  deep_write: "(ctx) => { ctx.state.nested.one.two.four = 4; delete ctx.state.nested.one.two.three; }",
  delete_then_add: "(ctx) => { delete ctx.state.items.a; ctx.state.items.a = { n: 9 }; }",
  pending_delete_then_add: "(ctx) => { delete ctx.state.count; ctx.state.count = 5; }",
  delete_new_key: "(ctx) => { ctx.state.items.e = 1; delete ctx.state.items.e; ctx.state.items.f = 2; }",
  reorder: "(ctx) => { const t = ctx.state.title; delete ctx.state.title; ctx.state.title = t + '!'; }",
  array_push: "(ctx) => { ctx.state.items.a.tags.push('w'); ctx.state.list.push(4); }",
  array_read_only: "(ctx) => ctx.state.list.length + ctx.state.items.c.tags.length",
  array_nested_object: "(ctx) => { ctx.state.list[1].deep = false; ctx.state.list[2][0] = 7; }",
  alias: "(ctx) => { ctx.state.copy = ctx.state.items.b; ctx.state.items.b.n = 20; }",
  move: "(ctx) => { const a = ctx.state.items.a; delete ctx.state.items; ctx.state.moved = a; a.n = 8; }",
  detach: "(ctx) => { const n = ctx.state.nested; ctx.state.nested = {}; n.one.extra = 1; }",
  replace_state: "(ctx) => { ctx.state = { fresh: true, count: ctx.state.count }; }",
  spread: "(ctx) => { ctx.state.items = { ...ctx.state.items, z: { n: 26 } }; }",
  keys_after_write:
    "(ctx) => { ctx.state.items.q = { n: 0 }; return Object.keys(ctx.state.items).join(','); }",
  in_check:
    "(ctx) => { if (!('zz' in ctx.state.items)) ctx.state.items.zz = 1; return 'b' in ctx.state.items; }",
  undefined_value: "(ctx) => { ctx.state.title = undefined; ctx.state.items.a = () => 1; }",
  proto_key:
    "(ctx) => { ctx.state['__proto__'].added = 1; ctx.state.nested['__proto__'] = { also: 'data' }; }",
  to_json: "(ctx) => { ctx.state.items.toJSON = () => ({ summarized: true }); }",
  getter: "(ctx) => { Object.defineProperty(ctx.state.items, 'g', { get: () => 7, enumerable: true }); }",
  hidden: "(ctx) => { Object.defineProperty(ctx.state.items, 'h', { value: 1, enumerable: false }); }",
  stringify_inside: "(ctx) => { ctx.state.snapshot = JSON.parse(JSON.stringify(ctx.state.items)); }",
  same_value: "(ctx) => { ctx.state.count = 1; ctx.state.items.a = ctx.state.items.a; }",
  assign_self_subtree: "(ctx) => { ctx.state.items.c = ctx.state.items.c; ctx.state.items.c.n = 30; }",
  object_assign: "(ctx) => { Object.assign(ctx.state.items.b, { n: 5, m: 6 }); }",
  entries_loop:
    "(ctx) => { for (const [k, v] of Object.entries(ctx.state.items)) v.n *= 10; return Object.keys(ctx.state.items); }",
  sort_array: "(ctx) => { ctx.state.items.c.tags.sort().reverse(); }",
  freeze: "(ctx) => { Object.freeze(ctx.state.nested.one); }",
  set_prototype: "(ctx) => { Object.setPrototypeOf(ctx.state.items.a, null); ctx.state.items.a.p = 1; }",
};

describe("sandbox: the lazy state draft", () => {
  const tools: SandboxedToolDescriptor[] = Object.entries(TOOLS).map(([name, code]) => ({
    name,
    description: name,
    effect: "write",
    code,
  }));
  const environment = defineSandboxedEnvironment({
    kind: "quickjs",
    name: "lazy",
    description: "Tools that use the state in every way.",
    initialState: INITIAL,
    tools,
  });

  for (const [name, code] of Object.entries(TOOLS)) {
    it(`gives the state and the result plain objects give: ${name}`, async () => {
      const instance = await environment.create({ seed: 1 });
      const before = await instance.state();
      const transition = await instance.step({ name });
      const expected = runOnPlainCopy(code, before);
      expect(transition.success, JSON.stringify(transition.observation)).toBe(true);
      expect(JSON.stringify(transition.after)).toBe(expected.state);
      expect(JSON.stringify(transition.observation)).toBe(expected.observation);
      expect(JSON.stringify(await instance.state())).toBe(expected.state);
      // The changes reported lead from the old state to the new one, as for any step.
      expect(JSON.stringify(transition.before)).toBe(JSON.stringify(before));
    });
  }

  it("keeps the state as it was when a tool fails after writing", async () => {
    const failing = defineSandboxedEnvironment({
      kind: "quickjs",
      name: "failing",
      description: "Writes, then fails.",
      initialState: INITIAL,
      tools: [
        {
          name: "write_then_throw",
          description: "Writes and throws.",
          effect: "write",
          code: "(ctx) => { ctx.state.items.a.n = 100; ctx.state.count = 9; throw new Error('late'); }",
        },
        {
          name: "circular",
          description: "Writes a cycle.",
          effect: "write",
          code: "(ctx) => { ctx.state.self = ctx.state; }",
        },
      ],
    });
    const instance = await failing.create({ seed: 1 });
    const before = JSON.stringify(await instance.state());
    const thrown = await instance.step({ name: "write_then_throw" });
    expect(thrown.observation).toEqual({ error: "the tool raised an error: Error: late" });
    const circular = await instance.step({ name: "circular" });
    expect((circular.observation as { error: string }).error).toMatch(
      /^the tool's result or state cannot be stored as JSON: TypeError: circular reference/,
    );
    expect(JSON.stringify(await instance.state())).toBe(before);
  });
});
