import { Catalog } from "../../catalog/catalog.js";
import { toolsFromDocument } from "../../catalog/load.js";
import type { Tool } from "../../catalog/tool.js";
import { canonicalJson, jsonEqual } from "../../core/canonical-json.js";
import { errorKindOf } from "../../core/error-tally.js";
import { TerrariumError } from "../../core/errors.js";
import { diffJson } from "../../core/json-diff.js";
import type { Models } from "../../models/hub.js";
import type { UsageTotals } from "../../models/usage.js";
import type { HistoryEntry } from "../../sessions/types.js";
import { Engine } from "../../sim/engine.js";
import type { SimulationContext, SimulationResult, Simulator } from "../../sim/types.js";
import { ChecklistWriter, type Judgement } from "../../task/feedback.js";
import { chooseAttempt, gats } from "../../task/gats.js";
import { runPlanner } from "../../task/planner.js";
import type { FunctionDoc } from "./ast-checker.js";
import { BfclBackendHost, type BfclBackendOptions, type BfclCall, type BfclWorld } from "./backends.js";
import { checkMultiTurn, type MultiTurnVerdict } from "./multi-turn-checker.js";
import { type BfclMultiTurnItem, worldSpecOf } from "./multi-turn-data.js";
import type { BudgetResult } from "./run.js";

/** What the user says on a turn where withheld functions arrive (BFCL's data has no message there). */
export const NEW_FUNCTIONS_MESSAGE =
  "More functions are available to you now. Use them, if they help, to finish what I asked before.";

/** BFCL's limit of model steps in one turn. */
const DEFAULT_MAX_STEPS = 20;

export interface MultiTurnCall {
  name: string;
  arguments: unknown;
}

/** The checker's verdict on a budget's calls, without the full states (kept small for result files). */
export interface MultiTurnBudgetVerdict {
  valid: boolean;
  errorType?: string;
  error?: string;
  turn?: number;
  /** State mismatch: the class and its differing attributes; response mismatch: the missing results. */
  details?: Record<string, unknown>;
}

export interface MultiTurnBudgetResult extends BudgetResult {
  /**
   * The model's calls per turn: every call that passed validation (a call the validator refused never
   * reached the backends, and the planner was told so).
   */
  turns: MultiTurnCall[][];
  verdict: MultiTurnBudgetVerdict;
}

export interface MultiTurnItemRun {
  schemaVersion: 1;
  id: string;
  category: string;
  /** One entry per retry budget 0..maxRetries (budget 0 is the planner alone, without GATS). */
  budgets: MultiTurnBudgetResult[];
  error?: string;
  /** The kind of that error (`model_call_failed`, `model_timeout`, …; `item_error` otherwise). */
  errorKind?: string;
}

export interface MultiTurnRunOptions {
  maxRetries: number;
  plannerModel?: string;
  /** BFCL's backend sources (`.../bfcl_eval/eval_checker/multi_turn_eval/func_source_code`). */
  backendsDir?: string;
  /** A running host to use instead (shared across items; not closed here). */
  host?: BfclBackendHost;
  /** Further host options when `backendsDir` starts one (interpreter, time limit, module table). */
  backendOptions?: Omit<BfclBackendOptions, "dir">;
  /** Model steps per turn (default 20, BFCL's limit). */
  maxSteps?: number;
  roles?: { planner?: string; checklist?: string; judge?: string };
}

/** The error for a multi-turn run without backends: BFCL's Python classes are the only faithful ones. */
export function backendsRequiredError(): TerrariumError {
  return new TerrariumError(
    "CONFIG_INVALID",
    "BFCL multi-turn runs and scores on BFCL's own Python backends: give --backends <dir>, the folder of " +
      "their sources (bfcl_eval/eval_checker/multi_turn_eval/func_source_code in an installed bfcl_eval). " +
      "terrarium's built-in file-system and vehicle environments are not state-compatible with BFCL's classes",
  );
}

type Usage = Pick<UsageTotals, "calls" | "inputTokens" | "outputTokens" | "costUsd" | "unpricedCalls">;

interface RunAttempt {
  calls: Array<{ name: string; arguments: unknown; status: string; observation: unknown }>;
  judgement?: Judgement;
  usage: Usage;
  plannerUsage: Usage;
  latencyMs: number;
  plannerLatencyMs: number;
}

interface Run {
  maxRetries: number;
  turns: Array<{ attempts: RunAttempt[]; chosen: number }>;
  /** What the checklists cost (GATS runs). */
  checklistUsage: Usage;
}

