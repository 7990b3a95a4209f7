import { tau2RetailDbHash } from "../../src/envs/corpus/tau2-hash.js";
import { tau2Retail } from "../../src/envs/corpus/tau2-retail.js";
import type { RlTask } from "../../src/rl/tasks/index.js";

/** Variations of tau2 retail tasks' ground truth, with the DB check computed apart from terrarium's scorer. */
export type Call = { name: string; arguments: Record<string, unknown> };

const WRITES = new Set(tau2Retail.tools.filter((tool) => tool.effect === "write").map((tool) => tool.name));

/** The DB check computed independently: replay both sequences on fresh built-in instances, compare tau2's hashes. */
export async function independentDb(gold: Call[], agent: Call[]): Promise<number> {
  const hashAfter = async (calls: Call[]) => {
    const instance = await tau2Retail.create({ seed: 1 });
    for (const call of calls) await instance.step(call);
    const hash = tau2RetailDbHash(await instance.state());
    await instance.close();
    return hash;
  };
  return (await hashAfter(gold)) === (await hashAfter(agent)) ? 1 : 0;
}

export const goldOf = (task: RlTask): Call[] =>
  (task.expected.actions ?? []).map((action) => ({ name: action.name, arguments: action.arguments }));

/** The perturbations of a task's ground truth: a write dropped, corrupted, repeated; reads inserted. */
export function perturbations(task: RlTask): Array<[string, Call[]]> {
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
