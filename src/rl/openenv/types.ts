import type { Tool } from "../../catalog/tool.js";
import type { Engine } from "../../sim/engine.js";

/** OpenEnv's error codes (`WSErrorCode` in OpenEnv's types.py), as `{"type":"error","data":{message,code}}` carries them. */
export type OpenEnvErrorCode =
  | "INVALID_JSON"
  | "UNKNOWN_TYPE"
  | "VALIDATION_ERROR"
  | "EXECUTION_ERROR"
  | "CAPACITY_REACHED";

/** What `reset` asks an episode source for (OpenEnv's ResetRequest: seed, episode_id, and terrarium's task_id). */
export interface EpisodeResetOptions {
  seed?: number;
  episodeId: string;
  taskId?: string;
  /** Hash of the caller's bearer token: the engine session is created under it (undefined on an open server). */
  owner?: string;
}

/** One started episode: the engine session it runs in and what the agent is told. */
export interface EpisodeStart {
  sessionId: string;
  /** The tools the agent may call (the catalog's, or a task's subset). */
  tools: Tool[];
  /** Fields added to the reset observation (a task's instruction, for example). */
  observation?: Record<string, unknown>;
  /** Fields added to the reset observation's metadata. */
  metadata?: Record<string, unknown>;
  /** The episode ends (`done: true`) after this many steps. */
  maxSteps?: number;
  /** A tool, not in the catalog, whose call ends the episode (`done: true`); its arguments are recorded. */
  finishTool?: Tool;
  /** The engine the episode's calls run on (default: the server's). A task set with worlds of its own sets it. */
  engine?: Engine;
  /**
   * Called when the finish tool is called, before the episode ends: a multi-turn task answers `done: false`
   * with the next turn's fields (added to the call's result) to go on, and the tools the next turn adds
   * (BFCL miss_func's withheld functions), callable from then on.
   */
  onFinish?(
    finishArguments: unknown,
  ): Promise<{ done: boolean; result?: Record<string, unknown>; tools?: Tool[] }>;
  /** The episode's reward when it ends (over `EpisodeSource.score`). */
  score?(ended: EpisodeEnd): Promise<EpisodeScore>;
  /** What a simulated user is told to do (tau2's user scenario as text), for conversational episodes. */
  userInstructions?: string;
  /** Frees what the episode holds beyond its engine session (a Python process, say) once it is over. */
  release?(): Promise<void>;
}

/** Why an episode ended. */
export interface EpisodeEnd {
  reason: "finish" | "max_steps" | "user_stop";
  finishArguments?: unknown;
  /** The conversation, in conversational episodes (agent `message` actions and the simulated user's replies). */
  messages?: Array<{ role: "assistant" | "user"; content: string }>;
}

/** A reward and its parts (`null` parts could not be checked and are left out of the reward). */
export interface EpisodeScore {
  reward: number | null;
  breakdown: Record<string, number | null>;
  metadata?: Record<string, unknown>;
}

/**
 * Where episodes come from: a plain world (the server's default initial state) or a task set. The protocol
 * layer asks it to start episodes and, when an episode ends, to score it.
 */
export interface EpisodeSource {
  reset(options: EpisodeResetOptions): Promise<EpisodeStart>;
  /** The episode's reward, computed from its stored session when it ends (plain worlds have none). */
  score?(sessionId: string, ended: EpisodeEnd): Promise<EpisodeScore>;
  /** Tools answered to `list_tools` before any reset. */
  defaultTools(): Tool[];
  /** The ids of the tasks `reset(task_id=…)` can start (none: a plain world). */
  readonly taskIds?: readonly string[];
}