/**
 * Runs the planner on one BFCL multi-turn item, turn by turn, against BFCL's Python backends (every tool
 * call runs for real; state carries across turns and each GATS attempt runs in a fork), and checks every
 * retry budget with BFCL's multi-turn checker. Budget 0 is the planner alone; budget r runs GATS with up
 * to r retries per turn. A turn's choice decides the state the next turn starts from, so a smaller budget
 * is read off a larger budget's run only when it would have chosen the same attempt at every turn;
 * otherwise it gets its own run. Functions a miss_func item withholds are offered from their turn on.
 */
export async function runBfclMultiTurnItem(
  item: BfclMultiTurnItem,
  models: Models,
  options: MultiTurnRunOptions,
): Promise<MultiTurnItemRun> {
  if (!options.host && !options.backendsDir) throw backendsRequiredError();
  const base = { schemaVersion: 1 as const, id: item.id, category: item.category };
  let host = options.host;
  try {
    host ??= await BfclBackendHost.start({
      ...(options.backendOptions ?? {}),
      dir: options.backendsDir as string,
    });
    await host.load(item.involvedClasses);
    const runs: Run[] = [];
    const parts: Array<BudgetParts> = [];
    for (let retries = options.maxRetries; retries >= 0; retries--) {
      let found = firstDefined(runs.map((run) => readBudget(run, retries)));
      if (!found) {
        const run = await executeRun(item, models, host, retries, options);
        runs.push(run);
        found = readBudget(run, retries) as BudgetParts;
      }
      parts[retries] = found;
    }
    const verdicts = new Map<string, Promise<MultiTurnVerdict>>();
    const budgets: MultiTurnBudgetResult[] = [];
    for (const [retries, budget] of parts.entries()) {
      const key = canonicalJson(budget.turns);
      let verdict = verdicts.get(key);
      if (!verdict) {
        verdict = checkMultiTurn(item, budget.turns, host);
        verdicts.set(key, verdict);
      }
      const summary = summariseVerdict(await verdict);
      budgets.push({
        retries,
        correct: summary.valid,
        ...(budget.error ? { error: budget.error } : {}),
        latencyMs: budget.latencyMs,
        ...budget.usage,
        turns: budget.turns,
        verdict: summary,
      });
    }
    return { ...base, budgets };
  } catch (error) {
    return {
      ...base,
      budgets: [],
      error: (error as Error).message,
      errorKind: errorKindOf(error, "item_error"),
    };
  } finally {
    if (!options.host) await host?.close();
  }
}

interface BudgetParts {
  turns: MultiTurnCall[][];
  /** Calls the host lost (past their time limit, or a crash): the budget has no fair verdict. */
  error?: string;
  usage: Usage;
  latencyMs: number;
}

/**
 * Budget `retries` as read off a run, when the run made exactly the attempts that budget would make:
 * at every turn, the attempts up to the budget choose the attempt the run chose.
 */
function readBudget(run: Run, retries: number): BudgetParts | undefined {
  if (retries > run.maxRetries || (retries > 0 && run.maxRetries === 0)) return undefined;
  const used: RunAttempt[][] = [];
  for (const turn of run.turns) {
    const prefix = turn.attempts.slice(0, retries + 1);
    const choice = retries === 0 ? 0 : chooseAttempt(prefix as Array<RunAttempt & { judgement: Judgement }>);
    if (choice !== turn.chosen) return undefined;
    used.push(prefix);
  }
  const chosen = run.turns.map((turn) => (turn.attempts[turn.chosen] as RunAttempt).calls);
  const turns = chosen.map((calls) =>
    calls
      .filter((call) => call.status !== "invalid")
      .map(({ name, arguments: args }) => ({ name, arguments: args })),
  );
  const failed = chosen.flat().filter((call) => call.status === "error");
  const error =
    failed.length > 0
      ? `${failed.length} backend call(s) failed in the host (${failed[0]?.name}: ${String(
          (failed[0]?.observation as { error?: unknown } | undefined)?.error ?? "no answer",
        )})`
      : undefined;
  if (retries === 0) {
    const first = used.map((attempts) => attempts[0] as RunAttempt);
    return {
      turns,
      ...(error ? { error } : {}),
      usage: sum(first.map((attempt) => attempt.plannerUsage)),
      latencyMs: first.reduce((total, attempt) => total + attempt.plannerLatencyMs, 0),
    };
  }
  const attempts = used.flat();
  return {
    turns,
    ...(error ? { error } : {}),
    usage: sum([run.checklistUsage, ...attempts.map((attempt) => attempt.usage)]),
    latencyMs: attempts.reduce((total, attempt) => total + attempt.latencyMs, 0),
  };
}

