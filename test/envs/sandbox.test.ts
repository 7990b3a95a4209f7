import { describe, expect, it } from "vitest";
import { createIdGenerator } from "../../src/core/ids.js";
import { createRandom } from "../../src/core/random.js";
import { defineEnvironment, SEEDED_CLOCK_START } from "../../src/envs/define.js";
import {
  defineSandboxedEnvironment,
  type SandboxedEnvironmentDescriptor,
  type SandboxedToolDescriptor,
} from "../../src/envs/sandbox/quickjs.js";
import type { EnvironmentInstance, Transition } from "../../src/envs/types.js";

/** A notebook whose tools are JavaScript source, as a model would write them. */
const notebook: SandboxedEnvironmentDescriptor = {
  kind: "quickjs",
  name: "notebook",
  description: "A notebook: a title, an edit counter and notes with ids and timestamps.",
  initialState: { title: "Inbox", edits: 0, notes: {}, limits: { max_notes: 2 } },
  tools: [
    {
      name: "get_notebook",
      description: "Return the title, the number of edits and the ids of the notes.",
      effect: "read",
      code: "(ctx) => ({ title: ctx.state.title, edits: ctx.state.edits, note_ids: Object.keys(ctx.state.notes) })",
    },
    {
      name: "rename",
      description: "Change the title of the notebook.",
      effect: "write",
      input: { properties: { title: { type: "string", minLength: 1 } }, required: ["title"] },
      code: `function (ctx) {
        const previous = ctx.state.title;
        ctx.state.title = ctx.args.title;
        return { previous, title: ctx.args.title };
      }`,
    },
    {
      name: "add_note",
      description: "Add a note (the notebook holds at most limits.max_notes notes).",
      effect: "write",
      input: {
        properties: {
          text: { type: "string", minLength: 1 },
          tags: { type: "array", items: { type: "string" } },
        },
        required: ["text"],
      },
      code: `(ctx) => {
        const max = ctx.state.limits.max_notes;
        if (Object.keys(ctx.state.notes).length >= max) ctx.fail("the notebook is full", { max_notes: max });
        const id = ctx.id("note");
        const created_at = ctx.now();
        ctx.state.notes[id] = { text: ctx.args.text, tags: ctx.args.tags ?? [], created_at };
        ctx.state.edits += 1;
        return { note_id: id, created_at };
      }`,
    },
  ],
};

interface Notebook {
  title: string;
  edits: number;
  notes: Record<string, { text: string; tags: string[]; created_at: string }>;
  limits: { max_notes: number };
}

/** The same notebook written as a TypeScript environment: both must give the same transitions. */
const typescriptNotebook = defineEnvironment<Notebook>({
  name: "notebook",
  description: notebook.description,
  initialState: notebook.initialState as unknown as Notebook,
  tools: {
    get_notebook: {
      description: "Return the title, the number of edits and the ids of the notes.",
      effect: "read",
      run: ({ state }) => ({ title: state.title, edits: state.edits, note_ids: Object.keys(state.notes) }),
    },
    rename: {
      description: "Change the title of the notebook.",
      effect: "write",
      input: { properties: { title: { type: "string", minLength: 1 } }, required: ["title"] },
      run: ({ state, args }) => {
        const previous = state.title;
        state.title = args.title;
        return { previous, title: args.title };
      },
    },
    add_note: {
      description: "Add a note (the notebook holds at most limits.max_notes notes).",
      effect: "write",
      input: {
        properties: {
          text: { type: "string", minLength: 1 },
          tags: { type: "array", items: { type: "string" } },
        },
        required: ["text"],
      },
      run: ({ state, args, ids, now, fail }) => {
        const max = state.limits.max_notes;
        if (Object.keys(state.notes).length >= max) fail("the notebook is full", { max_notes: max });
        const id = ids.next("note");
        const created_at = now();
        state.notes[id] = { text: args.text, tags: args.tags ?? [], created_at };
        state.edits += 1;
        return { note_id: id, created_at };
      },
    },
  },
});

