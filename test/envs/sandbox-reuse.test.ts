import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { ManualClock } from "../../src/core/clock.js";
import { defineEnvironment } from "../../src/envs/define.js";
import { type GuestHost, type GuestOutcome, SandboxEngine } from "../../src/envs/sandbox/engine.js";
import { SandboxPool } from "../../src/envs/sandbox/pool.js";
import {
  defineSandboxedEnvironment,
  type SandboxedEnvironmentDescriptor,
} from "../../src/envs/sandbox/quickjs.js";
import { memoryLayout, readLayout } from "../../src/envs/sandbox/snapshot.js";
import type { Environment, Transition } from "../../src/envs/types.js";
import { Engine } from "../../src/sim/index.js";
import { CodeSimulator } from "../../src/sim/simulators/code.js";

/**
 * The sandbox reuses one QuickJS runtime and context per worker, and writes a snapshot of the engine's
 * memory back after every call (snapshot.ts). These tests hold it to what a fresh context per call gave:
 * nothing one call leaves behind (globals, built-ins, hidden intrinsics, registries, pending jobs) reaches
 * another call or another session, and a call stopped at its time or memory limit leaves the engine usable
 * and clean. Values drawn ahead for a call (sources.ts) must leave seeded runs exactly as they were.
 */

const HOST: GuestHost = {
  now: () => "2025-01-01T00:00:00.000Z",
  clock: () => 0,
  random: () => 0.5,
  id: (prefix) => (prefix ? `${prefix}_1` : "1"),
};
const LIMITS = { timeLimitMs: 2000, memoryLimitBytes: 4 * 1024 * 1024 };

function input(state: unknown, args: unknown = {}): string {
  return JSON.stringify({ state, args });
}

/** Writes a session's secret everywhere a tool can reach without failing its call. */
const STASH = `(ctx) => {
  const secret = ctx.state.secret;
  globalThis.stash = secret;
  Array.prototype.stash = secret;
  JSON.stash = secret;
  Object.getPrototypeOf(function* () {}).stash = secret;
  Object.getPrototypeOf([][Symbol.iterator]()).stash = secret;
  Object.getPrototypeOf(async function () {}).stash = secret;
  Map.prototype.get = function () { return secret; };
  Symbol.for("stash").description;
  Promise.resolve().then(() => { globalThis.later = secret; });
  return "stashed";
}`;

/** Looks for a secret everywhere STASH put one; answers what it found. */
const LOOK = `() => ({
  global: typeof stash === "undefined" ? null : stash,
  later: typeof later === "undefined" ? null : later,
  array: [].stash ?? null,
  json: JSON.stash ?? null,
  generator: Object.getPrototypeOf(function* () {}).stash ?? null,
  iterator: Object.getPrototypeOf([][Symbol.iterator]()).stash ?? null,
  async: Object.getPrototypeOf(async function () {}).stash ?? null,
  map: new Map([["k", "own"]]).get("k"),
})`;

const CLEAN = {
  global: null,
  later: null,
  array: null,
  json: null,
  generator: null,
  iterator: null,
  async: null,
  map: "own",
};

function observation(outcome: GuestOutcome): unknown {
  expect(outcome.kind).toBe("returned");
  return (outcome as { observation: unknown }).observation;
}

/** The engine's reused runtime and context (internal), to show that calls really share them. */
function warmOf(engine: SandboxEngine): unknown {
  return (engine as unknown as { warm: unknown }).warm;
}

