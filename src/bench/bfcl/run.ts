import { Catalog } from "../../catalog/catalog.js";
import { toolsFromDocument } from "../../catalog/load.js";
import { type BatchErrorKind, ErrorTally, errorKindOf } from "../../core/error-tally.js";
import type { Models } from "../../models/hub.js";
import type { UsageTotals } from "../../models/usage.js";
import { type Attempt, chooseAttempt, gats } from "../../task/gats.js";
import { type BootstrapMode, createTaskEngine } from "../../task/task-engine.js";
import { checkItem } from "./ast-checker.js";
import { type BfclItem, groupedOverall } from "./data.js";

type Usage = Pick<UsageTotals, "calls" | "inputTokens" | "outputTokens" | "costUsd" | "unpricedCalls">;

export interface BudgetResult extends Usage {
  retries: number;
  correct: boolean;
  /**
   * Set when this budget's answer is not the planner's alone to blame: a simulated call failed (the
   * simulator's model errored or gave invalid output). The budget errored: `correct` is still the
   * checker's verdict on the calls the planner made (what BFCL scores), and the error is counted beside it.
   */
  error?: string;
  latencyMs: number;
}

export interface ItemRun {
  schemaVersion: 1;
  id: string;
  category: string;
  /** One entry per retry budget 0..maxRetries (budget 0: the planner alone, without GATS). */
  budgets: BudgetResult[];
  /** What the state bootstrapper did (Gecko's; the task's starting state). */
  bootstrap?: { status: string; error?: string };
  /** The whole item failed (planner, checklist or judge model error): no budget has a verdict. */
  error?: string;
  /** The kind of that error (`model_call_failed`, `model_timeout`, …; `item_error` otherwise). */
  errorKind?: string;
}

/** The label of each budget, saying what it contains. */
export function budgetLabel(retries: number): string {
  return retries === 0 ? "0 (no GATS: planner + its tool calls)" : `${retries} (GATS)`;
}

/**
 * Runs the planner with GATS on one BFCL item and scores every retry budget from the same run: GATS
 * stops at success, so the attempts a smaller budget would have made are a prefix of this run's. Budget 0
 * is the first attempt on its own: the planner and the simulated tools it called (no checklist, no judge).
 * Every budget's cost includes the state bootstrap. Give it a run's view of the models (`forRun`) so
 * concurrent items account their own calls.
 */
export async function runBfclItem(
  item: BfclItem,
  models: Models,
  options: { maxRetries: number; plannerModel?: string; bootstrap?: BootstrapMode },
): Promise<ItemRun> {
  const turns = [item.question.map((turn) => turn.map((message) => message.content).join("\n")).join("\n")];
  const base = { schemaVersion: 1 as const, id: item.id, category: item.category };
  let task: Awaited<ReturnType<typeof createTaskEngine>> | undefined;
  try {
    task = await createTaskEngine({
      catalog: new Catalog(toolsFromDocument(item.functions, { format: "bfcl" })),
      models,
      turns,
      seed: item.id,
      ...(options.bootstrap ? { bootstrap: options.bootstrap } : {}),
    });
    const result = await gats({
      engine: task.engine,
      models,
      startSession: task.sessionId,
      turns,
      maxRetries: options.maxRetries,
      ...(options.plannerModel ? { planner: { model: options.plannerModel } } : {}),
    });
    const attempts = result.turns[0]?.attempts ?? [];
    const checklistUsage = subtract(result.usage, sum(attempts.map((a) => a.usage)));
    const budgets: BudgetResult[] = [];
    for (let retries = 0; retries <= options.maxRetries; retries++) {
      const used = attempts.slice(0, retries + 1);
      const chosen = (retries === 0 ? used[0] : used[chooseAttempt(used)]) as Attempt;
      const usage =
        retries === 0
          ? sum([task.bootstrapUsage, chosen.plannerUsage])
          : sum([task.bootstrapUsage, checklistUsage, ...used.map((a) => a.usage)]);
      const latencyMs =
        retries === 0 ? chosen.plannerLatencyMs : used.reduce((total, a) => total + a.latencyMs, 0);
      budgets.push({ retries, ...verdict(item, chosen), latencyMs, ...usage });
    }
    return { ...base, budgets, bootstrap: task.bootstrap };
  } catch (error) {
    return {
      ...base,
      budgets: [],
      error: (error as Error).message,
      errorKind: errorKindOf(error, "item_error"),
    };
  } finally {
    await task?.engine.close();
  }
}

/**
 * The verdict on an attempt's calls. What is scored is every call the planner made that passed validation
 * (ok, tool_error, or a simulator failure: the call itself was made); a call the validator refused never
 * reached the tool and the planner was told so. A simulator failure makes the verdict an error.
 */
function verdict(item: BfclItem, attempt: Attempt): { correct: boolean; error?: string } {
  const made = attempt.calls.filter((c) => c.status !== "invalid");
  const correct = checkItem(
    item.category,
    item.functions,
    item.answer,
    made.map((c) => ({ name: c.name, arguments: c.arguments as Record<string, unknown> })),
  ).valid;
  const failed = attempt.calls.filter((c) => c.status === "error");
  if (failed.length === 0) return { correct };
  const first = failed[0]?.observation as { error?: unknown } | undefined;
  return {
    correct,
    error: `${failed.length} simulated call(s) failed (${failed[0]?.name}: ${String(first?.error ?? "no answer")})`,
  };
}

