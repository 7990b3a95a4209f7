/**
 * `users run` as a library: conversations between simulated users and the agent under test, one
 * transcript per run, judges, consolidation into unique failures, and `summary.json` with every metric.
 */

export { USERS_RUN_JOB, type UsersJobContext, type UsersJobItem, type UsersJobResult } from "./job.js";
export { modelJudges } from "./model-judges.js";
export { usersRunJob } from "./queued.js";
export {
  checkMode,
  DEFAULT_AGENT_TIMEOUT_MS,
  type FlaggedTurn,
  flaggedTurns,
  openUsersAgent,
  playRunLines,
  type RunPlayer,
  runUsers,
  type UsersAgent,
  type UsersJudges,
  type UsersRunOptions,
  type UsersRunResult,
  withDeadline,
} from "./run-users.js";
export {
  type ErrorKind,
  type ErrorKindCount,
  errorKindsOf,
  errorsOfRun,
  summarizeRuns,
  type UniqueFailureRecord,
  type UsersMetrics,
  type UsersMode,
  type UsersRunSettings,
  type UsersSummary,
} from "./summary.js";
export {
  type RunHeader,
  type RunJudgement,
  readTranscript,
  readTranscripts,
  runIdOf,
  type StoredRun,
  type TranscriptLine,
  TranscriptWriter,
  transcriptPath,
  USERS_RUN_SCHEMA_VERSION,
} from "./transcript.js";
export { type UsersRunVerdict, usersRunVerdict } from "./verdict.js";
