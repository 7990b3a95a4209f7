import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { Command } from "commander";
import { afterAll, describe, expect, it } from "vitest";
import { registerUsersObserveCommand, resolvePageArgument } from "../../src/cli/commands/users/observe.js";
import type { Observation } from "../../src/users/browser/index.js";
import { need } from "../helpers/requirements.js";

/** `terrarium users observe` on the example page (a local file: no server, no network). */
const CHROMIUM = need("chromium", "users observe on the example page");
const DEMO = "examples/users/pages/observe-demo.html";

async function observe(args: string[]): Promise<{ stdout: string; stderr: string; error?: unknown }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (chunk: Buffer) => out.push(chunk));
  stderr.on("data", (chunk: Buffer) => err.push(chunk));
  const program = new Command("terrarium").exitOverride();
  const users = program.command("users").exitOverride();
  registerUsersObserveCommand(users, { stdout, stderr, stdin: Readable.from([""]) });
  let error: unknown;
  try {
    await program.parseAsync(["users", "observe", ...args], { from: "user" });
  } catch (caught) {
    error = caught;
  }
  return { stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8"), error };
}

describe("users observe: arguments", () => {
  it("takes http(s) and file URLs, and paths of local pages", () => {
    expect(resolvePageArgument("http://127.0.0.1:8000/x")).toBe("http://127.0.0.1:8000/x");
    expect(resolvePageArgument(DEMO)).toBe(pathToFileURL(resolve(DEMO)).href);
    expect(() => resolvePageArgument("javascript:alert(1)")).toThrow(/javascript: URLs are not allowed/);
    expect(() => resolvePageArgument("no/such/page.html")).toThrow(/no such page: no\/such\/page\.html/);
  });
});

describe.runIf(CHROMIUM)("users observe: on the example page", () => {
  const dir = mkdtempSync(join(tmpdir(), "users-observe-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("prints the observation text with ids from the iframe and the shadow root", async () => {
    const run = await observe([DEMO]);
    expect(run.error).toBeUndefined();
    expect(run.stdout).toContain("Page: Observe demo: a shop with a chat widget");
    expect(run.stdout).toContain('[search-input] input input "Search" (empty)');
    expect(run.stdout).toContain('[apply-button] clickable button "Apply" (in demo-coupon>shadow)');
    expect(run.stdout).toContain("Frame iframe#chat (about:srcdoc):");
    expect(run.stdout).toContain('[send-button] clickable button "Send"');
  }, 60_000);

  it("prints JSON and saves a screenshot", async () => {
    const shot = join(dir, "demo.png");
    const run = await observe([DEMO, "--json", "--screenshot", shot]);
    expect(run.error).toBeUndefined();
    const observation = JSON.parse(run.stdout) as Observation;
    expect(observation.elements.map((element) => [element.id, element.frame])).toEqual([
      ["search-input", ""],
      ["search-button", ""],
      ["size-select", ""],
      ["coupon-code-input", "demo-coupon>shadow"],
      ["apply-button", "demo-coupon>shadow"],
      ["chat-message-input", "iframe#chat"],
      ["send-button", "iframe#chat"],
    ]);
    expect(readFileSync(shot).subarray(1, 4).toString("latin1")).toBe("PNG");
    expect(run.stderr).toContain(`screenshot: ${shot}`);
  }, 60_000);

  it("refuses a missing Chromium with the package to install", async () => {
    const run = await observe([DEMO, "--chromium", "/nowhere/chromium"]);
    expect(String((run.error as Error)?.message)).toContain("apt-get install -y chromium");
  });
});
