import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type BetterSqlite3 from "better-sqlite3";
import { TerrariumError } from "../core/errors.js";
import { toImmutableJson } from "../core/immutable-json.js";
import { applyChanges, diffJson, type JsonChange } from "../core/json-diff.js";
import { openSqlite } from "../core/sqlite.js";
import { type CheckpointPolicy, DEFAULT_CHECKPOINTS, extendsChain } from "./checkpoints.js";
import { Lru } from "./lru.js";
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
 * Version of the SQLite layout (not of session exports, which stay at SESSION_SCHEMA_VERSION).
 * 2: snapshots are changes with periodic checkpoints, and checkpoints are stored once per content.
 */
export const SQLITE_STORE_SCHEMA_VERSION = 2;

export type { CheckpointPolicy };

/**
 * WAL checkpoints (copying committed pages from the log into the file) run on a thread of their own, on
 * a connection of its own, once a store has committed this many transactions, and again after as many
 * more: done by the writer (SQLite's default, every 1,000 pages) they cost a call about a sixth of its
 * time. The writer still checkpoints by itself past `WRITER_CHECKPOINT_PAGES` (a stuck or failed thread
 * never lets the log grow without bound), and at every page count SQLite's default if the thread is gone.
 */
const BACKGROUND_CHECKPOINT_COMMITS = 200;
const WRITER_CHECKPOINT_PAGES = 10_000;
const DEFAULT_CHECKPOINT_PAGES = 1000;

/**
 * The checkpointing thread: opens the file and runs a passive checkpoint (one that never waits for, nor
 * blocks, the writer or readers) at each message, and says when it is done. Plain CommonJS, evaluated: no
 * file to find beside a bundle.
 */
