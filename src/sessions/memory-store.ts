import { TerrariumError } from "../core/errors.js";
import { toImmutableJson } from "../core/immutable-json.js";
import { applyChanges, diffJson, type JsonChange } from "../core/json-diff.js";
import { checkStepBase } from "./step-base.js";
import type {
  HistoryEntry,
  SessionContents,
  SessionHead,
  SessionRecord,
  Snapshot,
  StepBase,
  StepState,
  Store,
} from "./types.js";

/**
 * A snapshot as kept: a checkpoint holds its whole state (an immutable tree, shared with its neighbours
 * wherever they agree); any other holds only its exact changes from the snapshot before it.
 */
interface Kept {
  index: number;
  at: string;
  reason: Snapshot["reason"];
  state?: unknown;
  changes?: readonly JsonChange[];
}

/**
 * A step's snapshot kept as the index of its history entry, whose text holds its time and its exact
 * changes (`result.changes`): a step's changes are kept once, as text, and the snapshot costs the
 * collector no object of its own. Read back as a `Kept` (`keptAt`) when an older snapshot is rebuilt.
 */
type KeptStep = number;

interface Stored {
  /** The record as JSON text: parsing a small text is cheaper than a structured clone. */
  record: string;
  /** The record as an immutable tree, made at the first `head`: the engine reads it before every call. */
  head: SessionRecord | undefined;
  owner: string | undefined;
  snapshots: Array<Kept | KeptStep>;
  /** The latest snapshot, whole: what every call reads. */
  latest: Snapshot;
  /** History entries as JSON text (written once, parsed when read: most are never read again). */
  history: string[];
  lastCall: { index: number; at: string } | undefined;
  /** Snapshots kept as changes since the last checkpoint, and roughly how many bytes of JSON they hold. */
  chain: { length: number; bytes: number; limit: number };
  /**
   * Roughly the latest state's JSON size, kept up to date from each step's changes: a checkpoint's limit
   * is read from it instead of walking the whole state (a walk that cost more than the rest of the store).
   */
  stateSize: number;
}

/** The size a chain of changes may reach before a checkpoint, at least (small states checkpoint less often). */
const MIN_CHAIN_BYTES = 4096;

/**
 * Sessions in memory: for tests, libraries and short-lived servers. Records and history entries are
 * copied in and out (kept as JSON text, as the SQLite store keeps them); states are immutable trees kept
 * as they are, shared with the caller.
 *
 * Like the SQLite store, a snapshot is kept as its exact changes from the one before, with a checkpoint
 * (the whole state) once the changes since the last one outweigh it: a state that grows with every call
 * (a map of transfers) is then not kept once per call, which made memory, and the collector's work per
 * call, grow with the square of the session's length. The latest state is always kept whole, so a call
 * reads it at no cost; an older snapshot is its checkpoint with the changes since applied in one pass.
 */
export class MemoryStore implements Store {
  readonly stagesSteps = true;
  private readonly sessions = new Map<string, Stored>();

  async createSession(record: SessionRecord, initialState: unknown): Promise<void> {
    if (this.sessions.has(record.id))
      throw new TerrariumError("INVALID_INPUT", `session ${record.id} already exists`);
    const latest: Snapshot = {
      index: 0,
      at: record.createdAt,
      reason: record.parent ? "fork" : "initial",
      state: toImmutableJson(initialState ?? null),
    };
    this.sessions.set(record.id, {
      record: JSON.stringify(record),
      head: undefined,
      owner: record.owner,
      snapshots: [{ ...latest }],
      latest,
      history: [],
      lastCall: undefined,
      ...checkpointChain(latest.state),
    });
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const stored = this.sessions.get(id);
    return stored ? (JSON.parse(stored.record) as SessionRecord) : undefined;
  }

  async head(id: string): Promise<SessionHead> {
    const stored = this.get(id);
    // Frozen and shared from call to call: the head is the engine's own read, never handed out.
    stored.head ??= toImmutableJson(JSON.parse(stored.record)) as SessionRecord;
    // Through latestSnapshot, so a subclass that watches reads sees this one.
    const snapshot = await this.latestSnapshot(id);
    // The kept last call as it is: it is replaced, never changed, and the head is the engine's own read.
    return stored.lastCall
      ? { record: stored.head, snapshot, lastCall: stored.lastCall }
      : { record: stored.head, snapshot };
  }

  async listSessions(owner?: string): Promise<SessionRecord[]> {
    return [...this.sessions.values()]
      .filter((s) => owner === undefined || s.owner === owner)
      .map((s) => JSON.parse(s.record) as SessionRecord);
  }

