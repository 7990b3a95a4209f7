import { readFileSync, statSync } from "node:fs";
import { Catalog } from "../../catalog/catalog.js";
import type { Tool } from "../../catalog/tool.js";
import { parseJsonText } from "../../core/checked-json.js";
import { TerrariumError } from "../../core/errors.js";
import type { Environment } from "../../envs/types.js";
import type { Engine } from "../../sim/engine.js";

/** The largest task file read (64 MiB) and how deeply it may nest. */
export const MAX_TASK_FILE_BYTES = 64 * 1024 * 1024;
export const MAX_TASK_JSON_DEPTH = 256;

/** The checks a reward can be made of. `db`, `actions`, `state` are computed; `communicate` needs the agent's messages; `nl_assertions` a judge. */
export type CheckName = "db" | "actions" | "communicate" | "nl_assertions" | "env_assertions" | "state";

/** An expected tool call (tau2's `Action`): `compareArgs` absent compares every argument of the agent's call. */
export interface ExpectedAction {
  name: string;
  arguments: Record<string, unknown>;
  requestor: "assistant" | "user";
  compareArgs?: string[];
}

/** One task, either format, normalised. */
export interface RlTask {
  id: string;
  format: "tau2" | "terrarium";
  /** What the agent is asked to do (tau2: the user scenario's instructions as text). */
  instruction: string;
  /** The environment the task runs on (terrarium format; tau2 files do not name one). */
  environment?: string;
  /** terrarium format: the whole initial state (absent: the environment's own). */
  initialState?: unknown;
  /** tau2 `initial_state`: `initialization_data.agent_data` merged into the database, then the `initialization_actions`. */
  tau2Initial?: {
    agentData?: Record<string, unknown>;
    actions: Array<{ name: string; arguments: Record<string, unknown> }>;
  };
  /**
   * Ground truth. `actions: null` (tau2's None) differs from `[]`: with neither actions nor env assertions
   * tau2's DB check is 1 without replaying.
   */
  expected: { actions: ExpectedAction[] | null; state?: unknown };
  communicateInfo: string[];
  nlAssertions: string[];
  envAssertions: unknown[];
  /** The checks multiplied into the reward. */
  rewardBasis: CheckName[];
  /** tau2 tasks with `evaluation_criteria: null` score 1. */
  noCriteria?: boolean;
  /** tau2's user scenario as published (for a simulated user). */
  userScenario?: unknown;
}

const TAU2_BASIS: Record<string, CheckName> = {
  DB: "db",
  ACTION: "actions",
  COMMUNICATE: "communicate",
  NL_ASSERTION: "nl_assertions",
  ENV_ASSERTION: "env_assertions",
};
const TERRARIUM_CHECKS = new Set<CheckName>(["db", "actions", "state", "communicate", "nl_assertions"]);

/** Reads a task file: a JSON array (tau2's tasks.json), `{"tasks": [...]}`, or JSON lines; each task tau2 or terrarium format. */
export function loadTasks(file: string): RlTask[] {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (error) {
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `cannot read the task file ${file}: ${(error as Error).message}`,
      {
        where: { file },
      },
    );
  }
  if (size > MAX_TASK_FILE_BYTES)
    throw new TerrariumError("TOO_LARGE", `the task file ${file} is larger than 64 MB`, { where: { file } });
  return parseTasks(readFileSync(file, "utf8"), file);
}

/** Parses task-file text (see `loadTasks`); errors carry `where.file` and a JSON Pointer (or line). */
export function parseTasks(text: string, file?: string): RlTask[] {
  const where = file !== undefined ? { file } : {};
  const trimmed = text.trim();
  let entries: Array<{ value: unknown; pointer: string; line?: number }>;
  if (trimmed.startsWith("[") || (trimmed.startsWith("{") && !isJsonLines(trimmed))) {
    const document = parse(trimmed, where, undefined);
    if (Array.isArray(document)) entries = document.map((value, index) => ({ value, pointer: `/${index}` }));
    else if (isObject(document) && Array.isArray(document.tasks))
      entries = document.tasks.map((value, index) => ({ value, pointer: `/tasks/${index}` }));
    else if (isObject(document)) entries = [{ value: document, pointer: "" }];
    else throw invalid("a task file holds an array of tasks", where, "");
  } else {
    entries = [];
    for (const [index, line] of text.split("\n").entries()) {
      if (line.trim() === "") continue;
      entries.push({ value: parse(line, where, index + 1), pointer: "", line: index + 1 });
    }
  }
  const tasks: RlTask[] = [];
  const seen = new Map<string, string>();
  for (const entry of entries) {
    const at = {
      ...where,
      pointer: entry.pointer,
      ...(entry.line !== undefined ? { line: entry.line } : {}),
    };
    const task = normaliseTask(entry.value, at);
    const before = seen.get(task.id);
    if (before !== undefined)
      throw invalid(`task id "${task.id}" appears twice (first at ${before || "line"})`, at, entry.pointer);
    seen.set(task.id, entry.pointer);
    tasks.push(task);
  }
  if (tasks.length === 0) throw invalid("the task file holds no tasks", where, "");
  return tasks;
}