const CHECKPOINTER = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("synchronous = NORMAL");
parentPort.on("message", () => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // busy or closing: the next message tries again, and the writer's own checkpoints stay as a backstop
  }
  parentPort.postMessage(0);
});
`;

/** Latest states kept parsed, by session, and checkpoints kept parsed, by content hash. */
const STATE_CACHE_SIZE = 256;
const CHECKPOINT_CACHE_SIZE = 32;

/**
 * Sessions in a SQLite file (WAL). Each step is one transaction: its history entry and its snapshot are
 * written together, so a crash never leaves a call without its state or a state without its call.
 *
 * A snapshot is stored as the exact changes from the one before it, with a full checkpoint every so
 * often (`CheckpointPolicy`); checkpoints live in a table keyed by the hash of their text, so a hundred
 * sessions started from the same state store it once. Reading snapshot n starts from the nearest
 * checkpoint at or before n and applies the changes after it. The latest state of recently used sessions
 * is kept parsed, so a call does not re-read its session's state.
 */
export class SqliteStore implements Store {
  /** Checks each step's base and commits a session's steps in order: the engine may pipeline calls. */
  readonly stagesSteps = true;
  private readonly db: BetterSqlite3.Database;
  private readonly statements: ReturnType<SqliteStore["prepare"]>;
  /** The last snapshot read or written, by session: a call's read of its latest state costs one query. */
  private readonly latest = new Lru<string, Snapshot>(STATE_CACHE_SIZE);
  private readonly checkpoints = new Lru<string, unknown>(CHECKPOINT_CACHE_SIZE);
  /**
   * Each recent session's chain of change-only snapshots since its last checkpoint, as of its snapshot
   * `last`: a write that follows it needs no query for it (the checkpoint's size is measured by reading its
   * whole text). Used only when `last` is the snapshot just before the one written, so a chain another
   * process extended, or a transaction that rolled back, is read again from the file.
   */
  private readonly chains = new Lru<string, Chain>(STATE_CACHE_SIZE);
  /**
   * Each recent session's record, parsed, beside the text it was parsed from (a call reads the text and
   * parses it only when it differs), and its last call's index and time, written here (a call's head
   * finds the index by key and reads the time from the entry's JSON only when the index is not this one).
   */
  private readonly records = new Lru<string, { text: string; record: SessionRecord }>(STATE_CACHE_SIZE);
  private readonly lastCalls = new Lru<string, { index: number; at: string }>(STATE_CACHE_SIZE);
  /**
   * Where recent sessions end (their record's text, latest snapshot, last call), as this connection read
   * or wrote them while the file's data version was `version`: `PRAGMA data_version` changes only when
   * another connection (a process or thread sharing the file) commits, and then all of it is dropped. A
   * call's two reads of where its session ends (before it runs, and in its write's transaction) are then
   * that pragma instead of a three-part query each.
   */
  private readonly ends = new Lru<string, Ends>(STATE_CACHE_SIZE);
  private version: number | undefined;
  /** Writes waiting for the next group commit (see `groupCommit`). */
  private queue: QueuedWrite[] = [];
  private committed = 0;
  /** The thread that checkpoints the WAL (see BACKGROUND_CHECKPOINT_COMMITS), once started. */
  private checkpointer: Worker | undefined;
  private checkpointerFailed = false;
  /** A round asked of the thread and not answered yet: the next is asked only after it. */
  private checkpointing = false;
  /** Runs `work` in a transaction, or in a savepoint when one is already open. */
  private readonly transaction: <T>(work: () => T) => T;

  constructor(
    readonly path: string,
    private readonly policy: CheckpointPolicy = DEFAULT_CHECKPOINTS,
  ) {
    this.db = openSqlite(path, {
      what: "session store",
      schemaVersion: SQLITE_STORE_SCHEMA_VERSION,
      tables: `
        CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, owner TEXT, record TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS sessions_by_owner ON sessions (owner);
        CREATE TABLE IF NOT EXISTS states (hash TEXT PRIMARY KEY, state TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS snapshots (
          session TEXT NOT NULL, idx INTEGER NOT NULL, at TEXT NOT NULL, reason TEXT NOT NULL,
          checkpoint TEXT, changes TEXT,
          PRIMARY KEY (session, idx)
        );
        CREATE INDEX IF NOT EXISTS snapshots_by_checkpoint ON snapshots (checkpoint) WHERE checkpoint IS NOT NULL;
        CREATE TABLE IF NOT EXISTS history (session TEXT NOT NULL, idx INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (session, idx));`,
      migrations: { 1: migrateFromVersion1 },
    });
    this.statements = this.prepare();
    const run = this.db.transaction((work: () => unknown) => work());
    this.transaction = <T>(work: () => T) => run(work) as T;
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
      countAll: db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM sessions"),
      countOwner: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM sessions WHERE owner = ?"),
      deleteSession: db.prepare("DELETE FROM sessions WHERE id = ?"),
      sessionCheckpoints: db.prepare<[string], { checkpoint: string }>(
        "SELECT DISTINCT checkpoint FROM snapshots WHERE session = ? AND checkpoint IS NOT NULL",
      ),
      deleteSnapshots: db.prepare("DELETE FROM snapshots WHERE session = ?"),
      deleteUnusedState: db.prepare(
        "DELETE FROM states WHERE hash = ? AND NOT EXISTS (SELECT 1 FROM snapshots WHERE checkpoint = ?)",
      ),
      deleteHistory: db.prepare("DELETE FROM history WHERE session = ?"),
      insertState: db.prepare("INSERT OR IGNORE INTO states (hash, state) VALUES (?, ?)"),
      getState: db.prepare<[string], { state: string }>("SELECT state FROM states WHERE hash = ?"),
      stateSize: db.prepare<[string], { size: number }>(
        "SELECT length(state) AS size FROM states WHERE hash = ?",
      ),
      insertSnapshot: db.prepare(
        "INSERT INTO snapshots (session, idx, at, reason, checkpoint, changes) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      lastIndex: db.prepare<[string], { idx: number | null }>(
        "SELECT MAX(idx) AS idx FROM snapshots WHERE session = ?",
      ),
      snapshotMeta: db.prepare<[string, number], { at: string; reason: Snapshot["reason"] }>(
        "SELECT at, reason FROM snapshots WHERE session = ? AND idx = ?",
      ),
      checkpointAtOrBefore: db.prepare<[string, number], { idx: number; checkpoint: string }>(
        "SELECT idx, checkpoint FROM snapshots WHERE session = ? AND idx <= ? AND checkpoint IS NOT NULL ORDER BY idx DESC LIMIT 1",
      ),
      changesBetween: db.prepare<[string, number, number], { idx: number; changes: string }>(
        "SELECT idx, changes FROM snapshots WHERE session = ? AND idx > ? AND idx <= ? ORDER BY idx",
      ),
      chainSince: db.prepare<[string, number], { n: number; bytes: number }>(
        "SELECT COUNT(*) AS n, COALESCE(SUM(length(changes)), 0) AS bytes FROM snapshots WHERE session = ? AND idx > ?",
      ),
      allSnapshots: db.prepare<[string], SnapshotRow>(
        "SELECT idx, at, reason, checkpoint, changes FROM snapshots WHERE session = ? ORDER BY idx",
      ),
      insertHistory: db.prepare("INSERT INTO history (session, idx, entry) VALUES (?, ?, ?)"),
      // What a call reads first, in one statement: the record, the latest snapshot's index and the last
      // call's index (each the last row of its primary key; nothing here grows with the history).
      head: db.prepare<
        [string, string, string],
        { record: string; snapshot: number | null; call: number | null }
      >(
        `SELECT record,
           (SELECT idx FROM snapshots WHERE session = ? ORDER BY idx DESC LIMIT 1) AS snapshot,
           (SELECT idx FROM history WHERE session = ? ORDER BY idx DESC LIMIT 1) AS call
         FROM sessions WHERE id = ?`,
      ),
      // The same for a write, inside its transaction: whether the session is there, and where both end.
      writeHead: db.prepare<
        [string, string, string],
        { record: string | null; snapshot: number | null; call: number | null }
      >(
        `SELECT (SELECT record FROM sessions WHERE id = ?) AS record,
           (SELECT idx FROM snapshots WHERE session = ? ORDER BY idx DESC LIMIT 1) AS snapshot,
           (SELECT idx FROM history WHERE session = ? ORDER BY idx DESC LIMIT 1) AS call`,
      ),
      callAt: db.prepare<[string, number], { at: string | null }>(
        "SELECT json_extract(entry, '$.at') AS at FROM history WHERE session = ? AND idx = ?",
      ),
      dataVersion: db.prepare<[], number>("PRAGMA data_version").pluck(),
      allHistory: db.prepare<[string], { entry: string }>(
        "SELECT entry FROM history WHERE session = ? ORDER BY idx",
      ),
      lastHistory: db.prepare<[string, number], { entry: string }>(
        "SELECT entry FROM (SELECT idx, entry FROM history WHERE session = ? ORDER BY idx DESC LIMIT ?) ORDER BY idx",
      ),
    };
  }

  async createSession(record: SessionRecord, initialState: unknown): Promise<void> {
    const snapshot: Snapshot = {
      index: 0,
      at: record.createdAt,
      reason: record.parent ? "fork" : "initial",
      state: toImmutableJson(initialState ?? null),
    };
    this.ends.delete(record.id);
    this.db.transaction(() => {
      this.statements.insertSession.run(record.id, record.owner ?? null, JSON.stringify(record));
      this.writeCheckpoint(record.id, 0, snapshot.at, snapshot.reason, snapshot.state);
    })();
    this.latest.set(record.id, snapshot);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const known = this.confirmedEnds(id);
    if (known) return JSON.parse(known.record) as SessionRecord;
    const row = this.statements.getSession.get(id);
    return row ? (JSON.parse(row.record) as SessionRecord) : undefined;
  }

  async head(id: string): Promise<SessionHead> {
    let row = this.confirmedEnds(id);
    if (!row) {
      const read = this.statements.head.get(id, id, id);
      if (!read || read.snapshot === null)
        throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
      row = { record: read.record, snapshot: read.snapshot, call: read.call };
      this.ends.set(id, row);
    }
    const snapshot = this.readSnapshot(id, row.snapshot) as Snapshot;
    return {
      record: this.parsedRecord(id, row.record),
      snapshot,
      ...(row.call !== null
        ? { lastCall: { index: row.call, at: this.callTime(id, row.call, snapshot.at) } }
        : {}),
    };
  }

  /**
   * Where session `id` ends, when this connection knows it and no other connection committed since
   * (`ends`); undefined otherwise (then the caller reads it). Inside a write's transaction, the pragma is
   * its first read, so what it confirms is what the transaction builds on.
   */
  private confirmedEnds(id: string): Ends | undefined {
    const version = this.statements.dataVersion.get() as number;
    if (version !== this.version) {
      this.version = version;
      this.ends.clear();
      return undefined;
    }
    return this.ends.get(id);
  }

  /**
   * Drops what a write taken back may have left in the caches: where sessions end, and latest states and
   * chains it read or wrote inside its transaction (a later write of the same session in its batch reads
   * the first one's snapshot, not yet committed, to diff against it).
   */
  private forgetUncommitted(): void {
    this.ends.clear();
    this.latest.clear();
    this.chains.clear();
  }

  /**
   * The record read as `text`, parsed once for as long as the text stays the same. Frozen: the head is
   * the engine's own read, and the same object serves every call.
   */
  private parsedRecord(id: string, text: string): SessionRecord {
    const cached = this.records.get(id);
    if (cached?.text === text) return cached.record;
    const record = toImmutableJson(JSON.parse(text)) as SessionRecord;
    this.records.set(id, { text, record });
    return record;
  }

  /** When call `index` of the session ran (`fallback` for an entry without a time). */
  private callTime(id: string, index: number, fallback: string): string {
    const cached = this.lastCalls.get(id);
    if (cached?.index === index) return cached.at;
    const at = this.statements.callAt.get(id, index)?.at ?? fallback;
    this.lastCalls.set(id, { index, at });
    return at;
  }

  async listSessions(owner?: string): Promise<SessionRecord[]> {
    const rows =
      owner === undefined ? this.statements.allSessions.all() : this.statements.ownerSessions.all(owner);
    return rows.map((row) => JSON.parse(row.record) as SessionRecord);
  }

  async countSessions(owner?: string): Promise<number> {
    const row = owner === undefined ? this.statements.countAll.get() : this.statements.countOwner.get(owner);
    return row?.n ?? 0;
  }

  async deleteSession(id: string): Promise<boolean> {
    this.latest.delete(id);
    this.chains.delete(id);
    this.records.delete(id);
    this.lastCalls.delete(id);
    this.ends.delete(id);
    return this.db.transaction(() => {
      const checkpoints = this.statements.sessionCheckpoints.all(id).map((row) => row.checkpoint);
      this.statements.deleteSnapshots.run(id);
      for (const hash of checkpoints) this.statements.deleteUnusedState.run(hash, hash);
      this.statements.deleteHistory.run(id);
      return this.statements.deleteSession.run(id).changes > 0;
    })();
  }

  async latestSnapshot(id: string): Promise<Snapshot> {
    const index = this.statements.lastIndex.get(id)?.idx;
    if (index === null || index === undefined)
      throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
    return this.readSnapshot(id, index) as Snapshot;
  }

  async snapshot(id: string, index: number): Promise<Snapshot | undefined> {
    if (!Number.isInteger(index) || index < 0) return undefined;
    return this.readSnapshot(id, index);
  }

  async snapshots(id: string): Promise<Snapshot[]> {
    this.requireSession(id);
    const snapshots: Snapshot[] = [];
    let state: unknown;
    for (const row of this.statements.allSnapshots.all(id)) {
      state = row.checkpoint !== null ? this.checkpointState(row.checkpoint) : this.applyRow(state, row);
      snapshots.push({ index: row.idx, at: row.at, reason: row.reason, state });
    }
    return snapshots;
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
    state?: StepState,
    base?: StepBase,
  ): Promise<HistoryEntry> {
    const next = state === undefined ? undefined : toImmutableJson(state.state ?? null);
    const written = await this.groupCommit(() => {
      // Where the session's snapshots and history end, in the write's own transaction: known here unless
      // another connection committed since (or this write's batch failed), else read (one statement).
      const known = this.confirmedEnds(id);
      this.ends.delete(id);
      const head = known ?? this.statements.writeHead.get(id, id, id);
      if (!head || head.record === null || head.snapshot === null)
        throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
      if (base) checkStepBase(id, base, head.call ?? -1, head.snapshot);
      const full: HistoryEntry = { ...entry, index: (head.call ?? -1) + 1 };
      if (state) {
        const index = head.snapshot + 1;
        // The state before is read only to diff it: exact changes are written as they are.
        const before =
          state.changes === undefined ? (this.readSnapshot(id, head.snapshot) as Snapshot).state : undefined;
        this.writeSnapshot(id, index, entry.at, state.reason, before, next, state.changes);
        full.snapshot = index;
      }
      this.statements.insertHistory.run(id, full.index, JSON.stringify(full));
      // Where the session ends once this write stands: a later write of it in the same batch (a staged
      // step) starts there without a read. Dropped, all of it, if the batch does not commit.
      this.ends.set(id, { record: head.record, snapshot: full.snapshot ?? head.snapshot, call: full.index });
      return full;
    });
    if (written.snapshot !== undefined && state)
      this.latest.set(id, { index: written.snapshot, at: entry.at, reason: state.reason, state: next });
    this.lastCalls.set(id, { index: written.index, at: written.at });
    return written;
  }

  async appendSnapshot(
    id: string,
    state: unknown,
    reason: Snapshot["reason"],
    at: string,
  ): Promise<Snapshot> {
    const next = toImmutableJson(state ?? null);
    this.ends.delete(id);
    const index = this.db.transaction(() => {
      this.requireSession(id);
      const index = (this.statements.lastIndex.get(id)?.idx ?? -1) + 1;
      // Set, reset and real states are usually unrelated to the one before: stored whole (and once).
      this.writeCheckpoint(id, index, at, reason, next);
      return index;
    })();
    const snapshot: Snapshot = { index, at, reason, state: next };
    this.latest.set(id, snapshot);
    return { ...snapshot };
  }

  async importSession(record: SessionRecord, contents: SessionContents): Promise<void> {
    const states = contents.snapshots.map((snapshot) => toImmutableJson(snapshot.state ?? null));
    this.ends.delete(record.id);
    this.db.transaction(() => {
      this.statements.insertSession.run(record.id, record.owner ?? null, JSON.stringify(record));
      contents.snapshots.forEach((snapshot, i) => {
        if (i === 0) this.writeCheckpoint(record.id, 0, snapshot.at, snapshot.reason, states[0]);
        else this.writeSnapshot(record.id, i, snapshot.at, snapshot.reason, states[i - 1], states[i]);
      });
      for (const entry of contents.history)
        this.statements.insertHistory.run(record.id, entry.index, JSON.stringify(entry));
    })();
  }

  /** The file answers as long as it is open (a readiness probe's question). */
  async ping(): Promise<void> {
    this.db.prepare("SELECT 1").get();
  }

  async close(): Promise<void> {
    // Writes already asked for are committed (and answered) before the file closes.
    if (this.queue.length > 0) this.flush();
    const checkpointer = this.checkpointer;
    this.checkpointer = undefined;
    // Its connection closes first, so the store's own close (the last one) checkpoints and removes the log.
    if (checkpointer) await checkpointer.terminate();
    if (this.db.open) this.db.close();
  }

  /** Counts a commit; every BACKGROUND_CHECKPOINT_COMMITS, asks the checkpointing thread (started the first time). */
  private committedOne(): void {
    this.committed++;
    if (this.committed % BACKGROUND_CHECKPOINT_COMMITS !== 0 || this.checkpointerFailed) return;
    // A thread still at its last round is not asked again: its next round takes up what was committed
    // meanwhile, and the writer's finish after a round then never finds the thread busy with another.
    if (this.checkpointing) return;
    // Never throws: the commit it follows stands whatever happens here.
    try {
      this.askCheckpoint();
    } catch {
      this.checkpointerFailed = true;
    }
  }

  private askCheckpoint(): void {
    if (!this.checkpointer) {
      if (this.path === ":memory:" || this.path === "" || !this.db.open) return;
      try {
        const driver = createRequire(import.meta.url).resolve("better-sqlite3");
        const worker = new Worker(CHECKPOINTER, { eval: true, workerData: { driver, path: this.path } });
        worker.on("message", () => {
          this.checkpointing = false;
          this.finishCheckpoint();
        });
        worker.on("error", () => this.checkpointerGone(worker));
        worker.on("exit", () => this.checkpointerGone(worker));
        // Never what keeps a process alive; and if it dies, the writer checkpoints alone again.
        worker.unref();
        this.checkpointer = worker;
        this.db.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
      } catch {
        this.checkpointerFailed = true;
        return;
      }
    }
    this.checkpointer.postMessage(0);
    this.checkpointing = true;
  }

  /**
   * After the thread's checkpoint: copies what was committed while it ran (a few pages, the ones the
   * latest writes touched), so the log is wholly in the file and the next write starts it over from its
   * beginning (the log's file stays as large as one round of writes, not the writer's backstop).
   */
  private finishCheckpoint(): void {
    try {
      if (this.db.open && !this.db.inTransaction) this.db.pragma("wal_checkpoint(PASSIVE)");
    } catch {
      // busy: the next round finishes it
    }
  }

  private checkpointerGone(worker: Worker): void {
    if (this.checkpointer !== worker) return;
    this.checkpointer = undefined;
    this.checkpointerFailed = true;
    this.checkpointing = false;
    try {
      if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${DEFAULT_CHECKPOINT_PAGES}`);
    } catch {
      // closing meanwhile: nothing left to checkpoint
    }
  }

  /** Transactions committed so far (a batch of grouped writes counts once). */
  get commits(): number {
    return this.committed;
  }

  /**
   * Group commit. A write joins the writes asked for in the same turn of the event loop (concurrent calls
   * on other sessions), and the batch is one transaction: a commit is the expensive part of a small write,
   * so under load it is paid once per batch. Each write runs in a savepoint of its own, so one that fails
   * takes back only itself. Its promise settles once the batch has committed: acknowledged still means
   * stored, and a failed commit fails every write of the batch.
   */
  private groupCommit<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve, reject } as QueuedWrite);
      if (this.queue.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    if (!this.db.open) {
      const closed = new TerrariumError("STORE_UNAVAILABLE", "the session store is closed");
      for (const write of batch) write.reject(closed);
      return;
    }
    if (batch.length === 1) {
      // Alone in its transaction, a write needs no savepoint: its failure takes back the transaction.
      const write = batch[0] as QueuedWrite;
      let value: unknown;
      try {
        value = this.transaction(write.work);
      } catch (error) {
        this.forgetUncommitted();
        write.reject(error);
        return;
      }
      this.committedOne();
      write.resolve(value);
      return;
    }
    let outcomes: Array<{ value: unknown } | { error: unknown }>;
    try {
      outcomes = this.transaction(() =>
        batch.map((write) => {
          try {
            // Nested: a savepoint inside the batch's transaction.
            return { value: this.transaction(write.work) };
          } catch (error) {
            this.forgetUncommitted();
            return { error };
          }
        }),
      );
      this.committedOne();
    } catch (error) {
      this.forgetUncommitted();
      for (const write of batch) write.reject(error);
      return;
    }
    batch.forEach((write, i) => {
      const outcome = outcomes[i] as { value: unknown } | { error: unknown };
      if ("error" in outcome) write.reject(outcome.error);
      else write.resolve(outcome.value);
    });
  }

  /**
   * Writes snapshot `index` as its changes from `before` (the caller's exact ones when given, else a diff),
   * or whole when the policy asks for a checkpoint.
   */
  private writeSnapshot(
    id: string,
    index: number,
    at: string,
    reason: Snapshot["reason"],
    before: unknown,
    after: unknown,
    exact?: readonly JsonChange[],
  ): void {
    const cached = this.chains.get(id);
    const chain = cached?.last === index - 1 ? cached : this.readChain(id, index - 1);
    const changes = JSON.stringify(exact ?? diffJson(before, after));
    if (chain && extendsChain(this.policy, chain, changes.length)) {
      this.statements.insertSnapshot.run(id, index, at, reason, null, changes);
      this.chains.set(id, {
        last: index,
        n: chain.n + 1,
        bytes: chain.bytes + changes.length,
        size: chain.size,
      });
      return;
    }
    this.writeCheckpoint(id, index, at, reason, after);
  }

  /** The chain since the checkpoint at or before snapshot `last`, from the file. */
  private readChain(id: string, last: number): Chain | undefined {
    const base = this.statements.checkpointAtOrBefore.get(id, last);
    if (!base) return undefined;
    const chain = this.statements.chainSince.get(id, base.idx) as { n: number; bytes: number };
    const size = this.statements.stateSize.get(base.checkpoint)?.size ?? 0;
    return { last, n: chain.n, bytes: chain.bytes, size };
  }

  private writeCheckpoint(id: string, index: number, at: string, reason: Snapshot["reason"], state: unknown) {
    const text = JSON.stringify(state);
    const hash = createHash("sha256").update(text).digest("hex");
    this.statements.insertState.run(hash, text);
    this.statements.insertSnapshot.run(id, index, at, reason, hash, null);
    this.checkpoints.set(hash, state);
    this.chains.set(id, { last: index, n: 0, bytes: 0, size: text.length });
  }

  private readSnapshot(id: string, index: number): Snapshot | undefined {
    const cached = this.latest.get(id);
    if (cached?.index === index) return { ...cached };
    const meta = this.statements.snapshotMeta.get(id, index);
    if (!meta) return undefined;
    const base = this.statements.checkpointAtOrBefore.get(id, index);
    if (!base)
      throw new TerrariumError("INTERNAL", `session ${id} has no checkpoint before snapshot ${index}`);
    let state: unknown;
    let from: number;
    if (cached && cached.index >= base.idx && cached.index <= index) {
      state = cached.state;
      from = cached.index;
    } else {
      state = this.checkpointState(base.checkpoint);
      from = base.idx;
    }
    // All the chain's changes in one pass: each container on a changed path is copied once, not once per
    // snapshot (a map that grows by a key per call would otherwise be copied the chain's length of times).
    const changes: JsonChange[] = [];
    for (const row of this.statements.changesBetween.all(id, from, index))
      for (const change of JSON.parse(row.changes ?? "[]") as JsonChange[]) changes.push(change);
    if (changes.length > 0) state = applyChanges(state, changes);
    const snapshot: Snapshot = { index, at: meta.at, reason: meta.reason, state };
    if (!cached || cached.index <= index) this.latest.set(id, snapshot);
    return { ...snapshot };
  }

  private applyRow(state: unknown, row: { idx: number; changes: string | null }): unknown {
    return applyChanges(state, JSON.parse(row.changes ?? "[]") as JsonChange[]);
  }

  private checkpointState(hash: string): unknown {
    const cached = this.checkpoints.get(hash);
    if (cached !== undefined) return cached;
    const row = this.statements.getState.get(hash);
    if (!row) throw new TerrariumError("INTERNAL", `the stored state ${hash} is missing`);
    const state = toImmutableJson(JSON.parse(row.state));
    this.checkpoints.set(hash, state);
    return state;
  }

  private requireSession(id: string): void {
    if (!this.statements.getSession.get(id))
      throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
  }
}

