import { canonicalJson, hashJson } from "../../core/canonical-json.js";
import { TerrariumError } from "../../core/errors.js";
import { tau2RetailDbHash } from "../../envs/corpus/tau2-hash.js";
import type { Environment } from "../../envs/types.js";
import type { Engine, SessionExport } from "../../sim/engine.js";
import type { CheckName, ExpectedAction, RlTask } from "../tasks/index.js";
import { taskInitialState } from "../tasks/index.js";

/** One tool call the agent made (any outcome: tau2's action check counts every call). */
export interface AgentCall {
  name: string;
  arguments: unknown;
}

/** One message of the conversation, for the communicate check and judges. */
export interface EpisodeMessage {
  role: "assistant" | "user" | "system" | "tool";
  content: string;
}

/** A model-backed check (NL assertions): 1, 0, or null when it cannot say. */
export type Judge = (
  check: "nl_assertions",
  task: RlTask,
  messages: EpisodeMessage[],
) => Promise<number | null>;

export interface RewardResult {
  /** Product of the non-null checks of the task's basis; null when none of them could be computed. */
  reward: number | null;
  /** Every check of the basis: a number, or null when it was not computed (see `skipped`). */
  breakdown: Partial<Record<CheckName, number | null>>;
  /** Checks of the basis left out of `reward`, with why. */
  skipped: Array<{ check: CheckName; reason: string }>;
  /** Hashes the db check compared (expected: after the ground truth; actual: the episode's final state). */
  db?: { expected: string; actual: string };
  /** Per expected action, whether a call matched it. */
  actions?: boolean[];
  note?: string;
}

export interface ScoreInput {
  task: RlTask;
  environment: Environment;
  finalState: unknown;
  calls: AgentCall[];
  messages?: EpisodeMessage[];
  judge?: Judge;
  /** Set when the episode ended other than by the agent or user stopping (tau2 then scores 0). */
  prematureTermination?: string;
}

/** The database hash the db check compares: tau2's own for tau2-retail, canonical JSON otherwise. */
export function dbHash(environment: Environment, state: unknown): string {
  return environment.name === "tau2-retail" ? tau2RetailDbHash(state) : hashJson(state);
}

const EXPECTED = new WeakMap<Environment, WeakMap<RlTask, string>>();

/** The hash of the database after replaying the task's ground-truth actions on its initial one (cached). */
export async function expectedDbHash(environment: Environment, task: RlTask): Promise<string> {
  let byTask = EXPECTED.get(environment);
  if (!byTask) {
    byTask = new WeakMap();
    EXPECTED.set(environment, byTask);
  }
  const known = byTask.get(task);
  if (known !== undefined) return known;
  const initial = await taskInitialState(environment, task);
  const instance = await environment.create({ state: initial, seed: `task/${task.id}/gold` });
  let hash: string;
  try {
    // As tau2: a failing gold action is skipped (tau2 logs it), the rest still run.
    for (const action of task.expected.actions ?? [])
      await instance.step({ name: action.name, arguments: action.arguments });
    hash = dbHash(environment, await instance.state());
  } finally {
    await instance.close();
  }
  byTask.set(task, hash);
  return hash;
}

/** tau2's `Action.compare_with_tool_call`. */
export function actionMatches(action: ExpectedAction, call: AgentCall): boolean {
  if (action.name !== call.name) return false;
  const callArgs = (
    typeof call.arguments === "object" && call.arguments !== null ? call.arguments : {}
  ) as Record<string, unknown>;
  const keys = action.compareArgs ?? Object.keys(callArgs);
  if (keys.length === 0) return true;
  const pick = (source: Record<string, unknown>) => {
    const picked: Record<string, unknown> = {};
    for (const key of keys)
      if (Object.hasOwn(source, key))
        Object.defineProperty(picked, key, { value: source[key], enumerable: true });
    return picked;
  };
  return canonicalJson(pick(callArgs)) === canonicalJson(pick(action.arguments));
}

/** Whether `actual` holds everything in `expected` (objects key by key; arrays and scalars exactly). */
export function stateContains(actual: unknown, expected: unknown): boolean {
  if (typeof expected === "object" && expected !== null && !Array.isArray(expected)) {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual)) return false;
    for (const key of Object.keys(expected)) {
      if (!Object.hasOwn(actual, key)) return false;
      if (
        !stateContains((actual as Record<string, unknown>)[key], (expected as Record<string, unknown>)[key])
      )
        return false;
    }
    return true;
  }
  return canonicalJson(actual) === canonicalJson(expected);
}

