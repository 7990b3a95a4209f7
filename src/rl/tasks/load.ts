import type { Environment } from "../../envs/types.js";
import type { Engine } from "../../sim/engine.js";
import type { Judge } from "../rewards/index.js";
import { loadTasks } from "./index.js";
import type { TaskSet } from "./task-set.js";
import { tau2TaskSet } from "./tau2-set.js";

/** What every task format may need to start and score its episodes. */
export interface TaskSetContext {
  /** The served engine and environment (tau2 and terrarium-format tasks without an environment run there). */
  engine: Engine;
  environment?: Environment;
  judge?: Judge;
  maxSteps?: number;
  /** A simulated user talks to the agent: the agent is not shown the user's instructions. */
  conversational?: boolean;
  /** BFCL's Python backend sources (BFCL multi-turn files). */
  backends?: string;
}

/**
 * Reads `serve --tasks` files, each into a task set: tau2-bench task files as published and terrarium's own
 * format. Every file is read and checked before anything is served.
 */
export async function loadTaskSets(files: readonly string[], context: TaskSetContext): Promise<TaskSet[]> {
  const sets: TaskSet[] = [];
  for (const file of files) {
    sets.push(
      await tau2TaskSet({
        label: file,
        tasks: loadTasks(file),
        engine: context.engine,
        ...(context.environment ? { environment: context.environment } : {}),
        ...(context.judge ? { judge: context.judge } : {}),
        ...(context.maxSteps !== undefined ? { maxSteps: context.maxSteps } : {}),
        ...(context.conversational ? { conversational: true } : {}),
      }),
    );
  }
  return sets;
}
