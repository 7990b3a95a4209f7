import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/errors.js";
import { bank } from "../../src/envs/corpus/bank.js";
import { actionMatches, scoreExport, scoreSession, scoreTrajectory } from "../../src/rl/rewards/index.js";
import { engineForEnvironment, loadTasks, parseTasks, startTaskEpisode } from "../../src/rl/tasks/index.js";

function errorOf(run: () => unknown): TerrariumError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TerrariumError);
    return error as TerrariumError;
  }
  throw new Error("expected an error");
}

const FREEZE = {
  id: "freeze-1001",
  instruction: "Freeze account ACC-1001.",
  environment: "bank",
  expected: { actions: [{ name: "freeze_account", arguments: { account_id: "ACC-1001" } }] },
};

describe("loading task files", () => {
  it("errors name the file and the JSON Pointer of the bad value", () => {
    const dir = mkdtempSync(join(tmpdir(), "rl-tasks-"));
    const file = join(dir, "tasks.json");
    writeFileSync(
      file,
      JSON.stringify([
        { id: "a", user_scenario: {}, evaluation_criteria: { actions: [], reward_basis: ["DB", "VIBES"] } },
      ]),
    );
    const error = errorOf(() => loadTasks(file));
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toContain('unknown reward_basis entry "VIBES"');
    expect(error.where).toEqual({ file, pointer: "/0/evaluation_criteria/reward_basis/1" });

    const missing = errorOf(() =>
      parseTasks(JSON.stringify({ tasks: [FREEZE, { ...FREEZE, id: "b", instruction: "" }] }), "t.json"),
    );
    expect(missing.where).toEqual({ file: "t.json", pointer: "/tasks/1/instruction" });
    const twice = errorOf(() => parseTasks(JSON.stringify([FREEZE, FREEZE])));
    expect(twice.message).toContain('task id "freeze-1001" appears twice');
    const badJson = errorOf(() => parseTasks('[{"id": "a",', "x.json"));
    expect(badJson.where.file).toBe("x.json");
    expect(errorOf(() => loadTasks(join(dir, "none.json"))).code).toBe("FILE_UNREADABLE");
    const check = errorOf(() => parseTasks(JSON.stringify([{ ...FREEZE, checks: ["state"] }])));
    expect(check.message).toBe("the state check needs expected.state");
    expect(check.where.pointer).toBe("/0/checks/0");
  });

  it("JSON lines give the line of the bad task; deep documents are refused", () => {
    const lines = `${JSON.stringify(FREEZE)}\n${JSON.stringify({ ...FREEZE, id: "x", expected: {} })}\n`;
    const error = errorOf(() => parseTasks(lines, "t.jsonl"));
    expect(error.where).toMatchObject({ file: "t.jsonl", line: 2 });
    expect(error.message).toBe("expected needs state or actions");
    const deep = `[${"[".repeat(300)}${"]".repeat(300)}]`;
    const tooDeep = errorOf(() => parseTasks(deep, "d.json"));
    expect(tooDeep.message).toContain("deeper than the limit of 256 levels");
    expect(tooDeep.where.file).toBe("d.json");
  });

  it("tau2 defaults: reward_basis [DB, COMMUNICATE]; initial_state agent_data is merged into the database", async () => {
    const [task] = parseTasks(
      JSON.stringify([
        {
          id: "7",
          user_scenario: { instructions: { reason_for_call: "Freeze my account.", known_info: "ACC-1002" } },
          initial_state: {
            initialization_data: { agent_data: { accounts: { "ACC-1002": { balance: 5 } } } },
          },
          evaluation_criteria: {
            actions: [{ action_id: "a", name: "freeze_account", arguments: { account_id: "ACC-1002" } }],
          },
        },
      ]),
    );
    if (!task) throw new Error("no task");
    expect(task.rewardBasis).toEqual(["db", "communicate"]);
    expect(task.instruction).toBe("Reason for call: Freeze my account.\nKnown info: ACC-1002");
    const engine = await engineForEnvironment(bank, "t");
    try {
      const episode = await startTaskEpisode({ engine, environment: bank, task });
      const state = (await engine.state(episode.sessionId)) as {
        accounts: Record<string, { balance: number; owner: string }>;
      };
      expect(state.accounts["ACC-1002"]).toMatchObject({ balance: 5, owner: "Maria Lopez" });
      expect(episode.tools.map((tool) => tool.name)).toContain("freeze_account");
      await engine.call(episode.sessionId, { name: "freeze_account", arguments: { account_id: "ACC-1002" } });
      const result = await scoreSession({ engine, sessionId: episode.sessionId, environment: bank, task });
      // No communicate_info: tau2 scores the check 1.
      expect(result).toMatchObject({ reward: 1, breakdown: { db: 1, communicate: 1 }, skipped: [] });
    } finally {
      await engine.close();
    }
  });

  it("agent_data may not carry __proto__", async () => {
    const [task] = parseTasks(
      '[{"id":"p","user_scenario":{},"initial_state":{"initialization_data":{"agent_data":{"__proto__":{"x":1}}}},"evaluation_criteria":{"actions":[]}}]',
    );
    if (!task) throw new Error("no task");
    const engine = await engineForEnvironment(bank, "t");
    try {
      await expect(startTaskEpisode({ engine, environment: bank, task })).rejects.toThrow('"__proto__"');
      expect(({} as Record<string, unknown>).x).toBeUndefined();
    } finally {
      await engine.close();
    }
  });
});

