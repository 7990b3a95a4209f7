import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import type { BackendRequest, BackendResponse, ModelBackend } from "../../src/models/types.js";
import type { ActionResult, Observation, UiAction } from "../../src/users/browser/types.js";
import { type PageSession, simulateBrowserConversation } from "../../src/users/hybrid/browser-user.js";
import { toUiAction } from "../../src/users/hybrid/schemas.js";
import { parseScenario } from "../../src/users/scenario/index.js";
import { UserToolFactory } from "../../src/users/simulator/index.js";

const scenario = parseScenario({
  id: "shop",
  profile: "You are Ana.",
  goal: "Ask whether order W1 has shipped.",
  knowledge: "Your order is W1.",
  max_turns: 3,
  user_tools: [
    {
      name: "check_order",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      outcomes: [{ status: "success", message: "Order {id}: shipped" }],
    },
  ],
});

/** A page with a chat input and a send button; the agent answers each message at once. */
function fakePage(): PageSession & { actions: UiAction[] } {
  const messages: Array<{ role: "user" | "agent"; content: string }> = [];
  let draft = "";
  let error: string | undefined;
  const actions: UiAction[] = [];
  const send = () => {
    messages.push(
      { role: "user", content: draft },
      { role: "agent", content: `about "${draft}": it shipped` },
    );
    draft = "";
  };
  return {
    actions,
    async observe(): Promise<Observation> {
      const text = `[chat-input] input "Message" (value ${draft})\n[send] clickable button "Send"`;
      const observation: Observation = {
        url: "http://shop.test/",
        title: "Shop",
        tabs: [{ index: 0, url: "http://shop.test/", title: "Shop", active: true }],
        elements: [],
        text: error ? `ERROR: ${error}\n${text}` : text,
        ...(error ? { error } : {}),
      };
      error = undefined;
      return observation;
    },
    async act(action: UiAction): Promise<ActionResult> {
      actions.push(action);
      const done = (ok: boolean, message?: string): ActionResult => {
        if (!ok) error = message;
        return { ok, ...(message ? { error: message } : {}), actionMs: 0, settleMs: 0 };
      };
      if (action.type === "type") {
        if (action.target !== "chat-input") return done(false, `no element with id ${action.target}`);
        draft = action.text;
        if (action.enter) send();
        return done(true);
      }
      if (action.type === "click" && action.target === "send") {
        send();
        return done(true);
      }
      if (action.type === "terminate") return done(true);
      return done(false, `cannot ${action.type} here`);
    },
    async readChat() {
      return { messages: [...messages], sessionId: "sess-1" };
    },
  };
}

/** The user's model: a plan, then the router and the actions from a script, by schema name. */
function model(script: Array<Record<string, unknown>>): ModelBackend & { requests: BackendRequest[] } {
  const requests: BackendRequest[] = [];
  const queue = [...script];
  return {
    name: "fn:user",
    provider: "fn",
    capabilities: { structured: "native", tools: true, seed: true },
    requests,
    async generate(request): Promise<BackendResponse> {
      requests.push(request);
      const usage = { inputTokens: 7, outputTokens: 3, cachedInputTokens: 0 };
      const name = request.json?.name;
      if (name === "user_turn_plan")
        return {
          text: JSON.stringify({ known: [], needed: ["status"], nextStep: "ask" }),
          toolCalls: [],
          finishReason: "stop",
          usage,
        };
      const next = queue.shift() ?? { ui: { type: "terminate" } };
      if (name === "route_decision") {
        const channel = next.api ? "api" : "ui";
        if (next.ui || next.api) queue.unshift(next);
        return {
          text: JSON.stringify({ channel, reason: "scripted" }),
          toolCalls: [],
          finishReason: "stop",
          usage,
        };
      }
      if (request.tools) {
        const call = next.api as { name: string; arguments: unknown };
        return { text: "", toolCalls: [{ id: "c1", ...call }], finishReason: "tool-calls", usage };
      }
      const ui = {
        target: null,
        text: null,
        enter: null,
        value: null,
        key: null,
        direction: null,
        url: null,
        index: null,
        ...(next.ui as object),
      };
      return { text: JSON.stringify(ui), toolCalls: [], finishReason: "stop", usage };
    },
  };
}

async function play(
  mode: "hybrid" | "ui-only",
  script: Array<Record<string, unknown>>,
  agentCalls?: () => Promise<any[]>,
) {
  const backend = model(script);
  const models = new Models({
    config: parseConfig({ roles: { default: backend.name }, retry: { retries: 0 } }),
    backends: { [backend.name]: backend },
    cache: null,
  });
  const page = fakePage();
  const result = await simulateBrowserConversation({
    models,
    scenario,
    page,
    mode,
    toolbox: await new UserToolFactory().toolbox(scenario, "s"),
    seed: "s",
    model: backend.name,
    ...(agentCalls ? { agentCalls } : {}),
  });
  return { result, page, backend };
}

