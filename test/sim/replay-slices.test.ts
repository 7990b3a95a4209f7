import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { ManualClock } from "../../src/core/index.js";
import { BUILTIN_ENVIRONMENTS, type Environment } from "../../src/envs/index.js";
import { createApp } from "../../src/server/app.js";
import { DEFAULT_MAX_REPLAY_STEPS } from "../../src/sim/engine.js";
import { CodeSimulator, Engine, type EngineOptions } from "../../src/sim/index.js";
import { parseSessionExport, readSessionExport } from "../../src/sim/session-export.js";

/**
 * Replays of long histories run in slices that give the event loop a turn, are capped in length
 * (`maxReplaySteps`, refused before anything is created), and leave nothing behind when they fail.
 */
const bank = BUILTIN_ENVIRONMENTS.bank as Environment;

async function bankEngine(options: Partial<EngineOptions> = {}): Promise<Engine> {
  return new Engine({
    catalog: new Catalog(bank.tools),
    simulators: [new CodeSimulator(bank, "t")],
    initialState: await bank.initialState(),
    clock: new ManualClock("2025-03-01T00:00:00Z", 1000),
    seed: 1,
    ...options,
  });
}

/** An export of `steps` recorded calls (reads of accounts) on the bank's first state. */
async function longExport(
  steps: number,
  request: (i: number) => { name: string; arguments: unknown } = readCall,
) {
  const at = (i: number) => new Date(Date.parse("2025-03-01T00:00:00Z") + i * 1000).toISOString();
  return {
    schemaVersion: 1,
    session: { id: "imported", createdAt: at(0), seed: "long" },
    snapshots: [{ index: 0, at: at(0), reason: "initial", state: await bank.initialState() }],
    history: Array.from({ length: steps }, (_, i) => ({
      index: i,
      at: at(i + 1),
      request: request(i),
      result: { status: "ok", observation: {}, changes: [], errors: [] },
      simulator: "code",
    })),
  };
}

const readCall = (i: number) => ({
  name: "get_account",
  arguments: { account_id: i % 2 === 0 ? "ACC-1001" : "ACC-1002" },
});

/**
 * Runs `work` while counting event-loop turns (setImmediate) and, at each turn, how far `progress` moved
 * since the turn before. Progress, not time: a loaded machine stretches the waits between turns, but a
 * slice can only do less work in its time, never more, so the most steps between two turns does not
 * depend on the load.
 */