/** Scores an episode from its final state, its calls and (optionally) its messages, apart from the environment that ran it. */
export async function scoreTrajectory(input: ScoreInput): Promise<RewardResult> {
  const { task, environment } = input;
  if (task.noCriteria) return { reward: 1, breakdown: {}, skipped: [], note: "no evaluation criteria" };
  if (input.prematureTermination !== undefined)
    return {
      reward: 0,
      breakdown: {},
      skipped: [],
      note: `terminated prematurely: ${input.prematureTermination}`,
    };
  const result: RewardResult = { reward: null, breakdown: {}, skipped: [] };
  for (const check of task.rewardBasis) {
    let value: number | null = null;
    switch (check) {
      case "db": {
        // tau2: with neither ground-truth actions nor env assertions the check is 1 without replaying.
        if (task.expected.actions === null && task.envAssertions.length === 0) value = 1;
        else {
          const expected = await expectedDbHash(environment, task);
          const actual = dbHash(environment, input.finalState);
          result.db = { expected, actual };
          value = expected === actual ? 1 : 0;
        }
        break;
      }
      case "actions": {
        const expected = task.expected.actions ?? [];
        const matched = expected.map((action) => input.calls.some((call) => actionMatches(action, call)));
        result.actions = matched;
        value = matched.every(Boolean) ? 1 : 0;
        break;
      }
      case "state":
        value = stateContains(input.finalState, task.expected.state) ? 1 : 0;
        break;
      case "communicate": {
        if (task.communicateInfo.length === 0) value = 1;
        else if (input.messages === undefined) {
          result.skipped.push({ check, reason: "the episode has no agent messages" });
        } else {
          const said = input.messages
            .filter((message) => message.role === "assistant" && message.content)
            .map((message) => message.content.toLowerCase().replaceAll(",", ""));
          value = task.communicateInfo.every((info) => said.some((text) => text.includes(info.toLowerCase())))
            ? 1
            : 0;
        }
        break;
      }
      case "nl_assertions":
        if (task.nlAssertions.length === 0) value = 1;
        else if (!input.judge) result.skipped.push({ check, reason: "no judge model configured" });
        else {
          value = await input.judge("nl_assertions", task, input.messages ?? []);
          if (value === null) result.skipped.push({ check, reason: "the judge gave no verdict" });
        }
        break;
      case "env_assertions":
        if (task.envAssertions.length === 0) value = 1;
        else result.skipped.push({ check, reason: "env assertions are not supported" });
        break;
    }
    result.breakdown[check] = value;
  }
  const values = Object.values(result.breakdown).filter(
    (value): value is number => typeof value === "number",
  );
  result.reward = values.length === 0 ? null : values.reduce((product, value) => product * value, 1);
  return result;
}

/** What scoring a stored episode needs besides its calls and final state. */
export type StoredEpisodeScoring = Omit<ScoreInput, "finalState" | "calls"> & {
  /** Tool names that are not calls on the world (e.g. `finish`): left out of the action check. */
  ignoreTools?: string[];
};

/** Scores an engine session: its history's calls and its current state. */
export async function scoreSession(
  options: StoredEpisodeScoring & { engine: Engine; sessionId: string },
): Promise<RewardResult> {
  const { engine, sessionId, ...scoring } = options;
  const history = await engine.history(sessionId);
  return scoreStored(scoring, await engine.state(sessionId), history);
}

/** Whether a value has what scoring reads of a session export: the session, snapshots (one at least), the history. */
export function isSessionExport(value: unknown): value is SessionExport {
  const candidate = value as Partial<SessionExport> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.session === "object" &&
    candidate.session !== null &&
    Array.isArray(candidate.snapshots) &&
    candidate.snapshots.length > 0 &&
    Array.isArray(candidate.history)
  );
}

/** Scores a session export (`GET /sessions/:id/export`) without an engine: its last snapshot and its history. */
export async function scoreExport(
  options: StoredEpisodeScoring & { exported: SessionExport },
): Promise<RewardResult> {
  const { exported, ...scoring } = options;
  if (!isSessionExport(exported))
    throw new TerrariumError(
      "INVALID_INPUT",
      "a session export needs snapshots (at least one) and a history",
    );
  let last = exported.snapshots[0] as SessionExport["snapshots"][number];
  for (const snapshot of exported.snapshots) if (snapshot.index > last.index) last = snapshot;
  return scoreStored(scoring, last.state, exported.history);
}

/** The calls of a stored history (those not ignored), scored against the final state. */
function scoreStored(
  { ignoreTools, ...scoring }: StoredEpisodeScoring,
  finalState: unknown,
  history: ReadonlyArray<{ request?: { name?: unknown; arguments?: unknown } }>,
): Promise<RewardResult> {
  const ignore = new Set(ignoreTools ?? []);
  const calls = history
    .map((entry) => ({ name: entry.request?.name, arguments: entry.request?.arguments }))
    .filter((call): call is AgentCall => typeof call.name === "string" && !ignore.has(call.name));
  return scoreTrajectory({ ...scoring, finalState, calls });
}
