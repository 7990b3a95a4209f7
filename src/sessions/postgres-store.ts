import { AsyncLocalStorage } from "node:async_hooks";
import { createHash, randomBytes } from "node:crypto";
import pg, {
  type Pool,
  type PoolClient,
  type PoolConfig,
  type QueryConfig,
  type QueryResult,
  type QueryResultRow,
} from "pg";
import { TerrariumError } from "../core/errors.js";
import { toImmutableJson } from "../core/immutable-json.js";
import { applyChanges, diffJson, type JsonChange } from "../core/json-diff.js";
import { type CheckpointPolicy, DEFAULT_CHECKPOINTS, extendsChain } from "./checkpoints.js";
import { Lru } from "./lru.js";
import type {
  HistoryEntry,
  SessionContents,
  SessionRecord,
  Snapshot,
  Store,
  StoreEvent,
  StoreFailureKind,
} from "./types.js";

/**
 * Version of the Postgres layout (the highest migration below). Recorded row by row in
 * `terrarium_migrations`; a database at a higher version than this code knows is refused.
 */
export const POSTGRES_STORE_SCHEMA_VERSION = 1;

/** Key of the transaction-scoped advisory lock migrations run under (any constant; "terrarium"). */
const MIGRATION_LOCK = 0x7465727261726975n;

/** Numbered migrations, applied in order, each in the transaction that records it. */
const MIGRATIONS: Array<{ version: number; description: string; sql: string }> = [
  {
    version: 1,
    description: "sessions, content-addressed checkpoint states, change-based snapshots, history",
    sql: `
      CREATE TABLE terrarium_sessions (
        id TEXT PRIMARY KEY,
        seq BIGSERIAL NOT NULL,
        owner TEXT,
        record TEXT NOT NULL
      );
      CREATE INDEX terrarium_sessions_by_owner ON terrarium_sessions (owner, seq);
      CREATE TABLE terrarium_states (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, state TEXT NOT NULL);
      CREATE TABLE terrarium_snapshots (
        session TEXT NOT NULL REFERENCES terrarium_sessions (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        at TEXT NOT NULL,
        reason TEXT NOT NULL,
        checkpoint TEXT REFERENCES terrarium_states (hash),
        changes TEXT,
        PRIMARY KEY (session, idx)
      );
      CREATE INDEX terrarium_snapshots_by_checkpoint ON terrarium_snapshots (checkpoint)
        WHERE checkpoint IS NOT NULL;
      CREATE TABLE terrarium_history (
        session TEXT NOT NULL REFERENCES terrarium_sessions (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (session, idx)
      );`,
  },
];

/**
 * The hot path's function: taking a session's lock and reading what a call needs, in one round trip. It
 * is code, not layout: defined again at every start (under the migration lock), with the version in its
 * name so that replicas of two terrarium versions each call their own during a rolling upgrade (v1, the
 * function of the version before, took the same locks). VOLATILE plpgsql: in READ COMMITTED each statement
 * in it takes a new snapshot, so what follows the lock wait sees what the holder before committed.
 *
 * The caller says what it has cached (the session row's sequence number, its latest snapshot's index, its
 * last call's index); the common answer is then one row of a few numbers. Only when the cache is behind
 * does it carry the snapshots since the cached one (their changes, or their checkpoint), and, when the
 * cache is cold or far behind, the chain since the latest checkpoint: never more than that chain.
 */
const FUNCTIONS_SQL = `
CREATE OR REPLACE FUNCTION terrarium_lock_v2(
  p_session TEXT, p_seq BIGINT, p_known INTEGER, p_known_entry INTEGER,
  OUT o_seq BIGINT, OUT o_record TEXT, OUT o_idx INTEGER, OUT o_at TEXT, OUT o_reason TEXT,
  OUT o_next_entry INTEGER, OUT o_last_at TEXT, OUT o_from INTEGER,
  OUT o_checkpoints TEXT[], OUT o_sizes INTEGER[], OUT o_changes TEXT[])
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_from INTEGER;
BEGIN
  PERFORM pg_advisory_lock(hashtextextended(p_session, 0));
  -- A step that released the lock may not have committed yet: wait until it has.
  PERFORM pg_advisory_xact_lock_shared(hashtextextended(p_session, 1));
  SELECT s.seq, CASE WHEN s.seq IS DISTINCT FROM p_seq THEN s.record END, l.idx, l.at, l.reason,
         COALESCE(e.idx + 1, 0),
         CASE WHEN s.seq IS DISTINCT FROM p_seq OR e.idx IS DISTINCT FROM p_known_entry
              THEN e.entry::json->>'at' END
    INTO o_seq, o_record, o_idx, o_at, o_reason, o_next_entry, o_last_at
    FROM terrarium_sessions s
    LEFT JOIN LATERAL (SELECT x.idx, x.at, x.reason FROM terrarium_snapshots x
                        WHERE x.session = p_session ORDER BY x.idx DESC LIMIT 1) l ON true
    LEFT JOIN LATERAL (SELECT h.idx, h.entry FROM terrarium_history h
                        WHERE h.session = p_session ORDER BY h.idx DESC LIMIT 1) e ON true
   WHERE s.id = p_session;
  IF o_seq IS NULL OR o_idx IS NULL OR (o_seq = p_seq AND o_idx = p_known) THEN
    RETURN;
  END IF;
  IF o_seq = p_seq AND p_known >= 0 AND o_idx > p_known AND o_idx - p_known <= 1000 THEN
    v_from := p_known + 1;
  ELSE
    -- Cold, or far behind: the chain from the latest checkpoint.
    SELECT y.idx INTO v_from FROM terrarium_snapshots y
     WHERE y.session = p_session AND y.checkpoint IS NOT NULL AND y.idx <= o_idx
     ORDER BY y.idx DESC LIMIT 1;
  END IF;
  o_from := v_from;
  SELECT array_agg(c.checkpoint ORDER BY c.idx), array_agg(st.size ORDER BY c.idx),
         array_agg(c.changes ORDER BY c.idx)
    INTO o_checkpoints, o_sizes, o_changes
    FROM terrarium_snapshots c LEFT JOIN terrarium_states st ON st.hash = c.checkpoint
   WHERE c.session = p_session AND c.idx >= v_from AND c.idx <= o_idx;
END
$fn$;`;

/**
 * A step under the session's lock, in one statement (its own transaction), on the lock's connection: the
 * history entry and, when the state changed, the snapshot (and a checkpoint's state), at the indexes the
 * lock's read gave. Under the lock nobody else writes the session, and the primary keys refuse an index
 * written twice, so nothing is read first (no row lock either: every writer of a session holds its
 * advisory lock). The session row must still be the one read (`seq`: not deleted, not made again). The
 * statement releases the lock before its commit, holding the second key until then, so that the next
 * holder's lock function reads this step (and the call saves the unlock's round trip), unless told to
 * keep it ($12: the replica keeps the session for its next call, see `PostgresStoreOptions.leaseMs`).
 */
const STEP_SQL = `
WITH s AS (SELECT id FROM terrarium_sessions WHERE id = $1 AND seq = $2),
st AS (INSERT INTO terrarium_states (hash, size, state)
       SELECT $8::text, $9::int, $10::text FROM s WHERE $8::text IS NOT NULL
       ON CONFLICT (hash) DO UPDATE SET hash = EXCLUDED.hash RETURNING 1),
sn AS (INSERT INTO terrarium_snapshots (session, idx, at, reason, checkpoint, changes)
       SELECT s.id, $5::int, $6::text, $7::text, $8::text, $11::text FROM s WHERE $5::int IS NOT NULL
       RETURNING 1),
h AS (INSERT INTO terrarium_history (session, idx, entry) SELECT s.id, $3::int, $4::text FROM s RETURNING 1)
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM h) THEN NULL
            WHEN $12::boolean THEN false
            WHEN pg_try_advisory_xact_lock(hashtextextended($1, 1))
            THEN pg_advisory_unlock(hashtextextended($1, 0))
            ELSE false END AS unlocked`;

/** When a snapshot is stored whole instead of as changes: the SQLite store's policy (checkpoints.ts). */
export type PostgresCheckpointPolicy = CheckpointPolicy;

export interface PostgresStoreOptions {
  /** Connections for queries and transactions (default 10, or `TERRARIUM_PG_POOL`). */
  poolSize?: number;
  /**
   * Connections that hold per-session advisory locks while a call runs, and between calls while kept
   * (default: 20 or the pool size if larger, or `TERRARIUM_PG_LOCK_POOL`). Kept apart from the query
   * pool so that lock holders can always query.
   */
  lockPoolSize?: number;
  /**
   * Milliseconds a replica keeps a session's lock (and its lock connection) after a call when nobody else
   * wrote the session since this replica's call before (default 250, or `TERRARIUM_PG_LEASE_MS`; 0:
   * never). The next call on the session here then starts without asking the database (its cache is
   * current as long as the lock is held) and commits with other sessions' steps: one round trip per call,
   * shared. A call on that session through another replica is seen waiting at this replica's next write,
   * and the lock is let go after that call; an idle kept lock it waits out (at most this long), and calls
   * here that follow each other without a break let go after 40 times this long whatever happens. The
   * session's calls then alternate and none is kept. Kept locks never take the last free lock connection.
   */
  leaseMs?: number;
  /** A schema to create the tables in (created if missing); the connection's default otherwise. */
  schema?: string;
  checkpoints?: PostgresCheckpointPolicy;
  /** Milliseconds the first connection (at open) may take before the store gives up (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * Milliseconds a query may wait for a free connection of the query pool, or a new one, while serving
   * (default 60 s). Waiting for a lock connection has no limit: it is waiting for the session's turn.
   */
  poolTimeoutMs?: number;
  /**
   * Milliseconds a ping (readiness) or the check of a commit in doubt may take, connecting included
   * (default 2 s).
   */
  probeTimeoutMs?: number;
  /** Where the one line per outage and per recovery goes (default: stderr). */
  log?: (line: string) => void;
}

const STATE_CACHE_SIZE = 256;
const CHECKPOINT_CACHE_SIZE = 32;

/** Anything that runs a query: the pool or a client inside a transaction. */
interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(
    text: string | QueryConfig,
    values?: unknown[],
  ): Promise<QueryResult<R>>;
}

/** Whether `--db` names a Postgres database rather than a SQLite file. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value.trim());
}

/** A Postgres URL checked before anything connects: where it points, never its password. */
export function describePostgresUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new TerrariumError("INVALID_INPUT", "the database URL is not a valid postgres:// URL");
  }
  if (!/^postgres(ql)?:$/i.test(url.protocol))
    throw new TerrariumError(
      "INVALID_INPUT",
      `the database URL must start with postgres:// or postgresql:// (got ${url.protocol}//)`,
    );
  if (!url.hostname && !url.searchParams.get("host"))
    throw new TerrariumError(
      "INVALID_INPUT",
      "the database URL names no host (postgres://user:pass@host:5432/db)",
    );
  if (url.port && !/^\d+$/.test(url.port))
    throw new TerrariumError("INVALID_INPUT", `the database URL's port is not a number: ${url.port}`);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ""));
  if (database.includes("/"))
    throw new TerrariumError(
      "INVALID_INPUT",
      `the database URL's path is not one database name: ${database}`,
    );
  const user = url.username ? `${decodeURIComponent(url.username)}@` : "";
  const host = url.hostname || url.searchParams.get("host");
  return `postgres://${user}${host}:${url.port || "5432"}/${database || "(default database)"}`;
}

