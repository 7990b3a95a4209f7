import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import {
  createScratchDatabase,
  PostgresStore,
  type PostgresStoreOptions,
} from "../../src/sessions/postgres-store.js";
import type { HistoryEntry, SessionRecord } from "../../src/sessions/types.js";
import { availability, need } from "./requirements.js";

/**
 * The Postgres the integration tests use: `TERRARIUM_TEST_POSTGRES` (scripts/services.sh prints it).
 * Unset, those tests are skipped with one line saying so, unless `TERRARIUM_REQUIRE_SERVICES` is set,
 * which makes its absence a failure (CI sets both). See requirements.ts.
 */
export const TEST_POSTGRES = availability("postgres").value || undefined;

/** Whether to run Postgres tests; one skip line when they are skipped, throws when they must run. */
export function postgresAvailable(what: string): boolean {
  return need("postgres", what) !== undefined;
}

/** A fresh database for one test file; drop it in afterAll. */
export async function scratchDatabase(prefix: string) {
  if (!TEST_POSTGRES) throw new Error("TERRARIUM_TEST_POSTGRES is not set");
  return createScratchDatabase(TEST_POSTGRES, prefix);
}

/**
 * A scratch database for one test file (made in beforeAll, dropped in afterAll when `enabled`), an admin
 * client on it, and `open`, which opens a store there (quiet log) and closes it at the end.
 */
export function scratchStores(prefix: string, enabled: boolean) {
  let database: Awaited<ReturnType<typeof scratchDatabase>> | undefined;
  let admin: pg.Client | undefined;
  const opened: PostgresStore[] = [];
  beforeAll(async () => {
    if (!enabled) return;
    database = await scratchDatabase(prefix);
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  }, 30_000);
  afterAll(async () => {
    for (const store of opened) await store.close().catch(() => undefined);
    await admin?.end();
    await database?.drop();
  }, 30_000);
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the scratch database is made in beforeAll");
    return value;
  };
  return {
    get admin(): pg.Client {
      return ready(admin);
    },
    async open(options: PostgresStoreOptions & { schema: string }): Promise<PostgresStore> {
      const made = await PostgresStore.open(ready(database).url, { log: () => undefined, ...options });
      opened.push(made);
      return made;
    },
  };
}

type Query = (config: unknown, ...rest: unknown[]) => Promise<unknown>;

/** Every statement a store sends on its query and lock pools from now on, by name or text (tests only). */
export function recordStatements(target: PostgresStore): string[] {
  const sent: string[] = [];
  const wrapped = new WeakSet<pg.PoolClient>();
  const pools = target as unknown as { pool: pg.Pool; locks: pg.Pool };
  for (const pool of [pools.pool, pools.locks]) {
    pool.on("acquire", (client: pg.PoolClient) => {
      if (wrapped.has(client)) return;
      wrapped.add(client);
      const original = client.query.bind(client) as Query;
      (client as unknown as { query: Query }).query = (config, ...rest) => {
        const named = config as { name?: string; text?: string };
        sent.push(typeof config === "string" ? config : (named.name ?? named.text ?? "?"));
        return original(config, ...rest);
      };
    });
  }
  return sent;
}

/** A session record for store tests. */
export const sessionRecord = (id: string): SessionRecord => ({
  id,
  createdAt: "2025-01-01T00:00:00.000Z",
  seed: "1",
});

/** Steps of a counter for store tests, one second apart across the whole test file. */
export function bumpSteps(): (n: number) => Omit<HistoryEntry, "index" | "snapshot"> {
  let clock = 0;
  return (n) => ({
    at: new Date(Date.UTC(2025, 0, 1) + ++clock * 1000).toISOString(),
    request: { name: "bump", arguments: { n } },
    result: { status: "ok", observation: { n }, changes: [], errors: [] },
    simulator: "code",
  });
}
