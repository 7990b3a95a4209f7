import { existsSync } from "node:fs";
import { resolveChromiumPath } from "../../src/users/browser/launch.js";

/**
 * What some tests need from the machine beyond Node: Chromium (the browser users, the HTML report in a
 * browser, the browser examples), PostgreSQL and Redis (the scale-out tests). Every such test asks here.
 *
 * Missing, the test file's tests are skipped and ONE line says what is missing and how to get it, so
 * `npm test` passes on a fresh machine. CI sets TERRARIUM_REQUIRE_BROWSER / TERRARIUM_REQUIRE_SERVICES:
 * then a missing need throws when the file is collected, and the file fails.
 */
export type Need = "chromium" | "postgres" | "redis";

export interface Availability {
  available: boolean;
  /** Chromium's executable path, or the service's URL; "" for a service that is not configured. */
  value: string;
  /** Why it is missing and how to get it (empty when available). */
  missing: string;
}

const SERVICES_HINT = "scripts/services.sh starts PostgreSQL and Redis on loopback and prints both URLs";

/** Whether an environment variable asks for the tests to run whatever is missing. */
export function requires(variable: "TERRARIUM_REQUIRE_BROWSER" | "TERRARIUM_REQUIRE_SERVICES"): boolean {
  const value = process.env[variable]?.trim().toLowerCase();
  return value !== undefined && value !== "" && value !== "0" && value !== "false";
}

/** Where a need stands on this machine, from the same lookup the code under test uses. */
export function availability(need: Need): Availability {
  if (need === "chromium") {
    // launch.ts's own lookup: $TERRARIUM_CHROMIUM, else /usr/bin/chromium (tests hide it by pointing
    // TERRARIUM_CHROMIUM at a path that does not exist).
    const path = resolveChromiumPath();
    return {
      available: existsSync(path),
      value: path,
      missing: `Chromium not found at ${path} (apt-get install -y chromium, or set TERRARIUM_CHROMIUM to a Chromium executable)`,
    };
  }
  const variable = need === "postgres" ? "TERRARIUM_TEST_POSTGRES" : "TERRARIUM_TEST_REDIS";
  const value = process.env[variable]?.trim() ?? "";
  const example =
    need === "postgres"
      ? "postgres://terrarium:terrarium@127.0.0.1:5432/terrarium"
      : "redis://127.0.0.1:6379";
  const packageName = need === "postgres" ? "postgresql" : "redis-server";
  return {
    available: value !== "",
    value,
    missing: `${need === "postgres" ? "PostgreSQL" : "Redis"} not configured: ${variable} is not set (apt-get install -y ${packageName}; ${SERVICES_HINT}; then export ${variable}=${example})`,
  };
}

/**
 * Asks for a need on behalf of a test file (`what` names its tests). Returns the path or URL when it is
 * there; otherwise prints the one skip line and returns undefined, or throws when CI requires it.
 */
export function need(kind: Need, what: string): string | undefined {
  const found = availability(kind);
  if (found.available) return found.value;
  const variable = kind === "chromium" ? "TERRARIUM_REQUIRE_BROWSER" : "TERRARIUM_REQUIRE_SERVICES";
  if (requires(variable)) throw new Error(`${what}: ${variable} is set but ${found.missing}`);
  console.warn(`skipped: ${what}: ${found.missing}`);
  return undefined;
}
