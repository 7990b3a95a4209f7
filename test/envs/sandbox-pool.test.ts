import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { readDocument } from "../../src/catalog/read-document.js";
import type { GuestHost } from "../../src/envs/sandbox/engine.js";
import { SandboxPool } from "../../src/envs/sandbox/pool.js";
import {
  defineSandboxedEnvironment,
  type SandboxedEnvironmentDescriptor,
} from "../../src/envs/sandbox/quickjs.js";
import type { Transition } from "../../src/envs/types.js";

/** bump (cheap), spin (endless loop), chain (endless promise chain), pollute (hostile keys). */
const LOOPS = readDocument(
  fileURLToPath(new URL("../fixtures/sandbox/loops.quickjs.yaml", import.meta.url)),
) as SandboxedEnvironmentDescriptor;

const pools: SandboxPool[] = [];
function pool(options: ConstructorParameters<typeof SandboxPool>[0]): SandboxPool {
  const made = new SandboxPool(options);
  pools.push(made);
  return made;
}
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

const TIMED_OUT = (ms: number) => `the tool ran longer than ${ms} ms and was stopped`;

describe("sandbox worker pool", () => {
  it("runs ten endless loops in ten instances while a cheap call in another completes quickly", async () => {
    const LOOP_MS = 5000;
    const workers = pool({ size: 2 });
    const environment = defineSandboxedEnvironment(LOOPS, { timeLimitMs: LOOP_MS, pool: workers });
    const looping = await Promise.all(Array.from({ length: 10 }, () => environment.create({ seed: 1 })));
    const other = await environment.create({ seed: 2 });

    const started = performance.now();
    const loops = looping.map((instance) => instance.step({ name: "spin" }));
    // The event loop stays free while the loops run: a timer set now fires on time.
    const timerLate = await new Promise<number>((resolve) => {
      const due = performance.now() + 100;
      setTimeout(() => resolve(performance.now() - due), 100);
    });
    const cheapStarted = performance.now();
    const cheap = await other.step({ name: "bump" });
    const cheapMs = performance.now() - cheapStarted;

    expect(cheap.success).toBe(true);
    expect(cheap.observation).toEqual({ counter: 1 });
    // Well inside the loops' own limit: the cheap call did not wait for them.
    expect(cheapMs).toBeLessThan(LOOP_MS / 2);
    expect(timerLate).toBeLessThan(100);

    const stopped = await Promise.all(loops);
    const totalMs = performance.now() - started;
    for (const transition of stopped) {
      expect(transition.success).toBe(false);
      expect(transition.observation).toEqual({ error: TIMED_OUT(LOOP_MS) });
      expect(transition.after).toEqual({ counter: 0 });
    }
    // Each loop was charged its own limit, and they ran side by side rather than one after another.
    expect(totalMs).toBeLessThan(2 * LOOP_MS);
    expect(workers.stats().workers).toBeLessThanOrEqual(workers.maxWorkers);
    console.info(
      `10 loops of ${LOOP_MS} ms: cheap call ${cheapMs.toFixed(0)} ms, timer late ${timerLate.toFixed(1)} ms, all done in ${totalMs.toFixed(0)} ms, ${workers.stats().started} workers started`,
    );
  }, 30_000);

  it("ends an endless promise chain with the memory-limit error, every time", async () => {
    // The chain grows by a few hundred bytes per link: 2 MB are reached in tens of milliseconds, far
    // inside the 10 s time limit, so the outcome does not depend on the machine's speed.
    const environment = defineSandboxedEnvironment(LOOPS, {
      timeLimitMs: 10_000,
      memoryLimitBytes: 2 * 1024 * 1024,
      pool: pool({ size: 1 }),
    });
    const instance = await environment.create({ seed: 1 });
    for (let round = 0; round < 3; round++) {
      const chained = await instance.step({ name: "chain" });
      expect(chained.success).toBe(false);
      expect(chained.observation).toEqual({ error: "the tool exceeded its memory limit of 2 MB" });
      expect(JSON.stringify(chained.observation)).not.toMatch(/Assertion|Aborted|quickjs\.c/);
      // The worker dropped its engine after running out of memory and loads a fresh one for this call.
      const bumped = await instance.step({ name: "bump" });
      expect(bumped.observation).toEqual({ counter: round + 1 });
    }
  });

  it("terminates a worker that does not answer past its deadline, and replaces it", async () => {
    const workers = pool({ size: 1, graceMs: 0 });
    await workers.warm();
    // The guest asks the host for the time in a loop, and each answer takes the host 100 ms: the worker
    // waits inside a host call, so only the host's watchdog can end the call at its deadline.
    const slowHost: GuestHost = {
      now: () => "2025-01-01T00:00:00.000Z",
      clock: () => {
        const until = performance.now() + 100;
        while (performance.now() < until) {}
        return 0;
      },
      random: () => 0,
      id: () => "id",
    };
    const outcome = await workers.run(
      { code: "() => { for (;;) Date.now(); }", input: '{"state":{},"args":{}}' },
      slowHost,
      { timeLimitMs: 50, memoryLimitBytes: 4 * 1024 * 1024 },
    );
    expect(outcome).toEqual({ kind: "stopped", reason: "time" });
    expect(workers.stats().terminated).toBe(1);
    const after = await workers.run(
      { code: "(ctx) => ctx.args.n * 2", input: '{"state":{},"args":{"n":21}}' },
      slowHost,
      {
        timeLimitMs: 1000,
        memoryLimitBytes: 4 * 1024 * 1024,
      },
    );
    expect(after).toEqual({ kind: "returned", observation: 42, state: {} });
    expect(workers.stats().started).toBe(2);
  });

  it("repeats seeded runs byte for byte whatever the pool's size and the calls around them", async () => {
    const notes: SandboxedEnvironmentDescriptor = {
      kind: "quickjs",
      name: "notes",
      description: "Notes with ids, times and random scores.",
      initialState: { notes: {} },
      tools: [
        {
          name: "add",
          description: "Add a note.",
          effect: "write",
          input: { properties: { text: { type: "string" } }, required: ["text"] },
          code: `(ctx) => {
            const id = ctx.id("note");
            ctx.state.notes[id] = { text: ctx.args.text, at: ctx.now(), date: new Date().toISOString(),
              score: Math.random(), other: ctx.random() };
            return { id };
          }`,
        },
      ],
    };
    const calls = ["a", "b", "c", "d"].map((text) => ({ name: "add", arguments: { text } }));
    async function play(size: number, parallel: number): Promise<string> {
      const environment = defineSandboxedEnvironment(notes, { pool: pool({ size }) });
      const instances = await Promise.all(
        Array.from({ length: parallel }, () => environment.create({ seed: "same" })),
      );
      const runs = await Promise.all(
        instances.map(async (instance) => {
          const transitions: Transition[] = [];
          for (const call of calls) transitions.push(await instance.step(call));
          return JSON.stringify(transitions);
        }),
      );
      expect(new Set(runs).size).toBe(1);
      return runs[0] as string;
    }
    const alone = await play(1, 1);
    expect(await play(3, 4)).toBe(alone);
    expect(alone).toContain('"text":"d"');
  });

  it("checks its options", () => {
    expect(() => new SandboxPool({ size: 0 })).toThrow(/size must be a positive whole number/);
    expect(() => new SandboxPool({ size: 4, maxWorkers: 2 })).toThrow(/maxWorkers \(2\) is below size \(4\)/);
    expect(new SandboxPool({ size: 3 }).maxWorkers).toBe(16);
  });
});
