import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ShopDemo, startShopDemo } from "../../src/users/demo/index.js";
import { readTranscript } from "../../src/users/run/index.js";
import { cli } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";

/**
 * The hybrid user against the demo shop in headless Chromium: the scripted server plays the user (plan,
 * router, UI actions, its own tool), the judges, and the planner agent behind the shop's chat widget,
 * which lives in an iframe. CI installs chromium and sets TERRARIUM_REQUIRE_BROWSER; elsewhere the test
 * says it was skipped when /usr/bin/chromium is absent.
 */
const CHROMIUM = process.env.TERRARIUM_CHROMIUM ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available && process.env.TERRARIUM_REQUIRE_BROWSER !== "1")
  console.warn(`hybrid-e2e: skipped, ${CHROMIUM} is absent (install it with: apt-get install -y chromium)`);
const SCENARIOS = join(
  import.meta.dirname,
  "..",
  "..",
  "examples",
  "users",
  "scenarios",
  "retail-return.yaml",
);

describe.runIf(available || process.env.TERRARIUM_REQUIRE_BROWSER === "1")("users run in a browser", () => {
  let server: ScriptedLlmServer;
  let shop: ShopDemo;
  let dir: string;
  let config: string;

  beforeAll(async () => {
    server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    dir = mkdtempSync(join(tmpdir(), "users-hybrid-"));
    config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:judge", user: "scripted:user" });
    shop = await startShopDemo({ port: 0, config, agentModel: "scripted:agent", seed: "1" });
  }, 60_000);
  afterAll(async () => {
    await shop?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const usersRun = (...args: string[]) =>
    cli(["--config", config, "users", "run", "--scenarios", SCENARIOS, ...args]);
  const run = (out: string, mode: string, ...more: string[]) =>
    usersRun(
      "--agent",
      `browser:${shop.url}`,
      "--agent-tools",
      `terrarium:${shop.url}terrarium`,
      "--mode",
      mode,
      "--out",
      out,
      ...more,
    );

  it("hybrid: the user checks its order with its own tool, writes in the widget's iframe, reads the reply and stops", async () => {
    const out = join(dir, "hybrid");
    const result = await run(out, "hybrid", "--screenshots");
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.code).toBe(0);
    const transcript = readTranscript(join(out, "transcripts", "retail-return-headphones.1.jsonl"));
    expect(transcript.mode).toBe("hybrid");
    expect(transcript.end?.endReason).toBe("stop");
    const [first, second] = transcript.turns;
    // The router sent the first step to the user's own tool, then the user typed into the iframe.
    expect(first?.actions.map((a) => [a.kind, a.tool])).toEqual([
      ["tool", "check_order_status"],
      ["ui", "type"],
    ]);
    expect(first?.user).toContain("return the headphones");
    // The planner agent behind the widget answered; its tool call came from the shop's terrarium session.
    expect(first?.agent?.message).toBe("I found your account. Which item would you like to return?");
    expect(first?.agent?.toolCalls).toEqual([
      expect.objectContaining({ tool: "find_user_id_by_email", status: "ok" }),
    ]);
    expect(second?.user).toBe("Thanks, that is all I needed.");
    // One screenshot per step, referenced from the UI actions and embedded in the report.
    const shots = readdirSync(join(out, "screenshots", "retail-return-headphones.1"));
    expect(shots.length).toBeGreaterThanOrEqual(2);
    expect(first?.actions[1]?.screenshot).toMatch(/^screenshots\/retail-return-headphones\.1\/.+\.png$/);
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary.settings.mode).toBe("hybrid");
    expect(summary.settings.agentToolNames).toContain("find_user_id_by_email");
    expect(summary.metrics.actionsPerTurn).toBeGreaterThan(0);
    expect(summary.metrics.realism.goal).toBe(100);
    expect(readFileSync(join(out, "report.html"), "utf8")).toContain("data:image/png;base64,");
  }, 120_000);

  it("ui-only never calls the user's tools; compare puts the two modes side by side", async () => {
    const out = join(dir, "ui-only");
    const result = await run(out, "ui-only", "--no-judges");
    expect(result.code).toBe(0);
    const transcript = readTranscript(join(out, "transcripts", "retail-return-headphones.1.jsonl"));
    expect(transcript.turns.flatMap((t) => t.actions).every((a) => a.kind === "ui")).toBe(true);
    const compare = await cli(["users", "compare", join(dir, "hybrid"), out]);
    expect(compare.code).toBe(0);
    expect(compare.stdout).toContain("hybrid");
    expect(compare.stdout).toContain("ui-only");
  }, 120_000);

  it("refuses a browser agent in api-only mode and an API agent in a browser mode, before anything starts", async () => {
    const calls = server.requests.length;
    const api = await usersRun("--agent", `browser:${shop.url}`, "--out", join(dir, "x"));
    expect(api.code).not.toBe(0);
    expect(api.stderr).toMatch(/--mode hybrid or ui-only/);
    const ui = await usersRun(
      "--agent",
      "module:examples/users/rule-agent.mjs#reply",
      "--mode",
      "hybrid",
      "--out",
      join(dir, "y"),
    );
    expect(ui.code).not.toBe(0);
    expect(ui.stderr).toMatch(/browser:<page url>/);
    expect(server.requests.length).toBe(calls);
  });
});
