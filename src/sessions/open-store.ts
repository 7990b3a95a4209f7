import { TerrariumError } from "../core/errors.js";
import { MemoryStore } from "./memory-store.js";
import {
  describePostgresUrl,
  isPostgresUrl,
  PostgresStore,
  type PostgresStoreOptions,
} from "./postgres-store.js";
import { SqliteStore } from "./sqlite-store.js";
import type { Store } from "./types.js";

/**
 * The store `--db` names: a `postgres://` or `postgresql://` URL opens a `PostgresStore` (connected and
 * migrated before this returns, so a server never starts on a database it cannot reach), anything else
 * is a SQLite file; nothing means memory. A URL of another scheme is refused rather than taken for a path.
 */
export async function openStore(db?: string, options: PostgresStoreOptions = {}): Promise<Store> {
  if (db === undefined || db === "") return new MemoryStore();
  if (isPostgresUrl(db)) {
    describePostgresUrl(db); // a malformed URL is refused before anything connects
    return PostgresStore.open(db, options);
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(db)?.[1];
  if (scheme)
    throw new TerrariumError(
      "INVALID_INPUT",
      `--db takes a SQLite file or a postgres:// URL, not a ${scheme}:// URL`,
    );
  return new SqliteStore(db);
}