/**
 * Sessions in PostgreSQL, for several `terrarium serve` replicas sharing one database. The layout is the
 * SQLite store's: a snapshot is stored as its changes from the one before, with a whole checkpoint every
 * so often, checkpoints stored once per content (keyed by a hash); a step's history entry and its
 * snapshot are written in one transaction, and writers of one session queue on its row lock, so indexes
 * never collide. The latest state of recently used sessions is kept parsed, but it is only used once the
 * database confirms it is still the latest (another replica may have moved the session on).
 *
 * `withSessionLock` serialises whole calls on one session across replicas with a per-session advisory
 * lock, held on a connection of a separate lock pool. A call under it costs at most two statements: one
 * takes the lock and returns what the call reads (`FUNCTIONS_SQL`: a few numbers when this replica's cache
 * is current, else the changes since the state it has cached, or the chain from the latest checkpoint);
 * the other writes the step (`STEP_SQL`), built here on that very snapshot at the indexes read, and
 * releases the lock as it commits. When nobody else wrote the session since this replica's call before,
 * the lock is kept for the next call here (`leaseMs`), which then needs no lock statement, and its step
 * commits together with other sessions' steps ready meanwhile (`STEPS_SQL`, group commit). Outside a
 * lock, or when what is cached does not suffice, the store reads and writes in transactions as before.
 *
 * The database may go away and come back while serving (a restart, a failover): no connection error ever
 * reaches the process as an unhandled event, every method then fails with `STORE_UNAVAILABLE` (counted
 * for `watch`ers, one log line per outage and one when it is back), and the pools open new connections for
 * the next call, so serving resumes as soon as the database accepts connections. Nothing is retried
 * behind the caller's back: a write whose COMMIT was sent but never confirmed is checked on a connection
 * of its own; when even that cannot tell, the caller hears that the outcome is unknown (`details.written`).
 *
 * Open with `PostgresStore.open(url)` to connect and migrate before use; `new PostgresStore(url)` does
 * the same lazily (every method waits for it, and asks again after a failed attempt).
 */
