import { TerrariumError } from "../../core/errors.js";
import { BfclBackendHost, type BfclBackendOptions, type BfclCall, type BfclWorld } from "./backends.js";
import { parsePythonCall, splitCallList } from "./call-syntax.js";
import { tallyCategories } from "./data.js";
import { type BfclMultiTurnItem, worldSpecOf } from "./multi-turn-data.js";

/**
 * A model's call in a results file: `{name, arguments}` (arguments as an object or its JSON text), BFCL's
 * `{"<name>": arguments}`, or Python call text (`cd(folder='documents')`, or a bracketed list of calls
 * as BFCL's prompting models write them).
 */
export type ModelCall = { name: string; arguments?: unknown } | Record<string, unknown> | string;

/** One turn of a model's result: its calls, or its steps (lists of calls) as BFCL records them. */
export type ModelTurn = Array<ModelCall | ModelCall[]>;

/** Execution results of one turn, as BFCL compares them (the model's combined over its steps). */
export interface TurnExecution {
  model: string[];
  groundTruth: string[];
}

export type MultiTurnErrorType =
  | "multi_turn:inference_error"
  | "multi_turn:force_terminated"
  | "multi_turn:empty_turn_model_response"
  | "multi_turn:instance_state_mismatch"
  | "multi_turn:execution_response_mismatch";

export type MultiTurnVerdict =
  | { valid: true; executions: TurnExecution[] }
  | {
      valid: false;
      errorType: MultiTurnErrorType;
      error: string;
      /** The turn that failed (0-based), when one did. */
      turn?: number;
      details?: Record<string, unknown>;
      /** The turns executed up to the failure. */
      executions: TurnExecution[];
    };

/** Reads a model's turns from a results entry; malformed calls are skipped, as BFCL skips what it cannot decode. */
export function normaliseModelTurns(raw: unknown): BfclCall[][] | undefined {
  if (!Array.isArray(raw)) return undefined;
  return raw.map((turn) => {
    if (!Array.isArray(turn)) return [];
    const calls: BfclCall[] = [];
    for (const entry of turn) calls.push(...(Array.isArray(entry) ? entry.flatMap(toCalls) : toCalls(entry)));
    return calls;
  });
}

function toCalls(entry: unknown): BfclCall[] {
  if (typeof entry === "string") {
    if (!entry.trim()) return [];
    try {
      const sources = splitCallList(entry);
      for (const source of sources) parsePythonCall(source);
      return sources.map((source) => ({ source }));
    } catch {
      return []; // text that does not decode to calls is skipped, as BFCL skips it
    }
  }
  if (entry === null || typeof entry !== "object") return [];
  const object = entry as Record<string, unknown>;
  if (typeof object.name === "string" && Object.keys(object).every((k) => k === "name" || k === "arguments"))
    return [{ name: object.name, arguments: object.arguments ?? {} }];
  const keys = Object.keys(object);
  if (keys.length === 1) return [{ name: keys[0] as string, arguments: object[keys[0] as string] ?? {} }];
  return [];
}

/**
 * BFCL's multi-turn check. The model's calls and the ground truth's run turn by turn on two separate
 * worlds built from the item's initial configuration (each carried across turns). After each turn whose
 * ground truth is not empty: the model must have made a call in it; every public attribute of every
 * instance must be equal (Python `!=`); and each ground-truth result of the turn must be found among the
 * model's results of this and all earlier turns (unordered, each model result used once). Turns whose
 * ground truth is empty are run (so later states are right) but not checked. The first failure fails the
 * item. A result with another number of turns than the ground truth fails as force-terminated.
 */
export async function checkMultiTurn(
  item: BfclMultiTurnItem,
  modelTurns: unknown,
  host: BfclBackendHost,
): Promise<MultiTurnVerdict> {
  const executions: TurnExecution[] = [];
  const turns = normaliseModelTurns(modelTurns);
  if (!turns)
    return {
      valid: false,
      errorType: "multi_turn:inference_error",
      error: "the result is not a list of turns",
      executions,
    };
  if (turns.length !== item.groundTruth.length)
    return {
      valid: false,
      errorType: "multi_turn:force_terminated",
      error:
        `the result has ${turns.length} turns and the ground truth ${item.groundTruth.length}: ` +
        "the run ended early (or went on too long), so the item fails",
      details: { modelTurns: turns.length, groundTruthTurns: item.groundTruth.length },
      executions,
    };
  await host.load(item.involvedClasses);
  const spec = worldSpecOf(item);
  const worlds: BfclWorld[] = [];
  try {
    const modelWorld = await host.createWorld(spec);
    worlds.push(modelWorld);
    const truthWorld = await host.createWorld(spec);
    worlds.push(truthWorld);
    const allModelResults: string[] = [];
    for (const [turn, truthCalls] of item.groundTruth.entries()) {
      const modelCalls = turns[turn] as BfclCall[];
      const model: string[] = [];
      for (const call of modelCalls) model.push((await host.execute(modelWorld, call)).result);
      const groundTruth: string[] = [];
      for (const source of truthCalls) groundTruth.push((await host.execute(truthWorld, { source })).result);
      allModelResults.push(...model);
      executions.push({ model, groundTruth });
      if (truthCalls.length === 0) continue;
      if (modelCalls.length === 0)
        return {
          valid: false,
          errorType: "multi_turn:empty_turn_model_response",
          error: `turn ${turn}: the model made no call where the ground truth makes ${truthCalls.length}`,
          turn,
          executions,
        };
      const comparison = await host.compare(modelWorld, truthWorld);
      if (!comparison.valid) {
        const attributes = Object.keys(comparison.differences);
        return {
          valid: false,
          errorType: "multi_turn:instance_state_mismatch",
          error:
            `turn ${turn}: the state of ${comparison.className} differs from the ground truth's ` +
            `(${attributes.join(", ")})`,
          turn,
          details: {
            className: comparison.className,
            differences: comparison.differences,
            modelState: comparison.modelState,
            groundTruthState: comparison.groundTruthState,
          },
          executions,
        };
      }
      const missing = missingResults(groundTruth, allModelResults);
      if (missing.length > 0)
        return {
          valid: false,
          errorType: "multi_turn:execution_response_mismatch",
          error:
            `turn ${turn}: ${missing.length} of the ground truth's ${groundTruth.length} results are not ` +
            "among the model's results so far",
          turn,
          details: {
            missing,
            modelResultsSoFar: [...allModelResults],
            groundTruthResults: groundTruth,
          },
          executions,
        };
    }
    return { valid: true, executions };
  } finally {
    await host.dispose(...worlds);
  }
}

