import type { Tool } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import type { Engine } from "../../sim/engine.js";
import type { EpisodeResetOptions, EpisodeSource, EpisodeStart } from "./types.js";

/**
 * Episodes on a plain world: every reset starts a fresh engine session on the server's default initial
 * state, with every tool of the catalog. A seed makes the session's simulators repeat; there are no tasks
 * and no rewards.
 */
export function plainWorldSource(engine: Engine): EpisodeSource {
  return {
    defaultTools: (): Tool[] => engine.catalog.tools,
    async reset(options: EpisodeResetOptions): Promise<EpisodeStart> {
      if (options.taskId !== undefined)
        throw new TerrariumError(
          "INVALID_INPUT",
          `no tasks are loaded, so task_id "${options.taskId.slice(0, 80)}" names nothing (serve --tasks <file> loads some)`,
        );
      const record = await engine.createSession({
        ...(options.owner ? { owner: options.owner } : {}),
        ...(options.seed !== undefined ? { seed: `openenv/${options.seed}` } : {}),
        metadata: { openenv: { episode_id: options.episodeId } },
      });
      return { sessionId: record.id, tools: engine.catalog.tools };
    },
  };
}
