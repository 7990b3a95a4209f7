import type BetterSqlite3 from "better-sqlite3";
import { TerrariumError } from "../core/errors.js";
import { openSqlite } from "../core/sqlite.js";
import {
  type HistoryEntry,
  SESSION_SCHEMA_VERSION,
  type SessionRecord,
  type Snapshot,
  type Store,
} from "./types.js";

/**
 * Sessions in a SQLite file (WAL). Each step is one transaction: its history entry and its snapshot are
 * written together, so a crash never leaves a call without its state or a state without its call.
 */
export class SqliteStore implements Store {
  private readonly db: BetterSqlite3.Database;
  private readonly statements: ReturnType<SqliteStore["prepare"]>;

  constructor(readonly path: string) {
    this.db = openSqlite(path, {
      what: "session store",
      schemaVersion: SESSION_SCHEMA_VERSION,
      tables: `
        CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, owner TEXT, record TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS snapshots (
          session TEXT NOT NULL, idx INTEGER NOT NULL, at TEXT NOT NULL, reason TEXT NOT NULL, state TEXT NOT NULL,
          PRIMARY KEY (session, idx)
        );
        CREATE TABLE IF NOT EXISTS history (session TEXT NOT NULL, idx INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (session, idx));`,
    });
    this.statements = this.prepare();
  }

  private prepare() {
    const db = this.db;
    return {
      insertSession: db.prepare("INSERT INTO sessions (id, owner, record) VALUES (?, ?, ?)"),
      getSession: db.prepare<[string], { record: string }>("SELECT record FROM sessions WHERE id = ?"),
      allSessions: db.prepare<[], { record: string }>("SELECT record FROM sessions ORDER BY rowid"),
      ownerSessions: db.prepare<[string], { record: string }>(
        "SELECT record FROM sessions WHERE owner = ? ORDER BY rowid",
      ),
      deleteSession: db.prepare("DELETE FROM sessions WHERE id = ?"),
      deleteSnapshots: db.prepare("DELETE FROM snapshots WHERE session = ?"),
      deleteHistory: db.prepare("DELETE FROM history WHERE session = ?"),
      insertSnapshot: db.prepare(
        "INSERT INTO snapshots (session, idx, at, reason, state) VALUES (?, ?, ?, ?, ?)",
      ),
      latestSnapshot: db.prepare<[string], SnapshotRow>(
        "SELECT idx, at, reason, state FROM snapshots WHERE session = ? ORDER BY idx DESC LIMIT 1",
      ),
      oneSnapshot: db.prepare<[string, number], SnapshotRow>(
        "SELECT idx, at, reason, state FROM snapshots WHERE session = ? AND idx = ?",
      ),
      allSnapshots: db.prepare<[string], SnapshotRow>(
        "SELECT idx, at, reason, state FROM snapshots WHERE session = ? ORDER BY idx",
      ),
      snapshotCount: db.prepare<[string], { n: number }>(
        "SELECT COUNT(*) AS n FROM snapshots WHERE session = ?",
      ),
      insertHistory: db.prepare("INSERT INTO history (session, idx, entry) VALUES (?, ?, ?)"),
      historyCount: db.prepare<[string], { n: number }>(
        "SELECT COUNT(*) AS n FROM history WHERE session = ?",
      ),
      allHistory: db.prepare<[string], { entry: string }>(
        "SELECT entry FROM history WHERE session = ? ORDER BY idx",
      ),
      lastHistory: db.prepare<[string, number], { entry: string }>(
        "SELECT entry FROM (SELECT idx, entry FROM history WHERE session = ? ORDER BY idx DESC LIMIT ?) ORDER BY idx",
      ),
    };
  }

  async createSession(record: SessionRecord, initialState: unknown): Promise<void> {
    this.db.transaction(() => {
      this.statements.insertSession.run(record.id, record.owner ?? null, JSON.stringify(record));
      this.statements.insertSnapshot.run(
        record.id,
        0,
        record.createdAt,
        record.parent ? "fork" : "initial",
        JSON.stringify(initialState ?? null),
      );
    })();
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const row = this.statements.getSession.get(id);
    return row ? (JSON.parse(row.record) as SessionRecord) : undefined;
  }

  async listSessions(owner?: string): Promise<SessionRecord[]> {
    const rows =
      owner === undefined ? this.statements.allSessions.all() : this.statements.ownerSessions.all(owner);
    return rows.map((row) => JSON.parse(row.record) as SessionRecord);
  }

  async deleteSession(id: string): Promise<boolean> {
    return this.db.transaction(() => {
      this.statements.deleteSnapshots.run(id);
      this.statements.deleteHistory.run(id);
      return this.statements.deleteSession.run(id).changes > 0;
    })();
  }

  async latestSnapshot(id: string): Promise<Snapshot> {
    const row = this.statements.latestSnapshot.get(id);
    if (!row) throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
    return toSnapshot(row);
  }

  async snapshot(id: string, index: number): Promise<Snapshot | undefined> {
    const row = this.statements.oneSnapshot.get(id, index);
    return row ? toSnapshot(row) : undefined;
  }

  async snapshots(id: string): Promise<Snapshot[]> {
    this.requireSession(id);
    return this.statements.allSnapshots.all(id).map(toSnapshot);
  }

  async history(id: string, last?: number): Promise<HistoryEntry[]> {
    this.requireSession(id);
    const rows =
      last === undefined ? this.statements.allHistory.all(id) : this.statements.lastHistory.all(id, last);
    return rows.map((row) => JSON.parse(row.entry) as HistoryEntry);
  }

  async appendStep(
    id: string,
    entry: Omit<HistoryEntry, "index" | "snapshot">,
    state?: { state: unknown; reason: Snapshot["reason"] },
  ): Promise<HistoryEntry> {
    return this.db.transaction(() => {
      this.requireSession(id);
      const full: HistoryEntry = {
        ...entry,
        index: (this.statements.historyCount.get(id) as { n: number }).n,
      };
      if (state) {
        const index = (this.statements.snapshotCount.get(id) as { n: number }).n;
        this.statements.insertSnapshot.run(
          id,
          index,
          entry.at,
          state.reason,
          JSON.stringify(state.state ?? null),
        );
        full.snapshot = index;
      }
      this.statements.insertHistory.run(id, full.index, JSON.stringify(full));
      return full;
    })();
  }

  async appendSnapshot(
    id: string,
    state: unknown,
    reason: Snapshot["reason"],
    at: string,
  ): Promise<Snapshot> {
    return this.db.transaction(() => {
      this.requireSession(id);
      const index = (this.statements.snapshotCount.get(id) as { n: number }).n;
      this.statements.insertSnapshot.run(id, index, at, reason, JSON.stringify(state ?? null));
      return { index, at, reason, state: structuredClone(state) };
    })();
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private requireSession(id: string): void {
    if (!this.statements.getSession.get(id))
      throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
  }
}

interface SnapshotRow {
  idx: number;
  at: string;
  reason: Snapshot["reason"];
  state: string;
}

function toSnapshot(row: SnapshotRow): Snapshot {
  return { index: row.idx, at: row.at, reason: row.reason, state: JSON.parse(row.state) };
}
