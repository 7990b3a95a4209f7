import type { Tool } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import type { EpisodeResetOptions, EpisodeSource, EpisodeStart } from "../openenv/types.js";

/**
 * A loaded set of tasks (a tau2 task file, BFCL multi-turn entries, `gats --dataset` lines, terrarium's own
 * format): it starts the episode of one of its tasks. The episode it returns carries the task's finish
 * tool, step limit, scoring and (when its world is not the server's engine) its own engine.
 */
export interface TaskSet {
  /** Where the set came from (a file name), for messages. */
  readonly label: string;
  /** Its tasks' ids, in file order. */
  readonly taskIds: readonly string[];
  start(taskId: string, options: Omit<EpisodeResetOptions, "taskId">): Promise<EpisodeStart>;
}

/** The tool a task episode ends with: its `answer` is recorded (and judged where a check reads it). */
export const FINISH_TOOL: Tool = {
  name: "finish",
  description:
    "End the episode: call this once the task is done (or cannot be done). Optionally give a final answer.",
  inputSchema: {
    type: "object",
    properties: { answer: { type: "string", description: "The final answer or summary, if any." } },
    additionalProperties: false,
  },
  effect: "read",
  effectSource: "declared",
  origin: { format: "function" },
};

/**
 * Episodes from task sets. `reset(task_id=…)` starts that task; a reset without one picks a task: by the
 * seed when one is given (the same seed, the same task), otherwise the next in order, round robin.
 */
export function taskSetSource(sets: readonly TaskSet[], defaultTools: () => Tool[]): EpisodeSource {
  const owners = new Map<string, TaskSet>();
  const order: string[] = [];
  for (const set of sets)
    for (const id of set.taskIds) {
      const before = owners.get(id);
      if (before)
        throw new TerrariumError(
          "CONFIG_INVALID",
          `task id "${id}" is in both ${before.label} and ${set.label}: task ids must be unique across --tasks files`,
        );
      owners.set(id, set);
      order.push(id);
    }
  if (order.length === 0) throw new TerrariumError("CONFIG_INVALID", "the task files hold no tasks");
  let next = 0;
  return {
    defaultTools,
    taskIds: order,
    async reset(options) {
      let taskId = options.taskId;
      if (taskId === undefined) {
        const index =
          options.seed !== undefined
            ? Math.abs(Math.trunc(options.seed)) % order.length
            : next++ % order.length;
        taskId = order[index] as string;
      }
      const set = owners.get(taskId);
      if (!set)
        throw new TerrariumError(
          "INVALID_INPUT",
          `unknown task_id "${taskId.slice(0, 80)}" (${order.length} tasks are loaded, e.g. "${order[0]}")`,
        );
      const { taskId: _omit, ...rest } = options;
      const start = await set.start(taskId, rest);
      return { ...start, metadata: { task_id: taskId, ...(start.metadata ?? {}) } };
    },
  };
}
