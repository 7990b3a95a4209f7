import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { availability, need } from "./requirements.js";

/**
 * README's `npm test` passes on a machine without Chromium, PostgreSQL or Redis: the tests that need them
 * skip with one line saying what is missing and how to install it, and fail instead when CI requires them.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const VITEST = join(ROOT, "node_modules", "vitest", "vitest.mjs");
const HIDDEN = "/nonexistent/terrarium-test/chromium";

/** The environment of a machine with none of them: Chromium hidden, no service URLs, nothing required. */
function bareEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TERRARIUM_CHROMIUM: HIDDEN, ...extra };
  for (const name of [
    "TERRARIUM_TEST_POSTGRES",
    "TERRARIUM_TEST_REDIS",
    "TERRARIUM_REQUIRE_BROWSER",
    "TERRARIUM_REQUIRE_SERVICES",
  ])
    if (!(name in extra)) delete env[name];
  return env;
}

/** One test file in a child vitest: its exit code and everything it printed, without colours. */
function runFile(file: string, env: NodeJS.ProcessEnv) {
  const run = spawnSync(process.execPath, [VITEST, "run", file], {
    cwd: ROOT,
    env: { ...env, NO_COLOR: "1", FORCE_COLOR: "0", CI: "1" },
    encoding: "utf8",
  });
  return { code: run.status, output: `${run.stdout}\n${run.stderr}` };
}

describe("tests that need Chromium, PostgreSQL or Redis", () => {
  it("skip with one line naming what is missing and how to install it, or fail when required", () => {
    // The observe test needs Chromium; its argument test does not and still runs.
    const file = "test/users/browser-cli.test.ts";
    const skipped = runFile(file, bareEnv());
    expect(skipped.code, skipped.output).toBe(0);
    const lines = skipped.output.split("\n").filter((line) => line.startsWith("skipped: "));
    expect(lines).toEqual([
      `skipped: users observe on the example page: Chromium not found at ${HIDDEN} (apt-get install -y chromium, or set TERRARIUM_CHROMIUM to a Chromium executable)`,
    ]);
    expect(skipped.output).toMatch(/Tests\s+1 passed \| 3 skipped/);

    const required = runFile(file, bareEnv({ TERRARIUM_REQUIRE_BROWSER: "1" }));
    expect(required.code).toBe(1);
    expect(required.output).toContain(
      `users observe on the example page: TERRARIUM_REQUIRE_BROWSER is set but Chromium not found at ${HIDDEN}`,
    );
  }, 120_000);

  it("say how to get PostgreSQL and Redis, and require them only when asked", () => {
    const saved = { ...process.env };
    try {
      delete process.env.TERRARIUM_TEST_POSTGRES;
      delete process.env.TERRARIUM_TEST_REDIS;
      delete process.env.TERRARIUM_REQUIRE_SERVICES;
      expect(availability("postgres")).toEqual({
        available: false,
        value: "",
        missing:
          "PostgreSQL not configured: TERRARIUM_TEST_POSTGRES is not set (apt-get install -y postgresql; scripts/services.sh starts PostgreSQL and Redis on loopback and prints both URLs; then export TERRARIUM_TEST_POSTGRES=postgres://terrarium:terrarium@127.0.0.1:5432/terrarium)",
      });
      expect(availability("redis").missing).toContain("apt-get install -y redis-server");
      process.env.TERRARIUM_REQUIRE_SERVICES = "1";
      expect(() => need("redis", "the queue tests")).toThrow(
        /^the queue tests: TERRARIUM_REQUIRE_SERVICES is set but Redis not configured: TERRARIUM_TEST_REDIS is not set/,
      );
      process.env.TERRARIUM_TEST_REDIS = "redis://127.0.0.1:6379";
      expect(need("redis", "the queue tests")).toBe("redis://127.0.0.1:6379");
    } finally {
      process.env = saved;
    }
  });

  it("all ask test/helpers/requirements.ts (no test reads the REQUIRE variables or probes Chromium itself)", () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== "fixtures" && entry.name !== "node_modules") walk(path);
        } else if (/\.ts$/.test(entry.name)) files.push(path);
      }
    };
    walk(join(ROOT, "test"));
    const offenders: string[] = [];
    for (const path of files) {
      const name = relative(ROOT, path);
      if (name === "test/helpers/requirements.ts" || name === "test/helpers/requirements.test.ts") continue;
      const text = readFileSync(path, "utf8");
      // Deciding by itself whether to skip or fail.
      if (/process\.env\.TERRARIUM_REQUIRE_/.test(text)) offenders.push(`${name}: reads a REQUIRE variable`);
      if (/existsSync\([^)]*(chromium|CHROMIUM)/.test(text))
        offenders.push(`${name}: probes Chromium itself`);
      // Driving Chromium without asking whether it is there.
      const drives = /chromium\.launch|launchPersistentContext|executablePath: CHROMIUM/.test(text);
      if (drives && !/need\("chromium"/.test(text)) offenders.push(`${name}: drives Chromium unguarded`);
      const postgres = /scratchDatabase\(|TERRARIUM_TEST_POSTGRES/.test(text);
      if (postgres && !/postgresAvailable\(|need\("postgres"/.test(text) && !name.startsWith("test/helpers/"))
        offenders.push(`${name}: uses Postgres unguarded`);
      const redis = /TERRARIUM_TEST_REDIS|RedisJobQueue\.connect|new Redis\(/.test(text);
      // Helpers only name the variable (in messages); the tests that call them carry the guard.
      if (
        redis &&
        !/redis-env\.js|need\("redis"/.test(text) &&
        name !== "test/queue/redis-env.ts" &&
        !name.startsWith("test/helpers/")
      )
        offenders.push(`${name}: uses Redis unguarded`);
    }
    expect(offenders).toEqual([]);
  });
});
