import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import {
  createScratchDatabase,
  PostgresStore,
  type PostgresStoreOptions,
} from "../../src/sessions/postgres-store.js";
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
