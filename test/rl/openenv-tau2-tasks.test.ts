import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTasks, type RlTask } from "../../src/rl/tasks/index.js";
import { startServer } from "../../src/server/index.js";
import { OpenEnvWsClient } from "../helpers/openenv-ws-client.js";
import { type Call, goldOf, independentDb, perturbations } from "../helpers/tau2-perturbations.js";

/**
 * `serve tau2-retail --tasks <published tasks.json>` as an RL environment: every task's ground truth
 * played through /openenv/ws ends with reward_breakdown.db = 1, and perturbed plays score exactly what
 * tau2's database check gives (computed apart, by replaying both sequences on fresh instances).
 */
const TASKS_FILE = join(import.meta.dirname, "..", "fixtures", "tau2-retail", "tasks.json");
const tasks = loadTasks(TASKS_FILE);

type Started = Awaited<ReturnType<typeof startServer>>;
let server: Started;
let limited: Started;
let client: OpenEnvWsClient;
beforeAll(async () => {
  [server, limited] = await Promise.all([
    startServer({ sources: ["tau2-retail"], port: 0, seed: "1", openenv: { tasks: [TASKS_FILE] } }),
    startServer({ sources: ["tau2-retail"], port: 0, openenv: { tasks: [TASKS_FILE], maxSteps: 2 } }),
  ]);
  client = await OpenEnvWsClient.connect(server.url);
});
afterAll(async () => {
  client.ws.close();
  await Promise.all([server.close(), limited.close()]);
});

/** Plays a task: reset on it, the calls, then finish; returns the finish step's answer. */
async function play(task: RlTask, calls: Call[], on = client) {
  const reset = await on.ask({ type: "reset", data: { task_id: task.id } });
  expect(reset.type, JSON.stringify(reset)).toBe("observation");
  for (const call of calls) {
    const step = await on.ask({
      type: "step",
      data: { type: "call_tool", tool_name: call.name, arguments: call.arguments },
    });
    expect(step.type).toBe("observation");
    expect(step.data.done).toBe(false);
  }
  return on.ask({ type: "step", data: { type: "call_tool", tool_name: "finish", arguments: {} } });
}

describe("tau2 retail tasks over /openenv/ws", () => {
  it("reset(task_id) answers the instruction, the tools and a finish tool", async () => {
    const task = tasks[0] as RlTask;
    const reset = await client.ask({ type: "reset", data: { task_id: task.id, episode_id: "t-0" } });
    expect(reset.data.observation.instruction).toBe(task.instruction);
    expect(reset.data.observation.metadata).toMatchObject({ task_id: task.id, episode_id: "t-0" });
    const names = reset.data.observation.tools.map((tool: { name: string }) => tool.name);
    expect(names).toContain("get_order_details");
    expect(names.at(-1)).toBe("finish");
    const unknown = await client.ask({ type: "reset", data: { task_id: "no-such-task" } });
    expect(unknown).toMatchObject({ type: "error", data: { code: "VALIDATION_ERROR" } });
    expect(unknown.data.message).toContain("unknown task_id");
  });

  it("every task's ground truth ends with reward_breakdown.db = 1", async () => {
    const failing: string[] = [];
    for (const task of tasks) {
      const last = await play(task, goldOf(task));
      expect(last.data.done).toBe(true);
      const metadata = last.data.observation.metadata;
      if (metadata.reward_breakdown.db !== 1) failing.push(task.id);
      expect(metadata.end_reason).toBe("finish");
      if (task.nlAssertions.length > 0) {
        // No judge model: the NL check is null, left out of the reward, and said so.
        expect(metadata.reward_breakdown.nl_assertions).toBeNull();
        expect(metadata.skipped_checks).toEqual([
          { check: "nl_assertions", reason: "no judge model configured" },
        ]);
      }
      expect(last.data.reward).toBe(1);
    }
    expect(failing).toEqual([]);
    expect(tasks).toHaveLength(114);
  }, 300_000);

  it("perturbed plays score exactly what tau2's database check gives", async () => {
    const scored = { zero: 0, one: 0 };
    // Every third task (the library test covers every second), all its perturbations.
    for (const task of tasks.filter((_, index) => index % 3 === 1)) {
      for (const [label, calls] of perturbations(task)) {
        const expected = await independentDb(goldOf(task), calls);
        const last = await play(task, calls);
        expect(last.data.observation.metadata.reward_breakdown.db, `task ${task.id}: ${label}`).toBe(
          expected,
        );
        expect(last.data.reward, `task ${task.id}: ${label}`).toBe(expected);
        if (expected === 0) scored.zero++;
        else scored.one++;
      }
    }
    expect(scored.zero).toBeGreaterThan(20);
    expect(scored.one).toBeGreaterThan(20);
  }, 300_000);

  it("--max-steps ends the episode, scored 0 as tau2 scores a premature end", async () => {
    const task = tasks.find((candidate) => goldOf(candidate).length >= 3) as RlTask;
    const other = await OpenEnvWsClient.connect(limited.url);
    try {
      await other.ask({ type: "reset", data: { task_id: task.id } });
      const [first, second] = goldOf(task) as [Call, Call];
      const step1 = await other.ask({
        type: "step",
        data: { type: "call_tool", tool_name: first.name, arguments: first.arguments },
      });
      expect(step1.data.done).toBe(false);
      const step2 = await other.ask({
        type: "step",
        data: { type: "call_tool", tool_name: second.name, arguments: second.arguments },
      });
      expect(step2.data).toMatchObject({ done: true, reward: 0 });
      expect(step2.data.observation.metadata).toMatchObject({ end_reason: "max_steps", step_count: 2 });
      expect(step2.data.observation.metadata.reward_note).toContain("max_steps");
      const after = await other.ask({ type: "step", data: { type: "list_tools" } });
      expect(after.data.done).toBe(true);
    } finally {
      other.ws.close();
    }
  });

  it("the episode's session is stored under the task and can be exported", async () => {
    const task = tasks[1] as RlTask;
    const last = await play(task, goldOf(task));
    const sessionId = last.data.observation.metadata.session_id as string;
    const exported = (await fetch(`${server.url}/sessions/${sessionId}/export`).then((r) => r.json())) as {
      session: { metadata: unknown };
      history: Array<{ request: { name: string } }>;
    };
    expect(exported.session.metadata).toMatchObject({ task: task.id });
    // finish is the episode's own tool, not a call on the world: the history holds the ground truth only.
    expect(exported.history.map((entry) => entry.request.name)).toEqual(
      goldOf(task).map((call) => call.name),
    );
  });
});
