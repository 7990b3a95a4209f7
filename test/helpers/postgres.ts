import { createScratchDatabase } from "../../src/sessions/postgres-store.js";
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
