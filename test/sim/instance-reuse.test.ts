import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/catalog.js";
import { bank } from "../../src/envs/corpus/bank.js";
import { defineEnvironment } from "../../src/envs/define.js";
import { loadEnvironment } from "../../src/envs/index.js";
import type { Environment, EnvironmentInstance } from "../../src/envs/types.js";
import { MemoryStore } from "../../src/sessions/index.js";
import { Engine } from "../../src/sim/engine.js";
import { CodeSimulator } from "../../src/sim/simulators/code.js";

/**
 * The code simulator runs each call of a TypeScript environment on an instance made anew from the stored
 * state with the call's own seed and clock. It now makes that instance in place (`restart`) rather than a
 * new one per call; the ids, times and states of a session must be exactly what new instances give.
 */
function counting(environment: Environment, options: { restart: boolean }) {
  const made = { instances: 0, restarts: 0 };
  const counted: Environment = {
    ...environment,
    create: async (createOptions) => {
      made.instances++;
      const instance = await environment.create(createOptions);
      if (options.restart) {
        const restartable = instance as unknown as { restart: (o: unknown) => void };
        const restart = restartable.restart.bind(instance);
        restartable.restart = (o) => {
          made.restarts++;
          restart(o);
        };
        return instance;
      }
      // The same instance without `restart`: the simulator must make a new one per call.
      const plain: EnvironmentInstance = {
        environment: counted,
        step: (call, ...rest) =>
          (instance.step as (...a: unknown[]) => ReturnType<EnvironmentInstance["step"]>)(call, ...rest),
        state: () => instance.state(),
        fork: () => instance.fork(),
        reset: (state) => instance.reset(state),
        close: () => instance.close(),
      };
      return plain;
    },
  };
  return { environment: counted, made };
}

/** An engine whose code simulator runs `environment`, seeded, with the catalog of `catalogOf`. */
async function engineOn(environment: Environment, catalogOf: Environment): Promise<Engine> {
  return new Engine({
    catalog: new Catalog(catalogOf.tools),
    store: new MemoryStore(),
    simulators: [new CodeSimulator(environment, "reuse")],
    initialState: await catalogOf.initialState(),
    seed: "reuse",
  });
}

async function runBank(environment: Environment) {
  const engine = await engineOn(environment, bank);
  const sessions = [(await engine.createSession()).id, (await engine.createSession()).id];
  const outcomes: unknown[] = [];
  for (let i = 0; i < 12; i++) {
    const session = sessions[i % 2] as string;
    const request =
      i % 5 === 4
        ? { name: "open_account", arguments: { owner: `Owner ${i}`, deposit: i } }
        : i % 7 === 6
          ? { name: "transfer", arguments: { from_account: "ACC-2001", to_account: "ACC-1001", amount: 1 } }
          : {
              name: "transfer",
              arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: i + 1 },
            };
    outcomes.push(await engine.call(session, request));
  }
  // A state set from outside in between: the next call starts from it.
  await engine.setState(sessions[0] as string, {
    ...((await bank.initialState()) as object),
    stats: { transfer_count: 7, total_moved: 0 },
  });
  outcomes.push(
    await engine.call(sessions[0] as string, {
      name: "transfer",
      arguments: { from_account: "ACC-1002", to_account: "ACC-1001", amount: 2 },
    }),
  );
  const histories = await Promise.all(sessions.map((id) => engine.history(id)));
  const states = await Promise.all(sessions.map((id) => engine.state(id)));
  await engine.close();
  return { outcomes, histories, states };
}

async function runCounter(environment: Environment, counter: Environment) {
  const engine = await engineOn(environment, counter);
  const session = (await engine.createSession()).id;
  const outcomes: unknown[] = [];
  // 90 at a time: the twelfth would pass 1000, which the tool's guard refuses.
  for (let i = 0; i < 12; i++)
    outcomes.push(await engine.call(session, { name: "increment", arguments: { by: 90 } }));
  const state = await engine.state(session);
  await engine.close();
  return { outcomes, state };
}

describe("the code simulator's instances", () => {
  it("are made anew in place for each call, with the ids, times and states new instances give", async () => {
    const reused = counting(bank, { restart: true });
    const fresh = counting(bank, { restart: false });
    const a = await runBank(reused.environment);
    const b = await runBank(fresh.environment);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    // Ids were drawn (open_account, transfer) and the failed calls are in it too.
    expect(JSON.stringify(a.outcomes)).toContain("TRF-");
    expect(JSON.stringify(a.outcomes)).toContain("tool_error");
    // New instances: one per call without restart; with it, one per session (and after the state was set).
    expect(fresh.made.instances).toBe(13);
    expect(reused.made.instances).toBeLessThanOrEqual(3);
    expect(reused.made.restarts).toBeGreaterThanOrEqual(10);
  });

  it("do the same for a sandboxed (QuickJS) environment", async () => {
    const counter = await loadEnvironment(
      join(import.meta.dirname, "..", "..", "examples", "environments", "counter.quickjs.yaml"),
    );
    const reused = counting(counter, { restart: true });
    const fresh = counting(counter, { restart: false });
    const a = await runCounter(reused.environment, counter);
    const b = await runCounter(fresh.environment, counter);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    // Ids and times were drawn, and the guard refused the step past 1000.
    expect(JSON.stringify(a.outcomes)).toContain("inc");
    expect(JSON.stringify(a.outcomes)).toContain("tool_error");
    expect(fresh.made.instances).toBe(12);
    expect(reused.made.instances).toBe(1);
    expect(reused.made.restarts).toBe(11);
  });

  it("keep work a tool left running after its step on that step's own ids and clock", async () => {
    // `background` leaves work that draws an id and a time when `draw`, the next call, lets it go on.
    let release: () => void = () => {};
    const late: string[] = [];
    const linger = defineEnvironment<{ n: number; ids: string[]; times: string[] }>({
      name: "linger",
      description: "A tool whose work outlives its step.",
      initialState: { n: 0, ids: [], times: [] },
      tools: {
        background: {
          description: "Starts work that ends later.",
          effect: "write",
          run: ({ state, ids, now }) => {
            void new Promise<void>((resolve) => {
              release = resolve;
            }).then(() => late.push(ids.next("late"), now()));
            state.n++;
            return { ok: true };
          },
        },
        draw: {
          description: "Draws an id and a time after the earlier call's work went on.",
          effect: "write",
          run: async ({ state, ids, now }) => {
            release();
            await Promise.resolve();
            await Promise.resolve();
            state.ids.push(ids.next("t"));
            state.times.push(now());
            return { ok: true };
          },
        },
      },
    });
    const runLinger = async (environment: Environment) => {
      const engine = await engineOn(environment, linger);
      const id = (await engine.createSession()).id;
      await engine.call(id, { name: "background", arguments: {} });
      await engine.call(id, { name: "draw", arguments: {} });
      const state = await engine.state(id);
      await engine.close();
      return state;
    };
    const fresh = await runLinger(counting(linger, { restart: false }).environment);
    const reused = counting(linger, { restart: true });
    expect(await runLinger(reused.environment)).toEqual(fresh);
    expect(reused.made.restarts).toBe(1);
    // The late work did run (between the two calls' draws), on the first call's sources.
    expect(late).toHaveLength(4);
  });
});
