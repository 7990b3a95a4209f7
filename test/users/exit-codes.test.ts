import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, spawnCli } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";
import { minimalScenario } from "../helpers/users-folders.js";

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * What CI sees of `users run`: a folder where one run's agent hangs, one's cannot reach what it needs, and
 * one answers. The hanging one ends as agent_error when --agent-timeout runs out (it does not end the
 * process with exit 0), and errored runs make the exit code 1 unless --max-errors allows them.
 */
describe("users run: exit codes and error lines tell the truth", () => {
  let server: ScriptedLlmServer;
  let dir: string;
  let config: string;
  let scenarios: string;
  let agent: string;
  let deadPort: number;

  beforeAll(async () => {
    server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    dir = mkdtempSync(join(tmpdir(), "users-exit-"));
    config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:judge", user: "scripted:user" });
    scenarios = join(dir, "scenarios");
    mkdirSync(scenarios);
    for (const id of ["good", "hangs", "unreachable"])
      writeFileSync(join(scenarios, `${id}.yaml`), minimalScenario(id));
    deadPort = await closedPort();
    agent = join(dir, "agent.mjs");
    writeFileSync(
      agent,
      `export async function reply({ scenario }) {
  if (scenario.id === "hangs") return new Promise(() => {});
  if (scenario.id === "unreachable") {
    const response = await fetch("http://127.0.0.1:${deadPort}/orders");
    return await response.text();
  }
  return "Your return of order #W2378156 is started; the refund goes to your card.";
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
    "--agent-timeout",
    "1",
    "--concurrency",
    "3",
    "--out",
    out,
    ...more,
  ];

  it("a hanging and a failing agent make exit 1 with one line per kind of error; the good run is whole", async () => {
    const out = join(dir, "mixed");
    // Its own process, as CI runs it: a promise that never settles cannot hide behind the test's.
    const child = spawnCli(args(out));
    const run = { code: await child.exit, stderr: child.stderr() };
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^agent_error: 2 \(first, hangs\.1: the agent failed: the agent gave no answer within 1 s \(--agent-timeout\)\)$/m,
    );
    expect(run.stderr).toMatch(/^2 of 3 runs errored; --max-errors allows 0$/m);
    expect(readdirSync(join(out, "transcripts")).sort()).toEqual([
      "good.1.jsonl",
      "hangs.1.jsonl",
      "unreachable.1.jsonl",
    ]);
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary.runs.total).toBe(3);
    expect(summary.runs.errors).toBe(2);
    expect(summary.runs.endReasons).toEqual({ agent_error: 2, stop: 1 });
    const byId = Object.fromEntries(
      summary.scenarios.map((s: any) => [s.id, { endReason: s.runs[0].endReason, error: s.runs[0].error }]),
    );
    expect(byId.good).toEqual({ endReason: "stop", error: undefined });
    expect(byId.hangs.error).toMatch(/no answer within 1 s/);
    expect(byId.unreachable.error).toMatch(/fetch failed|ECONNREFUSED/);
    // Judged: the good run has its verdict, so no judge error is reported.
    expect(run.stderr).not.toMatch(/judge_error/);
  }, 120_000);

  it("--max-errors allows errored runs: exit 0 and a line saying so", async () => {
    const out = join(dir, "allowed");
    const run = await cli(args(out, "--max-errors", "2", "--no-judges"));
    expect(run.stderr).toMatch(/^2 of 3 runs errored; --max-errors allows 2, so this passes$/m);
    expect(run.code).toBe(0);
  }, 120_000);

  it("an agent that cannot be reached is found by one probe: exit 2 before any model call", async () => {
    const before = server.requests.length;
    const out = join(dir, "unreachable-agent");
    const run = await cli([
      "--config",
      config,
      "users",
      "run",
      "--scenarios",
      scenarios,
      "--agent",
      `openai-compatible:http://127.0.0.1:${deadPort}/v1#my-agent`,
      "--out",
      out,
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`cannot reach http://127.0.0.1:${deadPort} (connection refused`);
    expect(server.requests.length).toBe(before);
    expect(existsSync(join(out, "transcripts"))).toBe(false);
  });

  it("--fail-under on a metric users run does not have is refused before any model call", async () => {
    const before = server.requests.length;
    const run = await cli(args(join(dir, "nosuch"), "--fail-under", "nosuch=3,passHatK.4=1"));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('"nosuch" is not a metric of users run');
    expect(run.stderr).toContain('"passHatK.4" needs 1 <= k <= --runs (1)');
    expect(server.requests.length).toBe(before);
  });

  it("a judged threshold with --no-judges and a bad --agent-timeout are refused before any work", async () => {
    const judged = await cli(args(join(dir, "judged"), "--no-judges", "--fail-under", "realism.goal=90"));
    expect(judged.code).toBe(2);
    expect(judged.stderr).toContain('"realism.goal" is judged, and --no-judges turns the judges off');
    const timeout = await cli(args(join(dir, "timeout"), "--agent-timeout", "0"));
    expect(timeout.code).toBe(2);
    expect(timeout.stderr).toContain("--agent-timeout");
  });

  it("every scenario problem of a folder is listed at once, before any model call", async () => {
    const bad = join(dir, "bad-scenarios");
    mkdirSync(bad);
    writeFileSync(join(bad, "a.yaml"), "id: a\nprofile: x\ngoal: y\nmax_turns: 2\n");
    writeFileSync(join(bad, "b.yaml"), "id: b\nprofile: x\ngoal: y\nknowledge: k\nmax_turns: zero\n");
    writeFileSync(join(bad, "c.yaml"), minimalScenario("c"));
    const before = server.requests.length;
    const run = await cli([
      "--config",
      config,
      "users",
      "run",
      "--scenarios",
      bad,
      "--agent",
      `module:${agent}#reply`,
      "--out",
      join(dir, "bad-out"),
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("2 problems in the scenarios:");
    expect(run.stderr).toContain(
      `${join(bad, "a.yaml")}:1: invalid scenario: missing required key "knowledge"`,
    );
    expect(run.stderr).toContain(`${join(bad, "b.yaml")}:5#/max_turns:`);
    expect(server.requests.length).toBe(before);
  });

  it("an unknown --agent-tools name lists the built-in environments", async () => {
    const run = await cli(args(join(dir, "tools"), "--agent-tools", "tau2-retai"));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("is neither a file nor a built-in environment (did you mean tau2-retail?)");
    expect(run.stderr).toMatch(/the built-in environments are .*bank.*tau2-retail/);
  });

  it("a user model and a judge that never answer end as user_error and judge_error, and fail the command", async () => {
    const respond = scriptedUsersResponder();
    let late = "judge";
    // The model named `late` answers far later than the configured timeout.
    const slow = await startScriptedLlmServer([], {
      respond: (body: any) => {
        const step = respond(body);
        return body?.model === late ? { ...step, delayMs: 60_000 } : step;
      },
    });
    try {
      const slowDir = join(dir, "slow");
      mkdirSync(slowDir);
      const slowConfig = join(slowDir, "terrarium.config.yaml");
      writeFileSync(
        slowConfig,
        `providers:\n  scripted:\n    type: openai-compatible\n    baseURL: ${slow.baseURL}\n    structuredOutputs: true\n    timeoutMs: 1500\n` +
          "roles:\n  default: scripted:judge\n  user: scripted:user\ncache:\n  mode: off\nretry:\n  retries: 0\n",
      );
      const goodRun = (out: string, ...more: string[]) =>
        cli([
          "--config",
          slowConfig,
          "users",
          "run",
          "--scenarios",
          join(scenarios, "good.yaml"),
          "--agent",
          `module:${agent}#reply`,
          "--out",
          join(slowDir, out),
          ...more,
        ]);
      const judged = await goodRun("judges");
      expect(judged.code).toBe(1);
      expect(judged.stderr).toMatch(/^judge_error: \d+ \(first, good\.1: \w+: .*no answer within 1500 ms/m);
      expect(judged.stderr).toMatch(/^1 of 1 run errored; --max-errors allows 0$/m);
      late = "user";
      const user = await goodRun("user", "--no-judges");
      expect(user.code).toBe(1);
      expect(user.stderr).toMatch(
        /^user_error: 1 \(first, good\.1: the user's model failed: .*no answer within 1500 ms/m,
      );
    } finally {
      await slow.close();
    }
  }, 120_000);
});
