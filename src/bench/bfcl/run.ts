import { Catalog } from "../../catalog/catalog.js";
import { toolsFromDocument } from "../../catalog/load.js";
import type { Models } from "../../models/hub.js";
import { Engine } from "../../sim/engine.js";
import { LlmSimulator } from "../../sim/simulators/llm.js";
import { type Attempt, chooseAttempt, gats } from "../../task/gats.js";
import { checkItem } from "./ast-checker.js";
import type { BfclItem } from "./data.js";

export interface BudgetResult {
  retries: number;
  correct: boolean;
  latencyMs: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

export interface ItemRun {
  id: string;
  category: string;
  /** One entry per retry budget 0..maxRetries (budget 0 is the planner alone, without GATS). */
  budgets: BudgetResult[];
  error?: string;
}

/**
 * Runs the planner with GATS on one BFCL item and scores every retry budget from the same run: GATS
 * stops at success, so the attempts a smaller budget would have made are a prefix of this run's. Budget 0
 * is the first attempt scored on its own, with the planner's cost only (no checklist, no judge).
 */
export async function runBfclItem(
  item: BfclItem,
  models: Models,
  options: { maxRetries: number; plannerModel?: string },
): Promise<ItemRun> {
  const catalog = new Catalog(toolsFromDocument(item.functions, { format: "bfcl" }));
  const engine = new Engine({ catalog, simulators: [new LlmSimulator(models)], seed: item.id });
  try {
    const start = await engine.createSession();
    const result = await gats({
      engine,
      models,
      startSession: start.id,
      turns: [item.question.map((turn) => turn.map((message) => message.content).join("\n")).join("\n")],
      maxRetries: options.maxRetries,
      ...(options.plannerModel ? { planner: { model: options.plannerModel } } : {}),
    });
    const attempts = result.turns[0]?.attempts ?? [];
    const checklistUsage = subtract(result.usage, sum(attempts.map((a) => a.usage)));
    const score = (attempt: Attempt) =>
      checkItem(
        item.category,
        item.functions,
        item.answer,
        attempt.calls
          .filter((c) => c.status === "ok" || c.status === "tool_error")
          .map((c) => ({ name: c.name, arguments: c.arguments as Record<string, unknown> })),
      ).valid;
    const budgets: BudgetResult[] = [];
    for (let retries = 0; retries <= options.maxRetries; retries++) {
      const used = attempts.slice(0, retries + 1);
      if (retries === 0) {
        const first = used[0] as Attempt;
        budgets.push({
          retries,
          correct: score(first),
          latencyMs: first.plannerLatencyMs,
          ...first.plannerUsage,
        });
        continue;
      }
      const chosen = used[chooseAttempt(used)] as Attempt;
      const usage = sum([checklistUsage, ...used.map((a) => a.usage)]);
      budgets.push({
        retries,
        correct: score(chosen),
        latencyMs: used.reduce((total, a) => total + a.latencyMs, 0),
        ...usage,
      });
    }
    return { id: item.id, category: item.category, budgets };
  } catch (error) {
    return { id: item.id, category: item.category, budgets: [], error: (error as Error).message };
  } finally {
    await engine.close();
  }
}

type Usage = Pick<BudgetResult, "inputTokens" | "outputTokens" | "costUsd">;

function sum(usages: Array<Usage & { calls?: number }>): Usage {
  return usages.reduce<Usage>(
    (total, u) => ({
      inputTokens: total.inputTokens + u.inputTokens,
      outputTokens: total.outputTokens + u.outputTokens,
      costUsd: total.costUsd + u.costUsd,
    }),
    { inputTokens: 0, outputTokens: 0, costUsd: 0 },
  );
}

function subtract(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens - b.inputTokens,
    outputTokens: a.outputTokens - b.outputTokens,
    costUsd: a.costUsd - b.costUsd,
  };
}

/** Accuracy per category and overall, and mean latency / tokens / cost per task, for every budget. */
export function summariseRuns(runs: ItemRun[], maxRetries: number) {
  const budgets = [];
  for (let retries = 0; retries <= maxRetries; retries++) {
    const rows = runs.map((run) => run.budgets[retries]).filter((b): b is BudgetResult => b !== undefined);
    const byCategory: Record<string, { items: number; correct: number }> = {};
    for (const run of runs) {
      const entry = byCategory[run.category] ?? { items: 0, correct: 0 };
      byCategory[run.category] = entry;
      entry.items++;
      if (run.budgets[retries]?.correct) entry.correct++;
    }
    const accuracies = Object.values(byCategory).map((c) => (c.items ? c.correct / c.items : 0));
    const mean = (f: (b: BudgetResult) => number) =>
      rows.length ? rows.reduce((total, b) => total + f(b), 0) / rows.length : 0;
    budgets.push({
      retries,
      categories: Object.fromEntries(
        Object.entries(byCategory).map(([name, c]) => [name, c.items ? c.correct / c.items : 0]),
      ),
      overall: accuracies.length ? accuracies.reduce((a, b) => a + b, 0) / accuracies.length : 0,
      latencyMs: mean((b) => b.latencyMs),
      tokens: mean((b) => b.inputTokens + b.outputTokens),
      costUsd: mean((b) => b.costUsd),
    });
  }
  return { schemaVersion: 1, items: runs.length, errors: runs.filter((r) => r.error).length, budgets };
}
