import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli } from "../helpers/cli.js";

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
});