async function watchLoop<T>(
  work: () => Promise<T>,
  progress: () => number,
): Promise<{ result: T; turns: number; mostStepsBetweenTurns: number }> {
  let turns = 0;
  let mostStepsBetweenTurns = 0;
  let last = progress();
  let running = true;
  const tick = () => {
    const now = progress();
    mostStepsBetweenTurns = Math.max(mostStepsBetweenTurns, now - last);
    last = now;
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const result = await work();
  running = false;
  tick();
  return { result, turns, mostStepsBetweenTurns };
}

describe("engine: replays in slices", () => {
  it("gives the event loop turns throughout a 3,000-step replay", async () => {
    const engine = await bankEngine();
    const source = await engine.importSession(await longExport(3000));
    // The replay's steps as the store receives them.
    let stepsStored = 0;
    const appendStep = engine.store.appendStep.bind(engine.store);
    engine.store.appendStep = (...args) => {
      stepsStored++;
      return appendStep(...args);
    };
    const watched = await watchLoop(
      () => engine.replay(source.id, "code"),
      () => stepsStored,
    );
    expect(watched.result.outcomes).toHaveLength(3000);
    expect(watched.result.outcomes.every((outcome) => outcome.status === "ok")).toBe(true);
    // Before slicing, the whole replay ran in microtasks: all its steps before the loop's next turn. Slices
    // are about 5 ms, so even a fast machine gives several turns in a replay this long.
    expect(watched.mostStepsBetweenTurns).toBeLessThan(3000 / 3);
    await engine.close();
  }, 60_000);

  it("refuses a history longer than maxReplaySteps before creating anything", async () => {
    expect(DEFAULT_MAX_REPLAY_STEPS).toBe(10_000);
    const engine = await bankEngine({ maxReplaySteps: 50 });
    const source = await engine.importSession(await longExport(51));
    const error = await engine.replay(source.id, "code").then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({
      code: "TOO_LARGE",
      message: `session ${source.id} has 51 calls; a replay runs at most 50 (maxReplaySteps)`,
    });
    expect(await engine.store.listSessions()).toHaveLength(1);
    const fits = await engine.importSession(await longExport(50));
    expect((await engine.replay(fits.id, "code")).outcomes).toHaveLength(50);
    await engine.close();
  });

  it("refuses bad limits with a clear message", async () => {
    for (const [options, message] of [
      [{ maxReplaySteps: 0 }, /maxReplaySteps must be a whole number of at least 1, got 0/],
      [{ maxResultBytes: 1.5 }, /maxResultBytes must be a whole number of at least 1, got 1.5/],
      [{ maxJsonDepth: 8 }, /maxJsonDepth must be a whole number from 16 to 4096, got 8/],
    ] as const) {
      await expect(bankEngine(options)).rejects.toMatchObject({
        code: "CONFIG_INVALID",
        message: expect.stringMatching(message),
      });
    }
  });

  it("leaves no session behind a replay that fails part way", async () => {
    const engine = await bankEngine({ maxJsonDepth: 32 });
    // Entry 700's arguments are nested deeper than this engine stores: its step throws TOO_LARGE.
    const deep = (depth: number): unknown => (depth === 0 ? "x" : { a: deep(depth - 1) });
    const document = await longExport(1000, (i) =>
      i === 700 ? { name: "get_account", arguments: { account_id: deep(40) } } : readCall(i),
    );
    const source = await engine.importSession(document);
    await expect(engine.replay(source.id, "code")).rejects.toMatchObject({ code: "TOO_LARGE" });
    expect((await engine.store.listSessions()).map((session) => session.id)).toEqual([source.id]);
    await engine.close();
  }, 60_000);

  it("reads a long export in slices, with the same result and errors as in one go", async () => {
    const document = await longExport(300);
    let pauses = 0;
    const read = await readSessionExport(document, async () => {
      pauses++;
    });
    expect(pauses).toBe(301);
    expect(read).toEqual(parseSessionExport(document));
    const broken = {
      ...document,
      history: document.history.map((h, i) => (i === 250 ? { ...h, index: 3 } : h)),
    };
    await expect(readSessionExport(broken, async () => {})).rejects.toMatchObject({
      code: "INVALID_INPUT",
      where: { pointer: "/history/250/index" },
    });
  });
});

describe("server: /health while four long replays run", () => {
  let engine: Engine;
  let server: ReturnType<typeof serve>;
  let url: string;

  beforeAll(async () => {
    engine = await bankEngine();
    const app = createApp(engine);
    await new Promise<void>((resolve) => {
      server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve());
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await engine.close();
  });

  it("answers /health between the replays' slices, not after them", async () => {
    const document = await longExport(1000);
    const sources = await Promise.all(Array.from({ length: 4 }, () => engine.importSession(document)));
    // The first /health has the server warmed, so the samples measure waiting, not a first request.
    expect((await fetch(`${url}/health`)).status).toBe(200);

    const started = performance.now();
    let finished = false;
    const replays = Promise.all(
      sources.map(async (source) => {
        const response = await fetch(`${url}/sessions/${source.id}/replay`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ simulator: "code" }),
        });
        return { status: response.status, body: (await response.json()) as { outcomes: unknown[] } };
      }),
    ).finally(() => {
      finished = true;
    });
    const health: number[] = [];
    // Samples while the replays run (the first replays to arrive are in progress from the first sample on).
    while (!finished) {
      const asked = performance.now();
      const response = await fetch(`${url}/health`);
      await response.text();
      if (!finished) health.push(performance.now() - asked);
      expect(response.status).toBe(200);
    }
    const results = await replays;
    const totalMs = performance.now() - started;
    for (const result of results) {
      expect(result.status).toBe(201);
      expect(result.body.outcomes).toHaveLength(1000);
    }
    // Unsliced, the first /health waited for all four replays (21.7 s in the report): one sample, as long
    // as the whole run. Sliced, /health gets through many times, each time after a few slices at most.
    expect(health.length).toBeGreaterThan(3);
    expect(Math.max(...health)).toBeLessThan(totalMs / 3);
    console.info(
      `4 replays of 1,000 steps: ${totalMs.toFixed(0)} ms, ${health.length} /health samples, median ${[...health].sort((a, b) => a - b)[health.length >> 1]?.toFixed(0)} ms, slowest ${Math.max(...health).toFixed(0)} ms`,
    );
  }, 120_000);
});
