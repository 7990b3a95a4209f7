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
  options: { what: string; schemaVersion: number; tables: string },
): BetterSqlite3.Database {
  const Database = createRequire(import.meta.url)("better-sqlite3") as typeof BetterSqlite3;
  try {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("busy_timeout = 5000");
    db.exec(
      `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n${options.tables}`,
    );
    const version = db.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").get() as
      | { value: string }
      | undefined;
    if (!version)
      db.prepare("INSERT INTO meta (key, value) VALUES ('schemaVersion', ?)").run(
        String(options.schemaVersion),
      );
    else if (Number(version.value) !== options.schemaVersion) {
      db.close();
      throw new Error(
        `schemaVersion ${version.value} is not ${options.schemaVersion}; move the file aside to start over`,
      );
    }
    return db;
  } catch (error) {
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `cannot open the ${options.what}: ${(error as Error).message}`,
      { where: { file: path }, cause: error },
    );
  }
}
