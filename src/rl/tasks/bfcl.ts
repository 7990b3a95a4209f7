import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  BFCL_BACKEND_MODULES,
  BfclBackendHost,
  type BfclBackendOptions,
  type BfclCall,
  type BfclWorld,
  snakeCase,
} from "../../bench/bfcl/backends.js";
import { missingResults } from "../../bench/bfcl/multi-turn-checker.js";
import {
  allFunctions,
  type BfclMultiTurnItem,
  loadBfclMultiTurnFile,
  worldSpecOf,
} from "../../bench/bfcl/multi-turn-data.js";
import {
  BfclSimulator,
  backendsRequiredError,
  bfclTools,
  turnText,
} from "../../bench/bfcl/multi-turn-run.js";
import { Catalog } from "../../catalog/catalog.js";
import type { Tool } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import type { HistoryEntry, Store } from "../../sessions/types.js";
import { Engine } from "../../sim/engine.js";
import type { EpisodeEnd, EpisodeScore, EpisodeStart } from "../openenv/types.js";
import { MAX_TASK_FILE_BYTES } from "./index.js";
import { FINISH_TOOL, type TaskSet } from "./task-set.js";

/** BFCL's limit of model steps in one turn; an episode gets this many per turn, plus its finish calls. */
export const BFCL_STEPS_PER_TURN = 20;

export interface BfclTaskSetOptions {
  /** BFCL's Python backend sources (`--backends`, as for `bench bfcl`): required. */
  backends?: string;
  /** Further backend host options (interpreter, time limit of a call, class -> module table, stateless classes). */
  backendOptions?: Omit<BfclBackendOptions, "dir">;
  /** The ground truth (default: `possible_answer/<the file's name>` beside the file, as BFCL lays it out). */
  answerFile?: string;
  /** The classes' function docs (default: `multi_turn_func_doc/` beside the file). */
  funcDocFolder?: string;
  /** Class -> doc file name, over BFCL's table. */
  funcDocFiles?: Record<string, string>;
  /** Steps an episode may take in all (default: 21 per turn: BFCL's 20 and the turn's finish call). */
  maxSteps?: number;
  /** Where the episodes' sessions are stored (default: a memory store of each episode's own engine). */
  store?: Store;
}

/** Whether a parsed record is a BFCL multi-turn entry (`id`, `question` turns, `involved_classes`). */
export function isBfclMultiTurnEntry(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const entry = value as Record<string, unknown>;
  return (
    typeof entry.id === "string" &&
    Array.isArray(entry.question) &&
    Array.isArray(entry.involved_classes) &&
    entry.involved_classes.every((name) => typeof name === "string")
  );
}

/**
 * BFCL multi-turn entries as episodes. Each episode's world is the entry's involved classes built from its
 * `initial_config` in a Python process of its own (BFCL's backend sources), behind an engine of its own, so
 * every call is recorded in the session's history and the session can be exported. The agent is given the
 * entry's functions and the first user turn; calling `finish` ends a turn and answers the next one, until
 * the last. Functions a miss_func entry withholds are offered from their turn on, as BFCL offers them (the
 * finish answer lists them under `tools_added`; the episode's tools grow by them).
 * The reward is BFCL's multi-turn check: the model's calls and the ground truth's replayed turn by turn on
 * two fresh worlds; `state` is 1 when every checked turn leaves the same public attributes, `response` 1
 * when every checked turn has calls and each ground-truth result is among the model's results so far,
 * `completed` 1 when every turn was reached (BFCL fails an entry that ended early as force-terminated);
 * the reward is their product, 1 exactly when BFCL's checker passes the entry.
 */
export async function bfclTaskSet(file: string, options: BfclTaskSetOptions = {}): Promise<TaskSet> {
  if (!options.backends) throw backendsRequiredError();
  const dir = resolve(options.backends);
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new TerrariumError("FILE_UNREADABLE", "the BFCL backends folder (--backends) does not exist", {
      where: { file: dir },
    });
  checkSize(file);
  const items = loadBfclMultiTurnFile(file, {
    ...(options.answerFile ? { answerFile: options.answerFile } : {}),
    ...(options.funcDocFolder ? { funcDocFolder: options.funcDocFolder } : {}),
    ...(options.funcDocFiles ? { funcDocFiles: options.funcDocFiles } : {}),
  });
  if (items.length === 0)
    throw new TerrariumError("INVALID_INPUT", "the BFCL file holds no entries", { where: { file } });
  const byId = new Map<string, BfclMultiTurnItem>();
  for (const item of items) {
    if (byId.has(item.id))
      throw new TerrariumError("INVALID_INPUT", `entry id "${item.id}" appears twice`, { where: { file } });
    byId.set(item.id, item);
  }
  const hostOptions: BfclBackendOptions = { ...(options.backendOptions ?? {}), dir };
  // Refuse now, before serving, what no episode could start: a class without its module, classes that do
  // not import, an interpreter that does not run.
  const modules = { ...BFCL_BACKEND_MODULES, ...(hostOptions.modules ?? {}) };
  const classes = [...new Set(items.flatMap((item) => item.involvedClasses))];
  for (const name of classes) {
    const module = join(dir, `${modules[name] ?? snakeCase(name)}.py`);
    if (!existsSync(module))
      throw new TerrariumError(
        "FILE_UNREADABLE",
        `the BFCL backends folder has no module for ${name} (used by ${items.find((item) => item.involvedClasses.includes(name))?.id})`,
        { where: { file: module } },
      );
  }
  const probe = await BfclBackendHost.start(hostOptions);
  try {
    await probe.load(classes);
  } finally {
    await probe.close();
  }
  if (options.maxSteps !== undefined && (!Number.isInteger(options.maxSteps) || options.maxSteps < 1))
    throw new TerrariumError(
      "CONFIG_INVALID",
      `maxSteps must be a positive integer (got ${options.maxSteps})`,
    );

  return {
    label: file,
    taskIds: items.map((item) => item.id),
    start: (taskId, reset) =>
      startEpisode(byId.get(taskId) as BfclMultiTurnItem, reset, hostOptions, options),
  };
}

