import { describe, expect, it } from "vitest";
import { type GuestHost, type GuestOutcome, SandboxEngine } from "../../src/envs/sandbox/engine.js";

/**
 * Tool images (engine.ts): a tool's source is compiled once per engine and kept in a snapshot of the
 * engine's memory with the compiled function in it; later calls of the same source start from that
 * snapshot. These tests hold it to compiling with every call: the image is reused for the same source and
 * never for another, nothing a call leaves behind reaches the next call of the same or another tool, and
 * a source whose evaluation is not a plain function (it takes values, loops, allocates) is compiled with
 * each call as before, with the same answers and the same values taken.
 */

interface Internals {
  warm: { images: Map<string, unknown>; uncompiled: Set<string> } | undefined;
}
const internals = (engine: SandboxEngine) => engine as unknown as Internals;

function countingHost(): GuestHost & { randoms: number } {
  const host = {
    randoms: 0,
    now: () => "2025-01-01T00:00:00.000Z",
    clock: () => 0,
    random: () => {
      host.randoms++;
      return 0.25;
    },
    id: (prefix?: string) => (prefix ? `${prefix}_1` : "1"),
  };
  return host;
}
const LIMITS = { timeLimitMs: 2000, memoryLimitBytes: 4 * 1024 * 1024 };
const input = (state: unknown, args: unknown = {}) => JSON.stringify({ state, args });

function observation(outcome: GuestOutcome): unknown {
  expect(outcome.kind).toBe("returned");
  return (outcome as { observation: unknown }).observation;
}

const ADD = "(ctx) => { ctx.state.count += ctx.args.by; return ctx.state.count; }";
const DOUBLE = "(ctx) => { ctx.state.count *= 2; return ctx.state.count; }";

