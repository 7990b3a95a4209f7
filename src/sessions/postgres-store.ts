import { createHash, randomBytes } from "node:crypto";
import pg, { type Pool, type PoolClient, type PoolConfig, type QueryResult, type QueryResultRow } from "pg";
import { TerrariumError } from "../core/errors.js";
import { toImmutableJson } from "../core/immutable-json.js";
import { applyChanges, diffJson, type JsonChange } from "../core/json-diff.js";
import { Lru } from "./lru.js";
import type { HistoryEntry, SessionContents, SessionRecord, Snapshot, Store } from "./types.js";

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

/** When a snapshot is stored whole instead of as changes (as in the SQLite store). */
export interface PostgresCheckpointPolicy {
  maxChain: number;
  maxChangeRatio: number;
}

export interface PostgresStoreOptions {
  /** Connections for queries and transactions (default 10, or `TERRARIUM_PG_POOL`). */
  poolSize?: number;
  /**
   * Connections that hold per-session advisory locks while a call runs (default: the pool size, or
   * `TERRARIUM_PG_LOCK_POOL`). Kept apart from the query pool so that lock holders can always query.
   */
  lockPoolSize?: number;
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
}

const DEFAULT_CHECKPOINTS: PostgresCheckpointPolicy = { maxChain: 100, maxChangeRatio: 1 };
const STATE_CACHE_SIZE = 256;
const CHECKPOINT_CACHE_SIZE = 32;

/** Anything that runs a query: the pool or a client inside a transaction. */
interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
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
 * lock, held on a connection of a separate lock pool.
 *
 * Open with `PostgresStore.open(url)` to connect and migrate before use; `new PostgresStore(url)` does
 * the same lazily (every method waits for it).
 */