export class PostgresStore implements Store {
  private readonly pool: Pool;
  private readonly locks: Pool;
  /** Connections for pings and for settling commits in doubt: short timeouts, never behind the busy pool. */
  private readonly probes: Pool;
  private readonly probeTimeoutMs: number;
  private readonly runMigrations: () => Promise<void>;
  private preparing: Promise<void> | undefined;
  private prepared = false;
  private readonly policy: PostgresCheckpointPolicy;
  private readonly latest = new Lru<string, Snapshot>(STATE_CACHE_SIZE);
  private readonly checkpoints = new Lru<string, unknown>(CHECKPOINT_CACHE_SIZE);
  /** The last history entries of recent sessions, as stored, checked against the lock's read before use. */
  private readonly windows = new Lru<string, HistoryWindow>(STATE_CACHE_SIZE);
  /** The last call of recent sessions (index and time), checked against the lock's read before use. */
  private readonly lastCalls = new Lru<string, { seq: string; index: number; at: string }>(STATE_CACHE_SIZE);
  /**
   * Recent sessions' rows (sequence number and record): what the rest caches is of that very session,
   * and the lock's read sends the record only to a replica that does not know it.
   */
  private readonly records = new Lru<string, { seq: string; text: string }>(STATE_CACHE_SIZE);
  private readonly leaseMs: number;
  /** Steps of kept sessions waiting for the next group commit, and the group commits on their way. */
  private readonly queued: Queued[] = [];
  private writing = 0;
  /** When a group commit last looked for waiting replicas (see WAITER_PROBE_MS). */
  private waitersProbedAt = Number.NEGATIVE_INFINITY;
  /** Sessions whose lock this replica keeps between calls (oldest first), with their connection. */
  private readonly leases = new Map<string, Lease>();
  /** Sessions whose lock a call of this replica holds right now (kept ones are in `leases`). */
  private readonly holding = new Map<string, HeldLock>();
  /** Sessions a `deleteSession` here waits to lock: their calls let the lock go rather than keep it. */
  private readonly deleting = new Map<string, number>();
  /** Whether the hot path's functions are in the database (set once migrated). */
  private fast = false;
  private readonly watchers = new Set<(event: StoreEvent) => void>();
  private readonly log: (line: string) => void;
  /** When the current outage began (undefined while the database answers): one log line per outage. */
  private downSince: number | undefined;
  private closed = false;
  /** Where the store connects, for messages (no password). */
  readonly where: string;

  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const store = new PostgresStore(url, options);
    try {
      await store.prepare();
    } catch (error) {
      await store.close().catch(() => undefined);
      if (error instanceof TerrariumError) throw error;
      // Only here, at start-up, is an unreachable database the caller's problem: the --db they gave.
      throw new TerrariumError(
        "INVALID_INPUT",
        `cannot connect to Postgres at ${store.where}: ${reasonOf(error)}`,
        {
          cause: error,
        },
      );
    }
    return store;
  }

  constructor(
    readonly url: string,
    options: PostgresStoreOptions = {},
  ) {
    this.where = describePostgresUrl(url);
    this.policy = options.checkpoints ?? DEFAULT_CHECKPOINTS;
    const poolSize = options.poolSize ?? envInteger("TERRARIUM_PG_POOL") ?? 10;
    // A call holds a lock connection, and a kept lock holds one between calls: enough for the sessions
    // a replica serves at once, so that kept locks pay (an idle backend costs memory, not CPU).
    const lockPoolSize =
      options.lockPoolSize ?? envInteger("TERRARIUM_PG_LOCK_POOL") ?? Math.max(poolSize, 20);
    if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema))
      throw new TerrariumError("INVALID_INPUT", `not a plain schema name: ${options.schema}`);
    this.probeTimeoutMs = positiveMs(options.probeTimeoutMs, "probeTimeoutMs") ?? 2000;
    this.leaseMs = options.leaseMs ?? envInteger("TERRARIUM_PG_LEASE_MS", 0) ?? 250;
    if (!Number.isFinite(this.leaseMs) || this.leaseMs < 0)
      throw new TerrariumError("CONFIG_INVALID", `leaseMs must be 0 or more (got ${this.leaseMs})`);
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    const config: PoolConfig = {
      connectionString: url,
      ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    };
    this.pool = new pg.Pool({
      ...config,
      max: Math.max(1, poolSize),
      connectionTimeoutMillis: options.poolTimeoutMs ?? 60_000,
    });
    this.locks = new pg.Pool({ ...config, max: Math.max(1, lockPoolSize), connectionTimeoutMillis: 0 });
    this.probes = new pg.Pool({ ...config, max: 2, connectionTimeoutMillis: this.probeTimeoutMs });
    for (const pool of [this.pool, this.locks, this.probes]) {
      // pg emits 'error' when a connection dies: through the pool for an idle one, on the client itself for
      // one in use (between two queries of a transaction, or holding a lock). Unheard, either ends the
      // process. The failure itself reaches whoever was using the connection as a failed query, and a
      // dead connection is never handed out again (the pool drops it when it is released).
      pool.on("error", () => undefined);
      pool.on("connect", (client) => client.on("error", () => undefined));
    }
    this.runMigrations = () =>
      this.migrate(
        new pg.Client({ ...config, connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000 }),
        options.schema,
      );
    // Started now; every method waits for it. The catch keeps an unawaited failure from being unhandled.
    this.prepare().catch(() => undefined);
  }

  /** The layout version the database is at (after migrations). */
  async schemaVersion(): Promise<number> {
    return this.guard("schemaVersion", async () => {
      const { rows } = await this.pool.query<{ v: number | null }>(
        "SELECT MAX(version) AS v FROM terrarium_migrations",
      );
      return rows[0]?.v ?? 0;
    });
  }

  /**
   * Whether the database answers now: `SELECT 1` on a connection of its own (so a busy pool does not make
   * a healthy database look down), within the probe timeout. Rejects with `STORE_UNAVAILABLE` otherwise.
   */
  async ping(): Promise<void> {
    if (!this.prepared) {
      // Not migrated yet (a store opened lazily): not ready, and the next call tries again.
      return this.guard("ping", async () => undefined);
    }
    await this.guard("ping", () =>
      this.onProbe(async (db) => {
        await db.query("SELECT 1");
      }),
    );
  }

  watch(watcher: (event: StoreEvent) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  async withSessionLock<T>(id: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const { client, held } = this.takeLease(id) ?? (await this.lock(id));
    this.emit({ type: "lock-wait", seconds: (performance.now() - started) / 1000 });
    this.holding.set(id, held);
    try {
      return await heldLocks.run(held, run);
    } finally {
      if (this.holding.get(id) === held) this.holding.delete(id);
      this.release(held, client);
    }
  }

  /**
   * The session's record as read under its lock, when this replica holds that lock now (a call of its
   * own runs under it, or it is kept between calls) and the lock's read confirmed it: nobody else can
   * delete or replace the session meanwhile (`deleteSession` takes the lock too), so it is the
   * database's answer without asking it. Undefined otherwise.
   */
  private lockedRecord(id: string): string | undefined {
    const held = this.holding.get(id) ?? this.leases.get(id)?.held;
    if (!held || held.lost || held.unlocked || this.closed) return undefined;
    const prefetch = held.prefetch;
    if (prefetch?.seq === undefined || prefetch.record === undefined) return undefined;
    return this.records.get(id)?.seq === prefetch.seq ? prefetch.record : undefined;
  }

  /**
   * Runs `run` holding session `id`'s lock (on a connection of the lock pool, given back after), unless
   * the current call already holds it. A lock this replica keeps on the session is let go first, and a
   * call of its own running on it lets it go when done (see `deleting`).
   */
  private async underLock<T>(id: string, run: () => Promise<T>): Promise<T> {
    if (this.heldFor(id)) return run();
    this.dropLease(this.leases.get(id));
    if (this.spareLockConnections() === 0) this.dropLease(this.leases.values().next().value);
    const client = await this.connect(this.locks);
    try {
      await client.query({ name: "terrarium_lock", text: LOCK_SQL, values: [id] });
    } catch (error) {
      // A connection that failed is destroyed: closing it releases whatever lock it still held.
      client.release(asError(error));
      throw error;
    }
    try {
      return await run();
    } finally {
      void client.query({ name: "terrarium_unlock", text: UNLOCK_SQL, values: [id] }).then(
        () => client.release(),
        (error: unknown) => client.release(asError(error)),
      );
    }
  }

  /** Takes session `id`'s lock on a connection of the lock pool, reading what the call needs with it. */
  private lock(id: string): Promise<{ client: PoolClient; held: HeldLock }> {
    return this.guard("sessionLock", async () => {
      // Every connection taken by a kept lock: the oldest gives its connection back rather than make
      // this call wait for it.
      if (this.spareLockConnections() === 0) this.dropLease(this.leases.values().next().value);
      const client = await this.connect(this.locks);
      const held: HeldLock = { store: this, id, lost: false, client };
      // The lock lives as long as this connection: once it dies, the session is no longer ours.
      const onError = () => {
        held.lost = true;
        const lease = this.leases.get(id);
        if (lease?.held === held) this.dropLease(lease);
      };
      client.on("error", onError);
      held.forget = () => client.off("error", onError);
      try {
        if (this.fast) await this.lockAndRead(held);
        else await client.query({ name: "terrarium_lock", text: LOCK_SQL, values: [id] });
        held.since = performance.now();
      } catch (error) {
        held.lost = true;
        held.forget();
        // A connection that failed is destroyed: closing it releases whatever lock it still held.
        client.release(asError(error));
        throw error;
      }
      return { client, held };
    });
  }

  /** The lock this replica kept on session `id` after its last call, for the next one. */
  private takeLease(id: string): { client: PoolClient; held: HeldLock } | undefined {
    const lease = this.leases.get(id);
    if (!lease) return undefined;
    this.leases.delete(id);
    clearTimeout(lease.timer);
    const { held } = lease;
    if (held.lost || this.closed || !held.prefetch?.fresh) {
      this.giveBack(held, lease.client);
      return undefined;
    }
    held.read = undefined;
    held.unlocked = false;
    return { client: lease.client, held };
  }

  /** Whether a call may keep its session's lock after it: see `PostgresStoreOptions.leaseMs`. */
  private mayKeep(held: HeldLock): boolean {
    return (
      this.leaseMs > 0 &&
      !this.closed &&
      !held.lost &&
      held.prefetch?.fresh === true &&
      !held.wanted &&
      !this.deleting.has(held.id) &&
      // Held this long without a break, it is let go whatever happens (a replica waiting for the session
      // is seen at the next write and gets its turn then; this is the backstop).
      performance.now() - (held.since ?? 0) < 40 * this.leaseMs &&
      (this.leases.has(held.id) || this.spareLockConnections() > 1)
    );
  }

  /** Lock connections a call could take now without waiting (idle, or not yet opened). */
  private spareLockConnections(): number {
    const pool = this.locks as Pool & { options: { max: number } };
    return pool.options.max - pool.totalCount + pool.idleCount - pool.waitingCount;
  }

  /** Ends a kept lock now: unlocked, its connection back to the pool. */
  private dropLease(lease: Lease | undefined): void {
    if (!lease || this.leases.get(lease.held.id) !== lease) return;
    this.leases.delete(lease.held.id);
    clearTimeout(lease.timer);
    this.giveBack(lease.held, lease.client);
  }

  /**
   * Gives the lock's connection back once the session is unlocked. Everything the call wrote is committed
   * by now, so the answer need not wait for the unlock: the next holder (here or elsewhere) waits for it in
   * the database. A call whose step released the lock as it committed needs no unlock. A connection that
   * died took its lock with it and is dropped.
   */
  private release(held: HeldLock, client: PoolClient): void {
    if (!held.unlocked && this.mayKeep(held)) {
      const lease: Lease = {
        held,
        client,
        timer: setTimeout(() => this.dropLease(lease), this.leaseMs),
      };
      lease.timer.unref?.();
      this.leases.set(held.id, lease);
      return;
    }
    this.giveBack(held, client);
  }

  private giveBack(held: HeldLock, client: PoolClient): void {
    held.prefetch = undefined;
    const done = (error?: Error) => {
      held.forget?.();
      client.release(error ?? (held.lost ? new Error("the lock's connection failed") : undefined));
    };
    if (held.unlocked) done();
    else
      void client.query({ name: "terrarium_unlock", text: UNLOCK_SQL, values: [held.id] }).then(
        () => done(),
        (error: unknown) => done(asError(error)),
      );
  }

  /**
   * Takes the session's lock on the held connection and reads what a call needs, in one round trip: the
   * record, the latest snapshot, the next history index; the chain since the last checkpoint and the
   * changes since the cached snapshot only when the cached state lacks them.
   */
  private async lockAndRead(held: HeldLock): Promise<Prefetch> {
    const { id } = held;
    const known = this.records.get(id);
    const cached = known && this.latest.get(id);
    const chain = cached && chains.get(cached);
    const lastCall = known && this.lastCalls.get(id);
    const { rows } = await (held.client as PoolClient).query({
      name: "terrarium_lock_v2",
      text: "SELECT * FROM terrarium_lock_v2($1, $2, $3, $4)",
      values: [
        id,
        known?.seq ?? null,
        // A cached state whose chain is unknown cannot choose between changes and a checkpoint: cold.
        cached && chain ? cached.index : -1,
        lastCall && lastCall.seq === known.seq ? lastCall.index : -1,
      ],
      rowMode: "array",
    } as QueryConfig);
    const row = rows[0] as unknown as LockColumns | undefined;
    const seq = row?.[0] ?? null;
    if (row === undefined || seq === null || row[2] === null) {
      held.prefetch = { nextEntry: 0 };
      return held.prefetch;
    }
    if (row[1] !== null) {
      // Not known here, or a session made again under the same id: nothing cached before holds.
      this.forgetSession(id);
      this.records.set(id, { seq, text: row[1] });
    }
    const record = (this.records.get(id) as { text: string }).text;
    const nextEntry = row[5];
    if (row[6] !== null && nextEntry > 0) this.lastCalls.set(id, { seq, index: nextEntry - 1, at: row[6] });
    const prefetch: Prefetch = {
      seq,
      record,
      latest: { idx: row[2], at: row[3] as string, reason: row[4] as Snapshot["reason"] },
      nextEntry,
    };
    if (row[7] !== null)
      prefetch.catchup = {
        from: row[7],
        checkpoints: row[8] ?? [],
        sizes: row[9] ?? [],
        changes: row[10] ?? [],
      };
    else if (cached && chain && row[2] === cached.index) {
      prefetch.chain = chain;
      // Nobody wrote the session since this replica did: it may keep the lock for its next call.
      prefetch.fresh = true;
    }
    held.prefetch = prefetch;
    return prefetch;
  }

  /** Drops what this replica cached of session `id`. */
  private forgetSession(id: string): void {
    this.records.delete(id);
    this.latest.delete(id);
    this.windows.delete(id);
    this.lastCalls.delete(id);
  }

  /**
   * A write after the call's step released the lock (a call that writes twice): the lock is taken again,
   * and if the session moved on meanwhile the lock counts as lost, so the write is refused.
   */
  private async relock(held: HeldLock): Promise<void> {
    if (!held.unlocked || held.lost) return;
    const prefetch = await this.lockAndRead(held);
    held.unlocked = false;
    held.since = performance.now();
    if (held.read !== undefined && prefetch.latest?.idx !== held.read) held.lost = true;
  }

  async createSession(record: SessionRecord, initialState: unknown): Promise<void> {
    const snapshot: Snapshot = {
      index: 0,
      at: record.createdAt,
      reason: record.parent ? "fork" : "initial",
      state: toImmutableJson(initialState ?? null),
    };
    const text = JSON.stringify(record);
    let seq: string | undefined;
    await this.guard("createSession", () =>
      this.transaction(
        async (db) => {
          seq = await this.insertSession(db, record);
          const { size } = await this.writeCheckpoint(
            db,
            record.id,
            0,
            snapshot.at,
            snapshot.reason,
            snapshot.state,
          );
          chains.set(snapshot, { size, n: 0, bytes: 0 });
        },
        async (db) => (await storedRecord(db, record.id)) === text,
      ),
    );
    this.forgetSession(record.id);
    this.latest.set(record.id, snapshot);
    // Known from the insert; undefined only when the commit was settled by asking.
    if (seq !== undefined) this.records.set(record.id, { seq, text });
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    // Under the session's lock, the lock's read is the answer (a record never changes; deletion shows).
    const prefetch = this.heldFor(id)?.prefetch;
    if (prefetch)
      return prefetch.record === undefined ? undefined : (JSON.parse(prefetch.record) as SessionRecord);
    // A lock this replica holds on the session (the call before this one's, or a kept one): no round trip.
    const locked = this.lockedRecord(id);
    if (locked !== undefined) return JSON.parse(locked) as SessionRecord;
    return this.guard("getSession", async () => {
      const text = await storedRecord(this.pool, id);
      return text === undefined ? undefined : (JSON.parse(text) as SessionRecord);
    });
  }

  async listSessions(owner?: string): Promise<SessionRecord[]> {
    return this.guard("listSessions", async () => {
      const { rows } =
        owner === undefined
          ? await this.pool.query<{ record: string }>("SELECT record FROM terrarium_sessions ORDER BY seq")
          : await this.pool.query<{ record: string }>(
              "SELECT record FROM terrarium_sessions WHERE owner = $1 ORDER BY seq",
              [owner],
            );
      return rows.map((row) => JSON.parse(row.record) as SessionRecord);
    });
  }

  async countSessions(owner?: string): Promise<number> {
    return this.guard("countSessions", async () => {
      // Served by terrarium_sessions_by_owner; every replica sharing the database sees the same count.
      const { rows } =
        owner === undefined
          ? await this.pool.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM terrarium_sessions")
          : await this.pool.query<{ n: number }>(
              "SELECT COUNT(*)::int AS n FROM terrarium_sessions WHERE owner = $1",
              [owner],
            );
      return rows[0]?.n ?? 0;
    });
  }

  async deleteSession(id: string): Promise<boolean> {
    this.dropLease(this.leases.get(id));
    this.forgetSession(id);
    // Under the session's lock, as every writer of a session: a replica holding the lock (in a call, or
    // kept) may then trust what it read under it, the record included (`lockedRecord`).
    this.deleting.set(id, (this.deleting.get(id) ?? 0) + 1);
    let result: { deleted: boolean; hashes: string[] };
    try {
      result = await this.guard("deleteSession", () =>
        this.underLock(id, () =>
          this.transaction(
            async (db) => {
              const found = await db.query<{ checkpoint: string }>(
                "SELECT DISTINCT checkpoint FROM terrarium_snapshots WHERE session = $1 AND checkpoint IS NOT NULL",
                [id],
              );
              // Snapshots and history go with the session (ON DELETE CASCADE).
              const result = await db.query("DELETE FROM terrarium_sessions WHERE id = $1", [id]);
              return {
                deleted: (result.rowCount ?? 0) > 0,
                hashes: found.rows.map((row) => row.checkpoint),
              };
            },
            async (db) => (await storedRecord(db, id)) === undefined,
          ),
        ),
      );
    } finally {
      const left = (this.deleting.get(id) ?? 1) - 1;
      if (left > 0) this.deleting.set(id, left);
      else this.deleting.delete(id);
    }
    const { deleted, hashes } = result;
    this.forgetSession(id);
    // States no snapshot uses any more, freed one by one and at best effort: a session created meanwhile
    // from the same state holds a key lock on it, and the foreign key then keeps the row.
    for (const hash of hashes) {
      await this.pool
        .query(
          "DELETE FROM terrarium_states s WHERE s.hash = $1 AND NOT EXISTS (SELECT 1 FROM terrarium_snapshots WHERE checkpoint = $1)",
          [hash],
        )
        .catch(() => undefined);
    }
    return deleted;
  }

  async latestSnapshot(id: string): Promise<Snapshot> {
    return this.guard("latestSnapshot", async () => {
      const held = this.heldFor(id);
      const prefetch = held?.prefetch;
      let snapshot: Snapshot | undefined;
      if (prefetch) {
        if (!prefetch.latest) throw unknownSession(id);
        snapshot = await this.latestFromPrefetch(id, prefetch);
      } else {
        snapshot = await this.readLatest(this.pool, id);
      }
      if (!snapshot) throw unknownSession(id);
      // Under the session's lock, the step written next must build on exactly this snapshot.
      if (held) held.read = snapshot.index;
      return { ...snapshot };
    });
  }

  /**
   * The session, its latest snapshot and its last call. Under the session's lock this is what the lock's
   * query read (no round trip when the latest state and the last call are cached); otherwise one query.
   */
  async head(id: string): Promise<{
    record: SessionRecord;
    snapshot: Snapshot;
    lastCall?: { index: number; at: string };
  }> {
    const held = this.heldFor(id);
    const prefetch = held?.prefetch;
    return this.guard("head", async () => {
      let record: string;
      let row: SnapshotRow | undefined;
      let lastCall: { index: number; at: string } | undefined;
      if (prefetch) {
        if (prefetch.record === undefined || !prefetch.latest) throw unknownSession(id);
        record = prefetch.record;
        if (prefetch.nextEntry > 0) {
          const cached = this.lastCalls.get(id);
          lastCall =
            cached && cached.seq === prefetch.seq && cached.index === prefetch.nextEntry - 1
              ? { index: cached.index, at: cached.at }
              : undefined;
        }
      } else {
        const { rows } = await this.pool.query<
          SnapshotRow & { record: string; last_idx: number | null; last_at: string | null }
        >({
          name: "terrarium_head",
          text: HEAD_SQL,
          values: [id],
        });
        const found = rows[0];
        if (!found || found.idx === null) throw unknownSession(id);
        record = found.record;
        row = found;
        if (found.last_idx !== null && found.last_at !== null)
          lastCall = { index: found.last_idx, at: found.last_at };
      }
      if (prefetch && prefetch.nextEntry > 0 && !lastCall) {
        // Not known here (a session made again under the same id): asked for.
        const [last] = await this.history(id, 1);
        if (last) lastCall = { index: last.index, at: last.at };
      }
      const snapshot = (
        prefetch
          ? await this.latestFromPrefetch(id, prefetch)
          : await this.latestFromRow(this.pool, id, row as SnapshotRow)
      ) as Snapshot;
      // Under the session's lock, the step written next must build on exactly this snapshot.
      if (held) held.read = snapshot.index;
      return {
        record: JSON.parse(record) as SessionRecord,
        snapshot: { ...snapshot },
        ...(lastCall ? { lastCall } : {}),
      };
    });
  }

  async snapshot(id: string, index: number): Promise<Snapshot | undefined> {
    if (!Number.isInteger(index) || index < 0 || index > 2 ** 31 - 1) return undefined;
    return this.guard("snapshot", async () => {
      const found = await this.readSnapshot(this.pool, id, index);
      return found ? { ...found } : undefined;
    });
  }

  async snapshots(id: string): Promise<Snapshot[]> {
    return this.guard("snapshots", async () => {
      const { rows } = await this.pool.query<SnapshotRow>(
        "SELECT idx, at, reason, checkpoint, changes FROM terrarium_snapshots WHERE session = $1 ORDER BY idx",
        [id],
      );
      if (rows.length === 0) throw unknownSession(id); // every session has snapshot 0
      const snapshots: Snapshot[] = [];
      let state: unknown;
      for (const row of rows) {
        state =
          row.checkpoint !== null
            ? await this.checkpointState(this.pool, row.checkpoint)
            : applyRow(state, row);
        snapshots.push({ index: row.idx, at: row.at, reason: row.reason, state });
      }
      return snapshots;
    });
  }

  async history(id: string, last?: number): Promise<HistoryEntry[]> {
    const prefetch = this.heldFor(id)?.prefetch;
    if (prefetch && last !== undefined) {
      // Under the lock, a window of the last entries is used when it ends where the database says.
      if (prefetch.record === undefined) throw unknownSession(id);
      const count = Math.max(0, Math.floor(last));
      const window = this.windows.get(id);
      if (
        window &&
        window.seq === prefetch.seq &&
        window.next === prefetch.nextEntry &&
        (count <= window.texts.length || window.texts.length === window.next)
      )
        return window.texts.slice(Math.max(0, window.texts.length - count)).map(parseEntry);
    }
    return this.guard("history", async () => {
      const { rows } =
        last === undefined
          ? await this.pool.query<{ idx: number; entry: string }>({
              name: "terrarium_history",
              text: "SELECT idx, entry FROM terrarium_history WHERE session = $1 ORDER BY idx",
              values: [id],
            })
          : await this.pool.query<{ idx: number; entry: string }>({
              name: "terrarium_history_last",
              text: "SELECT idx, entry FROM (SELECT idx, entry FROM terrarium_history WHERE session = $1 ORDER BY idx DESC LIMIT $2) AS w ORDER BY idx",
              values: [id, Math.max(0, Math.floor(last))],
            });
      // An empty answer is either a session without calls or no session: only then is it worth asking.
      if (rows.length === 0) await this.requireSession(this.pool, id);
      const next = rows.length > 0 ? (rows[rows.length - 1] as { idx: number }).idx + 1 : 0;
      if (prefetch && prefetch.seq !== undefined && next === prefetch.nextEntry) {
        // Kept for the next calls: it ends at the entry the lock's read saw last.
        this.windows.set(id, {
          seq: prefetch.seq,
          next,
          texts: rows.slice(-WINDOW_SIZE).map((row) => row.entry),
        });
      }
      return rows.map((row) => parseEntry(row.entry));
    });
  }

  async appendStep(
    id: string,
    entry: Omit<HistoryEntry, "index" | "snapshot">,
    state?: { state: unknown; reason: Snapshot["reason"]; changes?: readonly JsonChange[] },
  ): Promise<HistoryEntry> {
    const next = state === undefined ? undefined : toImmutableJson(state.state ?? null);
    const held = this.heldFor(id);
    if (held?.unlocked) await this.guard("appendStep", () => this.relock(held));
    const plan = this.planStep(
      id,
      entry,
      state && { reason: state.reason, state: next, ...(state.changes ? { changes: state.changes } : {}) },
      held,
    );
    if (plan && held)
      return this.guard("appendStep", () =>
        // A step whose lock stays held commits with other sessions' steps (group commit); one that lets
        // the lock go commits on the lock's connection, unlocking as it does.
        this.mayKeep(held) ? this.writeKept(id, plan, held) : this.writeStep(id, plan, held),
      );
    let chain: Chain | undefined;
    const written = await this.guard("appendStep", () => {
      if (held?.lost) throw lockLost();
      return this.transaction(
        async (db) => {
          await this.lockSession(db, id);
          // Statements after the lock see, in READ COMMITTED, what the writer before us committed.
          if (!state) {
            const last = await db.query<{ n: number; latest: number | null }>(
              `SELECT (SELECT COALESCE(MAX(idx) + 1, 0) FROM terrarium_history WHERE session = $1) AS n,
                      (SELECT MAX(idx) FROM terrarium_snapshots WHERE session = $1) AS latest`,
              [id],
            );
            fence(held, last.rows[0]?.latest ?? null);
            return this.insertEntry(db, id, { ...entry, index: last.rows[0]?.n ?? 0 });
          }
          // The next history index, the latest snapshot and its checkpoint chain, in one round trip.
          const { rows } = await db.query<StepContextRow>(STEP_CONTEXT, [id]);
          const context = rows[0] as StepContextRow;
          fence(held, context.idx);
          // The changes are taken from the latest state as the database has it (under the row lock).
          const previous = (await this.latestFromRow(db, id, context)) as Snapshot;
          const index = previous.index + 1;
          chain = await this.writeSnapshot(db, id, index, entry.at, state.reason, previous.state, next, {
            size: context.base_size,
            n: context.chain_n,
            bytes: context.chain_bytes,
          });
          return this.insertEntry(db, id, { ...entry, index: context.next_entry, snapshot: index });
        },
        // A commit in doubt happened exactly when this very entry is stored at its index.
        async (db, full) => {
          const { rows } = await db.query<{ entry: string }>(
            "SELECT entry FROM terrarium_history WHERE session = $1 AND idx = $2",
            [id, full.index],
          );
          return rows[0]?.entry === JSON.stringify(full);
        },
      );
    });
    this.lastCalls.delete(id);
    if (held) held.prefetch = undefined; // what the lock read is no longer the latest
    if (written.snapshot !== undefined && state) {
      const snapshot: Snapshot = { index: written.snapshot, at: entry.at, reason: state.reason, state: next };
      this.latest.set(id, snapshot);
      if (chain) chains.set(snapshot, chain);
      if (held) held.read = written.snapshot;
    }
    return written;
  }

  /**
   * The one-round-trip write of a step, when the call holds the session's lock and knows, from the lock's
   * read, where the session ends, and the state it builds on is the cached one with its checkpoint chain
   * known: the entry's final text, the changes (or a checkpoint) and the indexes are made here. Undefined
   * otherwise (the transaction path then reads what it needs).
   */
  private planStep(
    id: string,
    entry: Omit<HistoryEntry, "index" | "snapshot">,
    state: { reason: Snapshot["reason"]; state: unknown; changes?: readonly JsonChange[] } | undefined,
    held: HeldLock | undefined,
  ): StepPlan | undefined {
    if (!this.fast || !held || held.lost) return undefined;
    const prefetch = held.prefetch;
    if (prefetch?.seq === undefined || !prefetch.latest) return undefined;
    const { index: _index, snapshot: _snapshot, ...rest } = entry as HistoryEntry;
    const text = JSON.stringify(rest);
    // The indexes are appended to the entry's text, exactly where JSON.stringify would place them.
    if (!text.startsWith("{") || text.length < 3) return undefined;
    const prefix = `${text.slice(0, -1)},"index":${prefetch.nextEntry}`;
    const base = { seq: prefetch.seq, rest, entryIndex: prefetch.nextEntry };
    if (!state) return { ...base, text: `${prefix}}` };
    const previous = this.latest.get(id);
    const chain = previous && chains.get(previous);
    if (!previous || !chain || previous.index !== prefetch.latest.idx) return undefined;
    if (held.read !== undefined && held.read !== previous.index) return undefined;
    const index = previous.index + 1;
    // The caller's exact changes are from the snapshot it read under this lock: this very one.
    const changes = JSON.stringify(
      state.changes && held.read === previous.index ? state.changes : diffJson(previous.state, state.state),
    );
    const made = { index, at: entry.at, reason: state.reason, state: state.state, changes };
    const full = { ...base, text: `${prefix},"snapshot":${index}}` };
    if (extendsChain(this.policy, chain, changes.length)) {
      const grown = { size: chain.size, n: chain.n + 1, bytes: chain.bytes + changes.length };
      return { ...full, snapshot: { ...made, chain: grown } };
    }
    // A checkpoint keeps its changes too: a replica whose state is one behind applies them, not the whole.
    const whole = JSON.stringify(state.state);
    const checkpoint = { hash: createHash("sha256").update(whole).digest("hex"), text: whole };
    const fresh = { size: whole.length, n: 0, bytes: 0 };
    return { ...full, snapshot: { ...made, checkpoint, chain: fresh } };
  }

  /**
   * Writes a planned step whose session stays locked: queued with the steps of other sessions that are
   * ready meanwhile, and committed with them in one statement on a query connection (at most
   * `WRITERS` such statements at once). Acknowledged once that statement committed: each step is stored
   * when its call answers, as alone. The lock stays with the call (released after the commit, never
   * before), so the session's next holder reads the step.
   */
  private async writeKept(id: string, plan: StepPlan, held: HeldLock): Promise<HistoryEntry> {
    if (held.lost) throw lockLost();
    await new Promise<void>((resolve, reject) => {
      this.queued.push({ id, plan, held, resolve, reject });
      this.flush();
    });
    held.unlocked = false;
    return this.written(id, plan, held);
  }

  /** Sends what is queued, as long as fewer than `WRITERS` statements are on their way. */
  private flush(): void {
    while (this.writing < WRITERS && this.queued.length > 0) {
      const batch = this.queued.splice(0, BATCH_MAX);
      this.writing++;
      void this.writeBatch(batch, true).finally(() => {
        this.writing--;
        this.flush();
      });
    }
  }

  /**
   * Writes `batch` in one statement. When the database refuses it (a step whose session was deleted, an
   * index already taken), nothing of it is stored: each step is then written alone, so each hears its own
   * answer. When the answer is lost, each step is looked for before it is answered; none is written again.
   */
  private async writeBatch(batch: Queued[], split: boolean): Promise<void> {
    const columns = {
      session: [] as string[],
      seq: [] as string[],
      entryIdx: [] as number[],
      entry: [] as string[],
      snapIdx: [] as Array<number | null>,
      at: [] as Array<string | null>,
      reason: [] as Array<string | null>,
      hash: [] as Array<string | null>,
      size: [] as Array<number | null>,
      state: [] as Array<string | null>,
      changes: [] as Array<string | null>,
    };
    for (const { id, plan } of batch) {
      const snap = plan.snapshot;
      columns.session.push(id);
      columns.seq.push(plan.seq);
      columns.entryIdx.push(plan.entryIndex);
      columns.entry.push(plan.text);
      columns.snapIdx.push(snap?.index ?? null);
      columns.at.push(snap?.at ?? null);
      columns.reason.push(snap?.reason ?? null);
      columns.hash.push(snap?.checkpoint?.hash ?? null);
      columns.size.push(snap?.checkpoint?.text.length ?? null);
      columns.state.push(snap?.checkpoint?.text ?? null);
      columns.changes.push(snap?.changes ?? null);
    }
    let stored: Set<string>;
    let wanted: Set<string>;
    try {
      const now = performance.now();
      const probe = now - this.waitersProbedAt >= WAITER_PROBE_MS;
      if (probe) this.waitersProbedAt = now;
      const { rows } = await this.pool.query({
        name: probe ? "terrarium_steps_v2" : "terrarium_steps_quiet_v2",
        text: probe ? STEPS_SQL : STEPS_QUIET_SQL,
        // The texts (JSON above all, full of quotes) go as binary arrays: nothing to escape here, nothing
        // to unescape in the server. The numbers stay text.
        values: [
          binaryTextArray(columns.session),
          columns.seq,
          columns.entryIdx,
          binaryTextArray(columns.entry),
          columns.snapIdx,
          binaryTextArray(columns.at),
          binaryTextArray(columns.reason),
          binaryTextArray(columns.hash),
          columns.size,
          binaryTextArray(columns.state),
          binaryTextArray(columns.changes),
        ],
        rowMode: "array",
      } as QueryConfig);
      const row = rows[0] as unknown as [string[] | null, string[] | null] | undefined;
      stored = new Set(row?.[0] ?? []);
      wanted = new Set(row?.[1] ?? []);
    } catch (error) {
      const failure = connectionFailure(error);
      if (failure === "closed") {
        // The store closed before the statement went out: nothing was sent.
        for (const { held, reject } of batch) {
          held.prefetch = undefined;
          reject(error);
        }
        return;
      }
      if (!failure) {
        if (split && batch.length > 1) {
          for (const one of batch) await this.writeBatch([one], false);
          return;
        }
        const code = (error as { code?: string }).code;
        for (const { id, held, reject } of batch) {
          held.prefetch = undefined; // not kept: the next call reads the session afresh
          // An index already taken: another writer got in (the lock was lost meanwhile); nothing written.
          if (code === "23505") {
            this.forgetSession(id);
            reject(lockLost());
          } else reject(code === "23503" ? unknownSession(id) : translate(error));
        }
        return;
      }
      // Sent but unanswered: it may have committed, all of it or nothing. Ask which, never write again.
      for (const { id } of batch) this.forgetSession(id);
      const found = await this.onProbe(async (db) => {
        const { rows } = await db.query<{ session: string; entry: string }>(
          "SELECT h.session, h.entry FROM terrarium_history h JOIN unnest($1::text[], $2::int[]) AS w(session, idx) ON h.session = w.session AND h.idx = w.idx",
          [columns.session, columns.entryIdx],
        );
        return new Map(rows.map((row) => [row.session, row.entry]));
      }).catch(() => undefined);
      for (const { id, plan, held, resolve, reject } of batch) {
        held.prefetch = undefined;
        if (found === undefined) reject(storeUnavailable("in_doubt", error));
        else if (found.get(id) === plan.text) resolve();
        else reject(error); // nothing was written: a plain outage
      }
      return;
    }
    for (const { id, held, resolve, reject } of batch) {
      if (wanted.has(id)) held.wanted = true;
      if (stored.has(id)) resolve();
      else {
        held.prefetch = undefined;
        // No session row with the sequence number read: deleted (perhaps made again) since.
        this.forgetSession(id);
        reject(unknownSession(id));
      }
    }
  }

  /** Writes a planned step on the lock's own connection, in one statement (its own transaction). */
  private async writeStep(id: string, plan: StepPlan, held: HeldLock): Promise<HistoryEntry> {
    if (held.lost) throw lockLost();
    const client = held.client as PoolClient;
    const snap = plan.snapshot;
    let unlocked: boolean | null;
    try {
      const { rows } = await client.query({
        name: "terrarium_step_v2",
        text: STEP_SQL,
        values: [
          id,
          plan.seq,
          plan.entryIndex,
          plan.text,
          snap?.index ?? null,
          snap?.at ?? null,
          snap?.reason ?? null,
          snap?.checkpoint?.hash ?? null,
          snap?.checkpoint?.text.length ?? null,
          snap?.checkpoint?.text ?? null,
          snap?.changes ?? null,
          this.mayKeep(held),
        ],
        rowMode: "array",
      } as QueryConfig);
      unlocked = (rows[0] as unknown as [boolean | null] | undefined)?.[0] ?? null;
    } catch (error) {
      if (!connectionFailure(error)) {
        const code = (error as { code?: string }).code;
        // An index already taken: another writer got in (the lock was lost meanwhile); nothing written.
        if (code === "23505") {
          this.forgetSession(id);
          throw lockLost();
        }
        if (code === "23503") throw unknownSession(id); // deleted meanwhile
        throw translate(error);
      }
      // The statement is its own transaction: sent but unanswered, it may have committed. Ask, on a
      // connection of our own, whether this very entry is stored; never write it again.
      held.prefetch = undefined;
      this.forgetSession(id);
      const found = await this.onProbe(async (db) => {
        const { rows } = await db.query<{ entry: string }>(
          "SELECT entry FROM terrarium_history WHERE session = $1 AND idx = $2",
          [id, plan.entryIndex],
        );
        return rows[0]?.entry === plan.text;
      }).catch(() => undefined);
      if (found === undefined) throw storeUnavailable("in_doubt", error);
      if (found === false) throw error; // nothing was written: a plain outage
      held.lost = true; // the lock's connection is gone, and the lock with it
      return parseEntry(plan.text);
    }
    // No session row with the sequence number read: deleted (perhaps made again) since.
    if (unlocked === null) {
      this.forgetSession(id);
      throw unknownSession(id);
    }
    held.unlocked = unlocked;
    return this.written(id, plan, held);
  }

  /** What a step's write moves on: the caches and what the lock read, so later reads need no round trip. */
  private written(id: string, plan: StepPlan, held: HeldLock): HistoryEntry {
    const snap = plan.snapshot;
    const full = { ...plan.rest, index: plan.entryIndex } as HistoryEntry;
    if (snap) {
      full.snapshot = snap.index;
      const snapshot: Snapshot = { index: snap.index, at: snap.at, reason: snap.reason, state: snap.state };
      this.latest.set(id, snapshot);
      chains.set(snapshot, snap.chain);
      if (snap.checkpoint) this.checkpoints.set(snap.checkpoint.hash, snap.state);
      held.read = snap.index;
    }
    // What the lock read moves on with this write, so reads later in the call still need no round trip.
    this.lastCalls.set(id, { seq: plan.seq, index: plan.entryIndex, at: plan.rest.at });
    const prefetch = held.prefetch;
    if (prefetch) {
      const window = this.windows.get(id);
      if (window && window.seq === prefetch.seq && window.next === plan.entryIndex) {
        window.texts.push(plan.text);
        if (window.texts.length > WINDOW_SIZE) window.texts.shift();
        window.next = plan.entryIndex + 1;
      }
      prefetch.nextEntry = plan.entryIndex + 1;
      if (snap) {
        prefetch.latest = { idx: snap.index, at: snap.at, reason: snap.reason };
        prefetch.chain = snap.chain;
        prefetch.catchup = undefined;
      }
    }
    return full;
  }

  private async insertEntry(db: Queryable, id: string, full: HistoryEntry): Promise<HistoryEntry> {
    await db.query("INSERT INTO terrarium_history (session, idx, entry) VALUES ($1, $2, $3)", [
      id,
      full.index,
      JSON.stringify(full),
    ]);
    return full;
  }

  async appendSnapshot(
    id: string,
    state: unknown,
    reason: Snapshot["reason"],
    at: string,
  ): Promise<Snapshot> {
    const next = toImmutableJson(state ?? null);
    const held = this.heldFor(id);
    if (held?.unlocked) await this.guard("appendSnapshot", () => this.relock(held));
    const { index, size } = await this.guard("appendSnapshot", () => {
      if (held?.lost) throw lockLost();
      return this.transaction(
        async (db) => {
          await this.lockSession(db, id);
          const last = await db.query<{ idx: number | null }>(
            "SELECT MAX(idx) AS idx FROM terrarium_snapshots WHERE session = $1",
            [id],
          );
          const index = (last.rows[0]?.idx ?? -1) + 1;
          const { hash, size } = await this.writeCheckpoint(db, id, index, at, reason, next);
          return { index, hash, size };
        },
        async (db, written) => {
          const { rows } = await db.query<{ at: string; reason: string; checkpoint: string | null }>(
            "SELECT at, reason, checkpoint FROM terrarium_snapshots WHERE session = $1 AND idx = $2",
            [id, written.index],
          );
          const row = rows[0];
          return row?.at === at && row.reason === reason && row.checkpoint === written.hash;
        },
      );
    });
    const snapshot: Snapshot = { index, at, reason, state: next };
    this.latest.set(id, snapshot);
    chains.set(snapshot, { size, n: 0, bytes: 0 });
    if (held) {
      held.read = index;
      held.prefetch = undefined; // what the lock read is no longer the latest
    }
    return { ...snapshot };
  }

  async importSession(record: SessionRecord, contents: SessionContents): Promise<void> {
    this.forgetSession(record.id);
    const states = contents.snapshots.map((snapshot) => toImmutableJson(snapshot.state ?? null));
    const text = JSON.stringify(record);
    await this.guard("importSession", () =>
      this.transaction(
        async (db) => {
          await this.insertSession(db, record);
          for (const [i, snapshot] of contents.snapshots.entries()) {
            if (i === 0)
              await this.writeCheckpoint(db, record.id, 0, snapshot.at, snapshot.reason, states[0]);
            else
              await this.writeSnapshot(
                db,
                record.id,
                i,
                snapshot.at,
                snapshot.reason,
                states[i - 1],
                states[i],
              );
          }
          for (const entry of contents.history)
            await db.query("INSERT INTO terrarium_history (session, idx, entry) VALUES ($1, $2, $3)", [
              record.id,
              entry.index,
              JSON.stringify(entry),
            ]);
        },
        async (db) => (await storedRecord(db, record.id)) === text,
      ),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const lease of [...this.leases.values()]) this.dropLease(lease);
    await Promise.all([this.pool.end(), this.locks.end(), this.probes.end()]);
  }

  // --- internals ---

  /** Connects and migrates, once; after a failure that may pass (no database yet), the next call asks again. */
  private prepare(): Promise<void> {
    if (this.prepared) return Promise.resolve();
    if (this.closed) return Promise.reject(new StoreClosed());
    if (!this.preparing) {
      const attempt = this.runMigrations().then(
        () => {
          this.prepared = true;
        },
        (error: unknown) => {
          if (!(error instanceof TerrariumError)) this.preparing = undefined;
          throw error;
        },
      );
      this.preparing = attempt;
    }
    return this.preparing;
  }

  /**
   * Runs one method's work once the store is prepared; every failure comes out as terrarium's: a database
   * that does not answer as `STORE_UNAVAILABLE` (counted, logged once per outage), anything else Postgres
   * refused as `INTERNAL` (its text is for the log, never for the caller).
   */
  private async guard<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      await this.prepare();
      const result = await run();
      this.answered();
      return result;
    } catch (error) {
      throw this.failure(operation, error);
    }
  }

  private failure(operation: string, error: unknown): unknown {
    if (error instanceof TerrariumError) {
      const mark = UNAVAILABLE.get(error);
      if (mark && !mark.counted) {
        mark.counted = true;
        this.emit({ type: "failure", operation, kind: mark.kind });
      }
      return error;
    }
    const kind: StoreFailureKind | undefined =
      error instanceof StoreClosed || this.closed ? "closed" : connectionFailure(error);
    if (kind) {
      if (kind !== "closed") this.wentDown(error);
      const unavailable = storeUnavailable(kind, error);
      (UNAVAILABLE.get(unavailable) as { counted: boolean }).counted = true;
      this.emit({ type: "failure", operation, kind });
      return unavailable;
    }
    this.emit({ type: "failure", operation, kind: "query" });
    return new TerrariumError("INTERNAL", `Postgres failed ${operation}: ${reasonOf(error)}`, {
      cause: error,
    });
  }

  private wentDown(error: unknown): void {
    if (this.downSince !== undefined) return;
    this.downSince = Date.now();
    this.log(
      `terrarium: the session store at ${this.where} does not answer (${oneLine(reasonOf(error))}); requests get 503 STORE_UNAVAILABLE until it is back`,
    );
  }

  private answered(): void {
    if (this.downSince === undefined) return;
    const seconds = ((Date.now() - this.downSince) / 1000).toFixed(1);
    this.downSince = undefined;
    this.log(`terrarium: the session store at ${this.where} answers again (after ${seconds} s)`);
  }

  private emit(event: StoreEvent): void {
    for (const watcher of this.watchers) {
      try {
        watcher(event);
      } catch {
        // a watcher's failure is not the store's
      }
    }
  }

  /** The lock this store holds on session `id` in the current call, if the call runs under one. */
  private heldFor(id: string): HeldLock | undefined {
    const held = heldLocks.getStore();
    return held && held.store === this && held.id === id ? held : undefined;
  }

  /** A connection of the probe pool for `run`, given up (and the connection dropped) after the probe timeout. */
  private async onProbe<T>(run: (db: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect(this.probes);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ProbeTimeout(this.probeTimeoutMs)), this.probeTimeoutMs);
    });
    try {
      const result = await Promise.race([run(client), timeout]);
      client.release();
      return result;
    } catch (error) {
      client.release(asError(error));
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private async migrate(client: pg.Client, schema: string | undefined): Promise<void> {
    client.on("error", () => undefined);
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    try {
      await client.query("BEGIN");
      // One replica migrates; the others wait here and then find nothing left to do.
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK.toString()]);
      if (schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query(`
        CREATE TABLE IF NOT EXISTS terrarium_migrations (
          version INTEGER PRIMARY KEY,
          description TEXT NOT NULL,
          applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )`);
      const { rows } = await client.query<{ v: number | null }>(
        "SELECT MAX(version) AS v FROM terrarium_migrations",
      );
      const current = rows[0]?.v ?? 0;
      if (current > POSTGRES_STORE_SCHEMA_VERSION)
        throw new TerrariumError(
          "INVALID_INPUT",
          `the session database at ${this.where} has layout version ${current}, newer than this terrarium knows (${POSTGRES_STORE_SCHEMA_VERSION}): upgrade terrarium`,
        );
      for (const migration of MIGRATIONS) {
        if (migration.version <= current) continue;
        await client.query(migration.sql);
        await client.query("INSERT INTO terrarium_migrations (version, description) VALUES ($1, $2)", [
          migration.version,
          migration.description,
        ]);
      }
      // A role that may not create functions still serves, a few round trips slower per call.
      await client.query("SAVEPOINT terrarium_functions");
      try {
        await client.query(FUNCTIONS_SQL);
        this.fast = true;
      } catch (error) {
        if ((error as { code?: string }).code !== "42501") throw error;
        await client.query("ROLLBACK TO SAVEPOINT terrarium_functions");
        this.fast = false;
        this.log(
          `terrarium: may not create functions in the session database at ${this.where}; calls take the slower path (grant CREATE on the schema)`,
        );
      }
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      // A database that went away mid-way is asked again later; one that refuses the layout is final.
      if (error instanceof TerrariumError || connectionFailure(error)) throw error;
      throw new TerrariumError(
        "INVALID_INPUT",
        `could not prepare the session database at ${this.where}: ${(error as Error).message}`,
        { cause: error },
      );
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** A connection while serving. */
  private async connect(pool: Pool): Promise<PoolClient> {
    if (this.closed) throw new StoreClosed();
    return pool.connect();
  }

  /**
   * Runs `run` in a transaction. A connection that fails before COMMIT was sent leaves nothing written
   * (the server rolls the transaction back). One that fails while COMMIT is on its way leaves the outcome
   * unknown: `confirm` then asks the database, on a connection of its own, whether the write is there; it
   * is never simply run again, which could apply it twice. When even that cannot be asked, the caller
   * hears STORE_UNAVAILABLE with `details.written: "unknown"`.
   */
  private async transaction<T>(
    run: (db: PoolClient) => Promise<T>,
    confirm?: (db: Queryable, result: T) => Promise<boolean>,
  ): Promise<T> {
    const client = await this.connect(this.pool);
    let committing = false;
    let result: T | undefined;
    try {
      await client.query("BEGIN");
      result = await run(client);
      committing = true;
      await client.query("COMMIT");
    } catch (error) {
      const broken = connectionFailure(error);
      if (broken) {
        client.release(asError(error));
      } else {
        await client.query("ROLLBACK").catch(() => undefined);
        client.release();
      }
      if (!committing || !broken) throw translate(error);
      const written = confirm
        ? await this.onProbe((db) => confirm(db, result as T)).catch(() => undefined)
        : undefined;
      if (written === true) return result as T;
      if (written === false) throw error; // nothing was written: a plain outage
      throw storeUnavailable("in_doubt", error);
    }
    client.release();
    return result as T;
  }

  /** Inserts the session's row; its sequence number. */
  private async insertSession(db: Queryable, record: SessionRecord): Promise<string> {
    const { rows } = await db.query<{ seq: string }>(
      "INSERT INTO terrarium_sessions (id, owner, record) VALUES ($1, $2, $3) RETURNING seq",
      [record.id, record.owner ?? null, JSON.stringify(record)],
    );
    return (rows[0] as { seq: string }).seq;
  }

  /** Takes the session's row lock for the rest of the transaction: its writers queue here. */
  private async lockSession(db: Queryable, id: string): Promise<void> {
    const { rowCount } = await db.query("SELECT 1 FROM terrarium_sessions WHERE id = $1 FOR UPDATE", [id]);
    if (!rowCount) throw unknownSession(id);
  }

  private async requireSession(db: Queryable, id: string): Promise<void> {
    const { rowCount } = await db.query("SELECT 1 FROM terrarium_sessions WHERE id = $1", [id]);
    if (!rowCount) throw unknownSession(id);
  }

  private async writeSnapshot(
    db: Queryable,
    id: string,
    index: number,
    at: string,
    reason: Snapshot["reason"],
    before: unknown,
    after: unknown,
    chain?: { size: number | null; n: number | null; bytes: string | null },
  ): Promise<Chain> {
    const changes = JSON.stringify(diffJson(before, after));
    let base = chain;
    if (!base) {
      // The size of the nearest checkpoint before, and the chain of changes since it, in one query.
      const { rows } = await db.query<{ size: number; n: number; bytes: string }>(
        `SELECT st.size,
                (SELECT COUNT(*)::int FROM terrarium_snapshots c WHERE c.session = $1 AND c.idx > b.idx) AS n,
                (SELECT COALESCE(SUM(length(changes)), 0) FROM terrarium_snapshots c WHERE c.session = $1 AND c.idx > b.idx) AS bytes
           FROM terrarium_snapshots b JOIN terrarium_states st ON st.hash = b.checkpoint
          WHERE b.session = $1 AND b.idx <= $2 AND b.checkpoint IS NOT NULL
          ORDER BY b.idx DESC LIMIT 1`,
        [id, index - 1],
      );
      base = rows[0];
    }
    if (
      base &&
      base.size !== null &&
      base.n !== null &&
      extendsChain(this.policy, { n: base.n, bytes: Number(base.bytes), size: base.size }, changes.length)
    ) {
      await db.query(
        "INSERT INTO terrarium_snapshots (session, idx, at, reason, checkpoint, changes) VALUES ($1, $2, $3, $4, NULL, $5)",
        [id, index, at, reason, changes],
      );
      return { size: base.size, n: base.n + 1, bytes: Number(base.bytes) + changes.length };
    }
    const { size } = await this.writeCheckpoint(db, id, index, at, reason, after);
    return { size, n: 0, bytes: 0 };
  }

  private async writeCheckpoint(
    db: Queryable,
    id: string,
    index: number,
    at: string,
    reason: Snapshot["reason"],
    state: unknown,
  ): Promise<{ hash: string; size: number }> {
    const text = JSON.stringify(state);
    const hash = createHash("sha256").update(text).digest("hex");
    // DO UPDATE (not DO NOTHING) locks an existing row, so a concurrent clean-up cannot free it under us.
    await db.query(
      "INSERT INTO terrarium_states (hash, size, state) VALUES ($1, $2, $3) ON CONFLICT (hash) DO UPDATE SET hash = EXCLUDED.hash",
      [hash, text.length, text],
    );
    await db.query(
      "INSERT INTO terrarium_snapshots (session, idx, at, reason, checkpoint, changes) VALUES ($1, $2, $3, $4, $5, NULL)",
      [id, index, at, reason, hash],
    );
    this.checkpoints.set(hash, state);
    return { hash, size: text.length };
  }

  /** The latest snapshot as the database has it now (the cache only saves rebuilding its state). */
  private async readLatest(db: Queryable, id: string): Promise<Snapshot | undefined> {
    const { rows } = await db.query<SnapshotRow>(
      "SELECT idx, at, reason, checkpoint, changes FROM terrarium_snapshots WHERE session = $1 ORDER BY idx DESC LIMIT 1",
      [id],
    );
    return rows[0] ? this.latestFromRow(db, id, rows[0]) : undefined;
  }

  /**
   * The latest snapshot as the lock's query read it: the cached one when it is that one, else the cached
   * (or the checkpoint's) state brought forward by the changes the query returned, else read in full.
   */
  private async latestFromPrefetch(id: string, prefetch: Prefetch): Promise<Snapshot | undefined> {
    const row = prefetch.latest as LatestRow;
    const cached = this.latest.get(id);
    if (cached?.index === row.idx && prefetch.chain) return cached;
    const catchup = prefetch.catchup;
    if (catchup) {
      let state: unknown;
      let chain: Chain | undefined;
      if (cached && cached.index === catchup.from - 1) {
        state = cached.state;
        chain = chains.get(cached);
      }
      for (const [i, changes] of catchup.changes.entries()) {
        const checkpoint = catchup.checkpoints[i] ?? null;
        // Changes where there are some (a checkpoint written here carries them too), else the whole state.
        if (changes !== null && state !== undefined) state = applyRow(state, { changes });
        else if (checkpoint !== null) state = await this.checkpointState(this.pool, checkpoint);
        else {
          state = undefined;
          break;
        }
        chain =
          checkpoint !== null
            ? { size: catchup.sizes[i] ?? 0, n: 0, bytes: 0 }
            : chain && { size: chain.size, n: chain.n + 1, bytes: chain.bytes + (changes as string).length };
      }
      if (state !== undefined && catchup.changes.length === row.idx - catchup.from + 1) {
        const snapshot: Snapshot = { index: row.idx, at: row.at, reason: row.reason, state };
        this.latest.set(id, snapshot);
        if (chain) {
          chains.set(snapshot, chain);
          prefetch.chain = chain;
        }
        return snapshot;
      }
    }
    // Not to be had from what the lock read (never expected): read in full; the next write reads its chain.
    this.latest.delete(id);
    return this.readSnapshot(this.pool, id, row.idx);
  }

  /** The snapshot a row of the latest one describes: the cached state when it is that one. */
  private async latestFromRow(
    db: Queryable,
    id: string,
    row: SnapshotRow,
    chain?: Chain,
  ): Promise<Snapshot | undefined> {
    const cached = this.latest.get(id);
    if (cached?.index === row.idx && cached.at === row.at && cached.reason === row.reason) return cached;
    let state: unknown;
    if (row.checkpoint !== null) state = await this.checkpointState(db, row.checkpoint);
    else if (cached && cached.index === row.idx - 1) state = applyRow(cached.state, row);
    else {
      const read = await this.readSnapshot(db, id, row.idx);
      if (read && chain) chains.set(read, chain);
      return read;
    }
    const snapshot: Snapshot = { index: row.idx, at: row.at, reason: row.reason, state };
    this.latest.set(id, snapshot);
    if (chain) chains.set(snapshot, chain);
    return snapshot;
  }

  private async readSnapshot(db: Queryable, id: string, index: number): Promise<Snapshot | undefined> {
    const cached = this.latest.get(id);
    if (cached?.index === index) return cached;
    const meta = await db.query<{ at: string; reason: Snapshot["reason"] }>(
      "SELECT at, reason FROM terrarium_snapshots WHERE session = $1 AND idx = $2",
      [id, index],
    );
    const found = meta.rows[0];
    if (!found) return undefined;
    const base = await db.query<{ idx: number; checkpoint: string }>(
      "SELECT idx, checkpoint FROM terrarium_snapshots WHERE session = $1 AND idx <= $2 AND checkpoint IS NOT NULL ORDER BY idx DESC LIMIT 1",
      [id, index],
    );
    const checkpoint = base.rows[0];
    if (!checkpoint)
      throw new TerrariumError("INTERNAL", `session ${id} has no checkpoint before snapshot ${index}`);
    let state: unknown;
    let from: number;
    if (cached && cached.index >= checkpoint.idx && cached.index <= index) {
      state = cached.state;
      from = cached.index;
    } else {
      state = await this.checkpointState(db, checkpoint.checkpoint);
      from = checkpoint.idx;
    }
    const changes = await db.query<{ idx: number; changes: string | null }>(
      "SELECT idx, changes FROM terrarium_snapshots WHERE session = $1 AND idx > $2 AND idx <= $3 ORDER BY idx",
      [id, from, index],
    );
    for (const row of changes.rows) state = applyRow(state, row);
    const snapshot: Snapshot = { index, at: found.at, reason: found.reason, state };
    if (!cached || cached.index <= index) this.latest.set(id, snapshot);
    return snapshot;
  }

  private async checkpointState(db: Queryable, hash: string): Promise<unknown> {
    const cached = this.checkpoints.get(hash);
    if (cached !== undefined) return cached;
    const { rows } = await db.query<{ state: string }>({
      name: "terrarium_state",
      text: "SELECT state FROM terrarium_states WHERE hash = $1",
      values: [hash],
    });
    if (!rows[0]) throw new TerrariumError("INTERNAL", `the stored state ${hash} is missing`);
    const state = toImmutableJson(JSON.parse(rows[0].state));
    this.checkpoints.set(hash, state);
    return state;
  }
}

interface SnapshotRow {
  idx: number;
  at: string;
  reason: Snapshot["reason"];
  checkpoint: string | null;
  changes: string | null;
}

/** What a step that changes the state needs to know, read in one query once the session's row is locked. */
interface StepContextRow extends SnapshotRow {
  next_entry: number;
  base_size: number | null;
  chain_n: number | null;
  chain_bytes: string | null;
}

const STEP_CONTEXT = `
  SELECT (SELECT COALESCE(MAX(idx) + 1, 0) FROM terrarium_history WHERE session = $1) AS next_entry,
         l.idx, l.at, l.reason, l.checkpoint, l.changes,
         st.size AS base_size, ch.n AS chain_n, ch.bytes AS chain_bytes
    FROM (SELECT idx, at, reason, checkpoint, changes FROM terrarium_snapshots
           WHERE session = $1 ORDER BY idx DESC LIMIT 1) AS l
    LEFT JOIN LATERAL (SELECT idx, checkpoint FROM terrarium_snapshots
                        WHERE session = $1 AND checkpoint IS NOT NULL AND idx <= l.idx
                        ORDER BY idx DESC LIMIT 1) AS b ON true
    LEFT JOIN terrarium_states st ON st.hash = b.checkpoint
    LEFT JOIN LATERAL (SELECT COUNT(*)::int AS n, COALESCE(SUM(length(changes)), 0) AS bytes
                         FROM terrarium_snapshots c WHERE c.session = $1 AND c.idx > b.idx) AS ch ON true`;

function applyRow(state: unknown, row: { changes: string | null }): unknown {
  return applyChanges(state, JSON.parse(row.changes ?? "[]") as JsonChange[]);
}

/** A session lock held by the current call (carried through its async work). */
interface HeldLock {
  store: PostgresStore;
  id: string;
  /** The lock's connection died: another replica may hold the session now. */
  lost: boolean;
  /** The snapshot index the call read under the lock; the step it writes must build on it. */
  read?: number;
  /** The connection holding the lock; the call's step is written on it. */
  client?: PoolClient;
  /** What the lock's query read, kept current by the call's own writes (undefined: ask the database). */
  prefetch?: Prefetch;
  /** The call's step released the lock as it committed (a later write takes it again). */
  unlocked?: boolean;
  /** When the lock was taken (kept locks carry it from call to call). */
  since?: number;
  /** Another replica waits for this lock: it is let go after the call. */
  wanted?: boolean;
  forget?: () => void;
}

/**
 * The steps of several sessions in one statement (group commit), each at the indexes its lock's read gave,
 * each only if its session row is still the one read; the sessions whose step was stored come back, and
 * those another replica waits for (their locks are then let go after the call, not kept). Their locks are
 * held by their calls' connections and released after the commit.
 */
const STEPS_WRITE = `
WITH v AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::int[], $4::text[], $5::int[], $6::text[],
                               $7::text[], $8::text[], $9::int[], $10::text[], $11::text[])
             AS v(session, seq, entry_idx, entry, snap_idx, at, reason, hash, size, state, changes)),
ok AS (SELECT v.* FROM v JOIN terrarium_sessions s ON s.id = v.session AND s.seq = v.seq),
st AS (INSERT INTO terrarium_states (hash, size, state)
       SELECT DISTINCT ON (hash) hash, size, state FROM ok WHERE hash IS NOT NULL
       ON CONFLICT (hash) DO UPDATE SET hash = EXCLUDED.hash RETURNING 1),
sn AS (INSERT INTO terrarium_snapshots (session, idx, at, reason, checkpoint, changes)
       SELECT session, snap_idx, at, reason, hash, changes FROM ok WHERE snap_idx IS NOT NULL RETURNING 1),
h AS (INSERT INTO terrarium_history (session, idx, entry) SELECT session, entry_idx, entry FROM ok
      RETURNING session)`;
const STEPS_SQL = `${STEPS_WRITE},
-- Calls of other replicas waiting for one of these sessions' locks (key 0, as two halves in pg_locks).
w AS MATERIALIZED (SELECT l.classid::bigint AS hi, l.objid::bigint AS lo FROM pg_locks l
                    WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objsubid = 1)
SELECT (SELECT array_agg(session) FROM h),
       (SELECT array_agg(v.session) FROM v WHERE EXISTS (
          SELECT 1 FROM w WHERE w.hi = ((hashtextextended(v.session, 0) >> 32) & 4294967295)
                            AND w.lo = (hashtextextended(v.session, 0) & 4294967295)))`;
/** The same write without the look at pg_locks (which copies the server's lock table: see WAITER_PROBE_MS). */
const STEPS_QUIET_SQL = `${STEPS_WRITE}
SELECT (SELECT array_agg(session) FROM h), NULL::text[]`;

/**
 * A group commit looks for replicas waiting on its sessions' locks at most this often: reading pg_locks
 * copies the server's lock table (50–70 µs of its CPU per commit, measured with pgbench on the 2-core
 * machine), and a waiter seen up to this much later still gets its turn long before a kept lock's lease
 * (TERRARIUM_PG_LEASE_MS) would run out.
 */
const WAITER_PROBE_MS = 20;

/** Group commits on their way at once, and steps in one. */
const WRITERS = 2;
const BATCH_MAX = 64;

/** A step waiting for its group commit. */
interface Queued {
  id: string;
  plan: StepPlan;
  held: HeldLock;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A session lock kept between calls, until `timer` ends it (or a call takes it). */
interface Lease {
  held: HeldLock;
  client: PoolClient;
  timer: NodeJS.Timeout;
}

const LOCK_SQL = "SELECT pg_advisory_lock(hashtextextended($1, 0))";

const HEAD_SQL = `
  SELECT s.record, l.idx, l.at, l.reason, l.checkpoint, l.changes,
         e.idx AS last_idx, e.entry::json->>'at' AS last_at
    FROM terrarium_sessions s
    LEFT JOIN LATERAL (SELECT idx, at, reason, checkpoint, changes FROM terrarium_snapshots
                        WHERE session = $1 ORDER BY idx DESC LIMIT 1) l ON true
    LEFT JOIN LATERAL (SELECT idx, entry FROM terrarium_history
                        WHERE session = $1 ORDER BY idx DESC LIMIT 1) e ON true
   WHERE s.id = $1`;
const UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended($1, 0))";

/** The checkpoint a snapshot's chain starts from (its size) and the changes stored since (count, length). */
interface Chain {
  size: number;
  n: number;
  bytes: number;
}

/** Chains of cached snapshots, when known: a step can then choose changes or a checkpoint without asking. */
const chains = new WeakMap<Snapshot, Chain>();

/** History entries kept per session (as stored), enough for the engine's window. */
const WINDOW_SIZE = 64;

interface HistoryWindow {
  /** The session row's sequence number: a session deleted and made again under the same id differs. */
  seq: string;
  /** The index after the last entry kept. */
  next: number;
  texts: string[];
}

/**
 * A row of terrarium_lock_v2, as an array: seq, record (when not known here), the latest snapshot's index,
 * time and reason, the next history index, the last call's time (when not known here), and the snapshots
 * from index `from` on (their checkpoint, its size, their changes; absent when the cache is current).
 */
type LockColumns = [
  string | null,
  string | null,
  number | null,
  string | null,
  string | null,
  number,
  string | null,
  number | null,
  Array<string | null> | null,
  Array<number | null> | null,
  Array<string | null> | null,
];

/** What the lock's read says of the latest snapshot. */
interface LatestRow {
  idx: number;
  at: string;
  reason: Snapshot["reason"];
}

interface Prefetch {
  /** Undefined when there is no such session. */
  seq?: string;
  record?: string;
  latest?: LatestRow;
  nextEntry: number;
  /** The cache was current when the lock was taken (and stays so while the lock is held). */
  fresh?: boolean;
  /** The latest snapshot's chain, once known (the cached one's, or rebuilt from `catchup`). */
  chain?: Chain;
  /** The snapshots from index `from` to the latest, when the cached state is not the latest. */
  catchup?: {
    from: number;
    checkpoints: Array<string | null>;
    sizes: Array<number | null>;
    changes: Array<string | null>;
  };
}

/** A step to write in one statement: its entry's final text and indexes, and its snapshot made here. */
interface StepPlan {
  /** The session row's sequence number the lock's read saw (the write is refused if it changed). */
  seq: string;
  rest: Omit<HistoryEntry, "index" | "snapshot">;
  entryIndex: number;
  /** The entry's JSON as stored (indexes included). */
  text: string;
  snapshot?: {
    index: number;
    at: string;
    reason: Snapshot["reason"];
    state: unknown;
    changes: string;
    checkpoint?: { hash: string; text: string };
    /** The chain once this snapshot is written. */
    chain: Chain;
  };
}

/** The type OID of `text` in Postgres's catalogs (fixed: a built-in type). */
const TEXT_OID = 25;

/**
 * A `text[]` parameter in Postgres's binary array format (what `array_send` writes: dimensions, a null
 * flag, the element type, the length and lower bound, then each element's length and bytes, -1 for
 * NULL). pg sends a Buffer parameter as binary, so nothing is escaped here (an array literal doubles the
 * backslash or quote before every quote of a JSON text) and the server copies the bytes instead of
 * parsing a literal; the encoding is still checked there, as for text.
 */
export function binaryTextArray(values: ReadonlyArray<string | null>): Buffer {
  const lengths = new Array<number>(values.length);
  let size = values.length === 0 ? 12 : 20;
  let nulls = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    const length = value === null || value === undefined ? -1 : Buffer.byteLength(value);
    if (length < 0) nulls = 1;
    lengths[i] = length;
    size += 4 + Math.max(0, length);
  }
  const out = Buffer.allocUnsafe(size);
  out.writeInt32BE(values.length === 0 ? 0 : 1, 0);
  out.writeInt32BE(nulls, 4);
  out.writeInt32BE(TEXT_OID, 8);
  if (values.length === 0) return out;
  out.writeInt32BE(values.length, 12);
  out.writeInt32BE(1, 16);
  let at = 20;
  for (let i = 0; i < values.length; i++) {
    const length = lengths[i] as number;
    out.writeInt32BE(length, at);
    at += 4;
    if (length > 0) at += out.write(values[i] as string, at, "utf8");
  }
  return out;
}