function checkSize(file: string): void {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (error) {
    throw new TerrariumError("FILE_UNREADABLE", `cannot read the task file: ${(error as Error).message}`, {
      where: { file },
    });
  }
  if (size > MAX_TASK_FILE_BYTES)
    throw new TerrariumError("TOO_LARGE", "the task file is larger than 64 MB", { where: { file } });
}

async function startEpisode(
  item: BfclMultiTurnItem,
  reset: { seed?: number; episodeId: string; owner?: string },
  hostOptions: BfclBackendOptions,
  options: BfclTaskSetOptions,
): Promise<EpisodeStart> {
  const host = await BfclBackendHost.start(hostOptions);
  try {
    await host.load(item.involvedClasses);
    const root = await host.createWorld(worldSpecOf(item));
    const rootState = await host.state(root);
    const catalog = new Catalog(bfclTools(item.functions));
    const names = new Set(bfclTools(allFunctions(item)).map((tool) => tool.name));
    const engine = new Engine({
      catalog,
      simulators: [new BfclSimulator(host, root, rootState, names)],
      policy: "code",
      seed: item.id,
      initialState: rootState,
      ...(options.store ? { store: options.store } : {}),
    });
    const record = await engine.createSession({
      state: rootState,
      ...(reset.owner ? { owner: reset.owner } : {}),
      ...(reset.seed !== undefined ? { seed: `openenv/${reset.seed}` } : {}),
      metadata: { task: item.id, openenv: { episode_id: reset.episodeId } },
    });
    const sessionId = record.id;
    const turns = item.question.length;
    // Where each turn's calls start in the session's history (turn 0 at 0).
    const turnStarts = [0];
    let turn = 0;
    const reveal = (at: number): Tool[] => {
      const added = bfclTools(item.missedFunctions[at] ?? []).filter((tool) => !catalog.has(tool.name));
      for (const tool of added) catalog.add(tool);
      return added;
    };
    return {
      sessionId,
      engine,
      tools: catalog.tools,
      finishTool: FINISH_TOOL,
      observation: { instruction: turnText(item, 0), turn: 0, turns },
      metadata: {
        format: "bfcl_multi_turn",
        category: item.category,
        involved_classes: item.involvedClasses,
        ...(Object.keys(item.missedFunctions).length > 0
          ? {
              missed_functions: Object.fromEntries(
                Object.entries(item.missedFunctions).map(([at, docs]) => [at, docs.map((doc) => doc.name)]),
              ),
            }
          : {}),
      },
      maxSteps: options.maxSteps ?? turns * (BFCL_STEPS_PER_TURN + 1),
      onFinish: async () => {
        if (turn + 1 >= turns) return { done: true };
        turn++;
        turnStarts.push((await engine.history(sessionId)).length);
        const added = reveal(turn);
        const next: TurnAdvance = {
          done: false,
          result: {
            instruction: turnText(item, turn),
            turn,
            turns,
            ...(added.length > 0 ? { tools_added: added.map(listed) } : {}),
          },
          ...(added.length > 0 ? { tools: added } : {}),
        };
        return next;
      },
      score: async (ended: EpisodeEnd): Promise<EpisodeScore> => {
        const history = await engine.history(sessionId);
        const modelTurns = turnStarts.map((from, index) =>
          history.slice(from, turnStarts[index + 1] ?? history.length).flatMap(callOf),
        );
        // A turn announced by the finish call that used the last step was never played.
        if (ended.reason !== "finish" && modelTurns.length > 1 && modelTurns.at(-1)?.length === 0)
          modelTurns.pop();
        try {
          return await scoreBfclTurns(item, modelTurns, host, ended.reason);
        } catch (error) {
          // The backends failed on the replay (BFCL counts such an entry as errored): no reward, and why.
          const reason = `the BFCL backends failed while checking: ${(error as Error).message}`;
          return {
            reward: null,
            breakdown: {
              completed: modelTurns.length === item.groundTruth.length ? 1 : 0,
              state: null,
              response: null,
            },
            metadata: {
              skipped_checks: [
                { check: "state", reason },
                { check: "response", reason },
              ],
            },
          };
        }
      },
      release: () => host.close(),
    };
  } catch (error) {
    await host.close();
    throw error;
  }
}

