import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryResponseCache } from "../../src/models/cache.js";
import { parseConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import type { BackendRequest, BackendResponse, ModelBackend } from "../../src/models/types.js";
import type { AgentReply } from "../../src/users/conversation.js";
import { readTranscript, runUsers, type UsersAgent } from "../../src/users/run/index.js";
import { parseScenario, type Scenario } from "../../src/users/scenario/index.js";
import { SimulatedUser, simulateConversation, UserToolFactory } from "../../src/users/simulator/index.js";

/** A user model answering by request kind: the plan (JSON), a tool round, or the message. */
function userBackend(script: {
  act: Array<{ tools?: Array<{ name: string; arguments: unknown }>; text?: string }>;
}): ModelBackend & { requests: BackendRequest[] } {
  const requests: BackendRequest[] = [];
  const act = [...script.act];
  return {
    name: "fn:user",
    provider: "fn",
    capabilities: { structured: "native", tools: true, seed: true },
    requests,
    async generate(request): Promise<BackendResponse> {
      requests.push(request);
      const usage = { inputTokens: 10, outputTokens: 2, cachedInputTokens: 0 };
      if (request.json) {
        return {
          text: JSON.stringify({ known: ["order W1"], needed: ["refund"], nextStep: "ask" }),
          toolCalls: [],
          finishReason: "stop",
          usage,
        };
      }
      const next = act.shift() ?? { text: "###STOP###" };
      const toolCalls = (next.tools ?? []).map((t, i) => ({
        id: `c${i}`,
        name: t.name,
        arguments: t.arguments,
      }));
      return {
        text: next.text ?? "",
        toolCalls,
        finishReason: toolCalls.length ? "tool-calls" : "stop",
        usage,
      };
    },
  };
}

function modelsWith(backend: ModelBackend): Models {
  return new Models({
    config: parseConfig({ roles: { default: backend.name }, retry: { retries: 0 } }),
    backends: { [backend.name]: backend },
    cache: null,
  });
}

const scenario: Scenario = parseScenario({
  id: "refund",
  profile: "You are Ana, 30, direct.",
  goal: "Get a refund for order W1.",
  knowledge: "Order W1 was paid by card. The refund policy allows 30 days.",
  max_turns: 4,
  user_tools: [
    { name: "search_knowledge", kind: "retrieval", parameters: { type: "object" } },
    {
      name: "check_order",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      outcomes: [{ status: "success", message: "Order {id} delivered", data: { status: "delivered" } }],
    },
  ],
});

function echoAgent(fail?: number): UsersAgent & { opened: number } {
  const target = {
    spec: "module:echo",
    tools: ["get_order", "refund"],
    opened: 0,
    async open(_context?: unknown) {
      target.opened += 1;
      let count = 0;
      return {
        sessionId: `s${target.opened}`,
        async send(message: string): Promise<AgentReply> {
          count += 1;
          if (fail === count) throw new Error("agent crashed");
          return {
            message: `echo: ${message}`,
            toolCalls: [
              { tool: count % 2 ? "get_order" : "refund", arguments: { n: count }, status: "ok", result: {} },
            ],
          };
        },
        async finalState() {
          return { count };
        },
        async close() {},
      };
    },
  };
  return target;
}

async function conversation(
  act: Parameters<typeof userBackend>[0]["act"],
  agent = echoAgent(),
  s = scenario,
) {
  const backend = userBackend({ act });
  const user = new SimulatedUser({
    models: modelsWith(backend),
    scenario: s,
    toolbox: await new UserToolFactory().toolbox(s, "seed-1"),
    seed: "seed-1",
  });
  const session = await agent.open({} as never);
  return { result: await simulateConversation({ scenario: s, user, agent: session }), backend };
}

describe("the simulated user", () => {
  it("plans, calls its tools (each one an action), writes in character and stops with text kept", async () => {
    const { result, backend } = await conversation([
      {
        tools: [
          { name: "search_knowledge", arguments: { query: "refund policy" } },
          { name: "check_order", arguments: { id: "W1" } },
        ],
      },
      { text: "Hi, I want a refund for order W1." },
      { text: "Thanks, that's all.###STOP###" },
    ]);
    expect(result.endReason).toBe("stop");
    expect(result.turns).toHaveLength(2);
    const [first, last] = result.turns;
    expect(first?.plan?.nextStep).toBe("ask");
    expect(first?.actions.map((a) => [a.tool, a.status])).toEqual([
      ["search_knowledge", "ok"],
      ["check_order", "success"],
    ]);
    expect(first?.actions[1]?.message).toBe("Order W1 delivered");
    expect(first?.agent?.message).toBe("echo: Hi, I want a refund for order W1.");
    expect(last?.user).toBe("Thanks, that's all.");
    expect(last?.stop).toBe("stop");
    expect(last?.agent).toBeUndefined();
    // Turn 1: plan + tool round + message = 3 calls, each 10 in / 2 out.
    expect(first?.userUsage).toEqual({ inputTokens: 30, outputTokens: 6, calls: 3 });
    // The agent's messages reach the user's model as the other side of the thread.
    const lastRequest = backend.requests.at(-1);
    expect(JSON.stringify(lastRequest?.messages)).toContain("[agent] echo: Hi, I want a refund");
  });

  it("retries an empty answer instead of failing, and ends with empty_output only after the retries", async () => {
    const retried = await conversation([{ text: "  " }, { text: "Hello###STOP###" }]);
    expect(retried.result.endReason).toBe("stop");
    expect(retried.result.turns[0]?.user).toBe("Hello");
    const empty = await conversation([{ text: "" }, { text: "" }, { text: "" }]);
    expect(empty.result.endReason).toBe("empty_output");
  });

  it("ends on a repeated message without sending it, or redirects once when the scenario says so", async () => {
    const ended = await conversation([{ text: "Where is my refund?" }, { text: "where is my refund" }]);
    expect(ended.result.endReason).toBe("repetition");
    expect(ended.result.turns).toHaveLength(2);
    expect(ended.result.turns[1]?.repeated).toBe(true);
    expect(ended.result.turns[1]?.agent).toBeUndefined();

    const redirecting = parseScenario({ ...rawOf(scenario), stop: { on_repeat: "redirect" } });
    const redirected = await conversation(
      [
        { text: "Where is my refund?" },
        { text: "Where is my refund?" },
        { text: "Can you check order W1 again?" },
        { text: "ok###STOP###" },
      ],
      echoAgent(),
      redirecting,
    );
    expect(redirected.result.turns[1]?.redirected).toBe(true);
    expect(redirected.result.turns[1]?.user).toBe("Can you check order W1 again?");
    expect(redirected.result.endReason).toBe("stop");
  });

  it("stops at max_turns after the agent's last reply, and records an agent failure as agent_error", async () => {
    const long = await conversation([
      { text: "a" },
      { text: "b" },
      { text: "c" },
      { text: "d" },
      { text: "e" },
    ]);
    expect(long.result.endReason).toBe("max_turns");
    expect(long.result.turns).toHaveLength(4);
    expect(long.result.turns[3]?.agent).toBeDefined();
    const failed = await conversation([{ text: "a" }, { text: "b" }], echoAgent(2));
    expect(failed.result.endReason).toBe("agent_error");
    expect(failed.result.error).toContain("agent crashed");
    expect(failed.result.turns[1]?.agentError).toBe("agent crashed");
  });
});

function rawOf(s: Scenario): Record<string, unknown> {
  return {
    id: s.id,
    profile: s.profile.text,
    goal: s.goal,
    knowledge: s.knowledge.map((k) => k.text).join("\n"),
    max_turns: s.maxTurns,
    user_tools: s.userTools,
  };
}

describe("the user's toolbox from a scenario", () => {
  it("makes every kind of user tool, one state per run, and refuses an unknown kind before any run", async () => {
    const file = join(import.meta.dirname, "..", "fixtures", "users", "scenario.yaml");
    const kinds = parseScenario(
      {
        ...rawOf(scenario),
        user_tools: [
          { name: "notes", kind: "memory", config: { size: "M" } },
          { name: "web", kind: "web", config: { folder: "web" } },
          { name: "bank", kind: "environment", config: { environment: "bank" } },
        ],
      },
      { file },
    );
    const factory = new UserToolFactory();
    factory.check([kinds]);
    const toolbox = await factory.toolbox(kinds, "s");
    const names = toolbox.list().map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(["recall_preference", "web_search", "read_page", "get_account"]),
    );
    expect((await toolbox.call("recall_preference", { key: "size" })).data).toMatchObject({ value: "M" });
    expect((await toolbox.call("web_search", { query: "return" })).status).toBe("ok");
    const balance = await toolbox.call("get_account", { account_id: "ACC-1001" });
    expect(balance.status).toBe("ok");
    // Another run's toolbox has its own memory and its own environment session.
    await toolbox.call("remember_preference", { key: "colour", value: "red" });
    expect(
      (await toolbox.call("transfer", { from_account: "ACC-1001", to_account: "ACC-1002", amount: 5 }))
        .status,
    ).toBe("ok");
    const other = await factory.toolbox(kinds, "s2");
    expect((await other.call("recall_preference", { key: "colour" })).data).not.toMatchObject({
      value: "red",
    });
    const [mine, theirs] = await Promise.all(
      [toolbox, other].map(async (box) => (await box.call("get_account", { account_id: "ACC-1001" })).data),
    );
    expect(mine).not.toEqual(theirs);
    await factory.close();
    const bad = parseScenario({ ...rawOf(scenario), user_tools: [{ name: "x", kind: "telepathy" }] });
    expect(() => new UserToolFactory().check([bad])).toThrow(/unknown kind "telepathy"/);
  });
});