function parseEntry(text: string): HistoryEntry {
  return JSON.parse(text) as HistoryEntry;
}

const heldLocks = new AsyncLocalStorage<HeldLock>();

/**
 * Refuses a write whose call no longer holds its session: the lock's connection died, or the session
 * moved on since the call read it (another replica took the lock meanwhile). Nothing is written, so the
 * call may be sent again.
 */
function fence(held: HeldLock | undefined, latest: number | null): void {
  if (!held) return;
  if (held.lost || (held.read !== undefined && latest !== held.read)) throw lockLost();
}

/** STORE_UNAVAILABLE errors made here, with their kind (for metrics) and whether they were counted. */
const UNAVAILABLE = new WeakMap<TerrariumError, { kind: StoreFailureKind; counted: boolean }>();

const UNAVAILABLE_MESSAGES: Record<StoreFailureKind, string> = {
  connect: "the session store is not available right now; try again shortly",
  lost: "the session store is not available right now; try again shortly",
  timeout: "the session store did not answer in time; try again shortly",
  closed: "the session store is closed; send the request again (to another replica)",
  lock_lost:
    "the session's lock was lost during the call (the session store went away); nothing was written: send the call again",
  in_doubt:
    "the session store stopped answering while the change was being committed: it may or may not be stored; read the session before sending it again",
  query: "the session store failed",
};