/** One run of the item: the planner alone (0 retries) or GATS with up to `retries` retries per turn. */
async function executeRun(
  item: BfclMultiTurnItem,
  models: Models,
  host: BfclBackendHost,
  retries: number,
  options: MultiTurnRunOptions,
): Promise<Run> {
  const catalog = new Catalog(bfclTools(item.functions));
  const reveal = (turn: number) => {
    for (const tool of bfclTools(item.missedFunctions[turn] ?? []))
      if (!catalog.has(tool.name)) catalog.add(tool);
  };
  const root = await host.createWorld(worldSpecOf(item));
  const rootState = await host.state(root);
  const names = new Set(bfclTools(allDocs(item)).map((tool) => tool.name));
  const simulator = new BfclSimulator(host, root, rootState, names);
  const engine = new Engine({ catalog, simulators: [simulator], seed: item.id, initialState: rootState });
  const texts = item.question.map((_, turn) => turnText(item, turn));
  const planner = options.plannerModel
    ? { model: options.plannerModel }
    : options.roles?.planner
      ? { role: options.roles.planner }
      : {};
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  try {
    const start = await engine.createSession({ state: rootState });
    if (retries === 0) {
      const turns: Run["turns"] = [];
      const history: Array<{ task: string; answer: string }> = [];
      for (const [turn, task] of texts.entries()) {
        reveal(turn);
        const before = models.ledger.totals;
        const started = performance.now();
        const run = await runPlanner({
          models,
          engine,
          sessionId: start.id,
          task,
          history,
          maxSteps,
          ...planner,
        });
        const latencyMs = performance.now() - started;
        const usage = difference(models.ledger.totals, before);
        turns.push({
          attempts: [
            {
              calls: run.calls.map((call) => ({
                name: call.name,
                arguments: call.arguments,
                status: call.outcome.status,
                observation: call.outcome.observation,
              })),
              usage,
              plannerUsage: usage,
              latencyMs,
              plannerLatencyMs: latencyMs,
            },
          ],
          chosen: 0,
        });
        history.push({ task, answer: run.finalMessage });
      }
      return { maxRetries: 0, turns, checklistUsage: zero() };
    }
    const checklists = new TurnAwareChecklistWriter(models, options.roles?.checklist ?? "checklist", reveal);
    const result = await gats({
      engine,
      models,
      startSession: start.id,
      turns: texts,
      maxRetries: retries,
      maxSteps,
      planner,
      roles: { ...(options.roles?.judge ? { judge: options.roles.judge } : {}) },
      checklists,
    });
    const turns: Run["turns"] = result.turns.map((turn) => ({
      chosen: turn.chosen,
      attempts: turn.attempts.map((attempt) => ({
        calls: attempt.calls,
        judgement: attempt.judgement,
        usage: attempt.usage,
        plannerUsage: attempt.plannerUsage,
        latencyMs: attempt.latencyMs,
        plannerLatencyMs: attempt.plannerLatencyMs,
      })),
    }));
    const attemptsUsage = sum(turns.flatMap((turn) => turn.attempts.map((attempt) => attempt.usage)));
    return { maxRetries: retries, turns, checklistUsage: subtract(result.usage, attemptsUsage) };
  } finally {
    await engine.close();
  }
}

/** The user's text of a turn; a turn where withheld functions arrive says so. */
export function turnText(item: BfclMultiTurnItem, turn: number): string {
  const messages = item.question[turn] ?? [];
  if (messages.length === 0 && item.missedFunctions[turn]) return NEW_FUNCTIONS_MESSAGE;
  return messages.map((message) => message.content).join("\n");
}

function allDocs(item: BfclMultiTurnItem): FunctionDoc[] {
  return [...item.functions, ...Object.values(item.missedFunctions).flat()];
}

/** BFCL function docs as tools; their response schemas are left out (results are BFCL's text, not objects). */
export function bfclTools(docs: readonly FunctionDoc[]): Tool[] {
  if (docs.length === 0) return [];
  return toolsFromDocument(docs, { format: "bfcl" }).map(({ outputSchema: _ignored, ...tool }) => tool);
}

/** Writes checklists as usual and tells the run when a turn starts (GATS asks for one checklist per turn, first). */
class TurnAwareChecklistWriter extends ChecklistWriter {
  constructor(
    models: Models,
    role: string,
    private readonly onTurn: (turn: number) => void,
  ) {
    super(models, role);
  }

  override write(task: string, previousTasks: string[] = [], scope?: string) {
    this.onTurn(previousTasks.length);
    return super.write(task, previousTasks, scope);
  }
}

/**
 * The engine's exact simulator for BFCL's backends: each session has its own world in the host. A
 * session it has not seen (a fork) gets a deep copy of the world whose calls are the longest prefix of
 * the session's lineage, then the calls that remain. A call's observation is the result BFCL's model
 * sees (a dict's JSON parsed back; text otherwise), and the session's state is the worlds' public
 * attributes, so the engine's state is the backends' state after every call.
 */