describe("runUsers", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("writes a transcript per run and summary.json, keeps going past a failed run, and resumes", async () => {
    const out = mkdtempSync(join(tmpdir(), "users-run-"));
    dirs.push(out);
    const backend = userBackend({ act: [] });
    // Every message ends the conversation on turn 2.
    let n = 0;
    backend.generate = async (request) => {
      const usage = { inputTokens: 5, outputTokens: 1, cachedInputTokens: 0 };
      if (request.json)
        return {
          text: JSON.stringify({ known: [], needed: [], nextStep: "go" }),
          toolCalls: [],
          finishReason: "stop",
          usage,
        };
      n += 1;
      const turn = request.messages.filter((m) => m.role === "assistant").length;
      return { text: turn >= 1 ? "bye###STOP###" : `hello ${n}`, toolCalls: [], finishReason: "stop", usage };
    };
    const agent = echoAgent();
    const options = {
      scenarios: [scenario, parseScenario({ ...rawOf(scenario), id: "refund-2", user_tools: [] })],
      agent,
      models: modelsWith(backend),
      outDir: out,
      runs: 2,
      concurrency: 2,
      seed: "7",
    };
    const first = await runUsers(options);
    expect(first.summary.runs.total).toBe(4);
    expect(first.summary.schemaVersion).toBe(1);
    expect(first.summary.settings.agentToolNames).toEqual(["get_order", "refund"]);
    expect(first.summary.metrics.success).toBeNull(); // no judges
    expect(first.summary.metrics.cost.turns).toBe(8);
    const run = readTranscript(join(out, "transcripts", "refund.2.jsonl"));
    expect(run.seed).toBe("7/refund/2");
    expect(run.end?.endReason).toBe("stop");
    expect(run.end?.agentToolCalls).toHaveLength(1);
    expect(existsSync(join(out, "summary.json"))).toBe(true);

    await expect(runUsers(options)).rejects.toThrow(/--resume/);
    // A crash mid-run leaves a partial transcript; resume runs only what is missing.
    rmSync(join(out, "transcripts", "refund-2.1.jsonl"));
    writeFileSync(join(out, "transcripts", "refund-2.1.jsonl.partial"), '{"type":"run"');
    const opened = agent.opened;
    const resumed = await runUsers({ ...options, resume: true });
    expect(resumed.kept).toBe(3);
    expect(agent.opened - opened).toBe(1);
    expect(existsSync(join(out, "transcripts", "refund-2.1.jsonl.partial"))).toBe(false);
    expect(JSON.parse(readFileSync(join(out, "summary.json"), "utf8")).runs.total).toBe(4);
    await expect(runUsers({ ...options, resume: true, seed: "8" })).rejects.toThrow(/seed was "7"/);
  });

  it("repeats a run exactly from its seed with a cached model, and separates runs of one scenario", async () => {
    // A model that never answers the same twice: only the cache can make a run repeat.
    let counter = 0;
    const backend = userBackend({ act: [] });
    backend.generate = async (request) => {
      counter += 1;
      const usage = { inputTokens: 5, outputTokens: 1, cachedInputTokens: 0 };
      if (request.json)
        return {
          text: JSON.stringify({ known: [], needed: [], nextStep: `n${counter}` }),
          toolCalls: [],
          finishReason: "stop",
          usage,
        };
      const done = request.messages.filter((m) => m.role === "assistant").length >= 1;
      return {
        text: done ? `bye ${counter}###STOP###` : `hello ${counter}`,
        toolCalls: [],
        finishReason: "stop",
        usage,
      };
    };
    const cache = new MemoryResponseCache();
    const models = new Models({
      config: parseConfig({ roles: { default: backend.name }, retry: { retries: 0 } }),
      backends: { [backend.name]: backend },
      cache,
    });
    const scenarios = [parseScenario({ ...rawOf(scenario), user_tools: [] })];
    const play = async (seed: string) => {
      const out = mkdtempSync(join(tmpdir(), "users-seed-"));
      dirs.push(out);
      await runUsers({ scenarios, agent: echoAgent(), models, outDir: out, runs: 2, seed });
      return [1, 2].map((k) =>
        readTranscript(join(out, "transcripts", `refund.${k}.jsonl`)).turns.map((t) => [
          t.plan,
          t.user,
          t.agent?.message,
        ]),
      );
    };
    const first = await play("s");
    const calls = counter;
    expect(await play("s")).toEqual(first);
    expect(counter).toBe(calls);
    // Runs 1 and 2 of the scenario are different conversations (their seeds differ).
    expect(first[0]).not.toEqual(first[1]);
    await play("other");
    expect(counter).toBeGreaterThan(calls);
  });
});
