import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tau2Retail } from "../../src/envs/corpus/tau2-retail.js";
import { scoreSession } from "../../src/rl/rewards/index.js";
import { engineForEnvironment, loadTasks, type RlTask, startTaskEpisode } from "../../src/rl/tasks/index.js";
import { type Call, goldOf, independentDb, perturbations } from "../helpers/tau2-perturbations.js";

/** The published retail tasks (a copy; see test/fixtures/tau2-retail/NOTICE.md). */
const TASKS_FILE = join(import.meta.dirname, "..", "fixtures", "tau2-retail", "tasks.json");
const tasks = loadTasks(TASKS_FILE);

async function runEpisode(task: RlTask, calls: Call[]) {
  const engine = await engineForEnvironment(tau2Retail, "rl-test");
  try {
    const episode = await startTaskEpisode({ engine, environment: tau2Retail, task });
    for (const call of calls) await engine.call(episode.sessionId, call);
    return await scoreSession({ engine, sessionId: episode.sessionId, environment: tau2Retail, task });
  } finally {
    await engine.close();
  }
}

describe("tau2 rewards on the published retail tasks", () => {
  it("loads all 114 tasks with their reward basis", () => {
    expect(tasks).toHaveLength(114);
    const bases = tasks.map((task) => task.rewardBasis.join("+"));
    expect(bases.filter((basis) => basis === "db+nl_assertions")).toHaveLength(112);
    expect(bases.filter((basis) => basis === "db")).toHaveLength(2);
  });

  it("every task's ground-truth actions through an engine session score db = 1", async () => {
    const failing: string[] = [];
    for (const task of tasks) {
      const result = await runEpisode(task, goldOf(task));
      if (result.breakdown.db !== 1) failing.push(task.id);
      if (task.nlAssertions.length > 0) {
        expect(result.breakdown.nl_assertions).toBeNull();
        expect(result.skipped).toEqual([{ check: "nl_assertions", reason: "no judge model configured" }]);
      }
      expect(result.reward).toBe(1);
    }
    expect(failing).toEqual([]);
  }, 120_000);

  it("perturbed sequences score exactly what the DB check gives independently", async () => {
    // Every second task, all its perturbations.
    const sample = tasks.filter((_, index) => index % 2 === 0);
    const scored = { zero: 0, one: 0, reads: 0 };
    for (const task of sample) {
      for (const [label, calls] of perturbations(task)) {
        const expected = await independentDb(goldOf(task), calls);
        const result = await runEpisode(task, calls);
        expect(result.breakdown.db, `task ${task.id}: ${label}`).toBe(expected);
        expect(result.reward, `task ${task.id}: ${label}`).toBe(expected);
        if (label === "extra reads") {
          expect(expected).toBe(1);
          scored.reads++;
        }
        if (expected === 0) scored.zero++;
        else scored.one++;
      }
    }
    // The sample exercises both outcomes.
    expect(scored.reads).toBe(sample.length);
    expect(scored.zero).toBeGreaterThan(50);
    expect(scored.one).toBeGreaterThan(scored.reads);
  }, 120_000);
});