/** terrarium's error for a database that does not answer: a message for callers, the cause for the log. */
function storeUnavailable(kind: StoreFailureKind, cause: unknown): TerrariumError {
  const error = new TerrariumError("STORE_UNAVAILABLE", UNAVAILABLE_MESSAGES[kind], {
    cause,
    ...(kind === "in_doubt" ? { details: { written: "unknown" } } : {}),
  });
  UNAVAILABLE.set(error, { kind, counted: false });
  return error;
}

function lockLost(): TerrariumError {
  return storeUnavailable("lock_lost", new Error("the session lock's connection failed"));
}

/** Connection errors (Node's, by errno) that mean no connection could be made at all. */
const CONNECT_ERRNOS = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
]);
const LOST_ERRNOS = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED", "ERR_STREAM_DESTROYED"]);
/**
 * SQLSTATEs of a server that is not there for us now: 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up, shutting down, in recovery), 57P05 idle_session_timeout, 53300
 * too_many_connections, and class 08 (connection exceptions; 08001 and 08004: could not connect).
 */
const CONNECT_STATES = new Set(["57P03", "53300", "08001", "08004"]);
const LOST_STATES = new Set(["57P01", "57P02", "57P05"]);

/**
 * Whether `error` means the database (or the way to it) is not there, rather than a statement it refused,
 * and how: a connection could not be made, one died, or an answer did not come in time.
 */
