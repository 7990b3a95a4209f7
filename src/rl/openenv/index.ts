export { plainWorldSource } from "./plain.js";
export {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_EPISODES,
  DEFAULT_MAX_MESSAGE_BYTES,
  errorMessage,
  OpenEnvError,
  type OpenEnvMessageOut,
  type OpenEnvOptions,
  OpenEnvServer,
  OpenEnvSession,
  type StepResult,
} from "./server.js";
export type {
  EpisodeResetOptions,
  EpisodeScore,
  EpisodeSource,
  EpisodeStart,
  OpenEnvErrorCode,
} from "./types.js";
export { attachOpenEnvWebSocket, type OpenEnvWebSocketOptions } from "./ws.js";