describe("the browser user", () => {
  it("hybrid: calls its own tool, types into the chat, reads the reply from the widget, and terminates", async () => {
    const calls = [{ tool: "get_order_details", arguments: { order_id: "W1" }, status: "ok", result: {} }];
    const { result, page } = await play(
      "hybrid",
      [
        { api: { name: "check_order", arguments: { id: "W1" } } },
        { ui: { type: "type", target: "chat-input", text: "Has order W1 shipped?", enter: true } },
        { ui: { type: "terminate" } },
      ],
      async () => calls,
    );
    expect(result.endReason).toBe("stop");
    expect(result.transcript).toEqual([
      { role: "user", content: "Has order W1 shipped?" },
      { role: "agent", content: 'about "Has order W1 shipped?": it shipped' },
    ]);
    expect(result.turns).toHaveLength(1);
    const turn = result.turns[0];
    expect(turn?.user).toBe("Has order W1 shipped?");
    expect(turn?.agent?.message).toContain("it shipped");
    expect(turn?.agent?.toolCalls).toEqual(calls);
    // The tool call and the typing are this turn's actions; terminate joins the last turn.
    expect(turn?.actions.map((a) => [a.kind, a.tool, a.status])).toEqual([
      ["tool", "check_order", "success"],
      ["ui", "type", "ok"],
      ["ui", "terminate", "ok"],
    ]);
    expect(result.steps.map((s) => s.channel)).toEqual(["api", "ui", "ui"]);
    expect(turn?.userUsage.calls).toBeGreaterThan(0);
    expect(page.actions.map((a) => a.type)).toEqual(["type", "terminate"]);
  });

  it("ui-only: never routes or calls tools; a failed action is shown in the next observation", async () => {
    const { result, backend } = await play("ui-only", [
      { ui: { type: "type", target: "nope", text: "hi" } },
      { ui: { type: "click", target: null } },
      { ui: { type: "type", target: "chat-input", text: "Has it shipped? Thanks! ###STOP###" } },
    ]);
    expect(backend.requests.some((r) => r.json?.name === "route_decision" || r.tools)).toBe(false);
    const steps = result.steps.map((s) => [s.action.tool, s.action.status]);
    expect(steps).toEqual([
      ["type", "error"],
      ["click", "error"],
      ["type", "ok"],
    ]);
    // The page's error and the invalid action reached the model's next prompts.
    const prompts = backend.requests.map((r) => JSON.stringify(r.messages));
    expect(prompts.some((p) => p.includes("no element with id nope"))).toBe(true);
    expect(prompts.some((p) => p.includes('needs \\"target\\"'))).toBe(true);
    // The stop token ended the run; the text before it was still typed.
    expect(result.endReason).toBe("stop");
    expect(result.transcript[0]?.content).toBe("Has it shipped? Thanks!");
  });

  it("tells the user when it repeats itself, and stops at the turn budget", async () => {
    const same = { ui: { type: "click", target: "missing" } };
    const { result, backend } = await play("ui-only", [same, same, same, same]);
    const prompts = backend.requests.map((r) => JSON.stringify(r.messages));
    expect(prompts.some((p) => p.includes("same thing 3 times in a row"))).toBe(true);
    expect(result.endReason).toBe("stop");
    const stuck = await play(
      "ui-only",
      Array.from({ length: 8 }, () => same),
    );
    expect(stuck.result.endReason).toBe("repetition");
    expect(stuck.result.steps).toHaveLength(6);

    const chatty = Array.from({ length: 5 }, (_, i) => ({
      ui: { type: "type", target: "chat-input", text: `question ${i}`, enter: true },
    }));
    const budget = await play("ui-only", chatty);
    expect(budget.result.endReason).toBe("max_turns");
    expect(budget.result.turns).toHaveLength(3);
  });

  it("checks a model's UI action before it reaches the page", () => {
    const blank = {
      target: null,
      text: null,
      enter: null,
      value: null,
      key: null,
      direction: null,
      url: null,
      index: null,
    };
    expect(toUiAction({ ...blank, type: "select", target: "size" })).toEqual({
      error: 'action "select" needs "value"',
    });
    expect(toUiAction({ ...blank, type: "switch_tab", index: 1 })).toEqual({
      action: { type: "switch_tab", index: 1 },
    });
    expect(toUiAction({ ...blank, type: "fly" })).toMatchObject({
      error: expect.stringContaining("unknown action"),
    });
  });
});
