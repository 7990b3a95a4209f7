import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildEngine } from "../../src/server/start.js";
import type { CodeSimulator } from "../../src/sim/index.js";
import { cli } from "../helpers/cli.js";
import { toolFixture } from "../helpers/paths.js";

/** `terrarium serve` failing to listen says why in one line and exits non-zero. */
let blocker: Server;
let taken: number;

beforeAll(async () => {
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  taken = (blocker.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

describe("terrarium serve", () => {
  it("a port already in use is a one-line error, no stack trace, non-zero exit", async () => {
    const run = await cli(["serve", "bank", "--port", String(taken)]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toBe(
      `terrarium: port ${taken} on 127.0.0.1 is already in use; stop what holds it or choose another with --port [INVALID_INPUT]\n`,
    );
    expect(run.stdout).toBe("");
  });

  it("a port that is not a port is refused before anything starts", async () => {
    for (const port of ["abc", "70000", "-5"]) {
      const run = await cli(["serve", "bank", "--port", port]);
      expect(run.code, port).toBe(2);
      expect(run.stderr.trim().split("\n"), port).toHaveLength(1);
      expect(run.stderr).toMatch(/--port must be an integer from 0 to 65535/);
    }
  });

  it("--live-instances bounds the live environment instances, and bad values are refused first", async () => {
    for (const value of ["0", "abc", "-1"]) {
      const run = await cli(["serve", "bank", "--live-instances", value]);
      expect(run.code, value).toBe(2);
      expect(run.stderr).toMatch(/--live-instances must be an integer of at least 1/);
    }
    const { engine } = await buildEngine({ sources: ["bank"], seed: "s", liveInstances: 2 });
    const code = engine.simulatorFor(engine.catalog.get("transfer") as never) as CodeSimulator;
    const call = {
      name: "transfer",
      arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 },
    };
    const sessions = [];
    for (let i = 0; i < 4; i++) sessions.push(await engine.createSession());
    for (const session of sessions) expect((await engine.call(session.id, call)).status).toBe("ok");
    expect(code.liveInstances).toBe(2);
    // An evicted session is rebuilt from the store and goes on where it was.
    expect((await engine.call(sessions[0]?.id as string, call)).status).toBe("ok");
    expect(
      ((await engine.state(sessions[0]?.id as string)) as { accounts: Record<string, { balance: number }> })
        .accounts["ACC-1001"]?.balance,
    ).toBe(
      (((await engine.state(sessions[1]?.id as string)) as { accounts: Record<string, { balance: number }> })
        .accounts["ACC-1001"]?.balance as number) - 1,
    );
    await engine.close();
  });

  it("prints the catalog's load summary at start-up, and --strict refuses a catalog with skips", async () => {
    const files = [toolFixture("bad/unknown-format.json"), toolFixture("slackish.swagger.json")];
    const strict = await cli(["serve", ...files, "--port", "0", "--strict"]);
    expect(strict.code).toBe(2);
    expect(strict.stderr).toMatch(/1 operation was skipped \(strict mode\)/);
    expect(strict.stderr).toMatch(/unknown-format\.json#\/tools\/1: UNKNOWN_FORMAT/);

    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "serve", ...files, "--port", "0"],
      {
        cwd: join(import.meta.dirname, "..", ".."),
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    try {
      const stderr = await new Promise<string>((resolve, reject) => {
        let text = "";
        child.stderr?.on("data", (chunk: Buffer) => {
          text += chunk.toString();
          if (text.includes("terrarium serving")) resolve(text);
        });
        child.on("exit", (code) => reject(new Error(`serve exited early (${code}): ${text}`)));
      });
      const lines = stderr.split("\n");
      expect(lines[0]).toMatch(/^6 tools; 1 operation skipped: 1 UNKNOWN_FORMAT; \d+ warnings \(/);
      expect(lines[1]).toMatch(/^ {2}skipped .*unknown-format\.json#\/tools\/1: UNKNOWN_FORMAT/);
      expect(stderr).toMatch(/terrarium serving 6 tools at http:\/\/127\.0\.0\.1:\d+/);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
