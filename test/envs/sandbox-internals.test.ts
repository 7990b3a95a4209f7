import type { Worker } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import {
  classify,
  type GuestHost,
  type GuestLimits,
  type GuestRequest,
  type RawOutcome,
  sandboxEngine,
} from "../../src/envs/sandbox/engine.js";
import { SandboxPool } from "../../src/envs/sandbox/pool.js";
import { defineSandboxedEnvironment, SANDBOX_FAILED } from "../../src/envs/sandbox/quickjs.js";

/**
 * The QuickJS engine's own text (an abort's assertion, a WebAssembly trap, quickjs-emscripten's lifetime
 * errors) never reaches a caller (docs/security.md): the call fails with a generic message and code
 * INTERNAL, the state is untouched, the text goes to the log, and a worker whose engine failed is replaced.
 *
 * Real failures first: a trap inside the real engine (its WebAssembly memory overwritten, the only way we
 * know to make this build fail by itself, since the sandbox drops the engine after every memory trip), a
 * real worker's engine failing, a real worker thread dying mid-call, and real memory and stack exhaustion.
 * Then every form of engine text, given as a worker reports it, to test the mapping itself.
 */
const ASSERTION =
  "Aborted(Assertion failed: list_empty(&rt->gc_obj_list), at: ../../vendor/quickjs/quickjs.c,1998,JS_FreeRuntime)";
const INTERNAL_TEXT =
  /Assertion|Aborted|quickjs\.c|RuntimeError|memory access|unreachable|Lifetime|QuickJS[A-Z]/;

/** A pool that runs calls in this thread's engine, except those whose code names a scripted failure. */
function scriptedPool(failures: Record<string, RawOutcome>): SandboxPool {
  return {
    warm: async () => undefined,
    run: async (request: GuestRequest, host: GuestHost, limits: GuestLimits) => {
      const failure = Object.entries(failures).find(([marker]) => request.code.includes(marker));
      if (failure) return classify(failure[1]);
      return (await sandboxEngine()).run(request, host, limits);
    },
  } as unknown as SandboxPool;
}

const descriptor = {
  kind: "quickjs" as const,
  name: "counter",
  description: "A counter.",
  initialState: { counter: 0 },
  tools: [
    {
      name: "bump",
      description: "Adds one.",
      effect: "write" as const,
      code: "(ctx) => ++ctx.state.counter",
    },
    ...["abort", "trap", "unreachable", "lifetime", "emscripten_raise"].map((name) => ({
      name,
      description: `Fails inside the engine (${name}).`,
      effect: "write" as const,
      code: `(ctx) => { ctx.state.counter = 100; return "${name}"; }`,
    })),
  ],
};

describe("sandbox: the engine's own text stays in the log", () => {
  it("answers engine failures with a generic message and code INTERNAL, and logs what the engine said", async () => {
    const logged: string[] = [];
    const environment = defineSandboxedEnvironment(descriptor, {
      pool: scriptedPool({
        '"abort"': { kind: "failed", reason: "engine", detail: ASSERTION },
        '"trap"': { kind: "failed", reason: "engine", detail: "RuntimeError: memory access out of bounds" },
        '"unreachable"': { kind: "failed", reason: "engine", detail: "unreachable" },
        // quickjs-emscripten's errors thrown inside a host function reach the guest as its own exception.
        '"lifetime"': {
          kind: "ran",
          text: JSON.stringify({ kind: "raised", message: "QuickJSUseAfterFree: Lifetime not alive" }),
          timedOut: false,
          memory: false,
          settled: true,
        },
        '"emscripten_raise"': {
          kind: "ran",
          text: JSON.stringify({ kind: "unserializable", message: "RuntimeError: unreachable" }),
          timedOut: false,
          memory: false,
          settled: true,
        },
      }),
      log: (line) => logged.push(line),
    });
    const instance = await environment.create({ seed: 1 });
    expect((await instance.step({ name: "bump" })).observation).toBe(1);
    for (const name of ["abort", "trap", "unreachable", "lifetime", "emscripten_raise"]) {
      const failed = await instance.step({ name });
      expect(failed.success).toBe(false);
      expect(failed.observation).toEqual({ error: SANDBOX_FAILED, code: "INTERNAL" });
      expect(JSON.stringify(failed.observation)).not.toMatch(INTERNAL_TEXT);
      expect(failed.changes).toEqual([]);
      expect(await instance.state()).toEqual({ counter: 1 });
    }
    expect(logged).toEqual([
      `terrarium: sandbox: counter.abort: the QuickJS engine failed: ${ASSERTION}`,
      "terrarium: sandbox: counter.trap: the QuickJS engine failed: RuntimeError: memory access out of bounds",
      "terrarium: sandbox: counter.unreachable: the QuickJS engine failed: unreachable",
      "terrarium: sandbox: counter.lifetime: engine text in the tool's outcome: QuickJSUseAfterFree: Lifetime not alive",
      "terrarium: sandbox: counter.emscripten_raise: engine text in the tool's outcome: RuntimeError: unreachable",
    ]);
    // The next call runs as usual.
    expect((await instance.step({ name: "bump" })).observation).toBe(2);
  });

  it("leaves the tool's own errors and the sandbox's limits as they are", async () => {
    const logged: string[] = [];
    const environment = defineSandboxedEnvironment(
      {
        ...descriptor,
        tools: [
          {
            name: "throws",
            description: "Throws its own error.",
            effect: "read" as const,
            code: '(ctx) => { throw new TypeError("the host is unreachable today"); }',
          },
          {
            name: "rejects",
            description: "Rejects.",
            effect: "read" as const,
            code: '(ctx) => ctx.fail("no such order")',
          },
          {
            name: "asserts",
            description: "Fails its own assertion.",
            effect: "read" as const,
            code: '(ctx) => { throw new Error("Assertion failed: the counter is never negative"); }',
          },
          {
            name: "deep",
            description: "Recurses.",
            effect: "read" as const,
            code: "(ctx) => { const f = () => f(); return f(); }",
          },
        ],
      },
      { pool: scriptedPool({}), log: (line) => logged.push(line) },
    );
    const instance = await environment.create({ seed: 1 });
    expect((await instance.step({ name: "throws" })).observation).toEqual({
      error: "the tool raised an error: TypeError: the host is unreachable today",
    });
    expect((await instance.step({ name: "rejects" })).observation).toEqual({ error: "no such order" });
    expect((await instance.step({ name: "asserts" })).observation).toEqual({
      error: "the tool raised an error: Error: Assertion failed: the counter is never negative",
    });
    expect((await instance.step({ name: "deep" })).observation).toEqual({
      error: "the tool raised an error: InternalError: stack overflow",
    });
    expect(logged).toEqual([]);
  });
});