/** Where a session ends: its record's text, its latest snapshot's index, its last call's (null before one). */
interface Ends {
  record: string;
  snapshot: number;
  call: number | null;
}

interface QueuedWrite {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Change-only snapshots since a checkpoint: how many, their bytes, the checkpoint's size, the last one's index. */
interface Chain {
  last: number;
  n: number;
  bytes: number;
  size: number;
}

interface SnapshotRow {
  idx: number;
  at: string;
  reason: Snapshot["reason"];
  checkpoint: string | null;
  changes: string | null;
}

/** Layout 1 stored every snapshot whole: each becomes a checkpoint (identical states stored once). */
function migrateFromVersion1(db: BetterSqlite3.Database): void {
  db.exec("ALTER TABLE snapshots RENAME TO snapshots_v1");
  db.exec(`
    CREATE TABLE states (hash TEXT PRIMARY KEY, state TEXT NOT NULL);
    CREATE TABLE snapshots (
      session TEXT NOT NULL, idx INTEGER NOT NULL, at TEXT NOT NULL, reason TEXT NOT NULL,
      checkpoint TEXT, changes TEXT,
      PRIMARY KEY (session, idx)
    );`);
  const insertState = db.prepare("INSERT OR IGNORE INTO states (hash, state) VALUES (?, ?)");
  const insertSnapshot = db.prepare(
    "INSERT INTO snapshots (session, idx, at, reason, checkpoint, changes) VALUES (?, ?, ?, ?, ?, NULL)",
  );
  // In pages, since a statement cannot write while another one is still iterating.
  const page = db.prepare<[number], V1Row>(
    "SELECT rowid, session, idx, at, reason, state FROM snapshots_v1 WHERE rowid > ? ORDER BY rowid LIMIT 200",
  );
  for (let rows = page.all(0); rows.length > 0; rows = page.all((rows[rows.length - 1] as V1Row).rowid)) {
    for (const row of rows) {
      const hash = createHash("sha256").update(row.state).digest("hex");
      insertState.run(hash, row.state);
      insertSnapshot.run(row.session, row.idx, row.at, row.reason, hash);
    }
  }
  db.exec("DROP TABLE snapshots_v1");
}

interface V1Row {
  rowid: number;
  session: string;
  idx: number;
  at: string;
  reason: string;
  state: string;
}
