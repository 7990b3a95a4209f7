import { TerrariumError } from "../../core/errors.js";
import { loadEnvironment } from "../../envs/load.js";
import type { Environment } from "../../envs/types.js";
import type { Engine } from "../../sim/engine.js";
import type { EpisodeEnd, EpisodeScore } from "../openenv/types.js";
import { type EpisodeMessage, type Judge, type RewardResult, scoreSession } from "../rewards/index.js";
import { engineForEnvironment, type RlTask, taskInitialState } from "./index.js";
import { FINISH_TOOL, type TaskSet } from "./task-set.js";

export interface Tau2TaskSetOptions {
  /** Where the tasks came from, for messages. */
  label: string;
  tasks: readonly RlTask[];
  /** The served engine and its environment: tasks that name no environment (tau2's) run on it. */
  engine: Engine;
  environment?: Environment;
  /** Scores the checks that need a model (NL assertions); without it they are null and left out. */
  judge?: Judge;
  /** Steps after which an episode ends (tau2 then scores 0, as a premature termination). */
  maxSteps?: number;
  /**
   * A simulated user gets the instruction and talks to the agent (tau2's setting): the reset observation
   * then leaves the instruction out, since it is the user's to tell.
   */
  conversational?: boolean;
}

/**
 * tau2-bench tasks (as published) and terrarium-format tasks as episodes: the task's initial world in an
 * engine session, its instruction in the reset observation, a `finish` tool, and the reward computed from
 * the stored session when the episode ends (the same function `terrarium rl score` uses).
 */
export async function tau2TaskSet(options: Tau2TaskSetOptions): Promise<TaskSet> {
  const byId = new Map(options.tasks.map((task) => [task.id, task]));
  // A terrarium task may name another environment than the served one: it gets an engine of its own.
  const worlds = new Map<string, Promise<{ engine: Engine; environment: Environment }>>();
  const worldFor = (task: RlTask): Promise<{ engine: Engine; environment: Environment }> => {
    const served = options.environment;
    const name = task.environment;
    if (name === undefined || (served && name === served.name)) {
      if (!served)
        return Promise.reject(
          new TerrariumError(
            "CONFIG_INVALID",
            `task ${task.id} (${options.label}) names no environment: serve the environment its tasks run on (e.g. terrarium serve tau2-retail --tasks ${options.label})`,
          ),
        );
      return Promise.resolve({ engine: options.engine, environment: served });
    }
    let world = worlds.get(name);
    if (!world) {
      world = (async () => {
        const environment = await loadEnvironment(name);
        return { engine: await engineForEnvironment(environment), environment };
      })();
      worlds.set(name, world);
    }
    return world;
  };
  // Refuse now (before serving) what cannot start: a missing environment, a failing initialization.
  for (const task of options.tasks) {
    const { environment } = await worldFor(task);
    await taskInitialState(environment, task);
  }
  return {
    label: options.label,
    taskIds: options.tasks.map((task) => task.id),
    async start(taskId, reset) {
      const task = byId.get(taskId) as RlTask;
      const { engine, environment } = await worldFor(task);
      const record = await engine.createSession({
        state: await taskInitialState(environment, task),
        ...(reset.owner ? { owner: reset.owner } : {}),
        ...(reset.seed !== undefined ? { seed: `openenv/${reset.seed}` } : {}),
        metadata: { task: task.id, openenv: { episode_id: reset.episodeId } },
      });
      const sessionId = record.id;
      return {
        sessionId,
        tools: engine.catalog.tools,
        finishTool: FINISH_TOOL,
        ...(options.conversational ? {} : { observation: { instruction: task.instruction } }),
        ...(engine !== options.engine ? { engine } : {}),
        ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
        userInstructions: task.instruction,
        score: async (ended: EpisodeEnd): Promise<EpisodeScore> =>
          episodeScore(
            await scoreSession({
              engine,
              sessionId,
              task,
              environment,
              ignoreTools: [FINISH_TOOL.name],
              ...(options.judge ? { judge: options.judge } : {}),
              ...messagesOf(ended),
              ...(ended.reason === "max_steps" ? { prematureTermination: "max_steps" } : {}),
            }),
          ),
      };
    },
  };
}

/** The conversation, or the finish tool's answer as the agent's one message, or none. */
function messagesOf(ended: EpisodeEnd): { messages?: EpisodeMessage[] } {
  if (ended.messages) return { messages: ended.messages };
  const answer = (ended.finishArguments as { answer?: unknown } | undefined)?.answer;
  return typeof answer === "string" && answer !== ""
    ? { messages: [{ role: "assistant", content: answer }] }
    : {};
}

/** A reward result as the final observation's metadata carries it. */
export function episodeScore(result: RewardResult): EpisodeScore {
  return {
    reward: result.reward,
    breakdown: result.breakdown,
    metadata: {
      ...(result.skipped.length > 0 ? { skipped_checks: result.skipped } : {}),
      ...(result.note !== undefined ? { reward_note: result.note } : {}),
      ...(result.actions ? { actions_matched: result.actions } : {}),
    },
  };
}
