import type BetterSqlite3 from "better-sqlite3";
import { openSqlite } from "../core/sqlite.js";
import type { BackendResponse } from "./types.js";

/**
 * Stored model responses, keyed by a hash of everything that determines the answer (never secrets). Only
 * answers their caller accepted are stored (`Models` decides); `delete` drops one that a caller now
 * refuses (stored by an older terrarium, or before a check existed), so the next request asks the model.
 */
export interface ResponseCache {
  get(key: string): BackendResponse | undefined;
  set(key: string, model: string, response: BackendResponse): void;
  delete(key: string): void;
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

  delete(key: string): void {
    this.entries.delete(key);
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
  private readonly remove: BetterSqlite3.Statement<[string]>;

  constructor(readonly path: string) {
    this.db = openSqlite(path, {
      what: "model cache",
      schemaVersion: CACHE_SCHEMA_VERSION,
      tables:
        "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, created_at INTEGER NOT NULL, response TEXT NOT NULL);",
    });
    this.select = this.db.prepare("SELECT response FROM responses WHERE key = ?");
    this.upsert = this.db.prepare(
      "INSERT INTO responses (key, model, created_at, response) VALUES (?, ?, ?, ?) " +
        "ON CONFLICT(key) DO UPDATE SET model = excluded.model, created_at = excluded.created_at, response = excluded.response",
    );
    this.remove = this.db.prepare("DELETE FROM responses WHERE key = ?");
  }

  get(key: string): BackendResponse | undefined {
    const row = this.select.get(key);
    return row ? (JSON.parse(row.response) as BackendResponse) : undefined;
  }

  set(key: string, model: string, response: BackendResponse): void {
    this.upsert.run(key, model, Date.now(), JSON.stringify(response));
  }

  delete(key: string): void {
    this.remove.run(key);
  }

  get size(): number {
    return (this.db.prepare("SELECT COUNT(*) AS n FROM responses").get() as { n: number }).n;
  }

  close(): void {
    this.db.close();
  }
}
