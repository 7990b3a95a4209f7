import type { Scenario } from "../scenario/index.js";
import type { UsersRunSettings } from "./summary.js";
import type { TranscriptLine } from "./transcript.js";

/** The job kind of one simulated-user run on a queue. */
export const USERS_RUN_JOB = "users.run";

/** What every worker of a queued `users run` gets once: enough to rebuild the agent, tools and judges. */
export interface UsersJobContext {
  settings: UsersRunSettings;
  scenarios: Scenario[];
  /** The `--agent` spec and its options, rebuilt in each worker (API targets only). */
  agent: { spec: string; agentTools?: string[]; httpConfig?: string };
  /** Role overrides (`--user-model`, `--judge-model`) on top of the worker's own config. */
  roles: Record<string, string>;
  userTemperature?: number;
  /** `--agent-timeout`, in ms: each worker's wait for the agent. */
  agentTimeoutMs?: number;
}

export interface UsersJobItem {
  scenarioId: string;
  index: number;
}

/** A run's transcript lines, as the worker produced them; the submitter writes the file. */
export interface UsersJobResult {
  lines: TranscriptLine[];
}
