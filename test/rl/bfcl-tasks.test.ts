import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BfclBackendHost } from "../../src/bench/bfcl/backends.js";
import { callToArguments, docParameterOrder, parsePythonCall } from "../../src/bench/bfcl/call-syntax.js";
import { checkMultiTurn } from "../../src/bench/bfcl/multi-turn-checker.js";
import {
  allFunctions,
  type BfclMultiTurnItem,
  loadBfclMultiTurnFile,
} from "../../src/bench/bfcl/multi-turn-data.js";
import { Catalog } from "../../src/catalog/catalog.js";
import { TerrariumError } from "../../src/core/errors.js";
import { type OpenEnvMessageOut, OpenEnvServer, type OpenEnvSession } from "../../src/rl/openenv/index.js";
import { bfclTaskSet, isBfclMultiTurnEntry, type TurnAdvance } from "../../src/rl/tasks/bfcl.js";
import { isGatsDatasetLine } from "../../src/rl/tasks/gats.js";
import { type TaskSet, taskSetSource } from "../../src/rl/tasks/task-set.js";
import { Engine } from "../../src/sim/engine.js";
import { FIXTURES } from "../helpers/paths.js";

/**
 * BFCL multi-turn entries as RL tasks, on the small backends written in BFCL's style
 * (test/fixtures/bfcl-multi-turn; python3 runs them, as in the bench's multi-turn tests): episodes driven
 * through the OpenEnv protocol layer, turns advanced by `finish`, rewards from BFCL's state and response
 * checks, compared with the bench's checker.
 */
const DIR = join(FIXTURES, "bfcl-multi-turn");
const BASE = join(DIR, "BFCL_v3_multi_turn_base.json");
const MISS_FUNC = join(DIR, "BFCL_v3_multi_turn_miss_func.json");
const BACKENDS = join(DIR, "backends");
const OPTIONS = { backends: BACKENDS, backendOptions: { stateless: ["TinyMathAPI"] } };

let base: TaskSet;
let host: BfclBackendHost;
const engine = new Engine({ catalog: new Catalog([]) });
const servers: OpenEnvServer[] = [];
beforeAll(async () => {
  base = await bfclTaskSet(BASE, OPTIONS);
  host = await BfclBackendHost.start({ dir: BACKENDS, stateless: ["TinyMathAPI"] });
});
afterAll(async () => {
  for (const server of servers) await server.close();
  await host?.close();
  await engine.close();
});

function open(set: TaskSet): OpenEnvSession {
  const server = new OpenEnvServer(engine, {
    source: taskSetSource([set], () => []),
    idleTimeoutMs: 0,
  });
  servers.push(server);
  return server.open(undefined);
}
async function observation(session: OpenEnvSession, message: unknown) {
  const answer: OpenEnvMessageOut | undefined = await session.handleText(JSON.stringify(message));
  if (answer?.type !== "observation")
    throw new Error(`expected an observation, got ${JSON.stringify(answer)}`);
  return answer.data as { observation: Record<string, any>; reward: number | null; done: boolean };
}
const item = (file: string, id: string): BfclMultiTurnItem => {
  const found = loadBfclMultiTurnFile(file).find((candidate) => candidate.id === id);
  if (!found) throw new Error(`no fixture entry ${id}`);
  return found;
};
/** The entry's ground truth as `{name, arguments}` calls, turn by turn. */
const groundTruth = (entry: BfclMultiTurnItem) => {
  const order = docParameterOrder(allFunctions(entry));
  return entry.groundTruth.map((turn) => turn.map((text) => callToArguments(parsePythonCall(text), order)));
};

/** Plays the turns through the protocol (a finish after each); returns the last step. */
async function play(session: OpenEnvSession, turns: Array<Array<{ name: string; arguments: unknown }>>) {
  const steps: Array<Awaited<ReturnType<typeof observation>>> = [];
  for (const calls of turns) {
    for (const call of calls) {
      const step = await observation(session, {
        type: "step",
        data: { type: "call_tool", tool_name: call.name, arguments: call.arguments },
      });
      expect(step.observation.error, `${call.name}: ${JSON.stringify(step.observation.error)}`).toBeNull();
      expect(step.done).toBe(false);
    }
    steps.push(
      await observation(session, {
        type: "step",
        data: { type: "call_tool", tool_name: "finish", arguments: {} },
      }),
    );
  }
  return steps;
}

