import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tau2RetailDbHash } from "../../src/envs/corpus/tau2-hash.js";
import { tau2Retail } from "../../src/envs/corpus/tau2-retail.js";
import { scoreSession } from "../../src/rl/rewards/index.js";
import { engineForEnvironment, loadTasks, type RlTask, startTaskEpisode } from "../../src/rl/tasks/index.js";

/** The published retail tasks (a copy; see test/fixtures/tau2-retail/NOTICE.md). */
const TASKS_FILE = join(import.meta.dirname, "..", "fixtures", "tau2-retail", "tasks.json");
const tasks = loadTasks(TASKS_FILE);
const WRITES = new Set(tau2Retail.tools.filter((tool) => tool.effect === "write").map((tool) => tool.name));

type Call = { name: string; arguments: Record<string, unknown> };

/** The DB check computed independently: replay both sequences on fresh built-in instances, compare tau2's hashes. */
async function independentDb(gold: Call[], agent: Call[]): Promise<number> {
  const hashAfter = async (calls: Call[]) => {
    const instance = await tau2Retail.create({ seed: 1 });
    for (const call of calls) await instance.step(call);
    const hash = tau2RetailDbHash(await instance.state());
    await instance.close();
    return hash;
  };
  return (await hashAfter(gold)) === (await hashAfter(agent)) ? 1 : 0;
}

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

const goldOf = (task: RlTask): Call[] =>
  (task.expected.actions ?? []).map((action) => ({ name: action.name, arguments: action.arguments }));

/** The perturbations of a task's ground truth: a write dropped, corrupted, repeated; reads inserted. */
function perturbations(task: RlTask): Array<[string, Call[]]> {
  const gold = goldOf(task);
  const writes = gold.flatMap((call, index) => (WRITES.has(call.name) ? [index] : []));
  const out: Array<[string, Call[]]> = [];
  const reads: Call[] = [
    { name: "list_all_product_types", arguments: {} },
    { name: "get_order_details", arguments: { order_id: "#W2378156" } },
    { name: "calculate", arguments: { expression: "1 + 1" } },
  ];
  out.push([
    "extra reads",
    [reads[0] as Call, ...gold.slice(0, 1), reads[1] as Call, ...gold.slice(1), reads[2] as Call],
  ]);
  if (writes.length === 0) return out;
  const last = writes[writes.length - 1] as number;
  const first = writes[0] as number;
  out.push(["write dropped", gold.filter((_, index) => index !== last)]);
  out.push(["write repeated", [...gold.slice(0, first + 1), gold[first] as Call, ...gold.slice(first + 1)]]);
  const target = gold[first] as Call;
  const key = Object.keys(target.arguments).find((name) => typeof target.arguments[name] === "string");
  if (key !== undefined) {
    const corrupted = { ...target, arguments: { ...target.arguments, [key]: `${target.arguments[key]}x` } };
    out.push([
      `write argument ${key} corrupted`,
      gold.map((call, index) => (index === first ? corrupted : call)),
    ]);
  }
  const list = Object.keys(target.arguments).find((name) => Array.isArray(target.arguments[name]));
  if (list !== undefined) {
    const items = target.arguments[list] as unknown[];
    const corrupted = { ...target, arguments: { ...target.arguments, [list]: items.slice(0, -1) } };
    out.push([
      `write argument ${list} shortened`,
      gold.map((call, index) => (index === first ? corrupted : call)),
    ]);
  }
  return out;
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
