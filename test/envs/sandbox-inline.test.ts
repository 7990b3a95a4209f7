import { afterAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { SandboxPool, type SandboxPoolOptions, sandboxPool } from "../../src/envs/sandbox/pool.js";
import {
  defineSandboxedEnvironment,
  type SandboxedEnvironmentDescriptor,
  type SandboxedToolDescriptor,
  type SandboxOptions,
} from "../../src/envs/sandbox/quickjs.js";
import type { Transition } from "../../src/envs/types.js";

/**
 * Inline calls (pool.ts): a call from an environment first runs in the host's own engine within a small
 * budget, and is handed to a worker, with its full limits and the same values drawn ahead, when it does not
 * end on its own inside that budget. Whichever ran it, the answer must be the one a worker alone gives:
 * these tests play the same calls through a pool with inline calls and one without and compare them byte
 * for byte, and check that limits, failures and isolation hold for calls that start inline.
 */

const pools: SandboxPool[] = [];
function pool(options: SandboxPoolOptions = {}): SandboxPool {
  const made = new SandboxPool({ size: 1, ...options });
  pools.push(made);
  return made;
}
afterAll(async () => {
  await Promise.all(pools.map((each) => each.close()));
});

const tool = (name: string, code: string, extra: Partial<SandboxedToolDescriptor> = {}) => ({
  name,
  description: name,
  effect: "write" as const,
  code,
  ...extra,
});

const NUMBER_N = { properties: { n: { type: "integer", minimum: 0 } }, required: ["n"] } as const;

const NOTES: SandboxedEnvironmentDescriptor = {
  kind: "quickjs",
  name: "notes",
  description: "Notes with ids, times and random numbers; a slow sum; a tool that draws many ids.",
  initialState: { notes: {}, count: 0 },
  tools: [
    tool(
      "add",
      `(ctx) => {
        const id = ctx.id("note");
        ctx.state.notes[id] = { at: ctx.now(), date: new Date().toISOString(), r: Math.random(), s: ctx.random() };
        ctx.state.count += 1;
        return { id, count: ctx.state.count };
      }`,
    ),
    // Long enough to overrun a 1 ms inline budget on any machine, far inside the time limit.
    tool(
      "sum",
      "(ctx) => { let s = 0; for (let i = 0; i < 2e6; i++) s = (s + i) % 1000003; ctx.state.count += 1; return s; }",
    ),
    // More ids than are ever drawn ahead for one call (64): the values run out inline.
    tool(
      "many",
      `(ctx) => { const got = []; for (let i = 0; i < ctx.args.n; i++) got.push(ctx.id("m")); ctx.state.last = got; return got.length; }`,
      { input: NUMBER_N },
    ),
    tool("fail", '(ctx) => { ctx.state.count = 99; ctx.fail("no", { why: "because" }); }'),
    tool("throws", "(ctx) => { ctx.state.count = 98; throw new TypeError('bad'); }"),
    tool("spin", "(ctx) => { ctx.state.count = -1; for (;;) {} }"),
    tool(
      "hog",
      '(ctx) => { ctx.state.count = -2; const a = []; for (;;) a.push("x".repeat(1000) + a.length); }',
    ),
    tool("stash", "(ctx) => { globalThis.stash = ctx.args.n; Object.prototype.constructor; return 'ok'; }", {
      input: NUMBER_N,
    }),
    tool("look", "() => (typeof stash === 'undefined' ? null : stash)"),
    // Takes the time and a random number only when asked: what it took last time says nothing.
    tool("sometimes", "(ctx) => (ctx.args.n > 0 ? [ctx.now(), Math.random(), ctx.id('s')] : null)", {
      input: NUMBER_N,
    }),
  ],
};

const CALLS = [
  { name: "add" },
  { name: "sum" },
  { name: "add" },
  { name: "many", arguments: { n: 3 } },
  { name: "many", arguments: { n: 150 } },
  { name: "add" },
  { name: "fail" },
  { name: "throws" },
  { name: "stash", arguments: { n: 7 } },
  { name: "look" },
  { name: "sum" },
  { name: "add" },
  { name: "sometimes", arguments: { n: 0 } },
  { name: "sometimes", arguments: { n: 1 } },
  { name: "sometimes", arguments: { n: 1 } },
  { name: "sometimes", arguments: { n: 0 } },
];

async function play(
  sandbox: SandboxPool,
  options: Omit<SandboxOptions, "pool"> = {},
  clock?: () => ManualClock,
): Promise<string> {
  const environment = defineSandboxedEnvironment(NOTES, { pool: sandbox, timeLimitMs: 20_000, ...options });
  const instance = await environment.create({ seed: "inline", ...(clock ? { clock: clock() } : {}) });
  const transitions: Transition[] = [];
  for (const call of CALLS) transitions.push(await instance.step(call));
  return JSON.stringify(transitions);
}

describe("sandbox: inline calls", () => {
  it("answers exactly as workers alone do, byte for byte, whether a call ran inline or was handed on", async () => {
    const workersOnly = pool({ inlineMs: 0 });
    const inline = pool({ inlineMs: 1 });
    const expected = await play(workersOnly);
    expect(workersOnly.stats()).toMatchObject({ inline: 0, declined: 0 });
    expect(await play(inline)).toBe(expected);
    // Cheap calls ran inline; the slow sum and the call that drew 150 ids were handed to a worker.
    const stats = inline.stats();
    expect(stats.inline).toBeGreaterThanOrEqual(6);
    expect(stats.declined).toBeGreaterThanOrEqual(2);
    // Also under a clock read ahead on a clone (the engine's per-call clock).
    const clock = () => new ManualClock("2031-02-03T04:05:06.000Z", 3);
    expect(await play(inline, {}, clock)).toBe(await play(workersOnly, {}, clock));
    const parsed = JSON.parse(expected) as Transition[];
    expect(parsed.map((t) => t.success)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
      false,
      false,
      true,
      true,
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    // Nothing the stash call left in its globals reached the next call.
    expect(parsed[9]?.observation).toBeNull();
  });

  it("sends a tool whose inline run overran its budget straight to a worker for its next calls", async () => {
    const inline = pool({ inlineMs: 1 });
    const environment = defineSandboxedEnvironment(NOTES, { pool: inline, timeLimitMs: 20_000 });
    const instance = await environment.create({ seed: 1 });
    const first = await instance.step({ name: "sum" });
    expect(first.success).toBe(true);
    expect(inline.stats()).toMatchObject({ inline: 0, declined: 1 });
    const second = await instance.step({ name: "sum" });
    expect(second.observation).toBe(first.observation);
    // Not tried inline again: no second decline.
    expect(inline.stats()).toMatchObject({ inline: 0, declined: 1 });
    // Other tools still run inline.
    expect((await instance.step({ name: "add" })).success).toBe(true);
    expect(inline.stats()).toMatchObject({ inline: 1, declined: 1 });
  });

  it("stops an endless loop and a memory hog at their limits, leaves the state as it was, and runs the next call", async () => {
    const inline = pool({ inlineMs: 2 });
    const environment = defineSandboxedEnvironment(NOTES, {
      pool: inline,
      timeLimitMs: 300,
      memoryLimitBytes: 4 * 1024 * 1024,
    });
    const instance = await environment.create({ seed: 1 });
    expect((await instance.step({ name: "add" })).success).toBe(true);
    const before = await instance.state();
    const spun = await instance.step({ name: "spin" });
    expect(spun.success).toBe(false);
    expect(spun.observation).toEqual({ error: "the tool ran longer than 300 ms and was stopped" });
    expect(await instance.state()).toBe(before);
    const hogged = await instance.step({ name: "hog" });
    expect(hogged.success).toBe(false);
    expect(hogged.observation).toEqual({ error: "the tool exceeded its memory limit of 4 MB" });
    expect(await instance.state()).toBe(before);
    const next = await instance.step({ name: "add" });
    expect(next.success).toBe(true);
    expect(next.observation).toMatchObject({ count: 2 });
    // Both were handed to a worker, which gave the limit's answer.
    expect(inline.stats().declined).toBe(2);
  });

  it("runs a call whose budget is its whole time limit inline to the end, with the time-limit answer", async () => {
    const inline = pool({ inlineMs: 50 });
    const environment = defineSandboxedEnvironment(NOTES, { pool: inline, timeLimitMs: 20 });
    const instance = await environment.create({ seed: 1 });
    const spun = await instance.step({ name: "spin" });
    expect(spun.observation).toEqual({ error: "the tool ran longer than 20 ms and was stopped" });
    expect(inline.stats()).toMatchObject({ inline: 1, declined: 0 });
    expect((await instance.step({ name: "add" })).success).toBe(true);
  });

  it("hands on a call that needs more values than were drawn for it, without sending its tool's next calls away", async () => {
    const inline = pool({ inlineMs: 50 });
    const environment = defineSandboxedEnvironment(NOTES, { pool: inline });
    const instance = await environment.create({
      seed: 1,
      clock: new ManualClock("2030-01-01T00:00:00.000Z"),
    });
    const steps: Transition[] = [];
    for (const n of [0, 0, 1, 1, 0, 1])
      steps.push(await instance.step({ name: "sometimes", arguments: { n } }));
    expect(steps.map((step) => step.success)).toEqual([true, true, true, true, true, true]);
    // The first call that took values after calls that took none ran out of them inline, and was run
    // again by a worker; every other call ran inline (values are drawn for it from then on).
    expect(inline.stats()).toMatchObject({ inline: 5, declined: 1 });
  });

  it("takes the process pool's inline budget from TERRARIUM_SANDBOX_INLINE_MS (0: every call in a worker)", async () => {
    const saved = process.env.TERRARIUM_SANDBOX_INLINE_MS;
    try {
      process.env.TERRARIUM_SANDBOX_INLINE_MS = "soon";
      expect(() => sandboxPool()).toThrow(/TERRARIUM_SANDBOX_INLINE_MS must be a number of milliseconds/);
      process.env.TERRARIUM_SANDBOX_INLINE_MS = "0";
      const shared = sandboxPool();
      pools.push(shared);
      const instance = await defineSandboxedEnvironment(NOTES).create({ seed: 1 });
      expect((await instance.step({ name: "add" })).success).toBe(true);
      expect(shared.stats()).toMatchObject({ inline: 0, declined: 0 });
    } finally {
      if (saved === undefined) delete process.env.TERRARIUM_SANDBOX_INLINE_MS;
      else process.env.TERRARIUM_SANDBOX_INLINE_MS = saved;
    }
  });

  it("costs a call the parts of the state it reads, not the whole state (no text round trip)", async () => {
    // A tool that reads one number, in a state with 20,000 objects beside it that it never reads. The
    // state reaches an inline call as values read a part at a time; as text (a worker's way, or before
    // inline calls) every step costs the whole state's JSON twice, about a hundred times the small step.
    const environment = defineSandboxedEnvironment(
      { ...NOTES, initialState: { count: 0 } },
      { pool: pool({ inlineMs: 50 }) },
    );
    const big: Record<string, unknown> = {};
    for (let i = 0; i < 20_000; i++) big[`k${i}`] = { n: i, text: "a little text" };
    const small = await environment.create({ seed: 1, state: { count: 0, big: {} } });
    const large = await environment.create({ seed: 1, state: { count: 0, big } });
    const perStep = async (instance: typeof small, steps: number) => {
      const started = performance.now();
      for (let i = 0; i < steps; i++) await instance.step({ name: "sometimes", arguments: { n: 0 } });
      return (performance.now() - started) / steps;
    };
    await perStep(small, 50);
    await perStep(large, 50);
    const ratios: number[] = [];
    for (let round = 0; round < 5; round++) {
      const a = await perStep(small, 100);
      const b = await perStep(large, 100);
      ratios.push(b / a);
    }
    ratios.sort((x, y) => x - y);
    expect(ratios[2]).toBeLessThan(10);
  });

  it("keeps sessions apart when their calls run inline, one after another in one engine", async () => {
    const inline = pool({ inlineMs: 5 });
    const environment = defineSandboxedEnvironment(NOTES, { pool: inline });
    const a = await environment.create({ seed: 1 });
    const b = await environment.create({ seed: 2 });
    expect((await a.step({ name: "stash", arguments: { n: 41 } })).observation).toBe("ok");
    expect((await b.step({ name: "look" })).observation).toBeNull();
    expect((await a.step({ name: "look" })).observation).toBeNull();
    expect(inline.stats()).toMatchObject({ inline: 3, declined: 0 });
  });
});
