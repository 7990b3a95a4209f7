import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";

const ROOT = join(import.meta.dirname, "..", "..");

/** The CLI in-process with `env` as its environment. */
async function cliWithEnv(args: string[], env: NodeJS.ProcessEnv) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (chunk) => {
    out += chunk;
  });
  stderr.on("data", (chunk) => {
    err += chunk;
  });
  const code = await runCli(args, { stdout, stderr, stdin: Readable.from([""]), env });
  return { code, stdout: out, stderr: err };
}

describe("serve and worker flags from TERRARIUM_* variables", () => {
  it("help names the variable of every flag", async () => {
    for (const [command, variables] of [
      ["serve", ["TERRARIUM_DB", "TERRARIUM_PORT", "TERRARIUM_DRAIN_TIMEOUT", "TERRARIUM_TOKEN_FILE"]],
      ["worker", ["TERRARIUM_QUEUE", "TERRARIUM_CONCURRENCY", "TERRARIUM_LOCK_DURATION"]],
    ] as const) {
      const run = await cliWithEnv([command, "--help"], {});
      expect(run.code).toBe(0);
      const help = run.stdout.replace(/\s+/g, " ");
      for (const variable of variables) expect(help, variable).toContain(`[env ${variable}]`);
    }
  });

  it("a bad value from the environment is refused before anything starts, naming the variable", async () => {
    const cases: Array<[NodeJS.ProcessEnv, string[], RegExp]> = [
      [
        { TERRARIUM_PORT: "eighty" },
        ["serve", "bank"],
        /TERRARIUM_PORT="eighty" \(for --port\): not a number/,
      ],
      [
        { TERRARIUM_STRICT: "maybe" },
        ["serve", "bank"],
        /TERRARIUM_STRICT="maybe" \(for --strict\): expected 1\/0/,
      ],
      [
        { TERRARIUM_QUEUE: "redis://127.0.0.1:1", TERRARIUM_CONCURRENCY: "0" },
        ["worker"],
        /TERRARIUM_CONCURRENCY="0" \(for --concurrency\): expected a whole number of at least 1/,
      ],
      [
        { TERRARIUM_TOKEN_FILE: "/nonexistent/tokens" },
        ["serve", "bank", "--port", "0"],
        /--token-file \/nonexistent\/tokens: no such file/,
      ],
    ];
    for (const [env, args, message] of cases) {
      const run = await cliWithEnv(args, env);
      expect(run.code, JSON.stringify(env)).toBe(2);
      expect(run.stderr).toMatch(message);
    }
  });

  it("tuning variables without a flag are refused at start when bad, naming the variable", async () => {
    const cases: Array<[string, string, RegExp]> = [
      ["TERRARIUM_SANDBOX_INLINE_MS", "soon", /TERRARIUM_SANDBOX_INLINE_MS must be a number of milliseconds/],
      ["TERRARIUM_SANDBOX_WORKERS", "0", /TERRARIUM_SANDBOX_WORKERS must be a positive whole number/],
      ["TERRARIUM_HTTP_FAST_PATH", "fast", /TERRARIUM_HTTP_FAST_PATH must be 0 .* or 1/],
    ];
    for (const [name, value, message] of cases) {
      // These are read from the process's own environment (the pool and the listener are per process).
      const before = process.env[name];
      process.env[name] = value;
      try {
        const run = await cliWithEnv(["serve", "bank", "--port", "0"], {});
        expect(run.code, name).toBe(2);
        expect(run.stderr).toMatch(message);
      } finally {
        if (before === undefined) delete process.env[name];
        else process.env[name] = before;
      }
    }
  });

  it("a flag on the command line wins over its variable", async () => {
    const run = await cliWithEnv(["serve", "bank", "--llm-mode", "bogus"], { TERRARIUM_LLM_MODE: "merged" });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--llm-mode "bogus" is not a mode/);
    const fromEnv = await cliWithEnv(["serve", "bank"], { TERRARIUM_LLM_MODE: "sideways" });
    expect(fromEnv.stderr).toMatch(/--llm-mode "sideways" is not a mode/);
  });

  it("a required flag may come from the environment (worker --queue)", async () => {
    // Without TERRARIUM_QUEUE commander says the option is missing; with it, the worker gets as far as
    // checking the metrics port, which fails first and proves --queue was accepted.
    const missing = await cliWithEnv(["worker"], {});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/required option '--queue <url>' not specified/);
    const given = await cliWithEnv(["worker", "--concurrency", "x"], {
      TERRARIUM_QUEUE: "redis://127.0.0.1:1",
    });
    expect(given.stderr).not.toMatch(/required option/);
    expect(given.code).toBe(2);
  });

  it("db passwords come from a file, never next to a password already in the URL", async () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-env-"));
    writeFileSync(join(dir, "pw"), "s3cret\n");
    const twice = await cliWithEnv(
      ["serve", "bank", "--db", "postgres://u:inline@127.0.0.1:1/db", "--db-password-file", join(dir, "pw")],
      {},
    );
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/already has a password/);
    const file = await cliWithEnv(["serve", "bank", "--db-password-file", join(dir, "pw")], {});
    expect(file.code).toBe(2);
    expect(file.stderr).toMatch(/--db-password-file needs --db with a postgres:\/\/ URL/);
  });

  it("serve runs configured by the environment: port, tokens from a file and from a list, a per-token cap", async () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-env-"));
    writeFileSync(join(dir, "tokens"), "# tenants\nalpha\n\n  beta  \n");
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "serve", "bank", "--seed", "s"],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          TERRARIUM_PORT: "0",
          TERRARIUM_TOKEN_FILE: join(dir, "tokens"),
          TERRARIUM_TOKEN: "gamma",
          TERRARIUM_MAX_SESSIONS_PER_TOKEN: "1",
        },
      },
    );
    let stderr = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
        const match = /http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr);
        if (match) resolve(match[0]);
      });
      child.once("exit", () => reject(new Error(`serve exited: ${stderr}`)));
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      expect((await fetch(`${url}/sessions`, { method: "POST" })).status).toBe(401);
      for (const token of ["alpha", "beta", "gamma"]) {
        const created = await fetch(`${url}/sessions`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
        });
        expect(created.status, token).toBe(201);
      }
      // --max-sessions-per-token 1, from its variable: alpha's second session is refused, nobody else's.
      const second = await fetch(`${url}/sessions`, {
        method: "POST",
        headers: { authorization: "Bearer alpha" },
      });
      expect(second.status).toBe(429);
      expect(await second.json()).toMatchObject({ error: { code: "QUOTA_EXCEEDED" } });
      expect(
        (await fetch(`${url}/sessions`, { method: "POST", headers: { authorization: "Bearer # tenants" } }))
          .status,
      ).toBe(401);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  });
});