export function connectionFailure(error: unknown, depth = 0): StoreFailureKind | undefined {
  if (!error || typeof error !== "object" || depth > 4 || error instanceof TerrariumError) return undefined;
  if (error instanceof ProbeTimeout) return "timeout";
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (CONNECT_ERRNOS.has(code) || CONNECT_STATES.has(code)) return "connect";
    if (LOST_ERRNOS.has(code) || LOST_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return "lost";
    if (code === "ETIMEDOUT") return "timeout";
  }
  const message = (error as { message?: unknown }).message;
  if (typeof message === "string") {
    if (/timeout exceeded when trying to connect|connection timeout|query read timeout/i.test(message))
      return "timeout";
    if (/connection terminated|not queryable|connection (was )?(closed|ended)/i.test(message)) return "lost";
    if (/cannot use a pool after calling end/i.test(message)) return "closed";
  }
  // Node reports a refused connection to every address of a host as one AggregateError.
  const nested = (error as { errors?: unknown }).errors;
  for (const each of Array.isArray(nested) ? nested : []) {
    const kind = connectionFailure(each, depth + 1);
    if (kind) return kind;
  }
  return connectionFailure((error as { cause?: unknown }).cause, depth + 1);
}

/** A store used after `close()`. */
class StoreClosed extends Error {
  constructor() {
    super("the session store is closed");
  }
}