describe("sandbox: one reused context per engine", () => {
  it("keeps nothing a call leaves behind from the next call, in the same context", async () => {
    const engine = await SandboxEngine.load();
    expect(observation(engine.run({ code: LOOK, input: input({}) }, HOST, LIMITS))).toEqual(CLEAN);
    const warm = warmOf(engine);
    expect(warm).toBeDefined();
    expect(
      observation(engine.run({ code: STASH, input: input({ secret: "session A" }) }, HOST, LIMITS)),
    ).toBe("stashed");
    expect(observation(engine.run({ code: LOOK, input: input({}) }, HOST, LIMITS))).toEqual(CLEAN);
    // The same runtime and context served all three calls.
    expect(warmOf(engine)).toBe(warm);
  });

  it("leaves the reused context usable and clean after a call stopped at its time limit", async () => {
    const engine = await SandboxEngine.load();
    engine.run({ code: LOOK, input: input({}) }, HOST, LIMITS);
    const warm = warmOf(engine);
    const spin = `(ctx) => { globalThis.stash = ctx.state.secret; Array.prototype.stash = 1; for (;;) {} }`;
    const stopped = engine.run({ code: spin, input: input({ secret: "A" }) }, HOST, {
      ...LIMITS,
      timeLimitMs: 50,
    });
    expect(stopped).toEqual({ kind: "stopped", reason: "time" });
    expect(observation(engine.run({ code: LOOK, input: input({}) }, HOST, LIMITS))).toEqual(CLEAN);
    expect(warmOf(engine)).toBe(warm);
    expect(
      observation(engine.run({ code: "(ctx) => ctx.args.n + 1", input: input({}, { n: 41 }) }, HOST, LIMITS)),
    ).toBe(42);
  });

  it("leaves the engine usable and clean after a call ran out of memory, and after one that threw", async () => {
    const engine = await SandboxEngine.load();
    const hog = `(ctx) => { globalThis.stash = ctx.state.secret; const a = []; for (;;) a.push("x".repeat(1000) + a.length); }`;
    expect(engine.run({ code: hog, input: input({ secret: "A" }) }, HOST, LIMITS)).toEqual({
      kind: "stopped",
      reason: "memory",
    });
    // After a memory trip this engine is dropped (its grown heap with it); a fresh one is loaded on demand.
    const fresh = await SandboxEngine.load();
    expect(observation(fresh.run({ code: LOOK, input: input({}) }, HOST, LIMITS))).toEqual(CLEAN);
    const thrower = `(ctx) => { globalThis.stash = ctx.state.secret; JSON.stash = 1; throw new Error("no"); }`;
    expect(fresh.run({ code: thrower, input: input({ secret: "B" }) }, HOST, LIMITS)).toEqual({
      kind: "raised",
      message: "Error: no",
    });
    expect(observation(fresh.run({ code: LOOK, input: input({}) }, HOST, LIMITS))).toEqual(CLEAN);
  });

  it("reads the engine's memory layout, so a restore copies a small part of the memory", async () => {
    const layout = memoryLayout();
    // The release build's stack sits between the static data and the heap; both ends were found.
    expect(layout.heapStart).toBeGreaterThan(layout.staticEnd);
    expect(layout.staticEnd).toBeGreaterThan(0);
    const file = createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
    expect(readLayout(readFileSync(file))).toEqual(layout);
    // A file that is not what the layout reader expects makes it copy everything rather than guess.
    expect(readLayout(new Uint8Array(12))).toEqual({ staticEnd: 0, heapStart: 0 });
    const engine = await SandboxEngine.load();
    engine.run({ code: "() => 1", input: input({}) }, HOST, LIMITS);
    const { snapshot } = warmOf(engine) as { snapshot: { size: number } };
    expect(snapshot.size).toBeLessThan(2 * 1024 * 1024);
  });
});

const pools: SandboxPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
});

describe("sandbox: sessions sharing one worker", () => {
  it("never shows one session's state to another session that runs in the same worker after it", async () => {
    const pool = new SandboxPool({ size: 1, maxWorkers: 1 });
    pools.push(pool);
    const descriptor: SandboxedEnvironmentDescriptor = {
      kind: "quickjs",
      name: "vault",
      description: "Each session keeps a secret.",
      initialState: { secret: "" },
      tools: [
        {
          name: "keep",
          description: "Keep a secret, and hide it everywhere.",
          effect: "write",
          input: { properties: { secret: { type: "string" } }, required: ["secret"] },
          code: `(ctx) => { ctx.state.secret = ctx.args.secret; return (${STASH})(ctx); }`,
        },
        { name: "look", description: "Look for secrets.", effect: "read", code: LOOK },
      ],
    };
    const environment = defineSandboxedEnvironment(descriptor, { pool });
    const [a, b] = await Promise.all([environment.create({ seed: 1 }), environment.create({ seed: 2 })]);
    for (let round = 0; round < 3; round++) {
      expect((await a.step({ name: "keep", arguments: { secret: `A${round}` } })).success).toBe(true);
      expect((await b.step({ name: "look" })).observation).toEqual(CLEAN);
      expect((await b.step({ name: "keep", arguments: { secret: `B${round}` } })).success).toBe(true);
      expect((await a.step({ name: "look" })).observation).toEqual(CLEAN);
    }
    expect(await a.state()).toEqual({ secret: "A2" });
    expect(await b.state()).toEqual({ secret: "B2" });
    // One worker served every call.
    expect(pool.stats()).toMatchObject({ workers: 1, started: 1 });
  });
});