describe("sandbox: compiled tool images", () => {
  it("compiles a source once and reuses it for its calls, and never for a different source", async () => {
    const engine = await SandboxEngine.load();
    const host = countingHost();
    const run = (code: string, count: number) =>
      engine.run({ code, input: input({ count }, { by: 5 }), changes: true }, host, LIMITS);
    expect(run(ADD, 1)).toEqual({ kind: "returned", observation: 6, changes: [[0, ["count"], 6]] });
    const images = internals(engine).warm?.images;
    expect(images && [...images.keys()]).toEqual([ADD]);
    const image = images?.get(ADD);
    expect(observation(run(ADD, 10))).toBe(15);
    expect(images?.get(ADD)).toBe(image);
    // Another source gets its own image; each call runs its own source's function.
    expect(observation(run(DOUBLE, 10))).toBe(20);
    expect(observation(run(ADD, 10))).toBe(15);
    expect(observation(run(DOUBLE, 4))).toBe(8);
    expect(images && [...images.keys()].sort()).toEqual([ADD, DOUBLE].sort());
    expect(images?.get(ADD)).toBe(image);
    expect(images?.get(DOUBLE)).not.toBe(image);
  });

  it("keeps nothing a call leaves behind from the next call of the same tool or of another", async () => {
    const engine = await SandboxEngine.load();
    const host = countingHost();
    const STASH = `(ctx) => {
      const seen = typeof globalThis.stash === "undefined" ? null : globalThis.stash;
      globalThis.stash = ctx.state.secret;
      Array.prototype.stash = ctx.state.secret;
      return seen;
    }`;
    const LOOK = "() => [typeof stash === 'undefined' ? null : stash, [].stash ?? null]";
    const stash = (secret: string) => engine.run({ code: STASH, input: input({ secret }) }, host, LIMITS);
    const look = () => engine.run({ code: LOOK, input: input({}) }, host, LIMITS);
    expect(observation(stash("session A"))).toBeNull();
    expect(observation(stash("session B"))).toBeNull();
    expect(observation(look())).toEqual([null, null]);
    expect(observation(stash("session C"))).toBeNull();
    expect(observation(look())).toEqual([null, null]);
  });

  it("compiles with each call a source that takes values while it is evaluated, with the same answers", async () => {
    const engine = await SandboxEngine.load();
    const host = countingHost();
    const DRAWS = "(globalThis.first = Math.random(), (ctx) => [globalThis.first, Math.random()])";
    for (let round = 0; round < 3; round++) {
      const before = host.randoms;
      expect(observation(engine.run({ code: DRAWS, input: input({}) }, host, LIMITS))).toEqual([0.25, 0.25]);
      // Two values each call: the evaluation's and the tool's, as when every call compiles the source.
      expect(host.randoms - before).toBe(2);
    }
    expect(internals(engine).warm?.uncompiled.has(DRAWS)).toBe(true);
    expect(internals(engine).warm?.images.has(DRAWS)).toBe(false);
  });

  it("answers a source that loops or fails while evaluated as before, and runs the next call", async () => {
    const engine = await SandboxEngine.load();
    const host = countingHost();
    const limits = { timeLimitMs: 100, memoryLimitBytes: 4 * 1024 * 1024 };
    const LOOP = "(() => { for (;;) {} })()";
    for (let round = 0; round < 2; round++) {
      expect(engine.run({ code: LOOP, input: input({}) }, host, limits)).toEqual({
        kind: "stopped",
        reason: "time",
      });
      expect(
        observation(engine.run({ code: ADD, input: input({ count: 1 }, { by: 1 }) }, host, limits)),
      ).toBe(2);
    }
    expect(engine.run({ code: "(ctx) => {", input: input({}) }, host, limits)).toMatchObject({
      kind: "stopped",
      reason: "compile",
    });
    expect(engine.run({ code: "42", input: input({}) }, host, limits)).toEqual({
      kind: "stopped",
      reason: "not-a-function",
      detail: "number",
    });
    expect(
      engine.run({ code: "(() => { throw new Error('no'); })()", input: input({}) }, host, limits),
    ).toEqual({
      kind: "raised",
      message: "Error: no",
    });
    expect(observation(engine.run({ code: ADD, input: input({ count: 1 }, { by: 1 }) }, host, limits))).toBe(
      2,
    );
  });

  it("holds a source that allocates while evaluated to the call's memory limit, as before", async () => {
    const engine = await SandboxEngine.load();
    const host = countingHost();
    const BIG = "(globalThis.big = 'y'.repeat(3000000) + 'z', (ctx) => big.length)";
    const small = { timeLimitMs: 5000, memoryLimitBytes: 1024 * 1024 };
    const large = { timeLimitMs: 5000, memoryLimitBytes: 16 * 1024 * 1024 };
    expect(engine.run({ code: BIG, input: input({}) }, host, small)).toEqual({
      kind: "stopped",
      reason: "memory",
    });
    const fresh = await SandboxEngine.load();
    expect(observation(fresh.run({ code: BIG, input: input({}) }, host, large))).toBe(3000001);
    expect(observation(fresh.run({ code: BIG, input: input({}) }, host, large))).toBe(3000001);
    // Too large to keep as an image: compiled with each call instead.
    expect(internals(fresh).warm?.images.has(BIG)).toBe(false);
    // A call that runs out of memory leaves the engine to be reloaded; the next call works.
    const HOG = '() => { const a = []; for (;;) a.push("x".repeat(1000) + a.length); }';
    expect(fresh.run({ code: ADD, input: input({ count: 1 }, { by: 1 }) }, host, small)).toMatchObject({
      kind: "returned",
    });
    expect(fresh.run({ code: HOG, input: input({}) }, host, small)).toEqual({
      kind: "stopped",
      reason: "memory",
    });
    const next = await SandboxEngine.load();
    expect(observation(next.run({ code: ADD, input: input({ count: 1 }, { by: 1 }) }, host, small))).toBe(2);
  });

  it("holds each call of a compiled tool to its own memory limit, whatever the calls before it took", async () => {
    const engine = await SandboxEngine.load();
    const host = countingHost();
    const ALLOC = "(ctx) => ('y'.repeat(ctx.args.n) + 'z').length";
    const small = { timeLimitMs: 5000, memoryLimitBytes: 1024 * 1024 };
    const large = { timeLimitMs: 5000, memoryLimitBytes: 16 * 1024 * 1024 };
    const run = (n: number, limits: typeof small) =>
      engine.run({ code: ALLOC, input: input({}, { n }) }, host, limits);
    expect(observation(run(10, small))).toBe(11);
    expect(internals(engine).warm?.images.has(ALLOC)).toBe(true);
    expect(observation(run(3_000_000, large))).toBe(3_000_001);
    expect(run(3_000_000, small)).toEqual({ kind: "stopped", reason: "memory" });
    const again = await SandboxEngine.load();
    const runAgain = (n: number, limits: typeof small) =>
      again.run({ code: ALLOC, input: input({}, { n }) }, host, limits);
    expect(observation(runAgain(10, small))).toBe(11);
    expect(observation(runAgain(3_000_000, large))).toBe(3_000_001);
    expect(observation(runAgain(10, small))).toBe(11);
  });
});