/** A probe (ping, commit check) that did not finish within the probe timeout. */
class ProbeTimeout extends Error {
  readonly code = "ETIMEDOUT";
  constructor(ms: number) {
    super(`Postgres did not answer within ${ms} ms`);
  }
}

/** What a pool client's `release` takes to drop a connection rather than keep it. */
function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").slice(0, 300);
}

function positiveMs(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isFinite(value) || value <= 0)
    throw new TerrariumError(
      "CONFIG_INVALID",
      `${name} must be a positive number of milliseconds (got ${value})`,
    );
  return value;
}

/** A session's stored record as text (compared as text to settle a commit in doubt). */
async function storedRecord(db: Queryable, id: string): Promise<string | undefined> {
  const { rows } = await db.query<{ record: string }>("SELECT record FROM terrarium_sessions WHERE id = $1", [
    id,
  ]);
  return rows[0]?.record;
}

function reasonOf(error: unknown): string {
  const nested = (error as { errors?: unknown[] })?.errors?.[0];
  return (
    (error as Error)?.message ||
    (nested as Error | undefined)?.message ||
    (error as { code?: string })?.code ||
    String(error)
  );
}

function unknownSession(id: string): TerrariumError {
  return new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
}

/** Postgres errors the engine's callers should see as terrarium's own. */
function translate(error: unknown): unknown {
  const code = (error as { code?: string })?.code;
  if (code === "23505") {
    const detail = (error as { detail?: string }).detail ?? "";
    const id = /\(id\)=\((.*)\)/.exec(detail)?.[1];
    return new TerrariumError(
      "INVALID_INPUT",
      id
        ? `session ${id} already exists`
        : `a stored row already exists: ${detail || (error as Error).message}`,
      { cause: error },
    );
  }
  return error;
}

function envInteger(name: string, min = 1): number | undefined {
  const value = process.env[name];
  if (value === undefined || value.trim() === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new TerrariumError(
      "CONFIG_INVALID",
      `${name} must be an integer of at least ${min} (got ${value})`,
    );
  return n;
}

/**
 * A new, empty database next to the one `baseUrl` names (the role needs CREATEDB), for tests and
 * benchmarks: its URL, and `drop()` which removes it (closing whatever is still connected).
 */
export async function createScratchDatabase(
  baseUrl: string,
  prefix = "terrarium_test",
): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  describePostgresUrl(baseUrl);
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`.toLowerCase();
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name))
    throw new TerrariumError("INVALID_INPUT", `not a plain database name: ${name}`);
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch (error) {
        // FORCE refuses a role without pg_signal_backend while an autovacuum worker is in the database
        // (it has no role to match): end this role's sessions there, then drop without FORCE, which
        // stops the worker itself.
        if ((error as { code?: string }).code !== "42501") throw error;
        await client.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND usename = current_user AND pid <> pg_backend_pid()",
          [name],
        );
        await client.query(`DROP DATABASE IF EXISTS ${name}`);
      } finally {
        await client.end();
      }
    },
  };
}
