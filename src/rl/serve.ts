import { TerrariumError } from "../core/errors.js";
import type { Environment } from "../envs/types.js";
import type { Models } from "../models/hub.js";
import type { Engine } from "../sim/engine.js";
import { plainWorldSource } from "./openenv/plain.js";
import type { EpisodeSource } from "./openenv/types.js";
import { createEpisodeUser, type EpisodeUserFactory } from "./openenv/user.js";
import { createRewardJudge } from "./rewards/judge.js";
import { loadTaskSets } from "./tasks/load.js";
import { taskSetSource } from "./tasks/task-set.js";

/** What `serve` is told about its RL episodes (`--tasks`, `--user-model`, `--judge-model`, …). */
export interface RlServeOptions {
  /** Task files: episodes start tasks and end with a reward. */
  tasks?: string[];
  /** A simulated user on the other side of task episodes (`{"type":"message"}` actions). */
  userModel?: string;
  userTemperature?: number;
  /** Scores the checks that need a model (NL assertions). */
  judgeModel?: string;
  maxSteps?: number;
  /** BFCL's Python backend sources, for BFCL multi-turn task files. */
  backends?: string;
}

/**
 * The episodes `serve` offers at /openenv: a plain world, or the task files with their judge and simulated
 * user. Every file and model name is checked here, before the server listens.
 */
export async function openEnvEpisodes(
  served: { engine: Engine; environment?: Environment },
  options: RlServeOptions,
  models: () => Models,
  log: (line: string) => void = () => undefined,
): Promise<{ source: EpisodeSource; user?: EpisodeUserFactory }> {
  const tasks = options.tasks ?? [];
  if (tasks.length === 0) {
    for (const [flag, given] of [
      ["--user-model", options.userModel],
      ["--judge-model", options.judgeModel],
    ] as const)
      if (given !== undefined)
        throw new TerrariumError(
          "INVALID_INPUT",
          `${flag} scores or talks in task episodes: give --tasks too`,
        );
    return { source: plainWorldSource(served.engine) };
  }
  let judge: ReturnType<typeof createRewardJudge> | undefined;
  if (options.judgeModel !== undefined) {
    const hub = models();
    await hub.backend(options.judgeModel); // a bad name fails now, with what to set
    judge = createRewardJudge(hub, options.judgeModel, {
      onError: (error) =>
        log(
          `terrarium: the judge model failed (the check is null): ${error instanceof Error ? error.message : String(error)}`,
        ),
    });
  }
  let user: EpisodeUserFactory | undefined;
  if (options.userModel !== undefined) {
    const hub = models();
    await hub.backend(options.userModel);
    user = createEpisodeUser(hub, options.userModel, {
      ...(options.userTemperature !== undefined ? { temperature: options.userTemperature } : {}),
    });
  }
  const sets = await loadTaskSets(tasks, {
    engine: served.engine,
    ...(served.environment ? { environment: served.environment } : {}),
    ...(judge ? { judge } : {}),
    ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
    ...(options.backends !== undefined ? { backends: options.backends } : {}),
    conversational: user !== undefined,
    models,
  });
  return { source: taskSetSource(sets, () => served.engine.catalog.tools), ...(user ? { user } : {}) };
}
