import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import type { BackendRequest, BackendResponse, ModelBackend } from "../../src/models/types.js";
import type { ActionResult, Observation, UiAction } from "../../src/users/browser/types.js";
import { type PageSession, simulateBrowserConversation } from "../../src/users/hybrid/browser-user.js";
import { toUiAction } from "../../src/users/hybrid/schemas.js";
import { type BrowserLauncher, createBrowserTarget } from "../../src/users/hybrid/target.js";
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

const wait = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/**
 * A page with a chat input and a send button; the agent answers each message (after `replyMs`, inside the
 * action that sent it, as a page's settle waits for the answer). `chat: false` is a page without a widget.
 */
function fakePage(options: { replyMs?: number; chat?: boolean } = {}): PageSession & { actions: UiAction[] } {
  const messages: Array<{ role: "user" | "agent"; content: string }> = [];
  let draft = "";
  let error: string | undefined;
  const actions: UiAction[] = [];
  const send = async () => {
    if (options.chat === false) return;
    messages.push({ role: "user", content: draft });
    if (options.replyMs) await wait(options.replyMs);
    messages.push({ role: "agent", content: `about "${draft}": it shipped` });
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
        if (action.enter) await send();
        return done(true);
      }
      if (action.type === "click" && action.target === "send") {
        await send();
        return done(true);
      }
      if (action.type === "scroll") return done(true);
      if (action.type === "terminate") return done(true);
      return done(false, `cannot ${action.type} here`);
    },
    async readChat() {
      return { messages: [...messages], ...(options.chat === false ? {} : { sessionId: "sess-1" }) };
    },
  };
}

/**
 * The user's model: a plan, then the router and the actions from a script, by schema name. `latencyMs`
 * makes each answer take that long; `onRequest` sees each request before it is answered.
 */
