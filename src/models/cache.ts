import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { TerrariumError } from "../core/errors.js";
import type { BackendResponse } from "./types.js";

/** Stored model responses, keyed by a hash of everything that determines the answer (never secrets). */
export interface ResponseCache {
  get(key: string): BackendResponse | undefined;
  set(key: string, model: string, response: BackendResponse): void;
  close?(): void;
}

/** How the cache is used: read and write; ignore it; write but never read (refresh); or not at all. */
export type CacheMode = "use" | "bypass" | "refresh" | "off";

export const CACHE_SCHEMA_VERSION = 1;

export class MemoryResponseCache implements ResponseCache {
  private readonly entries = new Map<string, string>();

  get(key: string): BackendResponse | undefined {
    const text = this.entries.get(key);
    return text === undefined ? undefined : (JSON.parse(text) as BackendResponse);
  }

  set(key: string, _model: string, response: BackendResponse): void {
    this.entries.set(key, JSON.stringify(response));
  }

  get size(): number {
    return this.entries.size;
  }
}

/** A response cache in a SQLite file (WAL, so several processes can share it). */
export class SqliteResponseCache implements ResponseCache {
  private readonly db: BetterSqlite3.Database;
  private readonly select: BetterSqlite3.Statement<[string], { response: string }>;
  private readonly upsert: BetterSqlite3.Statement<[string, string, number, string]>;

  constructor(readonly path: string) {
    // Loaded on first use: the native module is only needed by runs that cache.
    const Database = createRequire(import.meta.url)("better-sqlite3") as typeof BetterSqlite3;
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
      this.db = new Database(path);
      this.db.pragma("journal_mode = WAL");
      this.db.pragma("busy_timeout = 5000");
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS responses (
          key TEXT PRIMARY KEY,
          model TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          response TEXT NOT NULL
        );
      `);
      const version = this.db.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").get() as
        | { value: string }
        | undefined;
      if (!version) {
        this.db
          .prepare("INSERT INTO meta (key, value) VALUES ('schemaVersion', ?)")
          .run(String(CACHE_SCHEMA_VERSION));
      } else if (Number(version.value) !== CACHE_SCHEMA_VERSION) {
        throw new Error(
          `cache schemaVersion ${version.value} is not ${CACHE_SCHEMA_VERSION}; delete the file to start over`,
        );
      }
    } catch (error) {
      throw new TerrariumError(
        "FILE_UNREADABLE",
        `cannot open the model cache: ${(error as Error).message}`,
        {
          where: { file: path },
          cause: error,
        },
      );
    }
    this.select = this.db.prepare("SELECT response FROM responses WHERE key = ?");
    this.upsert = this.db.prepare(
      "INSERT INTO responses (key, model, created_at, response) VALUES (?, ?, ?, ?) " +
        "ON CONFLICT(key) DO UPDATE SET model = excluded.model, created_at = excluded.created_at, response = excluded.response",
    );
  }

  get(key: string): BackendResponse | undefined {
    const row = this.select.get(key);
    return row ? (JSON.parse(row.response) as BackendResponse) : undefined;
  }

  set(key: string, model: string, response: BackendResponse): void {
    this.upsert.run(key, model, Date.now(), JSON.stringify(response));
  }

  get size(): number {
    return (this.db.prepare("SELECT COUNT(*) AS n FROM responses").get() as { n: number }).n;
  }

  close(): void {
    this.db.close();
  }
}
