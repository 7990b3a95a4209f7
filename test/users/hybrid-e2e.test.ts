import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ShopDemo, startShopDemo } from "../../src/users/demo/index.js";
import { readTranscript } from "../../src/users/run/index.js";
import { cli } from "../helpers/cli.js";
import { need } from "../helpers/requirements.js";
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
const CHROMIUM = need("chromium", "users run in a browser (hybrid user, demo shop)");
const SCENARIOS = join(
  import.meta.dirname,
  "..",
  "..",
  "examples",
  "users",
  "scenarios",
  "retail-return.yaml",
);

describe.runIf(CHROMIUM)("users run in a browser", () => {
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
    // Timing is measured: the agent's answer took real time, and the reply carries it.
    expect(first?.timing.agentMs).toBeGreaterThan(0);
    expect(first?.agent?.latencyMs).toBe(first?.timing.agentMs);
    expect(first?.timing.userModelMs).toBeGreaterThan(0);
    // The stopping message is kept as the last turn but never typed: the agent saw one message only.
    expect(second).toMatchObject({ user: "Thanks, that is all I needed.", stop: "stop" });
    expect(second?.agent).toBeUndefined();
    expect(transcript.turns).toHaveLength(2);
    expect(transcript.end?.agentToolCalls.map((call) => call.tool)).toEqual(["find_user_id_by_email"]);
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

  it("a run stopped by --max-steps ends as max_steps with its steps, tokens and time in the transcript", async () => {
    const out = join(dir, "steps");
    const result = await run(out, "hybrid", "--no-judges", "--max-steps", "1");
    expect(result.code).toBe(0);
    const transcript = readTranscript(join(out, "transcripts", "retail-return-headphones.1.jsonl"));
    expect(transcript.end?.endReason).toBe("max_steps");
    expect(transcript.end?.turns).toBe(1);
    // The one step (plan, route, the user's own tool) is a turn without a message or a reply.
    expect(transcript.turns).toEqual([
      expect.objectContaining({
        turn: 1,
        user: "",
        actions: [expect.objectContaining({ kind: "tool", tool: "check_order_status" })],
        userUsage: expect.objectContaining({ calls: 3 }),
      }),
    ]);
    expect(transcript.turns[0]?.agent).toBeUndefined();
    expect(transcript.turns[0]?.userUsage.inputTokens).toBeGreaterThan(0);
    expect(transcript.turns[0]?.timing.userModelMs).toBeGreaterThan(0);
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary.runs.endReasons).toEqual({ max_steps: 1 });
    expect(summary.metrics.actionsPerTurn).toBe(1);
    const usage = transcript.turns[0]?.userUsage;
    expect(summary.metrics.tokensPerTurn).toBe((usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0));
  }, 120_000);

  it("a page without a chat widget says so in the end record", async () => {
    // A form that looks like a chat but shows nothing the chat locator reads.
    const page = join(dir, "no-widget.html");
    writeFileSync(
      page,
      '<!doctype html><title>Contact</title><form onsubmit="return false"><input aria-label="Your message"><button>Send</button></form>',
    );
    const out = join(dir, "no-widget");
    const url = pathToFileURL(page).href;
    const result = await usersRun(
      "--agent",
      `browser:${url}`,
      "--mode",
      "ui-only",
      "--no-judges",
      "--out",
      out,
    );
    expect(result.code).toBe(0);
    const transcript = readTranscript(join(out, "transcripts", "retail-return-headphones.1.jsonl"));
    expect(transcript.end?.endReason).toBe("stop");
    expect(transcript.end?.error).toBe(
      `no chat message was found on ${url}: nothing matched the chat widget's message selector [data-chat-role] in any frame, so no message reached the agent (the page has no chat widget there, or the user never wrote in it)`,
    );
    // What the user did is kept: it typed its request, then its stopping message (not typed).
    expect(transcript.turns.map((turn) => [turn.user, turn.actions.map((action) => action.message)])).toEqual(
      [["Thanks, that is all I needed.", ["done", "not typed: the message ends the conversation"]]],
    );
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