  async countSessions(owner?: string): Promise<number> {
    if (owner === undefined) return this.sessions.size;
    let count = 0;
    for (const stored of this.sessions.values()) if (stored.owner === owner) count++;
    return count;
  }

  async deleteSession(id: string): Promise<boolean> {
    return this.sessions.delete(id);
  }

  async latestSnapshot(id: string): Promise<Snapshot> {
    return { ...this.get(id).latest };
  }

  async snapshot(id: string, index: number): Promise<Snapshot | undefined> {
    const stored = this.get(id);
    if (!Number.isInteger(index) || index < 0 || index >= stored.snapshots.length) return undefined;
    if (index === stored.latest.index) return { ...stored.latest };
    // Back to the nearest checkpoint, then its changes forward in one pass (each container copied once).
    let base = index;
    while (typeof stored.snapshots[base] === "number" || (stored.snapshots[base] as Kept).state === undefined)
      base--;
    const changes: JsonChange[] = [];
    for (let i = base + 1; i <= index; i++) changes.push(...(keptAt(stored, i).changes ?? []));
    const kept = keptAt(stored, index);
    const state = applyChanges((stored.snapshots[base] as Kept).state, changes);
    return { index, at: kept.at, reason: kept.reason, state };
  }

  async snapshots(id: string): Promise<Snapshot[]> {
    const result: Snapshot[] = [];
    let state: unknown;
    const stored = this.get(id);
    for (let i = 0; i < stored.snapshots.length; i++) {
      const kept = keptAt(stored, i);
      state = kept.state !== undefined ? kept.state : applyChanges(state, kept.changes ?? []);
      result.push({ index: kept.index, at: kept.at, reason: kept.reason, state });
    }
    return result;
  }

  async history(id: string, last?: number): Promise<HistoryEntry[]> {
    const history = this.get(id).history;
    const texts = last === undefined ? history : history.slice(Math.max(0, history.length - last));
    return texts.map((text) => JSON.parse(text) as HistoryEntry);
  }

  async appendStep(
    id: string,
    entry: Omit<HistoryEntry, "index" | "snapshot">,
    state?: StepState,
    base?: StepBase,
  ): Promise<HistoryEntry> {
    const stored = this.get(id);
    if (base) checkStepBase(id, base, stored.history.length - 1, stored.latest.index);
    // Build everything before changing anything, so a value that cannot be stored leaves no trace.
    const full: HistoryEntry = { ...entry, index: stored.history.length };
    const next = state ? toImmutableJson(state.state ?? null) : undefined;
    const changes = state ? (state.changes ?? diffJson(stored.latest.state, next)) : undefined;
    if (state) full.snapshot = stored.latest.index + 1;
    const text = JSON.stringify(full);
    if (state)
      this.push(
        stored,
        { index: stored.latest.index + 1, at: entry.at, reason: state.reason },
        next,
        changes,
        // The entry's text holds these very changes (the engine records the changes it stores).
        changes === entry.result.changes ? full.index : undefined,
      );
    stored.history.push(text);
    stored.lastCall = { index: full.index, at: full.at };
    // The caller's own values in a new object: nothing the store keeps is handed out.
    return full;
  }

  async appendSnapshot(
    id: string,
    state: unknown,
    reason: Snapshot["reason"],
    at: string,
  ): Promise<Snapshot> {
    const stored = this.get(id);
    // Set, reset and real states are usually unrelated to the one before: kept whole.
    this.push(stored, { index: stored.latest.index + 1, at, reason }, toImmutableJson(state));
    return { ...stored.latest };
  }

  async importSession(record: SessionRecord, contents: SessionContents): Promise<void> {
    if (this.sessions.has(record.id))
      throw new TerrariumError("INVALID_INPUT", `session ${record.id} already exists`);
    // Imported states share nothing with each other: each is kept whole, as the document held it.
    const snapshots: Kept[] = contents.snapshots.map((snapshot) => ({
      index: snapshot.index,
      at: snapshot.at,
      reason: snapshot.reason,
      state: toImmutableJson(snapshot.state ?? null),
    }));
    const latest = snapshots[snapshots.length - 1] as Kept;
    const history = contents.history.map((entry) => JSON.stringify(entry));
    const last = contents.history[contents.history.length - 1];
    this.sessions.set(record.id, {
      record: JSON.stringify(record),
      head: undefined,
      owner: record.owner,
      snapshots,
      latest: { index: latest.index, at: latest.at, reason: latest.reason, state: latest.state },
      history,
      lastCall: last ? { index: last.index, at: last.at } : undefined,
      ...checkpointChain(latest.state),
    });
  }

