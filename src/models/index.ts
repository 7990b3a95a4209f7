export { AiSdkBackend, toPrompt } from "./backends/ai-sdk.js";
export { MockBackend, type MockScript } from "./backends/mock.js";
export {
  CACHE_SCHEMA_VERSION,
  type CacheMode,
  MemoryResponseCache,
  type ResponseCache,
  SqliteResponseCache,
} from "./cache.js";
export {
  CONFIG_FILE_NAME,
  ConfigSchema,
  type LoadedConfig,
  loadConfig,
  type ModelPrice,
  type ProviderSettings,
  parseConfig,
  type TerrariumConfig,
  withCommandLineModel,
} from "./config.js";
export {
  type CallAnswer,
  type CallOptions,
  type CallResult,
  DEFAULT_CACHE_PATH,
  Models,
  type ModelsOptions,
  type ObjectCallOptions,
  type ObjectResult,
  type ToolCallResult,
  type Verdict,
} from "./hub.js";
export { ProviderGate } from "./limits.js";
export { BUILTIN_PRICES, PriceTable } from "./prices.js";
export {
  BUILTIN_PROVIDERS,
  createBackend,
  type ModelName,
  parseModelName,
  providerSettings,
  providerType,
} from "./registry.js";
export { backoffDelay, DEFAULT_RETRY, isRetryable, type RetryPolicy, retryAfterMs } from "./retry.js";
export { extractJson, JsonAnswerChecker } from "./structured.js";
export { emulatedToolSchema, toProviderNames } from "./tool-calls.js";
export type {
  BackendCapabilities,
  BackendRequest,
  BackendResponse,
  Message,
  ModelBackend,
  ModelToolCall,
  StructuredMode,
  TokenUsage,
  ToolSpec,
} from "./types.js";
export { UsageLedger, type UsageRecord, type UsageTotals } from "./usage.js";
