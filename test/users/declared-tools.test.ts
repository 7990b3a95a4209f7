import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";

const ROOT = join(import.meta.dirname, "..", "..");
const SCENARIO = join(ROOT, "examples", "users", "scenarios", "retail-return.yaml");
const RULE_AGENT = `module:${join(ROOT, "examples", "users", "rule-agent.mjs")}#reply`;

/**
 * TDE's N is the declared tool count whenever tools are known (issue 22): module and http agents take
 * `--agent-tools` to declare their tools (terrarium does not run them), and summary.json and the report say
 * what N was and where it came from.
 */
describe("users run: N from the declared tools of module and http agents", () => {
  let server: ScriptedLlmServer;
  let agentHttp: Server;
  let agentUrl: string;
  let dir: string;
  let config: string;
  let httpConfig: string;

  beforeAll(async () => {
    server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    dir = mkdtempSync(join(tmpdir(), "users-declared-"));
    config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:judge", user: "scripted:user" });
    // An HTTP agent that reports the one tool call it made with each answer.
    agentHttp = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            text: "I looked your order up.",
            calls: [{ name: "get_order_details", arguments: { order_id: "#W2378156" }, result: {} }],
          }),
        );
      });
    });
    await new Promise<void>((resolve) => agentHttp.listen(0, "127.0.0.1", resolve));
    agentUrl = `http://127.0.0.1:${(agentHttp.address() as AddressInfo).port}/chat`;
    httpConfig = join(dir, "http.json");
    writeFileSync(httpConfig, JSON.stringify({ response: { message: "text", toolCalls: "calls" } }));
  });
  afterAll(async () => {
    await server.close();
    await new Promise<void>((resolve) => agentHttp.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const usersRun = async (out: string, ...args: string[]) => {
    const run = await cli([
      "--config",
      config,
      "users",
      "run",
      "--scenarios",
      SCENARIO,
      "--no-judges",
      "--out",
      join(dir, out),
      ...args,
    ]);
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    return {
      run,
      summary: JSON.parse(readFileSync(join(dir, out, "summary.json"), "utf8")),
      html: readFileSync(join(dir, out, "report.html"), "utf8"),
    };
  };

  it("a module agent with --agent-tools: N is every declared tool, written in summary.json, the report and the table", async () => {
    const { run, summary, html } = await usersRun(
      "module",
      "--agent",
      RULE_AGENT,
      "--agent-tools",
      "tau2-retail",
    );
    const declared: string[] = summary.settings.agentToolNames;
    expect(declared.length).toBeGreaterThan(10);
    expect(declared).toEqual(expect.arrayContaining(["find_user_id_by_email", "get_order_details"]));
    // The rule agent calls two tools, once each: 1 bit of entropy over N = every declared tool.
    expect(summary.metrics.coverage).toEqual({
      toolCount: declared.length,
      toolCountSource: "declared",
      declaredTools: declared.length,
      undeclaredCalled: [],
      conversations: 1,
      calls: 2,
      transitions: 1,
      tdGroups: 0,
    });
    expect(summary.metrics.tde).toBeCloseTo(1 / Math.log2(declared.length), 12);
    expect(html).toContain(
      `N = ${declared.length} tools, from the agent&#39;s declared tools (--agent-tools tau2-retail)`,
    );
    expect(run.stdout).toContain(
      `coverage: N = ${declared.length} tools (declared), 1 conversation, 2 agent tool calls`,
    );

    // Without --agent-tools only the tools seen called are known: N = 2, and the summary says so.
    const bare = await usersRun("module-bare", "--agent", RULE_AGENT);
    expect(bare.summary.metrics.coverage).toMatchObject({
      toolCount: 2,
      toolCountSource: "called",
      declaredTools: 0,
    });
    expect(bare.summary.metrics.tde).toBe(1);
    expect(bare.html).toContain("pass --agent-tools for the full count");
  });

  it("an http agent with --agent-tools: its reported calls are normalised by the declared tools", async () => {
    const { summary } = await usersRun(
      "http",
      "--agent",
      `http:${agentUrl}`,
      "--http-config",
      httpConfig,
      "--agent-tools",
      "tau2-retail",
    );
    const declared: string[] = summary.settings.agentToolNames;
    expect(declared.length).toBeGreaterThan(10);
    expect(summary.metrics.coverage).toMatchObject({
      toolCount: declared.length,
      toolCountSource: "declared",
      conversations: 1,
      calls: 1,
    });
    // One tool used out of N: a measured 0; one call per run, so no transition for TE.
    expect(summary.metrics.tde).toBe(0);
    expect(summary.metrics.te).toBeNull();
  });
});