/**
 * The ground-truth results not found among the model's: each ground-truth result takes one equal model
 * result (so a result the ground truth has twice must be there twice); order does not matter.
 */
export function missingResults(groundTruth: readonly string[], model: readonly string[]): string[] {
  const available = new Map<string, number>();
  for (const result of model) available.set(result, (available.get(result) ?? 0) + 1);
  const missing: string[] = [];
  for (const result of groundTruth) {
    const count = available.get(result) ?? 0;
    if (count > 0) available.set(result, count - 1);
    else missing.push(result);
  }
  return missing;
}

export interface MultiTurnItemScore {
  id: string;
  category: string;
  valid: boolean;
  errorType?: string;
  error?: string;
  /** The item errored (its result records a failed inference, or the checker failed on it): wrong, counted apart. */
  errored?: true;
  turn?: number;
  details?: Record<string, unknown>;
}

export interface MultiTurnScore {
  schemaVersion: number;
  categories: Record<string, { items: number; correct: number; errored: number; accuracy: number }>;
  /** Unweighted mean of the category accuracies, as BFCL averages categories. */
  overall: number;
  items: MultiTurnItemScore[];
}

/** Picks each record's turns (`turns`, or BFCL's `result`) by id from parsed results-file records. */
export function collectMultiTurnResults(records: readonly unknown[]): Map<string, unknown> {
  const byId = new Map<string, unknown>();
  for (const record of records) {
    if (record === null || typeof record !== "object") continue;
    const { id, turns, result } = record as Record<string, unknown>;
    if (typeof id !== "string") continue;
    byId.set(id, turns !== undefined ? turns : result);
  }
  return byId;
}

/**
 * Scores results (by item id, each a list of turns) with `checkMultiTurn`. An item without a result fails
 * as an inference error. An item whose result records an error (`errors`: the model call failed) and one
 * the checker fails on (the backends could not build or run its ground truth) are errored: wrong, as in
 * BFCL, and marked so they are counted apart. `backends` is a running host or the options to start one
 * (closed at the end); a backends folder that cannot be read stops the scoring.
 */
export async function scoreMultiTurn(
  items: readonly BfclMultiTurnItem[],
  resultsById: ReadonlyMap<string, unknown>,
  backends: BfclBackendHost | BfclBackendOptions,
  errors: ReadonlyMap<string, string> = new Map(),
): Promise<MultiTurnScore> {
  const host =
    backends instanceof BfclBackendHost
      ? backends
      : await BfclBackendHost.start(backends as BfclBackendOptions);
  const scores: MultiTurnItemScore[] = [];
  try {
    for (const item of items) {
      const failed = errors.get(item.id);
      if (failed !== undefined) {
        scores.push({
          id: item.id,
          category: item.category,
          valid: false,
          errorType: "multi_turn:inference_error",
          error: failed,
          errored: true,
        });
        continue;
      }
      if (!resultsById.has(item.id)) {
        scores.push({
          id: item.id,
          category: item.category,
          valid: false,
          errorType: "multi_turn:inference_error",
          error: "the results have no entry for this item",
        });
        continue;
      }
      let verdict: MultiTurnVerdict;
      try {
        verdict = await checkMultiTurn(item, resultsById.get(item.id), host);
      } catch (error) {
        if (error instanceof TerrariumError && error.code === "FILE_UNREADABLE") throw error;
        scores.push({
          id: item.id,
          category: item.category,
          valid: false,
          errorType: "multi_turn:checker_error",
          error: (error as Error).message,
          errored: true,
        });
        continue;
      }
      scores.push(
        verdict.valid
          ? { id: item.id, category: item.category, valid: true }
          : {
              id: item.id,
              category: item.category,
              valid: false,
              errorType: verdict.errorType,
              error: verdict.error,
              ...(verdict.turn !== undefined ? { turn: verdict.turn } : {}),
              ...(verdict.details ? { details: verdict.details } : {}),
            },
      );
    }
  } finally {
    if (!(backends instanceof BfclBackendHost)) await host.close();
  }
  return { schemaVersion: 1, ...tallyCategories(scores), items: scores };
}