function isJsonLines(text: string): boolean {
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  return lines.length > 1 && lines.every((line) => line.trim().startsWith("{") && line.trim().endsWith("}"));
}

function parse(text: string, where: { file?: string }, line: number | undefined): unknown {
  try {
    return parseJsonText(text, MAX_TASK_JSON_DEPTH, line !== undefined ? `line ${line}` : "the task file");
  } catch (error) {
    if (error instanceof TerrariumError)
      throw error.locatedIn({ ...where, ...(line !== undefined ? { line } : {}) });
    throw error;
  }
}

type Where = { file?: string; pointer?: string; line?: number };

function invalid(message: string, where: Where, pointer: string): TerrariumError {
  return new TerrariumError("INVALID_INPUT", message, { where: { ...where, pointer } });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function own(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

function normaliseTask(value: unknown, at: Where): RlTask {
  const base = at.pointer ?? "";
  if (!isObject(value)) throw invalid("a task must be an object", at, base);
  const id = own(value, "id");
  if (typeof id !== "string" && typeof id !== "number")
    throw invalid("a task needs an id (a string)", at, `${base}/id`);
  const isTau2 = "evaluation_criteria" in value || "user_scenario" in value;
  return isTau2 ? tau2Task(value, String(id), at, base) : terrariumTask(value, String(id), at, base);
}

function stringList(value: unknown, at: Where, pointer: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string"))
    throw invalid("expected a list of strings", at, pointer);
  return value as string[];
}

function actionOf(value: unknown, at: Where, pointer: string): ExpectedAction {
  if (!isObject(value)) throw invalid("an action must be an object", at, pointer);
  const name = own(value, "name");
  if (typeof name !== "string" || name === "") throw invalid("an action needs a name", at, `${pointer}/name`);
  const args = own(value, "arguments") ?? {};
  if (!isObject(args)) throw invalid("an action's arguments must be an object", at, `${pointer}/arguments`);
  const requestor = own(value, "requestor") ?? "assistant";
  if (requestor !== "assistant" && requestor !== "user")
    throw invalid('requestor must be "assistant" or "user"', at, `${pointer}/requestor`);
  const compare = own(value, "compare_args") ?? own(value, "compareArgs");
  const action: ExpectedAction = { name, arguments: args, requestor };
  if (compare !== undefined && compare !== null)
    action.compareArgs = stringList(compare, at, `${pointer}/compare_args`);
  return action;
}

function actionList(value: unknown, at: Where, pointer: string): ExpectedAction[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw invalid("actions must be a list", at, pointer);
  return value.map((item, index) => actionOf(item, at, `${pointer}/${index}`));
}

/** tau2's user instructions as one text (the agent's task when no simulated user stands in between). */
function scenarioText(scenario: unknown): string {
  if (!isObject(scenario)) return "";
  const instructions = own(scenario, "instructions");
  if (typeof instructions === "string") return instructions;
  if (!isObject(instructions)) return "";
  const parts: string[] = [];
  for (const [key, label] of [
    ["reason_for_call", "Reason for call"],
    ["known_info", "Known info"],
    ["unknown_info", "Unknown info"],
    ["task_instructions", "Task instructions"],
  ] as const) {
    const text = own(instructions, key);
    if (typeof text === "string" && text.trim() !== "") parts.push(`${label}: ${text.trim()}`);
  }
  return parts.join("\n");
}

function tau2Task(value: Record<string, unknown>, id: string, at: Where, base: string): RlTask {
  const criteria = own(value, "evaluation_criteria");
  const task: RlTask = {
    id,
    format: "tau2",
    instruction: scenarioText(own(value, "user_scenario")),
    expected: { actions: null },
    communicateInfo: [],
    nlAssertions: [],
    envAssertions: [],
    rewardBasis: [],
    userScenario: own(value, "user_scenario"),
  };
  if (criteria === undefined || criteria === null) task.noCriteria = true;
  else {
    const pointer = `${base}/evaluation_criteria`;
    if (!isObject(criteria)) throw invalid("evaluation_criteria must be an object", at, pointer);
    task.expected.actions = actionList(own(criteria, "actions"), at, `${pointer}/actions`);
    task.communicateInfo = stringList(own(criteria, "communicate_info"), at, `${pointer}/communicate_info`);
    task.nlAssertions = stringList(own(criteria, "nl_assertions"), at, `${pointer}/nl_assertions`);
    const env = own(criteria, "env_assertions");
    if (env !== undefined && env !== null) {
      if (!Array.isArray(env))
        throw invalid("env_assertions must be a list", at, `${pointer}/env_assertions`);
      task.envAssertions = env;
    }
    // tau2's default basis is [DB, COMMUNICATE].
    const basis = own(criteria, "reward_basis") ?? ["DB", "COMMUNICATE"];
    if (!Array.isArray(basis)) throw invalid("reward_basis must be a list", at, `${pointer}/reward_basis`);
    task.rewardBasis = basis.map((item, index) => {
      const check = typeof item === "string" ? TAU2_BASIS[item] : undefined;
      if (!check)
        throw invalid(
          `unknown reward_basis entry ${JSON.stringify(item)} (expected DB, ACTION, COMMUNICATE, NL_ASSERTION or ENV_ASSERTION)`,
          at,
          `${pointer}/reward_basis/${index}`,
        );
      return check;
    });
  }
  const initial = own(value, "initial_state");
  if (initial !== undefined && initial !== null) {
    const pointer = `${base}/initial_state`;
    if (!isObject(initial)) throw invalid("initial_state must be an object", at, pointer);
    const history = own(initial, "message_history");
    if (Array.isArray(history) && history.length > 0)
      throw invalid("initial_state.message_history is not supported", at, `${pointer}/message_history`);
    const data = own(initial, "initialization_data");
    let agentData: Record<string, unknown> | undefined;
    if (data !== undefined && data !== null) {
      if (!isObject(data))
        throw invalid("initialization_data must be an object", at, `${pointer}/initialization_data`);
      const agent = own(data, "agent_data");
      if (agent !== undefined && agent !== null) {
        if (!isObject(agent))
          throw invalid("agent_data must be an object", at, `${pointer}/initialization_data/agent_data`);
        agentData = agent;
      }
      const user = own(data, "user_data");
      if (user !== undefined && user !== null)
        throw invalid(
          "user_data is not supported (no user database)",
          at,
          `${pointer}/initialization_data/user_data`,
        );
    }
    const calls = own(initial, "initialization_actions");
    const actions: Array<{ name: string; arguments: Record<string, unknown> }> = [];
    if (calls !== undefined && calls !== null) {
      if (!Array.isArray(calls))
        throw invalid("initialization_actions must be a list", at, `${pointer}/initialization_actions`);
      for (const [index, call] of calls.entries()) {
        const callPointer = `${pointer}/initialization_actions/${index}`;
        if (!isObject(call)) throw invalid("an initialization action must be an object", at, callPointer);
        if ((own(call, "env_type") ?? "assistant") !== "assistant")
          throw invalid("only assistant initialization actions are supported", at, `${callPointer}/env_type`);
        const name = own(call, "func_name");
        if (typeof name !== "string")
          throw invalid("func_name must be a string", at, `${callPointer}/func_name`);
        const args = own(call, "arguments") ?? {};
        if (!isObject(args)) throw invalid("arguments must be an object", at, `${callPointer}/arguments`);
        actions.push({ name, arguments: args });
      }
    }
    task.tau2Initial = { ...(agentData ? { agentData } : {}), actions };
  }
  return task;
}

function terrariumTask(value: Record<string, unknown>, id: string, at: Where, base: string): RlTask {
  const instruction = own(value, "instruction");
  if (typeof instruction !== "string" || instruction.trim() === "")
    throw invalid("a task needs an instruction (text)", at, `${base}/instruction`);
  const environment = own(value, "environment");
  if (typeof environment !== "string" || environment === "")
    throw invalid("a task needs an environment (a name or file)", at, `${base}/environment`);
  const expected = own(value, "expected");
  if (!isObject(expected)) throw invalid("a task needs expected: {state?, actions?}", at, `${base}/expected`);
  const actions = actionList(own(expected, "actions"), at, `${base}/expected/actions`);
  const state = own(expected, "state");
  if (actions === null && state === undefined)
    throw invalid("expected needs state or actions", at, `${base}/expected`);
  const task: RlTask = {
    id,
    format: "terrarium",
    instruction,
    environment,
    expected: { actions, ...(state !== undefined ? { state } : {}) },
    communicateInfo: stringList(own(value, "communicate"), at, `${base}/communicate`),
    nlAssertions: stringList(own(value, "assertions"), at, `${base}/assertions`),
    envAssertions: [],
    rewardBasis: [],
  };
  if (Object.hasOwn(value, "initialState")) task.initialState = value.initialState;
  const checks = own(value, "checks");
  if (checks === undefined) {
    if (state !== undefined) task.rewardBasis.push("state");
    if (actions !== null) task.rewardBasis.push("db");
  } else {
    for (const [index, check] of stringList(checks, at, `${base}/checks`).entries()) {
      if (!TERRARIUM_CHECKS.has(check as CheckName))
        throw invalid(
          `unknown check "${check}" (expected db, actions, state, communicate or nl_assertions)`,
          at,
          `${base}/checks/${index}`,
        );
      if ((check === "db" || check === "actions") && actions === null)
        throw invalid(`the ${check} check needs expected.actions`, at, `${base}/checks/${index}`);
      if (check === "state" && state === undefined)
        throw invalid("the state check needs expected.state", at, `${base}/checks/${index}`);
      task.rewardBasis.push(check as CheckName);
    }
  }
  return task;
}

/** Deep merge as tau2's `update_db` does (addict's update: objects merge key by key, anything else replaces). */
export function mergeUpdate(target: unknown, update: unknown, depth = 0): unknown {
  if (depth > MAX_TASK_JSON_DEPTH) throw new TerrariumError("TOO_LARGE", "agent_data nests too deeply");
  if (!isObject(target) || !isObject(update)) return update;
  const merged: Record<string, unknown> = { ...target };
  for (const key of Object.keys(update)) {
    if (key === "__proto__")
      throw new TerrariumError("INVALID_INPUT", 'agent_data may not hold a "__proto__" key');
    Object.defineProperty(merged, key, {
      value: mergeUpdate(own(target, key), update[key], depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return merged;
}

const INITIAL = new WeakMap<Environment, WeakMap<RlTask, unknown>>();

/**
 * The task's initial world: terrarium `initialState`, else the environment's, with tau2's `agent_data`
 * merged in and its initialization actions run (on a separate instance, so they are not in the episode).
 */
export async function taskInitialState(environment: Environment, task: RlTask): Promise<unknown> {
  let byTask = INITIAL.get(environment);
  if (!byTask) {
    byTask = new WeakMap();
    INITIAL.set(environment, byTask);
  }
  if (byTask.has(task)) return byTask.get(task);
  let state = task.initialState !== undefined ? task.initialState : await environment.initialState();
  if (task.tau2Initial?.agentData) state = mergeUpdate(state, task.tau2Initial.agentData);
  if (task.tau2Initial && task.tau2Initial.actions.length > 0) {
    const instance = await environment.create({ state, seed: `task/${task.id}/init` });
    try {
      for (const call of task.tau2Initial.actions) {
        const transition = await instance.step(call);
        if (!transition.success)
          throw new TerrariumError(
            "INVALID_INPUT",
            `task ${task.id}: initialization action ${call.name} failed`,
            {
              details: { observation: transition.observation },
            },
          );
      }
      state = await instance.state();
    } finally {
      await instance.close();
    }
  }
  byTask.set(task, state);
  return state;
}

export interface TaskEpisode {
  sessionId: string;
  taskId: string;
  instruction: string;
  tools: Tool[];
}

/** Starts a task: an engine session on the task's initial world, with the instruction and the tools. */
export async function startTaskEpisode(options: {
  engine: Engine;
  environment: Environment;
  task: RlTask;
  seed?: string;
  owner?: string;
}): Promise<TaskEpisode> {
  const { engine, environment, task } = options;
  const state = await taskInitialState(environment, task);
  const record = await engine.createSession({
    state,
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.owner !== undefined ? { owner: options.owner } : {}),
    metadata: { task: task.id },
  });
  return {
    sessionId: record.id,
    taskId: task.id,
    instruction: task.instruction,
    tools: engine.catalog.tools,
  };
}

/** An engine whose every tool runs the environment's code (what `serve <environment>` builds). */
export async function engineForEnvironment(environment: Environment, seed?: string): Promise<Engine> {
  const { Engine } = await import("../../sim/engine.js");
  const { CodeSimulator } = await import("../../sim/simulators/code.js");
  return new Engine({
    catalog: new Catalog(environment.tools),
    simulators: [new CodeSimulator(environment, seed)],
    policy: "code",
    initialState: await environment.initialState(),
    ...(seed !== undefined ? { seed } : {}),
  });
}