const SESSION: Array<{ name: string; arguments?: unknown }> = [
  { name: "get_notebook" },
  { name: "rename", arguments: { title: "Work" } },
  { name: "add_note", arguments: { text: "call the bank", tags: ["todo"] } },
  { name: "add_note", arguments: { text: "" } },
  { name: "rename", arguments: { title: "Work", color: "red" } },
  { name: "add_note", arguments: { text: "buy milk" } },
  { name: "add_note", arguments: { text: "one too many" } },
  { name: "archive" },
  { name: "get_notebook" },
];

async function play(instance: EnvironmentInstance, calls = SESSION): Promise<Transition[]> {
  const transitions: Transition[] = [];
  for (const call of calls) transitions.push(await instance.step(call));
  return transitions;
}

/** The ids a seeded instance generates, by the same rule as defineEnvironment. */
function expectedIds(seed: string | number, count: number): string[] {
  const ids = createIdGenerator(createRandom(seed).derive("ids"));
  return Array.from({ length: count }, () => ids.next("note"));
}

describe("sandboxed environments: a working domain", () => {
  const environment = defineSandboxedEnvironment(notebook, { timeLimitMs: 1000 });

  it("describes itself like a TypeScript environment, with its JavaScript as source", async () => {
    expect(environment.name).toBe("notebook");
    expect(environment.source.kind).toBe("quickjs");
    expect(environment.source.code).toContain("tool add_note (write)");
    expect(environment.source.code).toContain('ctx.fail("the notebook is full"');
    // Same schema conventions as defineEnvironment: closed argument objects, 2020-12, declared effects.
    expect(environment.tools).toEqual(typescriptNotebook.tools);
    expect(environment.tools.find((tool) => tool.name === "rename")?.inputSchema).toMatchObject({
      type: "object",
      additionalProperties: false,
      required: ["title"],
    });
    expect(await environment.initialState()).toEqual(notebook.initialState);
  });

  it("reads, writes one field, writes several with a generated id and time, and rejects through ctx.fail", async () => {
    const instance = await environment.create({ seed: "notes" });
    const [first, second] = expectedIds("notes", 2);

    const read = await instance.step({ name: "get_notebook" });
    expect(read).toEqual({
      call: { name: "get_notebook", arguments: {} },
      success: true,
      observation: { title: "Inbox", edits: 0, note_ids: [] },
      before: notebook.initialState,
      after: notebook.initialState,
      changes: [],
      envChanges: [],
      delta: 0,
    });

    const renamed = await instance.step({ name: "rename", arguments: { title: "Work" } });
    expect(renamed.success).toBe(true);
    expect(renamed.observation).toEqual({ previous: "Inbox", title: "Work" });
    expect(renamed.changes).toEqual([{ op: "replace", path: "/title", before: "Inbox", after: "Work" }]);
    expect(renamed.envChanges).toEqual([{ path: "title", type: "modified", before: "Inbox", after: "Work" }]);
    expect(renamed.delta).toBe(1);

    const added = await instance.step({
      name: "add_note",
      arguments: { text: "call the bank", tags: ["todo"] },
    });
    const note = { text: "call the bank", tags: ["todo"], created_at: SEEDED_CLOCK_START };
    expect(added.success).toBe(true);
    expect(added.observation).toEqual({ note_id: first, created_at: SEEDED_CLOCK_START });
    expect(added.after).toEqual({
      ...notebook.initialState,
      title: "Work",
      edits: 1,
      notes: { [first as string]: note },
    });
    expect(added.changes).toEqual([
      { op: "replace", path: "/edits", before: 0, after: 1 },
      { op: "add", path: `/notes/${first}`, after: note },
    ]);
    expect(added.delta).toBe(2);

    const again = await instance.step({ name: "add_note", arguments: { text: "buy milk" } });
    expect(again.observation).toEqual({ note_id: second, created_at: "2025-01-01T00:00:01.000Z" });

    const full = await instance.step({ name: "add_note", arguments: { text: "one too many" } });
    expect(full.success).toBe(false);
    expect(full.observation).toEqual({ error: "the notebook is full", max_notes: 2 });
    expect(full.after).toEqual(full.before);
    expect(full.changes).toEqual([]);
    expect(await instance.state()).toEqual(again.after);
  });

  it("records invalid arguments exactly as defineEnvironment does", async () => {
    const sandboxed = await environment.create({ seed: 7 });
    const typescript = await typescriptNotebook.create({ seed: 7 });
    for (const call of [
      { name: "rename", arguments: { title: "" } },
      { name: "rename", arguments: { title: "Work", color: "red" } },
      { name: "add_note", arguments: '{"tags": [1]}' },
      { name: "archive" },
    ]) {
      const transition = await sandboxed.step(call);
      expect(transition.success).toBe(false);
      expect(transition.observation).toMatchObject({ error: "invalid call" });
      expect(transition).toEqual(await typescript.step(call));
    }
  });

  it("gives the same transitions as the same tools written in TypeScript", async () => {
    const sandboxed = await play(await environment.create({ seed: 42 }));
    const typescript = await play(await typescriptNotebook.create({ seed: 42 }));
    expect(sandboxed).toEqual(typescript);
    expect(sandboxed.map((t) => t.success)).toEqual([
      true,
      true,
      true,
      false,
      false,
      true,
      false,
      false,
      true,
    ]);
  });

  it("is deterministic: the same seed and calls give identical transitions", async () => {
    const a = await play(await environment.create({ seed: "repeat" }));
    const b = await play(await environment.create({ seed: "repeat" }));
    const c = await play(await environment.create({ seed: "other" }));
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(JSON.stringify(a)).not.toBe(JSON.stringify(c));
  });

  it("forks and resets like a TypeScript environment", async () => {
    const instance = await environment.create({ seed: 3 });
    await instance.step({ name: "rename", arguments: { title: "Original" } });
    const fork = await instance.fork();
    expect(fork.environment).toBe(environment);
    await fork.step({ name: "rename", arguments: { title: "Fork" } });
    expect(await instance.state()).toMatchObject({ title: "Original" });
    expect(await fork.state()).toMatchObject({ title: "Fork" });
    await instance.reset();
    expect(await instance.state()).toEqual(notebook.initialState);
    await instance.reset({ title: "Given", edits: 9, notes: {}, limits: { max_notes: 1 } });
    expect((await instance.step({ name: "get_notebook" })).observation).toEqual({
      title: "Given",
      edits: 9,
      note_ids: [],
    });
    await expect(instance.reset([1, 2])).rejects.toThrow(/must be a JSON object/);
  });

  it("gives Date and Math.random the seeded clock and random source", async () => {
    const clocked = defineSandboxedEnvironment({
      kind: "quickjs",
      name: "clocked",
      description: "Reads the time and random numbers in every way a tool can.",
      initialState: {},
      tools: [
        {
          name: "sample",
          description: "Sample the clock and the random source.",
          effect: "read",
          code: `() => ({
            now: Date.now(),
            date: new Date().toISOString(),
            random: Math.random(),
            fixed: new Date(0).toISOString(),
            isDate: new Date() instanceof Date,
          })`,
        },
      ],
    });
    const instance = await clocked.create({ seed: 11 });
    const start = Date.parse(SEEDED_CLOCK_START);
    expect((await instance.step({ name: "sample" })).observation).toEqual({
      now: start,
      date: new Date(start + 1000).toISOString(),
      random: createRandom(11).next(),
      fixed: "1970-01-01T00:00:00.000Z",
      isDate: true,
    });
  });

  it("rejects malformed descriptors with a located error", () => {
    expect(() =>
      defineSandboxedEnvironment({
        ...notebook,
        tools: [...notebook.tools, { ...(notebook.tools[0] as SandboxedToolDescriptor) }],
      }),
    ).toThrow(/at \/tools\/3\/name: two tools are named "get_notebook"/);
    expect(() =>
      defineSandboxedEnvironment({ ...notebook, initialState: [] as unknown as Record<string, unknown> }),
    ).toThrow(/at \/initialState/);
    expect(() => defineSandboxedEnvironment(notebook, { memoryLimitBytes: 100 })).toThrow(/memoryLimitBytes/);
  });
});

