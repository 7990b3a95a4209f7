export { MemoryStore } from "./memory-store.js";
export { openStore } from "./open-store.js";
export {
  createScratchDatabase,
  describePostgresUrl,
  isPostgresUrl,
  POSTGRES_STORE_SCHEMA_VERSION,
  PostgresStore,
  type PostgresStoreOptions,
} from "./postgres-store.js";
export { SqliteStore } from "./sqlite-store.js";
export { checkStepBase } from "./step-base.js";
export {
  type HistoryEntry,
  SESSION_SCHEMA_VERSION,
  type SessionContents,
  type SessionRecord,
  type Snapshot,
  type StepBase,
  type StepState,
  type Store,
} from "./types.js";