function sum(usages: Array<Partial<Usage>>): Usage {
  return usages.reduce<Usage>(
    (total, u) => ({
      calls: total.calls + (u.calls ?? 0),
      inputTokens: total.inputTokens + (u.inputTokens ?? 0),
      outputTokens: total.outputTokens + (u.outputTokens ?? 0),
      costUsd: total.costUsd + (u.costUsd ?? 0),
      unpricedCalls: total.unpricedCalls + (u.unpricedCalls ?? 0),
    }),
    { calls: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedCalls: 0 },
  );
}

function subtract(a: Partial<Usage>, b: Usage): Usage {
  return {
    calls: (a.calls ?? 0) - b.calls,
    inputTokens: (a.inputTokens ?? 0) - b.inputTokens,
    outputTokens: (a.outputTokens ?? 0) - b.outputTokens,
    costUsd: (a.costUsd ?? 0) - b.costUsd,
    unpricedCalls: (a.unpricedCalls ?? 0) - b.unpricedCalls,
  };
}

export interface BudgetSummary {
  retries: number;
  label: string;
  /**
   * Per category: items, correct ones, errored ones and accuracy over all the items, as BFCL computes it:
   * an item that failed as a whole is wrong, and a budget whose simulated call failed keeps the checker's
   * verdict on the calls the planner made. `errored` says how many of the items that accuracy rests on
   * had an error.
   */
  categories: Record<string, { items: number; correct: number; errored: number; accuracy: number }>;
  /** Unweighted mean of the category accuracies, as BFCL averages categories. */
  overall: number;
  /** The Gecko paper's overall: the mean of the non-live, live and multi-turn group means. */
  groupedOverall: number;
  /** Items that errored at this budget (a simulated or backend call failed, or the whole item failed). */
  errored: number;
  latencyMs: number;
  tokens: number;
  costUsd: number;
  /** Model calls (per task, mean) and how many of them had no price, in total. */
  modelCalls: number;
  unpricedCalls: number;
}

/** What `bench bfcl` reports of a run (schemaVersion 2: accuracy over all items, errored counted beside). */
export interface BfclRunSummary {
  schemaVersion: 2;
  items: number;
  /** Items that failed as a whole (no budget has a verdict). */
  failedItems: number;
  /** Items with an error at any budget or as a whole. */
  errored: number;
  /** Each kind of error with how many items had it and the first one's message. */
  errorKinds: BatchErrorKind[];
  budgets: BudgetSummary[];
}

/**
 * The errors of a run's items by kind: a whole item's error, or a budget's failed simulated call
 * (`simulator_error`, single-turn) or failed backend call (`backend_error`, multi-turn).
 */
export function runErrors(
  runs: ReadonlyArray<Pick<ItemRun, "id" | "budgets" | "error" | "errorKind">>,
): ErrorTally {
  const tally = new ErrorTally();
  for (const run of runs) {
    if (run.error !== undefined) tally.add(run.id, run.errorKind ?? "item_error", run.error);
    const budgetKind = "turns" in (run.budgets[0] ?? {}) ? "backend_error" : "simulator_error";
    for (const budget of run.budgets)
      if (budget.error !== undefined)
        tally.add(run.id, budgetKind, `budget ${budget.retries}: ${budget.error}`);
  }
  return tally;
}

/**
 * Accuracy per category and overall, errored items, and mean latency / tokens / cost per task, for every
 * budget. Accuracy is BFCL's: over every item, an item that failed as a whole counting as wrong; errored
 * items are counted beside it. Means of cost and latency are over the items that ran.
 */
export function summariseRuns(runs: ItemRun[], maxRetries: number): BfclRunSummary {
  const budgets: BudgetSummary[] = [];
  for (let retries = 0; retries <= maxRetries; retries++) {
    const categories: BudgetSummary["categories"] = {};
    let errored = 0;
    const rows: BudgetResult[] = [];
    for (const run of runs) {
      const entry = categories[run.category] ?? { items: 0, correct: 0, errored: 0, accuracy: 0 };
      categories[run.category] = entry;
      entry.items++;
      const budget = run.budgets[retries];
      if (budget) rows.push(budget);
      if (!budget || budget.error !== undefined) {
        errored++;
        entry.errored++;
      }
      if (budget?.correct) entry.correct++;
    }
    for (const entry of Object.values(categories))
      entry.accuracy = entry.items ? entry.correct / entry.items : 0;
    const accuracies = Object.values(categories).map((c) => c.accuracy);
    const mean = (f: (b: BudgetResult) => number) =>
      rows.length ? rows.reduce((total, b) => total + f(b), 0) / rows.length : 0;
    budgets.push({
      retries,
      label: budgetLabel(retries),
      categories,
      overall: accuracies.length ? accuracies.reduce((a, b) => a + b, 0) / accuracies.length : 0,
      groupedOverall: groupedOverall(
        Object.fromEntries(Object.entries(categories).map(([name, entry]) => [name, entry.accuracy])),
      ),
      errored,
      latencyMs: mean((b) => b.latencyMs),
      tokens: mean((b) => b.inputTokens + b.outputTokens),
      costUsd: mean((b) => b.costUsd),
      modelCalls: mean((b) => b.calls),
      unpricedCalls: rows.reduce((total, b) => total + b.unpricedCalls, 0),
    });
  }
  const errors = runErrors(runs);
  return {
    schemaVersion: 2,
    items: runs.length,
    failedItems: runs.filter((r) => r.error).length,
    errored: errors.errored,
    errorKinds: errors.kinds(),
    budgets,
  };
}
