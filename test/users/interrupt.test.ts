import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnCli, waitForStderr } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";
import { comparableSummary, comparableTranscript, minimalScenario } from "../helpers/users-folders.js";

/**
 * Ctrl-C (SIGINT) in API mode: no run starts after it, the run in flight stays a `.partial` transcript,
 * the command says how many runs are left and exits 130; `--resume` plays exactly those, and the folder
 * then equals one played without interruption.
 */
describe("users run: interrupting keeps the work", () => {
  let server: ScriptedLlmServer;
  let dir: string;
  let config: string;
  let scenarios: string;
  let agent: string;
  let release: string;

  beforeAll(async () => {
    server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    dir = mkdtempSync(join(tmpdir(), "users-interrupt-"));
    config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:judge", user: "scripted:user" });
    scenarios = join(dir, "scenarios");
    mkdirSync(scenarios);
    for (const id of ["a", "b", "c"]) writeFileSync(join(scenarios, `${id}.yaml`), minimalScenario(id));
    // Scenario a's agent answers at once; the others wait until the test releases them.
    release = join(dir, "release");
    agent = join(dir, "agent.mjs");
    writeFileSync(
      agent,
      `import { existsSync, watch } from "node:fs";
export async function reply({ scenario }) {
  if (scenario.id !== "a" && !existsSync(${JSON.stringify(release)}))
    await new Promise((resolve) => {
      const watcher = watch(${JSON.stringify(dir)}, () => {
        if (existsSync(${JSON.stringify(release)})) { watcher.close(); resolve(); }
      });
    });
  return "Your return is started; the refund goes to your card.";
}
`,
    );
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const args = (out: string, ...more: string[]) => [
    "--config",
    config,
    "users",
    "run",
    "--scenarios",
    scenarios,
    "--agent",
    `module:${agent}#reply`,
    "--concurrency",
    "1",
    "--seed",
    "5",
    "--out",
    out,
    ...more,
  ];

  it("SIGINT leaves the unfinished runs for --resume, which makes the folder equal an uninterrupted run", async () => {
    const out = join(dir, "interrupted");
    const first = spawnCli(args(out));
    await waitForStderr(first, /^1\/3 runs/m);
    first.child.kill("SIGINT");
    expect(await first.exit).toBe(130);
    expect(first.stderr()).toMatch(/^interrupted: 2 runs to resume; rerun with --resume$/m);
    const files = readdirSync(join(out, "transcripts")).sort();
    expect(files).toEqual(["a.1.jsonl", "b.1.jsonl.partial"]);
    expect(existsSync(join(out, "summary.json"))).toBe(false);

    writeFileSync(release, "go");
    const resumed = spawnCli(args(out, "--resume"));
    expect(await resumed.exit).toBe(0);
    expect(resumed.stderr()).toContain("kept 1 finished run(s)");
    const whole = join(dir, "whole");
    const uninterrupted = spawnCli(args(whole));
    expect(await uninterrupted.exit).toBe(0);

    const names = readdirSync(join(whole, "transcripts")).sort();
    expect(readdirSync(join(out, "transcripts")).sort()).toEqual(names);
    for (const name of names)
      expect(comparableTranscript(join(out, "transcripts", name))).toEqual(
        comparableTranscript(join(whole, "transcripts", name)),
      );
    expect(comparableSummary(out)).toEqual(comparableSummary(whole));
  }, 180_000);
});