describe("sandbox: values drawn ahead leave seeded runs as they were", () => {
  /** A tool that takes `n` ids, random numbers and times: the count changes from call to call. */
  const descriptor: SandboxedEnvironmentDescriptor = {
    kind: "quickjs",
    name: "draws",
    description: "Draws ids, random numbers and times.",
    initialState: { log: [] },
    tools: [
      {
        name: "draw",
        description: "Draw n of each.",
        effect: "write",
        input: { properties: { n: { type: "integer", minimum: 0 } }, required: ["n"] },
        code: `(ctx) => {
          const got = [];
          for (let i = 0; i < ctx.args.n; i++) {
            got.push([ctx.id(i % 2 ? "x" : undefined), ctx.random(), ctx.now(), Date.now(), Math.random()]);
          }
          ctx.state.log.push(got);
          return got.length;
        }`,
      },
    ],
  };
  /** The same tool in TypeScript, run in the host's thread: the reference sequence. */
  const reference = defineEnvironment<{ log: unknown[] }>({
    name: "draws",
    description: descriptor.description,
    initialState: { log: [] },
    tools: {
      draw: {
        description: "Draw n of each.",
        effect: "write",
        input: { properties: { n: { type: "integer", minimum: 0 } }, required: ["n"] },
        run: ({ state, args, ids, random, now, clock }) => {
          const got: unknown[] = [];
          for (let i = 0; i < (args as { n: number }).n; i++) {
            got.push([ids.next(i % 2 ? "x" : undefined), random.next(), now(), clock.now(), random.next()]);
          }
          state.log.push(got);
          return got.length;
        },
      },
    },
  });
  const COUNTS = [1, 1, 3, 0, 2, 5, 1, 0, 0, 4, 1];

  async function play(create: () => Promise<{ step(call: unknown): Promise<Transition> }>): Promise<string> {
    const instance = await create();
    const transitions: Transition[] = [];
    for (const n of COUNTS) transitions.push(await instance.step({ name: "draw", arguments: { n } }));
    return JSON.stringify(transitions);
  }

  it("gives the same ids, random numbers and times as the host's own sources, whatever each call takes", async () => {
    const pool = new SandboxPool({ size: 2 });
    pools.push(pool);
    const sandboxed = defineSandboxedEnvironment(descriptor, { pool });
    const expected = await play(() => reference.create({ seed: "draws" }));
    expect(await play(() => sandboxed.create({ seed: "draws" }))).toBe(expected);
    // Also with a clock given from outside that can be cloned (as the engine's per-call clock can).
    const clockAt = () => new ManualClock("2030-05-01T00:00:00.000Z", 7);
    const withClock = await play(() => reference.create({ seed: "draws", clock: clockAt() }));
    expect(await play(() => sandboxed.create({ seed: "draws", clock: clockAt() }))).toBe(withClock);
    // And with a clock that cannot be cloned: every reading is asked for.
    let tick = 0;
    const plainClock = () => {
      tick = 0;
      return { now: () => 1_700_000_000_000 + tick++ };
    };
    const plain = await play(() => reference.create({ seed: "draws", clock: plainClock() }));
    expect(await play(() => sandboxed.create({ seed: "draws", clock: plainClock() }))).toBe(plain);
  });

  it("gives the same times under the engine's per-call clock (read ahead on a clone) as the host's own", async () => {
    const pool = new SandboxPool({ size: 1 });
    pools.push(pool);
    async function observations(environment: Environment): Promise<string> {
      const engine = new Engine({
        catalog: new Catalog(environment.tools),
        simulators: [new CodeSimulator(environment, "t")],
        seed: 5,
        initialState: await environment.initialState(),
      });
      try {
        const session = await engine.createSession();
        const seen: unknown[] = [];
        for (const n of COUNTS) {
          const result = await engine.call(session.id, { name: "draw", arguments: { n } });
          seen.push(result.observation, await engine.state(session.id));
        }
        return JSON.stringify(seen);
      } finally {
        await engine.close();
      }
    }
    const sandboxed = defineSandboxedEnvironment(descriptor, { pool });
    const expected = await observations(reference as unknown as Environment);
    expect(expected).toContain("T");
    expect(await observations(sandboxed)).toBe(expected);
  });

  it("keeps a fork's sources where the parent's were when it forked", async () => {
    const pool = new SandboxPool({ size: 1 });
    pools.push(pool);
    const sandboxed = defineSandboxedEnvironment(descriptor, { pool });
    async function forked(environment: typeof reference): Promise<string> {
      const parent = await environment.create({ seed: 9 });
      await parent.step({ name: "draw", arguments: { n: 3 } });
      const child = await parent.fork();
      const runs = [];
      for (const instance of [child, parent, child]) {
        runs.push(await instance.step({ name: "draw", arguments: { n: 2 } }));
      }
      return JSON.stringify(runs);
    }
    expect(await forked(sandboxed)).toBe(await forked(reference));
  });
});
