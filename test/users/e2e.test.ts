import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTranscript } from "../../src/users/run/index.js";
import { cli } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";

const SCENARIOS = join(import.meta.dirname, "..", "..", "examples", "users", "scenarios");

/**
 * `terrarium users run` end to end: the scripted OpenAI-compatible server plays the simulated user, the
 * judges and the agent; two scenarios × two runs against a planner agent on tau2-retail and against an
 * openai-compatible agent; the user searches its knowledge and calls its mocked tool.
 */
describe("users run, end to end", () => {
  let server: ScriptedLlmServer;
  let agentServer: ScriptedLlmServer;
  let dir: string;
  let config: string;

  beforeAll(async () => {
    server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    agentServer = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    dir = mkdtempSync(join(tmpdir(), "users-e2e-"));
    config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:judge", user: "scripted:user" });
  });
  afterAll(async () => {
    await server.close();
    await agentServer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `users run` on the example scenarios with the scripted config, plus `args`. */
  const usersRun = (...args: string[]) =>
    cli(["--config", config, "users", "run", "--scenarios", SCENARIOS, ...args]);
  const planner = (out: string, ...more: string[]) =>
    usersRun(
      "--agent",
      "planner:scripted:agent",
      "--agent-tools",
      "tau2-retail",
      "--runs",
      "2",
      "--seed",
      "11",
      "--out",
      out,
      ...more,
    );

  it("runs a planner agent on tau2-retail: transcripts, summary.json with every metric, and the report", async () => {
    const out = join(dir, "planner");
    const run = await planner(out);
    expect(run.stderr).not.toMatch(/Error/);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("TE");
    expect(run.stdout).toContain("report: ");
    const transcripts = readdirSync(join(out, "transcripts")).sort();
    expect(transcripts).toEqual([
      "retail-address-change.1.jsonl",
      "retail-address-change.2.jsonl",
      "retail-return-headphones.1.jsonl",
      "retail-return-headphones.2.jsonl",
    ]);
    const ret = readTranscript(join(out, "transcripts", "retail-return-headphones.1.jsonl"));
    expect(ret.seed).toBe("11/retail-return-headphones/1");
    expect(ret.end?.endReason).toBe("stop");
    const first = ret.turns[0];
    expect(first?.plan?.nextStep).toBe("ask for the return");
    // The user searched its knowledge and called its mocked tool before writing.
    expect(first?.actions.map((a) => a.tool)).toEqual(["search_knowledge", "check_order_status"]);
    expect((first?.actions[0]?.data as any)?.results?.length).toBeGreaterThan(0);
    // The agent's tool call comes from the engine's history, answered by tau2-retail's code.
    expect(first?.agent?.toolCalls).toEqual([
      expect.objectContaining({ tool: "find_user_id_by_email", status: "ok" }),
    ]);
    expect(ret.turns[1]?.user).toBe("Great, that is all I needed, thank you.");
    expect(ret.turns[1]?.stop).toBe("stop");
    expect(ret.judgement?.realism?.[0]?.goal.consistent).toBe(true);
    expect(ret.judgement?.failures?.[0]?.flagged).toEqual(["helpfulness"]);
    expect(ret.judgement?.goal?.checklistSource).toBe("scenario");

    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary.schemaVersion).toBe(1);
    expect(summary.runs).toMatchObject({ total: 4, errors: 0, endReasons: { stop: 4 } });
    const m = summary.metrics;
    // Every run calls one tool of tau2-retail's 15+: no tool has an outgoing transition, so TE measures
    // nothing (null); TDE and TD are measured zeros (one tool used; identical runs of each goal).
    expect(m.te).toBeNull();
    expect(m.tde).toBe(0);
    expect(m.td).toBe(0);
    expect(m.coverage).toMatchObject({
      toolCountSource: "declared",
      conversations: 4,
      calls: 4,
      transitions: 0,
    });
    expect(m.coverage.toolCount).toBe(summary.settings.agentToolNames.length);
    expect(m.realism).toEqual({ goal: 100, profile: 100, knowledge: 100 });
    expect(m.failures).toBeGreaterThanOrEqual(1);
    expect(m.success).toBe(1);
    expect(m.passHatK).toEqual({ 1: 1, 2: 1 });
    expect(m.cost.turns).toBe(8);
    expect(m.actionsPerTurn).toBeCloseTo(6 / 8);
    expect(summary.settings.agentToolNames).toContain("find_user_id_by_email");
    expect(summary.scenarios[0].success).toEqual({ n: 2, mean: 1, std: 0 });
    const html = readFileSync(join(out, "report.html"), "utf8");
    expect(html).toContain("retail-return-headphones");
    expect(existsSync(join(out, "failures.json"))).toBe(true);

    // The same command again refuses to overwrite; --resume keeps all four runs and makes no user call.
    expect((await planner(out)).code).not.toBe(0);
    const before = server.requests.filter((r) => r.body?.model === "user").length;
    const resumed = await planner(out, "--resume", "--fail-under", "tde=0.5,realism.goal=95");
    expect(server.requests.filter((r) => r.body?.model === "user").length).toBe(before);
    expect(resumed.stderr).toContain("kept 4 finished run(s)");
    // TDE is 0 here, under 0.5: the gate fails the command, naming the metric.
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toContain("tde = 0 is under 0.5");

    const report = await cli(["users", "report", out]);
    expect(report.code).toBe(0);
    expect(report.stdout).toContain("100.0");
  });

  it("runs an openai-compatible agent whose tool calls terrarium simulates, and compares the two runs", async () => {
    const out = join(dir, "chat");
    const run = await usersRun(
      "--agent",
      `openai-compatible:${agentServer.baseURL}#my-agent`,
      "--agent-tools",
      "tau2-retail",
      "--runs",
      "2",
      "--concurrency",
      "3",
      "--out",
      out,
      "--json",
    );
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout);
    expect(summary.runs.total).toBe(4);
    const ret = readTranscript(join(out, "transcripts", "retail-address-change.2.jsonl"));
    expect(ret.turns[0]?.agent?.message).toBe("Your order #W2378156 was delivered; I can start the return.");
    expect(ret.turns[0]?.agent?.toolCalls[0]).toMatchObject({ tool: "get_order_details", status: "ok" });
    // The agent's server saw the tools offered and the simulated result fed back.
    const withTool = agentServer.requests.find((r) => r.body?.messages?.some((m: any) => m.role === "tool"));
    expect(withTool?.body?.tools?.length).toBeGreaterThan(10);

    const compare = await cli(["users", "compare", join(dir, "planner"), out]);
    expect(compare.code).toBe(0);
    expect(compare.stdout).toContain("planner");
    expect(compare.stdout).toContain("chat");
  });

  it("refuses bad input before any model call", async () => {
    const calls = server.requests.length;
    const bad = async (args: string[], message: RegExp) => {
      const run = await usersRun("--out", join(dir, "bad"), ...args);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(message);
    };
    await bad(["--agent", "planner:scripted:agent"], /--agent-tools/);
    await bad(["--agent", "chatgpt"], /planner:/);
    await bad(["--agent", "planner:scripted:agent", "--agent-tools", "tau2-retail", "--runs", "0"], /runs/);
    await bad(
      ["--agent", "planner:scripted:agent", "--agent-tools", "tau2-retail", "--fail-under", "tde"],
      /no "="/,
    );
    await bad(["--agent", "module:./nope.mjs", "--agent-tools", "tau2-retail"], /nope\.mjs/);
    expect(server.requests.length).toBe(calls);
    expect(existsSync(join(dir, "bad", "summary.json"))).toBe(false);
  });
});
