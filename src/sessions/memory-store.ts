import { TerrariumError } from "../core/errors.js";
import { toImmutableJson } from "../core/immutable-json.js";
import type { HistoryEntry, SessionContents, SessionRecord, Snapshot, Store } from "./types.js";

interface Stored {
  record: SessionRecord;
  snapshots: Snapshot[];
  history: HistoryEntry[];
}

/**
 * Sessions in memory: for tests, libraries and short-lived servers. Records and history entries are
 * copied in and out; states are immutable trees kept as they are, so snapshots of one session (and
 * sessions started from the same state) share every part they have in common.
 */
export class MemoryStore implements Store {
  private readonly sessions = new Map<string, Stored>();

  async createSession(record: SessionRecord, initialState: unknown): Promise<void> {
    if (this.sessions.has(record.id))
      throw new TerrariumError("INVALID_INPUT", `session ${record.id} already exists`);
    const snapshot: Snapshot = {
      index: 0,
      at: record.createdAt,
      reason: record.parent ? "fork" : "initial",
      state: toImmutableJson(initialState ?? null),
    };
    this.sessions.set(record.id, { record: structuredClone(record), snapshots: [snapshot], history: [] });
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const stored = this.sessions.get(id);
    return stored ? structuredClone(stored.record) : undefined;
  }

  async listSessions(owner?: string): Promise<SessionRecord[]> {
    return [...this.sessions.values()]
      .filter((s) => owner === undefined || s.record.owner === owner)
      .map((s) => structuredClone(s.record));
  }

  async countSessions(owner?: string): Promise<number> {
    if (owner === undefined) return this.sessions.size;
    let count = 0;
    for (const stored of this.sessions.values()) if (stored.record.owner === owner) count++;
    return count;
  }

  async deleteSession(id: string): Promise<boolean> {
    return this.sessions.delete(id);
  }

  async latestSnapshot(id: string): Promise<Snapshot> {
    const snapshots = this.get(id).snapshots;
    return { ...(snapshots[snapshots.length - 1] as Snapshot) };
  }

  async snapshot(id: string, index: number): Promise<Snapshot | undefined> {
    const found = this.get(id).snapshots[index];
    return found ? { ...found } : undefined;
  }

  async snapshots(id: string): Promise<Snapshot[]> {
    return this.get(id).snapshots.map((snapshot) => ({ ...snapshot }));
  }

  async history(id: string, last?: number): Promise<HistoryEntry[]> {
    const history = this.get(id).history;
    return structuredClone(last === undefined ? history : history.slice(Math.max(0, history.length - last)));
  }

  async appendStep(
    id: string,
    entry: Omit<HistoryEntry, "index" | "snapshot">,
    state?: { state: unknown; reason: Snapshot["reason"] },
  ): Promise<HistoryEntry> {
    const stored = this.get(id);
    // Build everything before changing anything, so a value that cannot be stored leaves no trace.
    const full: HistoryEntry = structuredClone({ ...entry, index: stored.history.length });
    const snapshot: Snapshot | undefined = state
      ? {
          index: stored.snapshots.length,
          at: entry.at,
          reason: state.reason,
          state: toImmutableJson(state.state ?? null),
        }
      : undefined;
    if (snapshot) {
      stored.snapshots.push(snapshot);
      full.snapshot = snapshot.index;
    }
    stored.history.push(full);
    return structuredClone(full);
  }

  async appendSnapshot(
    id: string,
    state: unknown,
    reason: Snapshot["reason"],
    at: string,
  ): Promise<Snapshot> {
    const stored = this.get(id);
    const snapshot: Snapshot = { index: stored.snapshots.length, at, reason, state: toImmutableJson(state) };
    stored.snapshots.push(snapshot);
    return { ...snapshot };
  }

  async importSession(record: SessionRecord, contents: SessionContents): Promise<void> {
    if (this.sessions.has(record.id))
      throw new TerrariumError("INVALID_INPUT", `session ${record.id} already exists`);
    const stored: Stored = {
      record: structuredClone(record),
      snapshots: contents.snapshots.map((snapshot) => ({
        ...snapshot,
        state: toImmutableJson(snapshot.state ?? null),
      })),
      history: structuredClone(contents.history),
    };
    this.sessions.set(record.id, stored);
  }

  /** Memory always answers (a readiness probe's question). */
  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  private get(id: string): Stored {
    const stored = this.sessions.get(id);
    if (!stored) throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
    return stored;
  }
}
