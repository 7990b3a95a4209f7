import type { JsonChange } from "../core/json-diff.js";

/** Version of stored sessions and of session export files. */
export const SESSION_SCHEMA_VERSION = 1;

export interface SessionRecord {
  id: string;
  createdAt: string;
  /** Who may see the session (a hash of the bearer token that created it), when auth is on. */
  owner?: string;
  /** Seeds the simulators of this session. */
  seed: string;
  /** The session it was forked from, and at which snapshot. */
  parent?: { session: string; snapshot: number };
  metadata?: Record<string, unknown>;
}

/** One version of a session's state. Snapshots are append-only; the last one is the current state. */
export interface Snapshot {
  index: number;
  at: string;
  reason: "initial" | "step" | "set" | "reset" | "fork" | "real";
  state: unknown;
}

/** One call as the session saw it. */
export interface HistoryEntry {
  index: number;
  at: string;
  request: { name: string; arguments: unknown };
  result: {
    status: "ok" | "invalid" | "tool_error" | "error";
    observation: unknown;
    changes: unknown[];
    errors: unknown[];
  };
  simulator: string;
  usage?: Record<string, unknown>;
  /** The snapshot the call produced (absent when the state did not change). */
  snapshot?: number;
  /** The random seed the simulator ran the call under (code environments replay with it). */
  seed?: string;
  /**
   * What semantic validation said, when it ran and did not simply pass: `error` (the validator's model
   * failed; the call went on, failing open as Gecko does) carries the failure's message.
   */
  semantic?: { status: "failed" | "error"; message?: string };
}

/** What a call reads before it runs: the session, its latest snapshot, and where its history ends. */
export interface SessionHead {
  record: SessionRecord;
  snapshot: Snapshot;
  /** The last history entry's index and time (absent before the first call). */
  lastCall?: { index: number; at: string };
}

/** A state a step produced, for `appendStep`. */
export interface StepState {
  state: unknown;
  reason: Snapshot["reason"];
  /**
   * The exact changes from the latest snapshot's state to `state` (JSON Patch style, as `core/json-diff.ts`
   * computes and applies them), when the caller has them: a store that keeps snapshots as changes may use
   * them instead of diffing the two states.
   */
  changes?: readonly JsonChange[];
}

/**
 * Where a step was computed from: the session's last call (-1 before the first) and latest snapshot as
 * the engine read them. A store given one refuses the step when the session no longer ends there.
 */
export interface StepBase {
  lastCall: number;
  snapshot: number;
}

/** A whole session to store at once (an import): snapshots and history as they are, indexes included. */
export interface SessionContents {
  snapshots: Snapshot[];
  history: HistoryEntry[];
}

/**
 * Where sessions live. Every method that writes is atomic: a step's history entry and its snapshot are
 * stored together or not at all. The engine depends only on this interface, so other stores (Postgres)
 * can be added without touching it (`PostgresStore` is one).
 *
 * States go in and come out as immutable trees (`core/immutable-json.ts`): a store may keep and hand out
 * the very objects it was given, and callers must not change what they read. A state given to
 * `appendStep` is usually the latest one with a few paths changed, so a store can keep only the change.
 */
export interface Store {
  createSession(record: SessionRecord, initialState: unknown): Promise<void>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  listSessions(owner?: string): Promise<SessionRecord[]>;
  /**
   * How many sessions `owner` holds (every session without an owner), counted where they are stored, so
   * replicas sharing the store agree: per-token quotas read it before creating a session.
   */
  countSessions(owner?: string): Promise<number>;
  deleteSession(id: string): Promise<boolean>;
  latestSnapshot(id: string): Promise<Snapshot>;
  snapshot(id: string, index: number): Promise<Snapshot | undefined>;
  snapshots(id: string): Promise<Snapshot[]>;
  /** The history in order; with `last`, only the last entries (the hot path reads only a window). */
  history(id: string, last?: number): Promise<HistoryEntry[]>;
  /**
   * The session, its latest snapshot and its last call's index and time, read together (the engine reads
   * this before every call; without it, it calls getSession, latestSnapshot and history(id, 1)). Its cost
   * must not grow with the session's history. Throws UNKNOWN_SESSION for a session that does not exist.
   */
  head?(id: string): Promise<SessionHead>;
  /**
   * Appends a history entry and, when given, the snapshot it produced, in one transaction. The cost must
   * not grow with the session's history (no counting or reading of earlier entries or snapshots beyond a
   * bounded chain). With `base`, a step computed on a session that has since moved on (in practice: an
   * earlier step of a pipeline that failed to be stored) is refused (STORE_UNAVAILABLE, `staleStep`).
   */
  appendStep(
    id: string,
    entry: Omit<HistoryEntry, "index" | "snapshot">,
    state?: StepState,
    base?: StepBase,
  ): Promise<HistoryEntry>;
  /**
   * Set by a store that checks `appendStep`'s `base` and stores each session's steps in the order they
   * were asked for, holding no lock across a call. The engine then starts a session's next call on the
   * last one's result before it is stored, and answers each call only once it is (a store that commits
   * in groups then commits a session's queued calls together). A store shared by several processes
   * serialises calls with `withSessionLock` instead and leaves this unset.
   */
  readonly stagesSteps?: boolean;
  /** Appends a snapshot that no call produced (set, reset, real). */
  appendSnapshot(id: string, state: unknown, reason: Snapshot["reason"], at: string): Promise<Snapshot>;
  /** Stores a whole session in one transaction (snapshot 0 first, indexes consecutive): all or nothing. */
  importSession(record: SessionRecord, contents: SessionContents): Promise<void>;
  /**
   * Runs `run` while holding a lock on the session that every process sharing this store respects (a
   * store shared by several servers, such as Postgres, implements it; stores private to one process need
   * not, since the engine already runs one call of a session at a time in-process). The engine wraps each
   * call in it, so the read of the latest state, the simulation and the write happen under it: two calls
   * racing on one session from two replicas are serialised, and neither update is lost. Locks are per
   * session, never global. The lock is released when `run` settles, whatever it did.
   */
  withSessionLock?<T>(id: string, run: () => Promise<T>): Promise<T>;
  /**
   * Resolves when the store answers now (a readiness probe's question); rejects when it does not. Cheap:
   * callers may ask every few seconds. Stores in this process always answer.
   */
  ping?(): Promise<void>;
  /** Tells `watcher` about failures and lock waits (metrics) until the returned function is called. */
  watch?(watcher: (event: StoreEvent) => void): () => void;
  close(): Promise<void>;
}

/**
 * What a store reports to whoever watches it. `operation` is the Store method (a bounded set); `kind`
 * says what failed: `connect` (no connection could be made), `lost` (a connection died mid-way),
 * `timeout`, `in_doubt` (a commit whose outcome is unknown), `lock_lost` (the session lock's connection
 * died during a call), `closed` (the store was closed), `query` (the database refused a statement).
 */
export type StoreEvent =
  | { type: "failure"; operation: string; kind: StoreFailureKind }
  | { type: "lock-wait"; seconds: number };

export type StoreFailureKind = "connect" | "lost" | "timeout" | "in_doubt" | "lock_lost" | "closed" | "query";