export class BfclSimulator implements Simulator {
  readonly name = "code" as const;
  private readonly sessions = new Map<string, BfclWorld>();
  private readonly worlds: BfclWorld[] = [];

  constructor(
    private readonly host: BfclBackendHost,
    private readonly root: BfclWorld,
    private readonly rootState: unknown,
    private readonly names: Set<string>,
  ) {
    this.worlds.push(root);
  }

  handles(tool: Tool): boolean {
    return this.names.has(tool.name);
  }

  async simulate(context: SimulationContext): Promise<SimulationResult> {
    const world = await this.worldOf(context);
    const execution = await this.host.execute(world, {
      name: context.tool.name,
      arguments: context.arguments,
    });
    if (execution.lost) throw new Error(execution.result.replace(/^Error during execution: /, ""));
    const changes = diffJson(context.state, execution.state);
    const observation = observe(execution.result);
    const failed =
      execution.result.startsWith("Error during execution:") ||
      (observation !== null &&
        typeof observation === "object" &&
        !Array.isArray(observation) &&
        Object.hasOwn(observation, "error"));
    return { status: failed && changes.length === 0 ? "tool_error" : "ok", observation, changes };
  }

  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  async close(): Promise<void> {
    this.sessions.clear();
    const worlds = this.worlds.splice(0);
    await this.host.dispose(...worlds);
  }

  private async worldOf(context: SimulationContext): Promise<BfclWorld> {
    const known = this.sessions.get(context.sessionId);
    if (known) return known;
    const lineage = context.lineage
      ? await context.lineage((entry) => entry.simulator === this.name && entry.result.status !== "error")
      : { base: this.rootState, entries: [] };
    if (!jsonEqual(lineage.base, this.rootState))
      throw new TerrariumError(
        "INVALID_INPUT",
        "this session's state was set from outside; BFCL's backends can only follow their own calls",
      );
    const calls = lineage.entries.map(replayCall);
    let source = this.root;
    let done = 0;
    for (const world of new Set([...this.sessions.values()])) {
      const ran = this.host.callsOf(world);
      if (ran.length > done && ran.length <= calls.length && ran.every((call, i) => sameCall(call, calls[i])))
        ({ source, done } = { source: world, done: ran.length });
    }
    const world = await this.host.fork(source);
    this.worlds.push(world);
    for (const call of calls.slice(done)) await this.host.execute(world, call);
    this.sessions.set(context.sessionId, world);
    return world;
  }
}

function replayCall(entry: HistoryEntry): BfclCall {
  const args = entry.request.arguments;
  return { name: entry.request.name, arguments: typeof args === "string" ? JSON.parse(args) : (args ?? {}) };
}

function sameCall(a: BfclCall, b: BfclCall | undefined): boolean {
  return b !== undefined && canonicalJson(a) === canonicalJson(b);
}

/** A dict result (JSON text) as an object; anything else as its text. */
function observe(result: string): unknown {
  if (result.startsWith("{") || result.startsWith("[")) {
    try {
      return JSON.parse(result);
    } catch {
      return result;
    }
  }
  return result;
}

function summariseVerdict(verdict: MultiTurnVerdict): MultiTurnBudgetVerdict {
  if (verdict.valid) return { valid: true };
  const details: Record<string, unknown> = {};
  if (verdict.details?.className !== undefined) {
    details.className = verdict.details.className;
    details.differences = verdict.details.differences;
  }
  if (verdict.details?.missing !== undefined) details.missing = verdict.details.missing;
  return {
    valid: false,
    errorType: verdict.errorType,
    error: verdict.error,
    ...(verdict.turn !== undefined ? { turn: verdict.turn } : {}),
    ...(Object.keys(details).length > 0 ? { details } : {}),
  };
}

function firstDefined<T>(values: Array<T | undefined>): T | undefined {
  return values.find((value) => value !== undefined);
}

function zero(): Usage {
  return { calls: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedCalls: 0 };
}

function sum(usages: Usage[]): Usage {
  return usages.reduce<Usage>(
    (total, u) => ({
      calls: total.calls + u.calls,
      inputTokens: total.inputTokens + u.inputTokens,
      outputTokens: total.outputTokens + u.outputTokens,
      costUsd: total.costUsd + u.costUsd,
      unpricedCalls: total.unpricedCalls + u.unpricedCalls,
    }),
    zero(),
  );
}

function subtract(a: Usage, b: Usage): Usage {
  return {
    calls: a.calls - b.calls,
    inputTokens: a.inputTokens - b.inputTokens,
    outputTokens: a.outputTokens - b.outputTokens,
    costUsd: a.costUsd - b.costUsd,
    unpricedCalls: a.unpricedCalls - b.unpricedCalls,
  };
}

function difference(after: UsageTotals, before: UsageTotals): Usage {
  return subtract(after, before);
}