/** What `onFinish` answers between turns: the next turn, and the tools it adds (miss_func's withheld functions). */
export interface TurnAdvance {
  done: boolean;
  result?: Record<string, unknown>;
  tools?: Tool[];
}

function listed(tool: Tool): { name: string; description: string; input_schema: unknown } {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
}

/** A recorded call as BFCL runs it; calls the validator refused never reached the backends and are left out. */
function callOf(entry: HistoryEntry): BfclCall[] {
  if (entry.result.status === "invalid") return [];
  const args = entry.request.arguments;
  return [
    { name: entry.request.name, arguments: typeof args === "string" ? JSON.parse(args) : (args ?? {}) },
  ];
}

/** One turn as the check saw it (`null`: not checked, its ground truth makes no call). */
export interface BfclTurnCheck {
  calls: number;
  expected: number;
  state: boolean | null;
  response: boolean | null;
  /** The first attribute-level difference of a state mismatch, and the results a response mismatch misses. */
  className?: string;
  attributes?: string[];
  missing?: string[];
}

/**
 * BFCL's multi-turn check over an episode's turns, every turn checked (BFCL stops at the first failure; the
 * verdict is the same, the breakdown says more). The model's calls and the ground truth's run on two fresh
 * worlds built from the entry's configuration; after each turn whose ground truth makes calls, the state
 * check (every public attribute equal, Python `!=`) and the response check (each ground-truth result among
 * the model's results of this and earlier turns; a turn without calls fails it, as BFCL's empty-turn rule).
 */
export async function scoreBfclTurns(
  item: BfclMultiTurnItem,
  modelTurns: BfclCall[][],
  host: BfclBackendHost,
  reason: EpisodeEnd["reason"] = "finish",
): Promise<EpisodeScore> {
  const completed = modelTurns.length === item.groundTruth.length;
  const checks: BfclTurnCheck[] = [];
  let first: { errorType: string; turn?: number; error: string } | undefined = completed
    ? undefined
    : {
        errorType: "multi_turn:force_terminated",
        error: `the episode ended (${reason}) at turn ${modelTurns.length - 1} of ${item.groundTruth.length}`,
      };
  const spec = worldSpecOf(item);
  const worlds: BfclWorld[] = [];
  try {
    await host.load(item.involvedClasses);
    const modelWorld = await host.createWorld(spec);
    worlds.push(modelWorld);
    const truthWorld = await host.createWorld(spec);
    worlds.push(truthWorld);
    const modelResults: string[] = [];
    for (const [turn, calls] of modelTurns.entries()) {
      const truthCalls = item.groundTruth[turn] ?? [];
      for (const call of calls) modelResults.push((await host.execute(modelWorld, call)).result);
      const truthResults: string[] = [];
      for (const source of truthCalls) truthResults.push((await host.execute(truthWorld, { source })).result);
      const check: BfclTurnCheck = {
        calls: calls.length,
        expected: truthCalls.length,
        state: null,
        response: null,
      };
      checks.push(check);
      if (truthCalls.length === 0) continue;
      const comparison = await host.compare(modelWorld, truthWorld);
      check.state = comparison.valid;
      if (!comparison.valid) {
        check.className = comparison.className;
        check.attributes = Object.keys(comparison.differences);
      }
      const missing = missingResults(truthResults, modelResults);
      check.response = calls.length > 0 && missing.length === 0;
      if (missing.length > 0) check.missing = missing;
      if (!first && calls.length === 0)
        first = {
          errorType: "multi_turn:empty_turn_model_response",
          turn,
          error: `turn ${turn}: no call where the ground truth makes ${truthCalls.length}`,
        };
      else if (!first && !comparison.valid)
        first = {
          errorType: "multi_turn:instance_state_mismatch",
          turn,
          error: `turn ${turn}: the state of ${comparison.className} differs from the ground truth's (${check.attributes?.join(", ")})`,
        };
      else if (!first && missing.length > 0)
        first = {
          errorType: "multi_turn:execution_response_mismatch",
          turn,
          error: `turn ${turn}: ${missing.length} of the ground truth's ${truthResults.length} results are not among the model's results so far`,
        };
    }
  } finally {
    await host.dispose(...worlds);
  }
  const state = checks.every((check) => check.state !== false) ? 1 : 0;
  const response = checks.every((check) => check.response !== false) ? 1 : 0;
  const breakdown = { completed: completed ? 1 : 0, state, response };
  return {
    reward: breakdown.completed * state * response,
    breakdown,
    metadata: {
      bfcl: {
        valid: first === undefined,
        ...(first
          ? {
              error_type: first.errorType,
              error: first.error,
              ...(first.turn !== undefined ? { turn: first.turn } : {}),
            }
          : {}),
        turns: checks,
      },
    },
  };
}
