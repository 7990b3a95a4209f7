import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { TerrariumError } from "./errors.js";

/**
 * Opens (creating when needed) a SQLite file for one of terrarium's stores: WAL so several readers and a
 * writer can share it, a busy timeout, the given tables, and a `meta.schemaVersion` row that must match.
 * better-sqlite3 is loaded on first use: only runs that store something need the native module.
 */
export function openSqlite(
  path: string,
  options: {
    what: string;
    schemaVersion: number;
    tables: string;
    /** Upgrades from an older version, by the version they start from; each runs in one transaction. */
    migrations?: Record<number, (db: BetterSqlite3.Database) => void>;
  },
): BetterSqlite3.Database {
  const Database = createRequire(import.meta.url)("better-sqlite3") as typeof BetterSqlite3;
  try {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("busy_timeout = 5000");
    db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    const setVersion = db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schemaVersion', ?)");
    const row = db.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").get() as
      | { value: string }
      | undefined;
    let version = row ? Number(row.value) : options.schemaVersion;
    while (version < options.schemaVersion && options.migrations?.[version]) {
      const migrate = options.migrations[version] as (db: BetterSqlite3.Database) => void;
      const from = version;
      db.transaction(() => {
        migrate(db);
        setVersion.run(String(from + 1));
      })();
      version = from + 1;
    }
    if (version !== options.schemaVersion) {
      db.close();
      throw new Error(
        `schemaVersion ${version} is not ${options.schemaVersion}; move the file aside to start over`,
      );
    }
    db.exec(options.tables);
    if (!row) setVersion.run(String(options.schemaVersion));
    return db;
  } catch (error) {
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `cannot open the ${options.what}: ${(error as Error).message}`,
      { where: { file: path }, cause: error },
    );
  }
}
