import { PassThrough, Readable, Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";

/** A stdout that breaks on the first write: an error terrarium has no words for. */
function breakingRun(args: string[]): Promise<{ code: number; stderr: string }> {
  const stdout = new Writable({
    write() {
      throw new RangeError("Invalid string length");
    },
  });
  const stderr = new PassThrough();
  let text = "";
  stderr.on("data", (chunk) => {
    text += chunk;
  });
  return runCli(args, { stdout, stderr, stdin: Readable.from([""]) }).then((code) => ({
    code,
    stderr: text,
  }));
}

describe("an unexpected error", () => {
  afterEach(() => {
    delete process.env.TERRARIUM_DEBUG;
  });

  it("is one line saying what failed, without a stack trace", async () => {
    const run = await breakingRun(["tools", "list", "bank", "--json"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      "terrarium: unexpected error: RangeError: Invalid string length (TERRARIUM_DEBUG=1 shows where)\n",
    );
  });

  it("shows its stack with TERRARIUM_DEBUG=1", async () => {
    process.env.TERRARIUM_DEBUG = "1";
    const run = await breakingRun(["tools", "list", "bank", "--json"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^terrarium: unexpected error: RangeError: Invalid string length\nRangeError: Invalid string length\n\s+at /,
    );
  });
});