describe("checks", () => {
  it("terrarium format: db by default from expected.actions, state as a subset, actions on request", async () => {
    const [task] = parseTasks(
      JSON.stringify([
        {
          ...FREEZE,
          expected: { ...FREEZE.expected, state: { accounts: { "ACC-1001": { status: "frozen" } } } },
          checks: ["db", "state", "actions"],
        },
      ]),
    );
    if (!task) throw new Error("no task");
    const engine = await engineForEnvironment(bank, "t");
    try {
      const good = await startTaskEpisode({ engine, environment: bank, task });
      await engine.call(good.sessionId, { name: "get_account", arguments: { account_id: "ACC-1001" } });
      await engine.call(good.sessionId, { name: "freeze_account", arguments: { account_id: "ACC-1001" } });
      expect(
        await scoreSession({ engine, sessionId: good.sessionId, environment: bank, task }),
      ).toMatchObject({
        reward: 1,
        breakdown: { db: 1, state: 1, actions: 1 },
        actions: [true],
      });
      // The same episode rescored from its export, with no engine, and with other checks.
      const exported = JSON.parse(JSON.stringify(await engine.exportSession(good.sessionId)));
      expect(await scoreExport({ exported, environment: bank, task })).toMatchObject({
        reward: 1,
        breakdown: { db: 1, state: 1, actions: 1 },
      });
      const strict = { ...task, expected: { ...task.expected, state: { stats: { transfer_count: 1 } } } };
      expect(await scoreExport({ exported, environment: bank, task: strict })).toMatchObject({
        reward: 0,
        breakdown: { db: 1, state: 0, actions: 1 },
      });
      await expect(
        scoreExport({ exported: { ...exported, snapshots: [] }, environment: bank, task }),
      ).rejects.toThrow("a session export needs snapshots");
      const wrong = await startTaskEpisode({ engine, environment: bank, task });
      await engine.call(wrong.sessionId, { name: "freeze_account", arguments: { account_id: "ACC-1002" } });
      expect(
        await scoreSession({ engine, sessionId: wrong.sessionId, environment: bank, task }),
      ).toMatchObject({
        reward: 0,
        breakdown: { db: 0, state: 0, actions: 0 },
      });
    } finally {
      await engine.close();
    }
  });

  it("tau2's action comparison: compare_args, or every argument of the agent's call", () => {
    const action = { name: "f", arguments: { a: 1, b: "x" }, requestor: "assistant" as const };
    expect(actionMatches(action, { name: "f", arguments: { a: 1, b: "x" } })).toBe(true);
    expect(actionMatches(action, { name: "g", arguments: { a: 1, b: "x" } })).toBe(false);
    expect(actionMatches(action, { name: "f", arguments: { a: 1, b: "x", c: 2 } })).toBe(false);
    // tau2 compares the call's keys: an argument the call leaves out is not compared.
    expect(actionMatches(action, { name: "f", arguments: { a: 1 } })).toBe(true);
    expect(actionMatches({ ...action, compareArgs: ["a"] }, { name: "f", arguments: { a: 1, b: "y" } })).toBe(
      true,
    );
    expect(actionMatches({ ...action, compareArgs: [] }, { name: "f", arguments: { z: 0 } })).toBe(true);
  });

  it("communicate: substring of an assistant message, case-insensitive, commas dropped; null without messages", async () => {
    const [task] = parseTasks(
      JSON.stringify([
        {
          id: "c",
          user_scenario: {},
          evaluation_criteria: {
            actions: null,
            communicate_info: ["1234.5"],
            nl_assertions: ["polite"],
            reward_basis: ["DB", "COMMUNICATE", "NL_ASSERTION"],
          },
        },
      ]),
    );
    if (!task) throw new Error("no task");
    const base = { task, environment: bank, finalState: {}, calls: [] };
    const silent = await scoreTrajectory(base);
    expect(silent).toMatchObject({ reward: 1, breakdown: { db: 1, communicate: null, nl_assertions: null } });
    expect(silent.skipped.map((entry) => entry.check)).toEqual(["communicate", "nl_assertions"]);
    const said = await scoreTrajectory({
      ...base,
      messages: [{ role: "assistant", content: "Your refund is $1,234.50" }],
    });
    expect(said.breakdown.communicate).toBe(1);
    const user = await scoreTrajectory({ ...base, messages: [{ role: "user", content: "1234.5" }] });
    expect(user.breakdown.communicate).toBe(0);
    const judged = await scoreTrajectory({ ...base, messages: [], judge: async () => 0 });
    expect(judged).toMatchObject({ reward: 0, breakdown: { nl_assertions: 0 } });
    const stopped = await scoreTrajectory({ ...base, prematureTermination: "max_steps" });
    expect(stopped.reward).toBe(0);
  });
});