describe("sandboxed environments: hostile and broken tools", () => {
  const tool = (name: string, code: string): SandboxedToolDescriptor => ({
    name,
    description: name,
    effect: "write",
    code,
  });
  const hostileDescriptor: SandboxedEnvironmentDescriptor = {
    kind: "quickjs",
    name: "hostile",
    description: "Tools that misbehave, next to one that does not.",
    initialState: { counter: 0 },
    tools: [
      tool("bump", "(ctx) => { ctx.state.counter += 1; return { counter: ctx.state.counter }; }"),
      tool("spin", "(ctx) => { ctx.state.counter = -1; while (true) {} }"),
      tool("spin_stubbornly", "() => { for (;;) { try { while (true) {} } catch (e) {} } }"),
      tool(
        "spin_in_microtasks",
        "() => { const again = () => Promise.resolve().then(again); again(); return again(); }",
      ),
      tool(
        "hoard",
        `(ctx) => {
            ctx.state.counter = -1;
            const page = "lorem ipsum ".repeat(5000).toUpperCase();
            const pages = [];
            for (let i = 0; ; i++) pages.push(page.slice(i % 10));
          }`,
      ),
      tool(
        "hoard_and_catch",
        `() => {
            try {
              const page = "dolor sit amet ".repeat(4000).toLowerCase();
              const pages = [];
              for (let i = 0; ; i++) pages.push(page.slice(i % 10));
            } catch (error) {
              return "survived: " + error;
            }
          }`,
      ),
      tool("use_process", "(ctx) => { ctx.state.counter = -1; return process.env; }"),
      tool("use_require", "() => require('fs').readFileSync('/etc/passwd', 'utf8')"),
      tool("use_fetch", "async () => (await fetch('http://example.com')).text()"),
      tool(
        "import_fs",
        "async (ctx) => { const fs = await import('fs'); ctx.state.counter = -1; return fs; }",
      ),
      tool("function_constructor", "() => (function () {}).constructor('return process')()"),
      tool("pollute", "(ctx) => { Object.prototype.isAdmin = true; ctx.state.counter = -1; return 'done'; }"),
      tool(
        "litter",
        "() => { globalThis.leftover = 1; Array.prototype.extra = 2; JSON.stringify = () => '{}'; return 'littered'; }",
      ),
      tool(
        "inspect",
        `() => ({
            process: typeof process, require: typeof require, fetch: typeof fetch, os: typeof globalThis.os,
            std: typeof globalThis.std, setTimeout: typeof setTimeout, console: typeof console,
            WebAssembly: typeof WebAssembly, isAdmin: ({}).isAdmin ?? null, leftover: typeof leftover,
            extra: [].extra ?? null, stringify: JSON.stringify({ a: 1 }),
          })`,
      ),
      tool("recurse", "() => { const deeper = (n) => deeper(n + 1) + 1; return deeper(0); }"),
      tool("throw_text", "() => { throw 'plain text'; }"),
      tool(
        "catch_own_fail",
        "(ctx) => { try { ctx.fail('no, and no') } catch (e) {} ctx.state.counter = -1; return 'ignored'; }",
      ),
      tool("never_settles", "() => new Promise(() => {})"),
      tool("circular", "(ctx) => { const loop = {}; loop.self = loop; ctx.state.loop = loop; return 'ok'; }"),
      tool("replace_state", "(ctx) => { ctx.state = [1, 2, 3]; return 'replaced'; }"),
      tool("not_a_function", "42"),
      tool("broken_syntax", "(ctx) => { return ctx.state.counter +; }"),
      tool("async_bump", "async (ctx) => { await null; ctx.state.counter += 10; return 'later'; }"),
      tool(
        "pollute_host",
        `(ctx) => {
            ctx.state = JSON.parse('{"counter": 5, "__proto__": {"polluted": 1}, "inner": {"__proto__": {"polluted": 2}}}');
            return JSON.parse('{"__proto__": {"polluted": 3}}');
          }`,
      ),
      tool("fail_polluted", `(ctx) => ctx.fail("refused", JSON.parse('{"__proto__": {"polluted": 4}}'))`),
    ],
  };
  const hostile = defineSandboxedEnvironment(hostileDescriptor, {
    timeLimitMs: 200,
    memoryLimitBytes: 8 * 1024 * 1024,
  });

  /** Runs a misbehaving tool, checks that it failed and changed nothing, and that a normal call still works. */
  async function expectContained(instance: EnvironmentInstance, name: string): Promise<string> {
    const before = await instance.state();
    const transition = await instance.step({ name });
    expect(transition.success).toBe(false);
    expect(transition.after).toEqual(before);
    expect(transition.changes).toEqual([]);
    expect(transition.delta).toBe(0);
    expect(await instance.state()).toEqual(before);
    const after = await instance.step({ name: "bump" });
    expect(after.success).toBe(true);
    expect(after.observation).toEqual({ counter: (before as { counter: number }).counter + 1 });
    return (transition.observation as { error: string }).error;
  }

  it("stops an infinite loop at the time limit, and the next call works", async () => {
    const instance = await hostile.create({ seed: 1 });
    const started = performance.now();
    expect(await expectContained(instance, "spin")).toBe("the tool ran longer than 200 ms and was stopped");
    expect(performance.now() - started).toBeLessThan(2000);
    expect(await expectContained(instance, "spin_stubbornly")).toBe(
      "the tool ran longer than 200 ms and was stopped",
    );
  });

  it("ends an endless promise chain at the memory limit, with terrarium's message", async () => {
    // Each link of the chain stays alive, so it grows until memory runs out. With 2 MB that takes tens of
    // milliseconds, far inside the time limit, so the outcome does not depend on the machine's speed;
    // and QuickJS, which can fail an internal assertion freeing such a runtime, is never asked to.
    const chained = defineSandboxedEnvironment(hostileDescriptor, {
      timeLimitMs: 10_000,
      memoryLimitBytes: 2 * 1024 * 1024,
    });
    const instance = await chained.create({ seed: 1 });
    for (let round = 0; round < 2; round++) {
      expect(await expectContained(instance, "spin_in_microtasks")).toBe(
        "the tool exceeded its memory limit of 2 MB",
      );
    }
  });

  it("stops unbounded allocation at the memory limit, even when the tool catches the error", async () => {
    const instance = await hostile.create({ seed: 1 });
    expect(await expectContained(instance, "hoard")).toBe("the tool exceeded its memory limit of 8 MB");
    expect(await expectContained(instance, "hoard_and_catch")).toBe(
      "the tool exceeded its memory limit of 8 MB",
    );
    expect(await expectContained(instance, "hoard")).toBe("the tool exceeded its memory limit of 8 MB");
  });

  it("gives no access to process, require, fetch or modules", async () => {
    const instance = await hostile.create({ seed: 1 });
    const raised = "the tool raised an error: ";
    expect(await expectContained(instance, "use_process")).toBe(
      `${raised}ReferenceError: 'process' is not defined`,
    );
    expect(await expectContained(instance, "use_require")).toBe(
      `${raised}ReferenceError: 'require' is not defined`,
    );
    expect(await expectContained(instance, "use_fetch")).toBe(
      `${raised}ReferenceError: 'fetch' is not defined`,
    );
    expect(await expectContained(instance, "import_fs")).toBe(
      `${raised}ReferenceError: could not load module 'fs'`,
    );
    expect(await expectContained(instance, "function_constructor")).toBe(
      `${raised}ReferenceError: 'process' is not defined`,
    );
    const inspected = await instance.step({ name: "inspect" });
    expect(inspected.observation).toEqual({
      process: "undefined",
      require: "undefined",
      fetch: "undefined",
      os: "undefined",
      std: "undefined",
      setTimeout: "undefined",
      console: "undefined",
      WebAssembly: "undefined",
      isAdmin: null,
      leftover: "undefined",
      extra: null,
      stringify: '{"a":1}',
    });
  });

  it("fails a call that pollutes Object.prototype, and nothing a call changes reaches the next one", async () => {
    const instance = await hostile.create({ seed: 1 });
    expect(await expectContained(instance, "pollute")).toBe(
      'the tool changed the built-in Object.prototype ("isAdmin"), which sandboxed tools may not do',
    );
    const littered = await instance.step({ name: "litter" });
    expect(littered.success).toBe(true);
    const inspected = await instance.step({ name: "inspect" });
    expect(inspected.observation).toMatchObject({ isAdmin: null, leftover: "undefined", extra: null });
    expect(inspected.observation).toMatchObject({ stringify: '{"a":1}' });
  });

  it("brings back a state whose keys name the prototype as plain data, and the host's prototypes stay clean", async () => {
    const instance = await hostile.create({ seed: 1 });
    const transition = await instance.step({ name: "pollute_host" });
    expect(transition.success).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, "polluted")).toBe(false);
    // "__proto__" arrived as an own key holding data, at the top and inside, not as a prototype.
    const after = transition.after as Record<string, unknown>;
    expect(Object.hasOwn(after, "__proto__")).toBe(true);
    expect(after.polluted).toBeUndefined();
    expect(JSON.stringify(after)).toBe(
      '{"counter":5,"__proto__":{"polluted":1},"inner":{"__proto__":{"polluted":2}}}',
    );
    expect(JSON.stringify(transition.observation)).toBe('{"__proto__":{"polluted":3}}');
    expect((transition.observation as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(await instance.state())).toBe(JSON.stringify(after));
    const bumped = await instance.step({ name: "bump" });
    expect(bumped.observation).toEqual({ counter: 6 });
    // The details of a rejection cross the same way.
    const refused = await instance.step({ name: "fail_polluted" });
    expect(refused.success).toBe(false);
    expect(JSON.stringify(refused.observation)).toBe('{"error":"refused","__proto__":{"polluted":4}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("reports broken tools clearly and leaves the state alone", async () => {
    const instance = await hostile.create({ seed: 1 });
    expect(await expectContained(instance, "recurse")).toBe(
      "the tool raised an error: InternalError: stack overflow",
    );
    expect(await expectContained(instance, "throw_text")).toBe("the tool raised an error: plain text");
    expect(await expectContained(instance, "catch_own_fail")).toBe("no, and no");
    expect(await expectContained(instance, "never_settles")).toBe(
      "the tool returned a promise that never settled",
    );
    expect(await expectContained(instance, "circular")).toMatch(
      /^the tool's result or state cannot be stored as JSON: TypeError: circular reference/,
    );
    expect(await expectContained(instance, "replace_state")).toBe(
      "the tool left a state that is not a JSON object (an array)",
    );
    expect(await expectContained(instance, "not_a_function")).toBe(
      "the tool's code must be a function such as (ctx) => { ... }, but it evaluates to number",
    );
    expect(await expectContained(instance, "broken_syntax")).toMatch(
      /^the tool's code does not compile: SyntaxError: /,
    );
    const later = await instance.step({ name: "async_bump" });
    expect(later.success).toBe(true);
    expect(later.observation).toBe("later");
  });

  it("keeps instances apart: a hostile call on one leaves the others working", async () => {
    const [a, b] = await Promise.all([hostile.create({ seed: 1 }), hostile.create({ seed: 2 })]);
    const [stopped, bumped] = await Promise.all([a.step({ name: "spin" }), b.step({ name: "bump" })]);
    expect(stopped.success).toBe(false);
    expect(bumped.observation).toEqual({ counter: 1 });
    expect(await a.state()).toEqual({ counter: 0 });
    expect(await b.state()).toEqual({ counter: 1 });
  });
});