describe("bfclTaskSet", () => {
  it("loads a BFCL multi-turn file with its possible answers beside it; refuses what cannot be served", async () => {
    expect(base.taskIds).toEqual(["multi_turn_base_0", "multi_turn_base_1"]);
    // No --backends: the bench's message.
    await expect(bfclTaskSet(BASE)).rejects.toThrow(/--backends <dir>/);
    await expect(bfclTaskSet(BASE, { backends: join(DIR, "nowhere") })).rejects.toMatchObject({
      code: "FILE_UNREADABLE",
    });
    // The ground truth is missing: a located error naming the file looked for.
    const alone = mkdtempSync(join(tmpdir(), "bfcl-tasks-"));
    try {
      copyFileSync(BASE, join(alone, "BFCL_v3_multi_turn_base.json"));
      const error = await bfclTaskSet(join(alone, "BFCL_v3_multi_turn_base.json"), OPTIONS).catch((e) => e);
      expect(error).toBeInstanceOf(TerrariumError);
      expect(error.code).toBe("FILE_UNREADABLE");
      expect(error.message).toMatch(/no possible answers for "multi_turn_base"/);
      expect(error.where.file).toBe(join(alone, "possible_answer", "BFCL_v3_multi_turn_base.json"));
      // With answers and docs given elsewhere, a file of any name loads.
      copyFileSync(BASE, join(alone, "subset.jsonl"));
      mkdirSync(join(alone, "empty"));
      const set = await bfclTaskSet(join(alone, "subset.jsonl"), {
        ...OPTIONS,
        answerFile: join(DIR, "possible_answer", "BFCL_v3_multi_turn_base.json"),
        funcDocFolder: join(DIR, "multi_turn_func_doc"),
      });
      expect(set.taskIds).toHaveLength(2);
      // A class whose module the backends folder lacks is refused before serving.
      await expect(bfclTaskSet(BASE, { backends: join(alone, "empty") })).rejects.toThrow(
        /no module for NotesAPI/,
      );
    } finally {
      rmSync(alone, { recursive: true, force: true });
    }
  });

  it("tells BFCL entries from gats dataset lines", () => {
    const entry = { id: "multi_turn_base_0", question: [[]], involved_classes: ["NotesAPI"] };
    expect(isBfclMultiTurnEntry(entry)).toBe(true);
    expect(isGatsDatasetLine(entry)).toBe(false);
    const line = { id: 1, tools: [], turns: ["do it"] };
    expect(isGatsDatasetLine(line)).toBe(true);
    expect(isBfclMultiTurnEntry(line)).toBe(false);
    for (const other of [null, [], "x", { id: 1, question: [], involved_classes: [] }])
      expect(isBfclMultiTurnEntry(other)).toBe(false);
  });

  it("the ground truth through an OpenEnv session: finish advances the turns, state = response = 1", async () => {
    const entry = item(BASE, "multi_turn_base_0");
    const starts: Array<{ engine: unknown; released: number }> = [];
    const watched: TaskSet = {
      ...base,
      async start(taskId, options) {
        const start = await base.start(taskId, options);
        const seen = { engine: start.engine, released: 0 };
        starts.push(seen);
        return {
          ...start,
          release: async () => {
            seen.released++;
            await start.release?.();
          },
        };
      },
    };
    const session = open(watched);
    const reset = await observation(session, { type: "reset", data: { task_id: entry.id } });
    expect(reset.observation).toMatchObject({
      instruction: "Go into the docs folder and create a file named todo.txt.",
      turn: 0,
      turns: 3,
    });
    expect(reset.observation.metadata).toMatchObject({ task_id: entry.id, format: "bfcl_multi_turn" });
    const names = reset.observation.tools.map((tool: { name: string }) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["cd", "touch", "echo", "cat", "add_note", "finish"]));
    const steps = await play(session, groundTruth(entry));
    // Each finish but the last answers the next user turn.
    expect(steps[0]?.observation.result).toEqual({
      finished: false,
      instruction: "Write 'buy milk' into todo.txt.",
      turn: 1,
      turns: 3,
    });
    expect(steps[0]?.done).toBe(false);
    expect(steps[1]?.observation.result.turn).toBe(2);
    const last = steps[2] as Awaited<ReturnType<typeof observation>>;
    expect(last.done).toBe(true);
    expect(last.observation.result).toEqual({ finished: true });
    expect(last.reward).toBe(1);
    expect(last.observation.metadata.reward_breakdown).toEqual({ completed: 1, state: 1, response: 1 });
    expect(last.observation.metadata.bfcl).toMatchObject({ valid: true });
    // The episode ran on an engine of its own whose session recorded every call; the server released it
    // (its Python process stopped) once the episode was done.
    expect(starts.map((started) => started.released)).toEqual([1]);
    const episodeEngine = starts[0]?.engine as Engine;
    const exported = await episodeEngine.exportSession(reset.observation.metadata.session_id);
    expect(exported.history.map((entry) => entry.request.name)).toEqual([
      "cd",
      "touch",
      "echo",
      "cat",
      "add_note",
    ]);
    const after = await episodeEngine
      .call(exported.session.id, { name: "cd", arguments: { folder: ".." } })
      .catch((error: Error) => ({ status: "thrown", message: error.message }));
    expect(after.status).toMatch(/error|thrown/);
  });

  it("a changed write scores 0 where BFCL's checker fails it, with the same error", async () => {
    const entry = item(BASE, "multi_turn_base_0");
    const turns = groundTruth(entry);
    turns[1] = [{ name: "echo", arguments: { content: "buy eggs", file_name: "todo.txt" } }];
    const session = open(base);
    await observation(session, { type: "reset", data: { task_id: entry.id } });
    const last = (await play(session, turns)).at(-1) as Awaited<ReturnType<typeof observation>>;
    expect(last.done).toBe(true);
    expect(last.reward).toBe(0);
    expect(last.observation.metadata.reward_breakdown).toMatchObject({ completed: 1, state: 0 });
    const official = await checkMultiTurn(entry, turns, host);
    expect(official.valid).toBe(false);
    expect(last.observation.metadata.bfcl).toMatchObject({
      valid: false,
      error_type: official.valid ? undefined : official.errorType,
      turn: official.valid ? undefined : official.turn,
    });
  });

  it("a turn left without calls fails the response check (BFCL's empty turn), the state check passes", async () => {
    const entry = item(BASE, "multi_turn_base_1");
    const turns = groundTruth(entry);
    turns[1] = []; // count_notes() only reads: the state stays right, the result is missing
    const session = open(base);
    await observation(session, { type: "reset", data: { task_id: entry.id } });
    const last = (await play(session, turns)).at(-1) as Awaited<ReturnType<typeof observation>>;
    expect(last.reward).toBe(0);
    expect(last.observation.metadata.reward_breakdown).toEqual({ completed: 1, state: 1, response: 0 });
    const official = await checkMultiTurn(entry, turns, host);
    expect(official).toMatchObject({ valid: false, errorType: "multi_turn:empty_turn_model_response" });
    expect(last.observation.metadata.bfcl.error_type).toBe("multi_turn:empty_turn_model_response");
  });

  it("an episode that runs out of steps before the last turn is force-terminated: completed 0", async () => {
    const set = await bfclTaskSet(BASE, { ...OPTIONS, maxSteps: 3 });
    const entry = item(BASE, "multi_turn_base_0");
    const session = open(set);
    const reset = await observation(session, { type: "reset", data: { task_id: entry.id } });
    expect(reset.observation.metadata.max_steps).toBe(3);
    const [cd, touch] = groundTruth(entry)[0] as Array<{ name: string; arguments: unknown }>;
    for (const call of [cd, touch])
      await observation(session, {
        type: "step",
        data: { type: "call_tool", tool_name: call?.name, arguments: call?.arguments },
      });
    const last = await observation(session, {
      type: "step",
      data: { type: "call_tool", tool_name: "finish", arguments: {} },
    });
    expect(last.done).toBe(true);
    expect(last.reward).toBe(0);
    // The turn done was right; the entry still fails as BFCL fails an unfinished run.
    expect(last.observation.metadata.reward_breakdown).toEqual({ completed: 0, state: 1, response: 1 });
    expect(last.observation.metadata.bfcl.error_type).toBe("multi_turn:force_terminated");
    expect(last.observation.metadata.end_reason).toBe("max_steps");
  });

  it("miss_func over the protocol: a withheld function is not found until its turn, then listed and callable", async () => {
    const entry = item(MISS_FUNC, "multi_turn_miss_func_0");
    const session = open(await bfclTaskSet(MISS_FUNC, OPTIONS));
    const reset = await observation(session, { type: "reset", data: { task_id: entry.id } });
    expect(reset.observation.tools.map((tool: { name: string }) => tool.name)).not.toContain("touch");
    expect(reset.observation.metadata.missed_functions).toEqual({ 2: ["touch"] });
    const early = await observation(session, {
      type: "step",
      data: { type: "call_tool", tool_name: "touch", arguments: { file_name: "x.txt" } },
    });
    expect(early.observation.error.error_type).toBe("tool_not_found");
    const turns = groundTruth(entry);
    const [first, second] = await play(session, turns.slice(0, 2));
    expect(first?.observation.result.tools_added).toBeUndefined();
    expect(second?.observation.result.tools_added.map((tool: { name: string }) => tool.name)).toEqual([
      "touch",
    ]);
    const listed = await observation(session, { type: "step", data: { type: "list_tools" } });
    const names = listed.observation.tools.map((tool: { name: string }) => tool.name);
    expect(names.at(-2)).toBe("touch");
    expect(names.at(-1)).toBe("finish");
    const [last] = await play(session, turns.slice(2));
    expect(last?.done).toBe(true);
    // The early call never reached the backends: the entry still passes.
    expect(last?.reward).toBe(1);
  });

  it("miss_func: withheld functions arrive with their turn; release stops the Python process", async () => {
    const set = await bfclTaskSet(MISS_FUNC, OPTIONS);
    const entry = item(MISS_FUNC, "multi_turn_miss_func_0");
    const start = await set.start(entry.id, { episodeId: "e1" });
    const episodeEngine = start.engine as Engine;
    expect(start.tools.map((tool) => tool.name)).not.toContain("touch");
    const turns = groundTruth(entry);
    const advances: TurnAdvance[] = [];
    for (const [index, calls] of turns.entries()) {
      for (const call of calls) {
        const outcome = await episodeEngine.call(start.sessionId, call);
        expect(outcome.status, call.name).toBe("ok");
      }
      const next = (await start.onFinish?.({})) as TurnAdvance;
      advances.push(next);
      expect(next.done).toBe(index === turns.length - 1);
    }
    // Turn 2 has no user message: BFCL's turn where the functions arrive.
    expect(advances[1]?.result).toMatchObject({
      turn: 2,
      instruction: expect.stringMatching(/More functions/),
    });
    expect(advances[1]?.result?.tools_added).toEqual([expect.objectContaining({ name: "touch" })]);
    expect(advances[1]?.tools?.map((tool) => tool.name)).toEqual(["touch"]);
    const score = await start.score?.({ reason: "finish" });
    expect(score).toMatchObject({ reward: 1, breakdown: { completed: 1, state: 1, response: 1 } });
    // The exported session holds every call.
    const exported = await episodeEngine.exportSession(start.sessionId);
    expect(exported.history.map((entry) => entry.request.name)).toEqual(["mkdir", "cd", "touch"]);
    await start.release?.();
    const after = await episodeEngine
      .call(start.sessionId, { name: "cd", arguments: { folder: ".." } })
      .catch((error: Error) => ({ status: "thrown", message: error.message }));
    expect(after).toMatchObject({ status: expect.stringMatching(/error|thrown/) });
  });

  it("backends that fail while checking leave the reward null, with why, never a guessed 0", async () => {
    const start = await base.start("multi_turn_base_1", { episodeId: "e2" });
    await start.release?.(); // the Python process is gone before the episode is scored
    const score = await start.score?.({ reason: "user_stop" });
    expect(score).toMatchObject({
      reward: null,
      breakdown: { completed: 0, state: null, response: null },
      metadata: {
        skipped_checks: [
          { check: "state", reason: expect.stringMatching(/BFCL backends failed/) },
          expect.anything(),
        ],
      },
    });
  });
});
