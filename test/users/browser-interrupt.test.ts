import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnCli, waitForStderr } from "../helpers/cli.js";
import { need } from "../helpers/requirements.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";
import { comparableSummary, comparableTranscript } from "../helpers/users-folders.js";

/**
 * Ctrl-C in a browser run (hybrid user, real Chromium, the demo shop): the run that finished is kept, the
 * runs in flight stay `.partial` (never written as finished with a closed-browser error), the command
 * says how many are left and exits 130; `--resume` plays exactly those, and the folder then equals one
 * played without interruption. Skipped, with a line saying so, where Chromium is absent (CI sets
 * TERRARIUM_REQUIRE_BROWSER).
 */
const CHROMIUM = need("chromium", "users run in a browser: interrupting keeps the work");

const ROOT = join(import.meta.dirname, "..", "..");
const EXAMPLE = join(ROOT, "examples", "users", "scenarios");
/** Scenarios whose user's model calls wait until the test releases them (their profile names this user). */
const HELD = "Held Rossi";

/**
 * An OpenAI-compatible front for the scripted server that holds every request of a held scenario until
 * `release()`; the others pass straight through.
 */
async function startGate(
  upstream: string,
): Promise<{ baseURL: string; release(): void; close(): Promise<void> }> {
  let released = false;
  const waiting: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      if (!released && body.includes(HELD)) await new Promise<void>((resolve) => waiting.push(resolve));
      if (res.destroyed) return;
      try {
        const answer = await fetch(`${upstream}${req.url?.replace(/^\/v1/, "") ?? ""}`, {
          method: req.method ?? "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(await answer.text());
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    release() {
      released = true;
      for (const resolve of waiting.splice(0)) resolve();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe.runIf(CHROMIUM)("users run in a browser: interrupting keeps the work", () => {
  let server: ScriptedLlmServer;
  let gate: Awaited<ReturnType<typeof startGate>>;
  let dir: string;
  let config: string;
  let scenarios: string;

  beforeAll(async () => {
    server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    gate = await startGate(server.baseURL);
    dir = mkdtempSync(join(tmpdir(), "users-browser-interrupt-"));
    config = writeScriptedConfig(dir, gate.baseURL, {
      default: "scripted:judge",
      user: "scripted:user",
      agent: "scripted:agent",
    });
    // Three copies of the example return scenario: a plays at once, b and c wait for the test.
    scenarios = join(dir, "scenarios");
    mkdirSync(scenarios);
    cpSync(join(EXAMPLE, "knowledge"), join(scenarios, "knowledge"), { recursive: true });
    const example = readFileSync(join(EXAMPLE, "retail-return.yaml"), "utf8");
    for (const id of ["a", "b", "c"])
      writeFileSync(
        join(scenarios, `${id}.yaml`),
        example
          .replace("id: retail-return-headphones", `id: ${id}`)
          .replace("name: Yusuf Rossi", id === "a" ? "name: Yusuf Rossi" : `name: ${HELD}`),
      );
  });
  afterAll(async () => {
    gate?.release();
    await gate?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const args = (out: string, ...more: string[]) => [
    "--config",
    config,
    "users",
    "run",
    "--scenarios",
    scenarios,
    "--agent",
    "browser:demo",
    "--mode",
    "hybrid",
    "--concurrency",
    "2",
    "--seed",
    "7",
    "--out",
    out,
    ...more,
  ];

  it("SIGINT after the first run leaves the others for --resume, which makes the folder equal an uninterrupted run", async () => {
    const out = join(dir, "interrupted");
    const first = spawnCli(args(out));
    await waitForStderr(first, /^1\/3 runs \(a\.1: stop after 2 turns\)$/m);
    first.child.kill("SIGINT");
    expect(await first.exit).toBe(130);
    expect(first.stderr()).toMatch(/^interrupted: 2 runs to resume; rerun with --resume$/m);
    // Nothing was recorded as finished with a closed-browser error: b and c are partial (or, for c, not
    // started yet), never a transcript under its final name.
    expect(first.stderr()).not.toMatch(/has been closed/);
    const files = readdirSync(join(out, "transcripts")).sort();
    expect(files[0]).toBe("a.1.jsonl");
    expect(files.slice(1)).toContain("b.1.jsonl.partial");
    expect(files.slice(1).every((name) => name.endsWith(".partial"))).toBe(true);
    for (const name of files.slice(1)) {
      const lines = comparableTranscript(join(out, "transcripts", name)) as Array<{ type: string }>;
      expect(lines.map((line) => line.type)).toEqual(["run"]);
    }
    expect(existsSync(join(out, "summary.json"))).toBe(false);

    const kept = readFileSync(join(out, "transcripts", "a.1.jsonl"), "utf8");
    gate.release();
    const resumed = spawnCli(args(out, "--resume"));
    expect(await resumed.exit).toBe(0);
    expect(resumed.stderr()).toContain("kept 1 finished run(s)");
    // Exactly the missing runs were played: a's transcript is the same file, clocks and all.
    expect(resumed.stderr()).toMatch(/^3\/3 runs/m);
    expect(readFileSync(join(out, "transcripts", "a.1.jsonl"), "utf8")).toBe(kept);

    const whole = join(dir, "whole");
    const uninterrupted = spawnCli(args(whole));
    expect(await uninterrupted.exit).toBe(0);

    const names = readdirSync(join(whole, "transcripts")).sort();
    expect(names).toEqual(["a.1.jsonl", "b.1.jsonl", "c.1.jsonl"]);
    expect(readdirSync(join(out, "transcripts")).sort()).toEqual(names);
    for (const name of names)
      expect(comparableTranscript(join(out, "transcripts", name))).toEqual(
        comparableTranscript(join(whole, "transcripts", name)),
      );
    expect(comparableSummary(out)).toEqual(comparableSummary(whole));
    // The runs really played in the browser: a conversation, then the stop, in each.
    expect(comparableSummary(whole).runs.endReasons).toEqual({ stop: 3 });
  }, 240_000);
});
