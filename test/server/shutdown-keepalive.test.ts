import { Agent, request } from "node:http";
import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";
import { startServer } from "../../src/server/index.js";
import { cli } from "../helpers/cli.js";
import { toolFixture } from "../helpers/paths.js";

/**
 * Idle keep-alive connections outlive a load balancer's own idle timeout (AWS ALB: 60 s), so the balancer
 * closes them first and never sends a request on a connection terrarium is closing (its client would get
 * a 502). Node's default is 5 s. The value is announced in the `Keep-Alive` header of every answer.
 */
const PETS = toolFixture("petstore.openapi.yaml");

/** The Keep-Alive header of an answer on a keep-alive connection. */
function keepAliveHeader(url: string): Promise<string | undefined> {
  const agent = new Agent({ keepAlive: true });
  return new Promise((resolve, reject) => {
    const req = request(`${url}/health`, { agent }, (res) => {
      res.resume();
      res.on("end", () => {
        agent.destroy();
        resolve(res.headers["keep-alive"] as string | undefined);
      });
    });
    req.on("error", reject);
    req.end();
  });
}

async function cliWithEnv(args: string[], env: NodeJS.ProcessEnv) {
  const stderr = new PassThrough();
  let err = "";
  stderr.on("data", (chunk) => {
    err += chunk;
  });
  const code = await runCli(args, { stdout: new PassThrough(), stderr, stdin: Readable.from([""]), env });
  return { code, stderr: err };
}

describe("keep-alive timeout", () => {
  it("is 65 s by default, and what ServeOptions.keepAliveTimeoutMs says", async () => {
    for (const [given, expected] of [
      [undefined, "timeout=65"],
      [90_000, "timeout=90"],
    ] as const) {
      const server = await startServer({
        sources: [PETS],
        port: 0,
        ...(given !== undefined ? { keepAliveTimeoutMs: given } : {}),
      });
      try {
        expect(await keepAliveHeader(server.url)).toBe(expected);
      } finally {
        await server.close({ drainTimeoutMs: 1000 });
      }
    }
  });

  it("refuses a keep-alive timeout that is not above 0 or is above an hour", async () => {
    for (const keepAliveTimeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 3_600_001]) {
      await expect(startServer({ sources: [PETS], port: 0, keepAliveTimeoutMs })).rejects.toMatchObject({
        code: "INVALID_INPUT",
        message: expect.stringContaining("keep-alive timeout"),
      });
    }
  });

  it("serve refuses a bad --keep-alive-timeout or TERRARIUM_KEEP_ALIVE_TIMEOUT before anything starts", async () => {
    for (const value of ["soon", "0", "-5", "Infinity", "7200"]) {
      const run = await cli(["serve", "bank", "--port", "0", "--keep-alive-timeout", value]);
      expect(run.code, value).toBe(2);
      expect(run.stderr).toContain("--keep-alive-timeout");
      expect(run.stderr).toMatch(/expected (a number of seconds above 0|at most 3600 seconds)/);
    }
    const run = await cliWithEnv(["serve", "bank", "--port", "0"], { TERRARIUM_KEEP_ALIVE_TIMEOUT: "0" });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/TERRARIUM_KEEP_ALIVE_TIMEOUT="0" \(for --keep-alive-timeout\): expected/);
  });

  it("serve's help names the flag, its default and its variable", async () => {
    const run = await cli(["serve", "--help"]);
    const help = run.stdout.replace(/\s+/g, " ");
    expect(help).toContain("--keep-alive-timeout <seconds>");
    expect(help).toContain("(default: 65)");
    expect(help).toContain("[env TERRARIUM_KEEP_ALIVE_TIMEOUT]");
  });
});