function model(
  script: Array<Record<string, unknown>>,
  options: { latencyMs?: number; onRequest?: (request: BackendRequest) => void } = {},
): ModelBackend & { requests: BackendRequest[] } {
  const requests: BackendRequest[] = [];
  const queue = [...script];
  return {
    name: "fn:user",
    provider: "fn",
    capabilities: { structured: "native", tools: true, seed: true },
    requests,
    async generate(request): Promise<BackendResponse> {
      requests.push(request);
      options.onRequest?.(request);
      if (options.latencyMs) await wait(options.latencyMs);
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

interface PlayOptions {
  agentCalls?: () => Promise<any[]>;
  page?: PageSession & { actions: UiAction[] };
  maxSteps?: number;
  latencyMs?: number;
  signal?: AbortSignal;
  onRequest?: (request: BackendRequest) => void;
}

async function play(
  mode: "hybrid" | "ui-only",
  script: Array<Record<string, unknown>>,
  options: PlayOptions = {},
) {
  const backend = model(script, {
    ...(options.latencyMs ? { latencyMs: options.latencyMs } : {}),
    ...(options.onRequest ? { onRequest: options.onRequest } : {}),
  });
  const models = new Models({
    config: parseConfig({ roles: { default: backend.name }, retry: { retries: 0 } }),
    backends: { [backend.name]: backend },
    cache: null,
  });
  const page = options.page ?? fakePage();
  const result = await simulateBrowserConversation({
    models,
    scenario,
    page,
    mode,
    toolbox: await new UserToolFactory().toolbox(scenario, "s"),
    seed: "s",
    model: backend.name,
    ...(options.agentCalls ? { agentCalls: options.agentCalls } : {}),
    ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { result, page, backend };
}

describe("the browser user", () => {
  it("an action missing what it needs is asked again (a repair turn), not taken and not cached", async () => {
    const { result, page, backend } = await play("ui-only", [
      { ui: { type: "click" } },
      { ui: { type: "type", target: "chat-input", text: "Has order W1 shipped?", enter: true } },
      { ui: { type: "terminate" } },
    ]);
    // The repair request tells the model what was wrong; the page only ever saw valid actions.
    const repair = backend.requests.find((request) =>
      JSON.stringify(request.messages).includes('action \\"click\\" needs \\"target\\"'),
    );
    expect(repair).toBeDefined();
    expect(page.actions.map((action) => action.type)).toEqual(["type", "terminate"]);
    expect(result.transcript[0]).toEqual({ role: "user", content: "Has order W1 shipped?" });
  });

  it("hybrid: calls its own tool, types into the chat, reads the reply from the widget, and terminates", async () => {
    const calls = [{ tool: "get_order_details", arguments: { order_id: "W1" }, status: "ok", result: {} }];
    const { result, page } = await play(
      "hybrid",
      [
        { api: { name: "check_order", arguments: { id: "W1" } } },
        { ui: { type: "type", target: "chat-input", text: "Has order W1 shipped?", enter: true } },
        { ui: { type: "terminate" } },
      ],
      { agentCalls: async () => calls, page: fakePage({ replyMs: 30 }), latencyMs: 20 },
    );
    expect(result.endReason).toBe("stop");
    expect(result.error).toBeUndefined();
    expect(result.transcript).toEqual([
      { role: "user", content: "Has order W1 shipped?" },
      { role: "agent", content: 'about "Has order W1 shipped?": it shipped' },
    ]);
    const plan = { known: [], needed: ["status"], nextStep: "ask" };
    const timing = {
      userModelMs: expect.any(Number),
      toolsMs: expect.any(Number),
      agentMs: expect.any(Number),
    };
    // The tool call and the typing are the first turn's actions; terminate, after the last message, is a
    // turn of its own without a reply (as a stop is in API mode), with the model calls it took.
    expect(result.turns).toEqual([
      {
        turn: 1,
        plan,
        actions: [
          expect.objectContaining({ kind: "tool", tool: "check_order", status: "success" }),
          expect.objectContaining({ kind: "ui", tool: "type", status: "ok", message: "done" }),
        ],
        user: "Has order W1 shipped?",
        // step 1: plan, route, tool call; step 2: route, action.
        userUsage: { inputTokens: 35, outputTokens: 15, calls: 5 },
        timing,
        agent: {
          message: 'about "Has order W1 shipped?": it shipped',
          toolCalls: calls,
          latencyMs: result.turns[0]?.timing.agentMs,
        },
      },
      {
        turn: 2,
        plan,
        actions: [expect.objectContaining({ kind: "ui", tool: "terminate", status: "ok" })],
        user: "",
        stop: "stop",
        // a new plan (the agent answered), route, action.
        userUsage: { inputTokens: 21, outputTokens: 9, calls: 3 },
        timing,
      },
    ]);
    // Real milliseconds: every model call took 20 ms, the agent 30 ms to answer.
    const [first, last] = result.turns;
    expect(first?.timing.userModelMs).toBeGreaterThanOrEqual(5 * 15);
    expect(first?.timing.agentMs).toBeGreaterThanOrEqual(25);
    expect(last?.timing.userModelMs).toBeGreaterThanOrEqual(3 * 15);
    expect(last?.timing.agentMs).toBe(0);
    expect(result.steps.map((s) => s.channel)).toEqual(["api", "ui", "ui"]);
    expect(page.actions.map((a) => a.type)).toEqual(["type", "terminate"]);
  });

  it("ui-only: never routes or calls tools; a failed action is shown in the next observation", async () => {
    const { result, backend, page } = await play("ui-only", [
      { ui: { type: "type", target: "nope", text: "hi" } },
      { ui: { type: "click", target: null } },
      { ui: { type: "type", target: "chat-input", text: "Has it shipped? Thanks! ###STOP###", enter: true } },
    ]);
    expect(backend.requests.some((r) => r.json?.name === "route_decision" || r.tools)).toBe(false);
    const steps = result.steps.map((s) => [s.action.tool, s.action.status]);
    // The click without a target was asked again (a repair turn), so it never became a step.
    expect(steps).toEqual([
      ["type", "error"],
      ["type", "ok"],
    ]);
    // The page's error and the invalid action reached the model's next prompts.
    const prompts = backend.requests.map((r) => JSON.stringify(r.messages));
    expect(prompts.some((p) => p.includes("no element with id nope"))).toBe(true);
    expect(prompts.some((p) => p.includes('needs \\"target\\"'))).toBe(true);
    // The stop token ended the run; the stopping message was not typed (it never reaches the agent), and
    // is kept as the user's last message, as in API mode.
    expect(result.endReason).toBe("stop");
    expect(page.actions).toEqual([{ type: "type", target: "nope", text: "hi" }]);
    expect(result.transcript).toEqual([]);
    expect(result.turns).toEqual([
      expect.objectContaining({
        turn: 1,
        user: "Has it shipped? Thanks!",
        stop: "stop",
        // Three calls (plan, two actions); the repaired action's two answers are both paid for.
        userUsage: { inputTokens: 28, outputTokens: 12, calls: 3 },
      }),
    ]);
    expect(result.turns[0]?.agent).toBeUndefined();
    expect(result.turns[0]?.actions.map((a) => [a.tool, a.status, a.message])).toEqual([
      ["type", "error", "no element with id nope"],
      ["type", "ok", "not typed: the message ends the conversation"],
    ]);
  });

  it("a stopping message typed after a conversation is not sent either", async () => {
    const { result, page } = await play("ui-only", [
      { ui: { type: "type", target: "chat-input", text: "Has order W1 shipped?", enter: true } },
      { ui: { type: "type", target: "chat-input", text: "Great, thanks. ###STOP###", enter: true } },
    ]);
    expect(result.endReason).toBe("stop");
    expect(page.actions.map((a) => (a.type === "type" ? a.text : a.type))).toEqual(["Has order W1 shipped?"]);
    expect(result.transcript.map((m) => m.content)).toEqual([
      "Has order W1 shipped?",
      'about "Has order W1 shipped?": it shipped',
    ]);
    expect(result.turns.map((t) => [t.turn, t.user, t.stop ?? null, t.agent?.message ?? null])).toEqual([
      [1, "Has order W1 shipped?", null, 'about "Has order W1 shipped?": it shipped'],
      [2, "Great, thanks.", "stop", null],
    ]);
  });

  it("a run out of steps ends as max_steps and keeps every step's actions, model calls and time", async () => {
    const scroll = (target: string) => ({ ui: { type: "scroll", direction: "down", target } });
    const { result } = await play("ui-only", [scroll("a"), scroll("b"), scroll("c"), scroll("d")], {
      maxSteps: 4,
      latencyMs: 10,
    });
    expect(result.endReason).toBe("max_steps");
    expect(result.steps).toHaveLength(4);
    // No message was ever sent, yet the run is in the turns: one turn of the four scrolls, no reply.
    expect(result.turns).toEqual([
      {
        turn: 1,
        plan: { known: [], needed: ["status"], nextStep: "ask" },
        actions: ["a", "b", "c", "d"].map((target) => ({
          kind: "ui",
          tool: "scroll",
          arguments: { type: "scroll", direction: "down", target },
          status: "ok",
          message: "done",
          data: null,
        })),
        user: "",
        // one plan, four actions
        userUsage: { inputTokens: 35, outputTokens: 15, calls: 5 },
        timing: { userModelMs: expect.any(Number), toolsMs: expect.any(Number), agentMs: 0 },
      },
    ]);
    expect(result.turns[0]?.timing.userModelMs).toBeGreaterThanOrEqual(5 * 7);
    // The chat had no message at all: the end says so, with where it looked.
    expect(result.error).toBe(
      "no chat message was found on http://shop.test/: nothing matched the chat widget's message selector [data-chat-role] in any frame, so no message reached the agent (the page has no chat widget there, or the user never wrote in it)",
    );
  });

  it("says when a page has no chat widget: the typed message never appeared", async () => {
    const { result, page } = await play(
      "ui-only",
      [
        { ui: { type: "type", target: "chat-input", text: "Hello?", enter: true } },
        { ui: { type: "type", target: "chat-input", text: "Is anyone there?", enter: true } },
      ],
      { page: fakePage({ chat: false }), maxSteps: 2 },
    );
    expect(page.actions.map((a) => a.type)).toEqual(["type", "type"]);
    expect(result.endReason).toBe("max_steps");
    expect(result.transcript).toEqual([]);
    expect(result.turns.map((t) => [t.user, t.actions.length, t.userUsage.calls])).toEqual([["", 2, 3]]);
    expect(result.error).toMatch(
      /^no chat message was found on http:\/\/shop\.test\/: nothing matched the chat widget's message selector \[data-chat-role\]/,
    );
  });

  it("an interrupt stops the run before its next step and throws INTERRUPTED, never a result", async () => {
    const controller = new AbortController();
    let requests = 0;
    const chatty = Array.from({ length: 6 }, (_, i) => ({
      ui: { type: "type", target: "chat-input", text: `question ${i}`, enter: true },
    }));
    // The interrupt comes while the user's model answers its 4th request: step 1 planned and typed, the
    // agent answered, step 2 planned again, and the 4th request is step 2's action.
    const page = fakePage();
    const played = play("ui-only", chatty, {
      page,
      signal: controller.signal,
      onRequest: () => {
        if (++requests === 4) controller.abort();
      },
    });
    await expect(played).rejects.toMatchObject({
      code: "INTERRUPTED",
      message: "interrupted before it finished",
    });
    // The model call in flight was abandoned: its action never reached the page, and no step followed.
    expect(requests).toBe(4);
    expect(page.actions).toEqual([{ type: "type", target: "chat-input", text: "question 0", enter: true }]);
  });

  it("a page closed under an interrupted run is the interrupt, not a failed run", async () => {
    const closed = (page: PageSession & { actions: UiAction[] }, controller?: AbortController) => ({
      ...page,
      async act(action: UiAction): Promise<ActionResult> {
        page.actions.push(action);
        controller?.abort();
        throw new Error("locator.fill: Target page, context or browser has been closed");
      },
    });
    const script = [{ ui: { type: "type", target: "chat-input", text: "hi", enter: true } }];
    const controller = new AbortController();
    await expect(
      play("ui-only", script, { page: closed(fakePage(), controller), signal: controller.signal }),
    ).rejects.toMatchObject({ code: "INTERRUPTED" });
    // Without an interrupt the same failure is the run's error, as before.
    const { result } = await play("ui-only", script, { page: closed(fakePage()) });
    expect(result.endReason).toBe("user_error");
    expect(result.error).toBe(
      "the browser user failed: locator.fill: Target page, context or browser has been closed",
    );
  });

  it("an interrupt while the page opens closes its browser context and throws INTERRUPTED", async () => {
    const controller = new AbortController();
    const events: string[] = [];
    const launcher: BrowserLauncher = {
      async newSession() {
        const page = fakePage();
        return {
          ...page,
          goto: (url: string) => {
            events.push(`goto ${url}`);
            controller.abort();
            return new Promise<never>(() => undefined);
          },
          close: async () => {
            events.push("close");
          },
        };
      },
      close: async () => undefined,
    };
    const target = await createBrowserTarget("browser:http://shop.test/", { launcher });
    await expect(target.openPage({ runId: "r.1", signal: controller.signal })).rejects.toMatchObject({
      code: "INTERRUPTED",
      message: "the run was interrupted while its page was opening",
    });
    expect(events).toEqual(["goto http://shop.test/", "close"]);
    await expect(target.openPage({ runId: "r.2", signal: controller.signal })).rejects.toMatchObject({
      code: "INTERRUPTED",
    });
    expect(events).toHaveLength(2);
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