  /** Memory always answers (a readiness probe's question). */
  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  /** Appends a snapshot: as its changes while the chain is light, else (or without changes) whole. */
  private push(
    stored: Stored,
    meta: Omit<Snapshot, "state">,
    state: unknown,
    changes?: readonly JsonChange[],
    entry?: number,
  ): void {
    const measured = changes === undefined ? undefined : measureChanges(changes);
    if (measured !== undefined && stored.chain.bytes + measured.bytes <= stored.chain.limit) {
      stored.snapshots.push(
        entry !== undefined && meta.reason === "step"
          ? entry
          : { ...meta, changes: (changes ?? []).map(keptChange) },
      );
      stored.chain.length++;
      stored.chain.bytes += measured.bytes;
      stored.stateSize = Math.max(0, stored.stateSize + measured.growth);
    } else {
      stored.snapshots.push({ ...meta, state });
      // The state's size as the changes left it: exact enough for a limit, and no walk of the state.
      const next =
        measured === undefined
          ? checkpointChain(state)
          : checkpointOfSize(Math.max(0, stored.stateSize + measured.growth));
      stored.chain = next.chain;
      stored.stateSize = next.stateSize;
    }
    stored.latest = { ...meta, state };
  }

  private get(id: string): Stored {
    const stored = this.sessions.get(id);
    if (!stored) throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
    return stored;
  }
}

/** Snapshot `index` as kept: a `KeptStep` read back from its history entry. */
function keptAt(stored: Stored, index: number): Kept {
  const kept = stored.snapshots[index] as Kept | KeptStep;
  if (typeof kept !== "number") return kept;
  const entry = JSON.parse(stored.history[kept] as string) as HistoryEntry;
  return { index, at: entry.at, reason: "step", changes: entry.result.changes as JsonChange[] };
}

/**
 * A change as kept: a copy (the caller may hand the same objects to others, who may change them) whose
 * values are immutable trees (already so when they came from states: then shared, not copied).
 */
function keptChange(change: JsonChange): JsonChange {
  const kept: JsonChange = { op: change.op, path: change.path };
  if ("before" in change) kept.before = toImmutableJson(change.before);
  if ("after" in change) kept.after = toImmutableJson(change.after);
  return Object.freeze(kept);
}

/**
 * A new chain after a checkpoint of `state`: changes may add up to the state's own size before the next
 * one, so replaying a chain costs about what reading the checkpoint does, and checkpoints of a growing
 * state come further and further apart (memory stays proportional to what the session wrote).
 */
function checkpointChain(state: unknown): Pick<Stored, "chain" | "stateSize"> {
  return checkpointOfSize(approximateSize(state));
}

function checkpointOfSize(stateSize: number): Pick<Stored, "chain" | "stateSize"> {
  return { chain: { length: 0, bytes: 0, limit: Math.max(MIN_CHAIN_BYTES, stateSize) }, stateSize };
}

/**
 * Roughly the JSON size of changes (the values they carry and their paths), and how much they grow the
 * state's JSON by (a member counted as its key, its value and a little punctuation), in one walk of
 * their values.
 */
function measureChanges(changes: readonly JsonChange[]): { bytes: number; growth: number } {
  let bytes = 0;
  let growth = 0;
  for (const change of changes) {
    const before = change.op === "add" ? 0 : approximateSize(change.before);
    const after = change.op === "remove" ? 0 : approximateSize(change.after);
    bytes += 16 + change.path.length + before + after;
    if (change.path === "") growth += after - before;
    else {
      const member = change.path.length - change.path.lastIndexOf("/") + 3;
      if (change.op === "add") growth += member + after;
      else if (change.op === "remove") growth -= member + before;
      else growth += after - before;
    }
  }
  return { bytes, growth };
}

/** Roughly a value's JSON size (counts characters, not UTF-8 bytes; an estimate is all a policy needs). */
function approximateSize(value: unknown): number {
  let size = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === "string") size += item.length + 2;
    else if (typeof item === "number" || typeof item === "boolean") size += 5;
    else if (item === null || item === undefined) size += 4;
    else if (Array.isArray(item)) {
      size += item.length + 2;
      for (const member of item) pending.push(member);
    } else if (typeof item === "object") {
      for (const key in item) {
        size += key.length + 4;
        pending.push((item as Record<string, unknown>)[key]);
      }
      size += 2;
    }
  }
  return size;
}
