import { createScratchDatabase } from "../../src/sessions/postgres-store.js";

/**
 * The Postgres the integration tests use: `TERRARIUM_TEST_POSTGRES` (scripts/services.sh prints it).
 * Unset, those tests are skipped with a warning, unless `TERRARIUM_REQUIRE_SERVICES=1`, which makes its
 * absence a failure (CI sets both).
 */
export const TEST_POSTGRES = process.env.TERRARIUM_TEST_POSTGRES?.trim() || undefined;
export const SERVICES_REQUIRED = process.env.TERRARIUM_REQUIRE_SERVICES === "1";

/** Whether to run Postgres tests; warns once per file when they are skipped, throws when they must run. */
export function postgresAvailable(what: string): boolean {
  if (TEST_POSTGRES) return true;
  if (SERVICES_REQUIRED)
    throw new Error(
      `${what}: TERRARIUM_REQUIRE_SERVICES=1 but TERRARIUM_TEST_POSTGRES is not set (run scripts/services.sh)`,
    );
  console.warn(
    `[skipped] ${what}: set TERRARIUM_TEST_POSTGRES=postgres://terrarium:terrarium@127.0.0.1:5432/terrarium (scripts/services.sh starts it)`,
  );
  return false;
}

/** A fresh database for one test file; drop it in afterAll. */
export async function scratchDatabase(prefix: string) {
  if (!TEST_POSTGRES) throw new Error("TERRARIUM_TEST_POSTGRES is not set");
  return createScratchDatabase(TEST_POSTGRES, prefix);
}