export class PostgresStore implements Store {
  private readonly pool: Pool;
  private readonly locks: Pool;
  private readonly ready: Promise<void>;
  private readonly policy: PostgresCheckpointPolicy;
  private readonly latest = new Lru<string, Snapshot>(STATE_CACHE_SIZE);
  private readonly checkpoints = new Lru<string, unknown>(CHECKPOINT_CACHE_SIZE);
  private closed = false;
  /** Where the store connects, for messages (no password). */
  readonly where: string;

  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const store = new PostgresStore(url, options);
    try {
      await store.ready;
    } catch (error) {
      await store.close().catch(() => undefined);
      throw error;
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
    const lockPoolSize = options.lockPoolSize ?? envInteger("TERRARIUM_PG_LOCK_POOL") ?? poolSize;
    if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema))
      throw new TerrariumError("INVALID_INPUT", `not a plain schema name: ${options.schema}`);
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
    // An idle connection that dies (a restarted server) is dropped by the pool; it must not crash us.
    for (const pool of [this.pool, this.locks]) pool.on("error", () => undefined);
    this.ready = this.migrate(
      new pg.Client({ ...config, connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000 }),
      options.schema,
    );
    // Every method awaits `ready`; this keeps an unawaited failure from being reported as unhandled.
    this.ready.catch(() => undefined);
  }

  /** The layout version the database is at (after migrations). */
  async schemaVersion(): Promise<number> {
    await this.ready;
    const { rows } = await this.pool.query<{ v: number | null }>(
      "SELECT MAX(version) AS v FROM terrarium_migrations",
    );
    return rows[0]?.v ?? 0;
  }

  async withSessionLock<T>(id: string, run: () => Promise<T>): Promise<T> {
    await this.ready;
    const client = await this.connect(this.locks);
    let failed = false;
    const onError = () => {
      failed = true;
    };
    client.on("error", onError);
    const finish = () => {
      client.off("error", onError);
      // A connection that failed is destroyed: closing it releases whatever lock it still held.
      client.release(failed ? true : undefined);
    };
    try {
      await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [id]);
    } catch (error) {
      failed = true;
      finish();
      throw error;
    }
    try {
      return await run();
    } finally {
      // Everything `run` wrote is committed by now, so the answer need not wait for the unlock: the
      // connection goes back to the pool once it is done, and the next holder (here or elsewhere) waits
      // for it in the database.
      void client
        .query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [id])
        .catch(() => {
          failed = true;
        })
        .finally(finish);
    }
  }

  async createSession(record: SessionRecord, initialState: unknown): Promise<void> {
    const snapshot: Snapshot = {
      index: 0,
      at: record.createdAt,
      reason: record.parent ? "fork" : "initial",
      state: toImmutableJson(initialState ?? null),
    };
    await this.transaction(async (db) => {
      await this.insertSession(db, record);
      await this.writeCheckpoint(db, record.id, 0, snapshot.at, snapshot.reason, snapshot.state);
    });
    this.latest.set(record.id, snapshot);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    await this.ready;
    const { rows } = await this.pool.query<{ record: string }>(
      "SELECT record FROM terrarium_sessions WHERE id = $1",
      [id],
    );
    return rows[0] ? (JSON.parse(rows[0].record) as SessionRecord) : undefined;
  }

  async listSessions(owner?: string): Promise<SessionRecord[]> {
    await this.ready;
    const { rows } =
      owner === undefined
        ? await this.pool.query<{ record: string }>("SELECT record FROM terrarium_sessions ORDER BY seq")
        : await this.pool.query<{ record: string }>(
            "SELECT record FROM terrarium_sessions WHERE owner = $1 ORDER BY seq",
            [owner],
          );
    return rows.map((row) => JSON.parse(row.record) as SessionRecord);
  }

  async countSessions(owner?: string): Promise<number> {
    await this.ready;
    // Served by terrarium_sessions_by_owner; every replica sharing the database sees the same count.
    const { rows } =
      owner === undefined
        ? await this.pool.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM terrarium_sessions")
        : await this.pool.query<{ n: number }>(
            "SELECT COUNT(*)::int AS n FROM terrarium_sessions WHERE owner = $1",
            [owner],
          );
    return rows[0]?.n ?? 0;
  }

  async deleteSession(id: string): Promise<boolean> {
    this.latest.delete(id);
    const { deleted, hashes } = await this.transaction(async (db) => {
      const found = await db.query<{ checkpoint: string }>(
        "SELECT DISTINCT checkpoint FROM terrarium_snapshots WHERE session = $1 AND checkpoint IS NOT NULL",
        [id],
      );
      // Snapshots and history go with the session (ON DELETE CASCADE).
      const result = await db.query("DELETE FROM terrarium_sessions WHERE id = $1", [id]);
      return { deleted: (result.rowCount ?? 0) > 0, hashes: found.rows.map((row) => row.checkpoint) };
    });
    this.latest.delete(id);
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
    await this.ready;
    const snapshot = await this.readLatest(this.pool, id);
    if (!snapshot) throw unknownSession(id);
    return { ...snapshot };
  }

  async snapshot(id: string, index: number): Promise<Snapshot | undefined> {
    if (!Number.isInteger(index) || index < 0 || index > 2 ** 31 - 1) return undefined;
    await this.ready;
    const found = await this.readSnapshot(this.pool, id, index);
    return found ? { ...found } : undefined;
  }

  async snapshots(id: string): Promise<Snapshot[]> {
    await this.ready;
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
  }

  async history(id: string, last?: number): Promise<HistoryEntry[]> {
    await this.ready;
    const { rows } =
      last === undefined
        ? await this.pool.query<{ entry: string }>(
            "SELECT entry FROM terrarium_history WHERE session = $1 ORDER BY idx",
            [id],
          )
        : await this.pool.query<{ entry: string }>(
            "SELECT entry FROM (SELECT idx, entry FROM terrarium_history WHERE session = $1 ORDER BY idx DESC LIMIT $2) AS w ORDER BY idx",
            [id, Math.max(0, Math.floor(last))],
          );
    // An empty answer is either a session without calls or no session: only then is it worth asking.
    if (rows.length === 0) await this.requireSession(this.pool, id);
    return rows.map((row) => JSON.parse(row.entry) as HistoryEntry);
  }

  async appendStep(
    id: string,
    entry: Omit<HistoryEntry, "index" | "snapshot">,
    state?: { state: unknown; reason: Snapshot["reason"] },
  ): Promise<HistoryEntry> {
    const next = state === undefined ? undefined : toImmutableJson(state.state ?? null);
    const written = await this.transaction(async (db) => {
      await this.lockSession(db, id);
      // Statements after the lock see, in READ COMMITTED, what the writer before us committed.
      if (!state) {
        const last = await db.query<{ n: number }>(
          "SELECT COALESCE(MAX(idx) + 1, 0) AS n FROM terrarium_history WHERE session = $1",
          [id],
        );
        return this.insertEntry(db, id, { ...entry, index: last.rows[0]?.n ?? 0 });
      }
      // The next history index, the latest snapshot and its checkpoint chain, in one round trip.
      const { rows } = await db.query<StepContextRow>(STEP_CONTEXT, [id]);
      const context = rows[0] as StepContextRow;
      // The changes are taken from the latest state as the database has it (under the row lock).
      const previous = (await this.latestFromRow(db, id, context)) as Snapshot;
      const index = previous.index + 1;
      await this.writeSnapshot(db, id, index, entry.at, state.reason, previous.state, next, {
        size: context.base_size,
        n: context.chain_n,
        bytes: context.chain_bytes,
      });
      return this.insertEntry(db, id, { ...entry, index: context.next_entry, snapshot: index });
    });
    if (written.snapshot !== undefined && state)
      this.latest.set(id, { index: written.snapshot, at: entry.at, reason: state.reason, state: next });
    return written;
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
    const index = await this.transaction(async (db) => {
      await this.lockSession(db, id);
      const last = await db.query<{ idx: number | null }>(
        "SELECT MAX(idx) AS idx FROM terrarium_snapshots WHERE session = $1",
        [id],
      );
      const index = (last.rows[0]?.idx ?? -1) + 1;
      await this.writeCheckpoint(db, id, index, at, reason, next);
      return index;
    });
    const snapshot: Snapshot = { index, at, reason, state: next };
    this.latest.set(id, snapshot);
    return { ...snapshot };
  }

  async importSession(record: SessionRecord, contents: SessionContents): Promise<void> {
    const states = contents.snapshots.map((snapshot) => toImmutableJson(snapshot.state ?? null));
    await this.transaction(async (db) => {
      await this.insertSession(db, record);
      for (const [i, snapshot] of contents.snapshots.entries()) {
        if (i === 0) await this.writeCheckpoint(db, record.id, 0, snapshot.at, snapshot.reason, states[0]);
        else
          await this.writeSnapshot(db, record.id, i, snapshot.at, snapshot.reason, states[i - 1], states[i]);
      }
      for (const entry of contents.history)
        await db.query("INSERT INTO terrarium_history (session, idx, entry) VALUES ($1, $2, $3)", [
          record.id,
          entry.index,
          JSON.stringify(entry),
        ]);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.pool.end(), this.locks.end()]);
  }

  // --- internals ---

  private async migrate(client: pg.Client, schema: string | undefined): Promise<void> {
    client.on("error", () => undefined);
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      throw new TerrariumError(
        "INVALID_INPUT",
        `cannot connect to Postgres at ${this.where}: ${reasonOf(error)}`,
        {
          cause: error,
        },
      );
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
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      if (error instanceof TerrariumError) throw error;
      throw new TerrariumError(
        "INVALID_INPUT",
        `could not prepare the session database at ${this.where}: ${(error as Error).message}`,
        { cause: error },
      );
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** A connection while serving; failing here is the server's trouble (a 500), not the caller's. */
  private async connect(pool: Pool): Promise<PoolClient> {
    if (this.closed) throw new Error("the session store is closed");
    try {
      return await pool.connect();
    } catch (error) {
      throw new Error(`no connection to Postgres at ${this.where}: ${reasonOf(error)}`, { cause: error });
    }
  }

  private async transaction<T>(run: (db: PoolClient) => Promise<T>): Promise<T> {
    await this.ready;
    const client = await this.connect(this.pool);
    try {
      await client.query("BEGIN");
      const result = await run(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw translate(error);
    } finally {
      client.release();
    }
  }

  private async insertSession(db: Queryable, record: SessionRecord): Promise<void> {
    await db.query("INSERT INTO terrarium_sessions (id, owner, record) VALUES ($1, $2, $3)", [
      record.id,
      record.owner ?? null,
      JSON.stringify(record),
    ]);
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
  ): Promise<void> {
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
      base.n < this.policy.maxChain &&
      Number(base.bytes) + changes.length <= Math.max(4096, base.size * this.policy.maxChangeRatio)
    ) {
      await db.query(
        "INSERT INTO terrarium_snapshots (session, idx, at, reason, checkpoint, changes) VALUES ($1, $2, $3, $4, NULL, $5)",
        [id, index, at, reason, changes],
      );
      return;
    }
    await this.writeCheckpoint(db, id, index, at, reason, after);
  }

  private async writeCheckpoint(
    db: Queryable,
    id: string,
    index: number,
    at: string,
    reason: Snapshot["reason"],
    state: unknown,
  ): Promise<void> {
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
  }

  /** The latest snapshot as the database has it now (the cache only saves rebuilding its state). */
  private async readLatest(db: Queryable, id: string): Promise<Snapshot | undefined> {
    const { rows } = await db.query<SnapshotRow>(
      "SELECT idx, at, reason, checkpoint, changes FROM terrarium_snapshots WHERE session = $1 ORDER BY idx DESC LIMIT 1",
      [id],
    );
    return rows[0] ? this.latestFromRow(db, id, rows[0]) : undefined;
  }

  /** The snapshot a row of the latest one describes: the cached state when it is that one. */
  private async latestFromRow(db: Queryable, id: string, row: SnapshotRow): Promise<Snapshot | undefined> {
    const cached = this.latest.get(id);
    if (cached?.index === row.idx && cached.at === row.at && cached.reason === row.reason) return cached;
    let state: unknown;
    if (row.checkpoint !== null) state = await this.checkpointState(db, row.checkpoint);
    else if (cached && cached.index === row.idx - 1) state = applyRow(cached.state, row);
    else return this.readSnapshot(db, id, row.idx);
    const snapshot: Snapshot = { index: row.idx, at: row.at, reason: row.reason, state };
    this.latest.set(id, snapshot);
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
    const { rows } = await db.query<{ state: string }>("SELECT state FROM terrarium_states WHERE hash = $1", [
      hash,
    ]);
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

function envInteger(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value.trim() === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new TerrariumError("CONFIG_INVALID", `${name} must be a positive integer (got ${value})`);
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
      } finally {
        await client.end();
      }
    },
  };
}