const pools: SandboxPool[] = [];
function realPool(size: number, options: { inlineMs?: number } = {}): SandboxPool {
  const made = new SandboxPool({ size, ...options });
  pools.push(made);
  return made;
}
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
});

/** Waits for a condition, with a deadline generous enough for a loaded CI machine. */
async function until(condition: () => boolean, what: string, deadlineMs = 20_000): Promise<void> {
  const deadline = performance.now() + deadlineMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const tool = (name: string, code: string, effect: "read" | "write" = "write") => ({
  name,
  description: `${name}.`,
  effect,
  code,
});

const bump = tool("bump", "(ctx) => ++ctx.state.counter");

/** A host for calls whose outcome is thrown away. */
const HOSTLESS: GuestHost = {
  now: () => "2025-01-01T00:00:00.000Z",
  clock: () => 0,
  random: () => 0,
  id: () => "id",
};

describe("sandbox: real engine failures stay in the log", () => {
  it("answers a real trap inside the engine generically, logs the trap and loads a fresh engine", async () => {
    const logged: string[] = [];
    // This thread's engine; for "wreck" its WebAssembly memory is overwritten first, so the engine
    // itself traps on the call (whatever the trap says: this is the engine's own text). The tool runs
    // once before, so that its compiled image is what the memory holds and the call restores nothing.
    const wrecking = {
      warm: async () => undefined,
      run: async (request: GuestRequest, host: GuestHost, limits: GuestLimits) => {
        const engine = await sandboxEngine();
        if (request.code.includes('"wreck"')) {
          engine.run(request, HOSTLESS, limits);
          const { memory } = (engine as unknown as { heap: { memory: { buffer: ArrayBuffer } } }).heap;
          new Uint8Array(memory.buffer).fill(0xff);
        }
        return engine.run(request, host, limits);
      },
    } as unknown as SandboxPool;
    const environment = defineSandboxedEnvironment(
      {
        ...descriptor,
        tools: [bump, tool("wreck", '(ctx) => { ctx.state.counter = 100; return "wreck"; }')],
      },
      { pool: wrecking, log: (line) => logged.push(line) },
    );
    const instance = await environment.create({ seed: 1 });
    expect((await instance.step({ name: "bump" })).observation).toBe(1);

    const wrecked = await instance.step({ name: "wreck" });
    expect(wrecked.success).toBe(false);
    expect(wrecked.observation).toEqual({ error: SANDBOX_FAILED, code: "INTERNAL" });
    expect(JSON.stringify(wrecked.observation)).not.toMatch(INTERNAL_TEXT);
    expect(await instance.state()).toEqual({ counter: 1 });
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/^terrarium: sandbox: counter\.wreck: the QuickJS engine failed: \S/);
    expect(logged[0]).toMatch(/memory access out of bounds|unreachable|Aborted\(|RuntimeError|table index/);

    // The broken engine was dropped: the next call runs in a freshly loaded one.
    expect((await instance.step({ name: "bump" })).observation).toBe(2);
  });

  it("replaces a worker whose engine failed, before it runs another call", async () => {
    const workers = realPool(1);
    await workers.warm();
    expect(workers.stats()).toMatchObject({ workers: 1, started: 1, retired: 0 });
    const logged: string[] = [];
    // The real pool, except that "break" reaches the worker's engine as a request it cannot run (the code
    // is not a string): the engine throws inside the worker, as it would on an abort.
    const breaking = {
      warm: () => workers.warm(),
      run: (request: GuestRequest, host: GuestHost, limits: GuestLimits) =>
        workers.run(
          request.code.includes('"break"') ? { ...request, code: undefined as unknown as string } : request,
          host,
          limits,
        ),
    } as unknown as SandboxPool;
    const environment = defineSandboxedEnvironment(
      {
        ...descriptor,
        tools: [bump, tool("break", '(ctx) => { ctx.state.counter = 100; return "break"; }')],
      },
      { pool: breaking, log: (line) => logged.push(line) },
    );
    const instance = await environment.create({ seed: 1 });
    expect((await instance.step({ name: "bump" })).observation).toBe(1);

    const broken = await instance.step({ name: "break" });
    expect(broken.observation).toEqual({ error: SANDBOX_FAILED, code: "INTERNAL" });
    expect(await instance.state()).toEqual({ counter: 1 });
    expect(logged).toEqual([
      expect.stringMatching(/^terrarium: sandbox: counter\.break: the QuickJS engine failed: \S/),
    ]);
    // The worker was terminated and a fresh one started in its place.
    expect(workers.stats()).toMatchObject({ workers: 1, started: 2, retired: 1 });
    expect((await instance.step({ name: "bump" })).observation).toBe(2);
    expect(workers.stats()).toMatchObject({ workers: 1, started: 2, retired: 1 });
  });

  it("answers a call whose worker thread died generically, and runs the next call in a new worker", async () => {
    // Every call in a worker (no inline calls), so that the next call shows the replacement worker.
    const workers = realPool(1, { inlineMs: 0 });
    await workers.warm();
    const logged: string[] = [];
    const environment = defineSandboxedEnvironment(
      { ...descriptor, tools: [bump, tool("spin", "(ctx) => { ctx.state.counter = -1; while (true) {} }")] },
      { pool: workers, timeLimitMs: 60_000, log: (line) => logged.push(line) },
    );
    const instance = await environment.create({ seed: 1 });
    const spinning = instance.step({ name: "spin" });
    await until(() => workers.stats().busy === 1, "the call to start");
    // The thread dies under the call (as on a crash of the engine that takes the thread with it).
    const slots = (workers as unknown as { slots: Set<{ worker: Worker }> }).slots;
    for (const slot of slots) void slot.worker.terminate();

    const died = await spinning;
    expect(died.observation).toEqual({ error: SANDBOX_FAILED, code: "INTERNAL" });
    expect(await instance.state()).toEqual({ counter: 0 });
    expect(logged).toEqual([
      "terrarium: sandbox: counter.spin: the QuickJS engine failed: the sandbox worker exited (code 1)",
    ]);
    expect((await instance.step({ name: "bump" })).observation).toBe(1);
    expect(workers.stats().started).toBe(2);
  }, 60_000);

  it("answers real memory and stack exhaustion with the sandbox's limits, never the engine's text", async () => {
    const logged: string[] = [];
    const environment = defineSandboxedEnvironment(
      {
        ...descriptor,
        tools: [
          bump,
          tool("hog", '(ctx) => { const a = []; for (;;) a.push("x".repeat(1000) + a.length); }'),
          // Freeing a runtime after this one ran out of memory aborts on an assertion in quickjs.c.
          tool("chain", "() => { function f() { return Promise.resolve().then(f); } return f(); }"),
          tool("deep", "() => { const f = (n) => f(n + 1) + 1; return f(0); }"),
          tool("nest", "() => { let v = []; for (let i = 0; i < 100000; i++) v = [v]; return v; }"),
        ],
      },
      {
        pool: realPool(1),
        timeLimitMs: 20_000,
        memoryLimitBytes: 4 * 1024 * 1024,
        log: (line) => logged.push(line),
      },
    );
    const instance = await environment.create({ seed: 1 });
    const expected: Record<string, RegExp> = {
      hog: /^the tool exceeded its memory limit of 4 MB$/,
      chain: /^the tool exceeded its memory limit of 4 MB$/,
      deep: /stack overflow|nested its calls too deeply/,
      nest: /stack overflow|nested its calls too deeply|cannot be stored as JSON|memory limit/,
    };
    let counter = 0;
    for (const [name, message] of Object.entries(expected)) {
      const failed = await instance.step({ name });
      expect(failed.success, name).toBe(false);
      const { error } = failed.observation as { error: string };
      expect(error, name).toMatch(message);
      expect(JSON.stringify(failed.observation), name).not.toMatch(INTERNAL_TEXT);
      // The sandbox is usable right after.
      expect((await instance.step({ name: "bump" })).observation).toBe(++counter);
    }
    expect(logged).toEqual([]);
  }, 120_000);
});
