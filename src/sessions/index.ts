export { MemoryStore } from "./memory-store.js";
export { SqliteStore } from "./sqlite-store.js";
export {
  type HistoryEntry,
  SESSION_SCHEMA_VERSION,
  type SessionContents,
  type SessionRecord,
  type Snapshot,
  type Store,
} from "./types.js";
