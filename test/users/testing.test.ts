import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/errors.js";
import { Models, parseConfig } from "../../src/models/index.js";
import { readTranscript } from "../../src/users/run/transcript.js";
import {
  loadScenarioFile,
  loadScenarios,
  parseScenario,
  scenarioJsonSchema,
} from "../../src/users/scenario/index.js";
import {
  type AgentFunction,
  openScenarioTestAgent,
  type RunScenarioTestOptions,
  runScenarioTest,
  type ScenarioTest,
  scenarioTestTranscriptLines,
} from "../../src/users/testing/index.js";
import {
  type ScriptedLlmServer,
  type ScriptStep as ServerStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

/**
 * Scenario tests (`script:`): every step kind passing and failing against in-process agents with no model,
 * the located load errors, agents acting on a real engine session (tau2-retail), and the model steps
 * (simulate, judge) against the scripted OpenAI-compatible server.
 */
let server: ScriptedLlmServer | undefined;
const folders: string[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "terrarium-testing-"));
  folders.push(dir);
  return dir;
}

const ORDER = "#W2974929"; // pending in tau2-retail's database

/** Answers with fixed text and the calls it says it made (a module agent that only reports its calls). */
const reporting: AgentFunction = ({ message }) => ({
  message: `You said: ${message}. Your order ${ORDER} is pending.`,
  toolCalls: [
    {
      name: "get_order_details",
      arguments: { order_id: ORDER, options: { verbose: true, fields: ["status"] } },
    },
    { tool: "lookup", arguments: JSON.stringify({ query: "pending orders" }) },
  ],
});

/** Cancels the order through its tools handle (the calls run on the test's engine session). */
const cancelling: AgentFunction = async ({ tools }) => {
  const outcome = await tools.call("cancel_pending_order", { order_id: ORDER, reason: "no longer needed" });
  return outcome.status === "ok"
    ? `Order ${ORDER} is cancelled.`
    : `I could not cancel it (${outcome.status}).`;
};

function test(script: unknown[], extra: Partial<ScenarioTest> = {}): ScenarioTest {
  return { id: "t", script: script as ScenarioTest["script"], ...extra };
}

async function run(script: unknown[], options: Partial<RunScenarioTestOptions> = {}, extra = {}) {
  return runScenarioTest(test(script, extra), { agent: reporting, ...options });
}

function statuses(result: Awaited<ReturnType<typeof run>>): string[] {
  return result.steps.map((step) => step.status);
}

describe("scripted steps without any model", () => {
  it("user + expect_reply matches / not_matches pass", async () => {
    const result = await run([
      { user: "hello" },
      { expect_reply: { matches: "^you said: HELLO", flags: "i" } },
      { expect_reply: { not_matches: "cancelled" } },
      "stop",
    ]);
    expect(result.error).toBeUndefined();
    expect(statuses(result)).toEqual(["passed", "passed", "passed", "passed"]);
    expect(result.passed).toBe(true);
    expect(result.transcript.turns).toHaveLength(1);
    expect(result.transcript.turns[0]?.userUsage.calls).toBe(0);
    expect(result.transcript.endReason).toBe("stop");
  });

  it("the first failing expect_reply fails the test with expected and actual; later steps are not run", async () => {
    const result = await run([
      { user: "hello" },
      { expect_reply: { matches: "refund" } },
      { user: "again" },
      { expect_reply: { matches: "again" } },
    ]);
    expect(result.passed).toBe(false);
    expect(result.error).toBeUndefined();
    expect(statuses(result)).toEqual(["passed", "failed", "not_run", "not_run"]);
    expect(result.failedStep?.index).toBe(1);
    expect(result.failedStep?.expected).toBe("a reply matching /refund/");
    expect(result.failedStep?.actual).toContain("You said: hello");
    expect(result.failedStep?.message).toMatch(/expected a reply matching \/refund\/, got "You said: hello/);
    // The later user step was not sent.
    expect(result.transcript.turns).toHaveLength(1);
  });

  it("expect_reply not_matches fails when the reply matches, and fails before any reply", async () => {
    const matched = await run([{ user: "hello" }, { expect_reply: { not_matches: "pending" } }]);
    expect(statuses(matched)).toEqual(["passed", "failed"]);
    expect(matched.failedStep?.message).toContain("not matching /pending/");
    const early = await run([{ expect_reply: { matches: "." } }, { user: "hello" }]);
    expect(statuses(early)).toEqual(["failed", "not_run"]);
    expect(early.failedStep?.message).toContain("has not replied yet");
  });

  it("expect_tool_call counts the calls an agent only reports, with a deep partial match on arguments", async () => {
    const result = await run([
      { user: "where is my order?" },
      { expect_tool_call: { name: "get_order_details" } },
      { expect_tool_call: { name: "get_order_details", arguments: { options: { fields: ["status"] } } } },
      // Arguments reported as JSON text are read as the object they encode.
      { expect_tool_call: { name: "lookup", arguments: { query: "pending orders" } } },
      { expect_no_tool_call: "cancel_pending_order" },
    ]);
    expect(statuses(result)).toEqual(["passed", "passed", "passed", "passed", "passed"]);
    expect(result.transcript.agentToolCalls.map((call) => call.tool)).toEqual([
      "get_order_details",
      "lookup",
    ]);
  });

  it("expect_tool_call fails on other arguments and on a tool never called", async () => {
    const wrongArgs = await run([
      { user: "where is my order?" },
      { expect_tool_call: { name: "get_order_details", arguments: { order_id: "#W0000000" } } },
    ]);
    expect(statuses(wrongArgs)).toEqual(["passed", "failed"]);
    expect(wrongArgs.failedStep?.message).toContain('with arguments containing {"order_id":"#W0000000"}');
    expect(wrongArgs.failedStep?.actual).toEqual([
      {
        tool: "get_order_details",
        arguments: { order_id: ORDER, options: { verbose: true, fields: ["status"] } },
      },
      { tool: "lookup", arguments: JSON.stringify({ query: "pending orders" }) },
    ]);
    // A list must match item by item: a shorter expected list is not contained.
    const list = await run([
      { user: "x" },
      { expect_tool_call: { name: "get_order_details", arguments: { options: { fields: [] } } } },
    ]);
    expect(statuses(list)).toEqual(["passed", "failed"]);
    const none = await run([{ user: "x" }, { expect_tool_call: { name: "cancel_pending_order" } }, "stop"]);
    expect(statuses(none)).toEqual(["passed", "failed", "not_run"]);
    expect(none.failedStep?.message).toContain("there was none; the calls so far: get_order_details, lookup");
  });

  it("expect_no_tool_call fails when the tool was called", async () => {
    const result = await run([{ user: "x" }, { expect_no_tool_call: "lookup" }]);
    expect(statuses(result)).toEqual(["passed", "failed"]);
    expect(result.failedStep?.message).toContain("expected no call of lookup, but it was called 1 time");
  });

  it("stop ends the conversation; assertions after it still run", async () => {
    const result = await run([{ user: "x" }, "stop", { expect_tool_call: "lookup" }]);
    expect(statuses(result)).toEqual(["passed", "passed", "passed"]);
    expect(result.transcript.endReason).toBe("stop");
  });

  it("an agent that throws is an error of the test, not a failure", async () => {
    const result = await run([{ user: "x" }, { expect_reply: { matches: "." } }], {
      agent: () => {
        throw new Error("boom");
      },
    });
    expect(result.passed).toBe(false);
    expect(statuses(result)).toEqual(["error", "not_run"]);
    expect(result.error).toContain("the agent failed: the agent threw: boom");
    expect(result.transcript.endReason).toBe("agent_error");
  });

  it("simulate and judge without a model are errors that name what to configure, not failures", async () => {
    const simulate = await run(
      [{ simulate: 2 }, { user: "x" }],
      {},
      { profile: "You are Ann.", goal: "Cancel." },
    );
    expect(statuses(simulate)).toEqual(["error", "not_run"]);
    expect(simulate.error).toContain("simulate needs a user model");
    const judge = await run([{ user: "x" }, { judge: ["The agent is polite."] }]);
    expect(statuses(judge)).toEqual(["passed", "error"]);
    expect(judge.error).toContain("judge needs a judge model");
  });
});

describe("agents acting on real state (tau2-retail)", () => {
  it("a function agent's tools.call runs on a fresh engine session: expect_tool_call and expect_state see it", async () => {
    const script = [
      { expect_state: { pointer: `/orders/${ORDER}/status`, equals: "pending" } },
      { user: `Please cancel ${ORDER}, I no longer need it.` },
      { expect_tool_call: { name: "cancel_pending_order", arguments: { order_id: ORDER } } },
      { expect_state: { pointer: `/orders/${ORDER}/status`, equals: "cancelled" } },
      { expect_reply: { matches: "is cancelled" } },
    ];
    const agent = await openScenarioTestAgent(cancelling, { agentTools: ["tau2-retail"] });
    try {
      const first = await runScenarioTest(test(script), { agent });
      expect(first.error).toBeUndefined();
      expect(statuses(first)).toEqual(["passed", "passed", "passed", "passed", "passed"]);
      expect(first.transcript.agentToolCalls).toHaveLength(1);
      expect(first.transcript.agentToolCalls[0]?.status).toBe("ok");
      expect((first.transcript.finalState as any).orders[ORDER].status).toBe("cancelled");
      // A second test on the same agent starts from the database again (its own session).
      const second = await runScenarioTest(test(script), { agent });
      expect(second.passed).toBe(true);
    } finally {
      await agent.close();
    }
  });

  it("expect_state fails with the value found, and on a pointer with nothing there", async () => {
    const result = await run(
      [{ user: "cancel it" }, { expect_state: { pointer: `/orders/${ORDER}/status`, equals: "pending" } }],
      { agent: cancelling, agentTools: ["tau2-retail"] },
    );
    expect(statuses(result)).toEqual(["passed", "failed"]);
    expect(result.failedStep?.message).toBe(
      `expected /orders/${ORDER}/status to equal "pending", got "cancelled"`,
    );
    expect(result.failedStep?.actual).toBe("cancelled");
    const missing = await run([{ expect_state: { pointer: "/orders/#W0000000/status", equals: "x" } }], {
      agent: cancelling,
      agentTools: ["tau2-retail"],
    });
    expect(statuses(missing)).toEqual(["failed"]);
    expect(missing.failedStep?.message).toContain("there is nothing at /orders/#W0000000/status");
  });

  it("expect_state without agent tools is an error; tools.call without them tells what to pass", async () => {
    const state = await run([{ expect_state: { pointer: "/x", equals: 1 } }]);
    expect(statuses(state)).toEqual(["error"]);
    expect(state.error).toContain("expect_state needs the agent's tools' state");
    const call = await run([{ user: "x" }], { agent: cancelling });
    expect(statuses(call)).toEqual(["error"]);
    expect(call.error).toContain("the agent has no tools: give agentTools (--agent-tools");
  });

  it("a call made through tools.call and also reported is counted once", async () => {
    const result = await run([{ user: "x" }, "stop"], {
      agentTools: ["tau2-retail"],
      agent: async ({ tools }) => {
        await tools.call("get_order_details", { order_id: ORDER });
        return {
          message: "done",
          toolCalls: [
            { name: "get_order_details", arguments: { order_id: ORDER } },
            { name: "notify_customer", arguments: { text: "hi" } },
          ],
        };
      },
    });
    expect(result.transcript.agentToolCalls.map((call) => call.tool)).toEqual([
      "get_order_details",
      "notify_customer",
    ]);
  });

  it("a module: agent gets the tools handle too", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "agent.mjs"),
      [
        "export default async function agent({ message, tools }) {",
        "  const order = message.match(/#W\\d+/)[0];",
        '  const outcome = await tools.call("cancel_pending_order", { order_id: order, reason: "ordered by mistake" });',
        "  return { message: 'cancel ' + order + ': ' + outcome.status };",
        "}",
      ].join("\n"),
    );
    const result = await runScenarioTest(
      test([
        { user: `cancel ${ORDER}` },
        { expect_reply: { matches: "cancel #W2974929: ok" } },
        { expect_state: { pointer: `/orders/${ORDER}/status`, equals: "cancelled" } },
      ]),
      { agent: "module:agent.mjs", cwd: dir, agentTools: ["tau2-retail"] },
    );
    expect(result.error).toBeUndefined();
    expect(result.passed).toBe(true);
    expect(result.transcript.agent).toBe("module:agent.mjs");
  });

  it("a planner: agent runs its model's tool calls on a fresh session per test", async () => {
    server = await startScriptedLlmServer([], {
      respond: (body: any): ServerStep => {
        const last = body.messages.at(-1);
        return last.role === "tool"
          ? { reply: { content: "Done, it is cancelled." } }
          : {
              reply: {
                toolCalls: [
                  {
                    name: "cancel_pending_order",
                    arguments: { order_id: ORDER, reason: "ordered by mistake" },
                  },
                ],
              },
            };
      },
    });
    const models = new Models({
      config: parseConfig({
        providers: { scripted: { type: "openai-compatible", baseURL: server.baseURL } },
        retry: { retries: 0 },
      }),
      cache: null,
    });
    const agent = await openScenarioTestAgent("planner:scripted:agent-model", {
      agentTools: ["tau2-retail"],
      models,
    });
    try {
      const script = [
        { user: `cancel ${ORDER}` },
        { expect_tool_call: { name: "cancel_pending_order", arguments: { reason: "ordered by mistake" } } },
        { expect_state: { pointer: `/orders/${ORDER}/status`, equals: "cancelled" } },
      ];
      for (const _ of [1, 2]) {
        const result = await runScenarioTest(test(script), { agent, models });
        expect(result.error).toBeUndefined();
        expect(result.passed).toBe(true);
      }
      // Two tests, two model calls each: the second cancelled its own, still pending, copy of the order.
      expect(server.requests).toHaveLength(4);
    } finally {
      await agent.close();
    }
  });

  it("an agent that never answers fails its test after timeoutMs instead of hanging the suite", async () => {
    const result = await run([{ user: "x" }, { expect_reply: { matches: "." } }], {
      agent: () => new Promise<string>(() => undefined),
      timeoutMs: 200,
    });
    expect(statuses(result)).toEqual(["error", "not_run"]);
    expect(result.error).toContain("the agent gave no answer within");
  });

  it("an openai-compatible agent runs its tool calls on the session; a scripted test makes no model call", async () => {
    let agentCalls = 0;
    server = await startScriptedLlmServer([], {
      respond: (body: any): ServerStep => {
        if (body.model !== "agent-model") return { status: 500, error: { message: "not the agent" } };
        agentCalls += 1;
        const last = body.messages.at(-1);
        return last.role === "tool"
          ? { reply: { content: "Your order is cancelled." } }
          : {
              reply: {
                toolCalls: [
                  {
                    name: "cancel_pending_order",
                    arguments: { order_id: ORDER, reason: "no longer needed" },
                  },
                ],
              },
            };
      },
    });
    const result = await runScenarioTest(
      test([
        { user: `cancel ${ORDER}` },
        { expect_tool_call: { name: "cancel_pending_order", arguments: { reason: "no longer needed" } } },
        { expect_state: { pointer: `/orders/${ORDER}/status`, equals: "cancelled" } },
        { expect_reply: { matches: "cancelled" } },
      ]),
      { agent: `openai-compatible:${server.baseURL}#agent-model`, agentTools: ["tau2-retail"] },
    );
    expect(result.error).toBeUndefined();
    expect(result.passed).toBe(true);
    // Only the agent's own endpoint was asked: the test itself called no model.
    expect(agentCalls).toBe(2);
    expect(server.requests).toHaveLength(2);
  });
});

describe("the model steps against the scripted server", () => {
  async function models(options: { judgeFails?: RegExp } = {}) {
    let said = 0;
    server = await startScriptedLlmServer([], {
      respond: (body: any): ServerStep => {
        const schema = body?.response_format?.json_schema?.name;
        const json = (value: unknown): ServerStep => ({ reply: { content: JSON.stringify(value) } });
        if (schema === "user_turn_plan")
          return json({ known: ["my order"], needed: ["a cancellation"], nextStep: "ask to cancel" });
        if (schema === "judgement") {
          const text: string = body.messages.at(-1).content;
          const data = JSON.parse(text.slice(text.indexOf("<data>") + 6, text.lastIndexOf("</data>")));
          return json({
            items: data.checklist.map((item: { description: string }) => {
              const fails = options.judgeFails?.test(item.description) === true;
              return {
                description: item.description,
                status: fails ? "failed" : "success",
                reasoning: fails ? "the agent never did it" : `seen in: ${data.agentMessage.slice(0, 40)}`,
              };
            }),
          });
        }
        said += 1;
        return {
          reply: { content: said >= 3 ? "Thanks, bye. ###STOP###" : `Please cancel ${ORDER} (${said})` },
        };
      },
    });
    return new Models({
      config: parseConfig({
        providers: {
          scripted: { type: "openai-compatible", baseURL: server.baseURL, structuredOutputs: true },
        },
        roles: { default: "scripted:m" },
        retry: { retries: 0 },
      }),
      cache: null,
    });
  }

  const persona = {
    profile: "You are Fatima, a customer.",
    goal: `Cancel order ${ORDER}.`,
    knowledge: "none",
  };

  it("a test with only scripted and expect_* steps sends nothing to a configured model", async () => {
    const configured = await models();
    const result = await run(
      [
        { user: `cancel ${ORDER}` },
        { expect_reply: { matches: "cancelled" } },
        { expect_tool_call: "cancel_pending_order" },
        { expect_no_tool_call: "refund" },
        { expect_state: { pointer: `/orders/${ORDER}/status`, equals: "cancelled" } },
        "stop",
      ],
      { agent: cancelling, agentTools: ["tau2-retail"], models: configured },
    );
    expect(result.passed).toBe(true);
    expect(server?.requests).toHaveLength(0);
    expect(result.transcript.userModel).toBe("");
  });

  it("simulate: n plays n turns of the simulated user after scripted ones, with its plans", async () => {
    const result = await run(
      [{ user: "hi" }, { simulate: 2 }, { expect_reply: { matches: "\\(2\\)" } }],
      { models: await models() },
      persona,
    );
    expect(result.error).toBeUndefined();
    expect(statuses(result)).toEqual(["passed", "passed", "passed"]);
    const turns = result.transcript.turns;
    expect(turns.map((turn) => turn.user)).toEqual([
      "hi",
      `Please cancel ${ORDER} (1)`,
      `Please cancel ${ORDER} (2)`,
    ]);
    expect(turns[1]?.plan?.nextStep).toBe("ask to cancel");
    expect(turns[2]?.userUsage.calls).toBe(2);
    expect(result.transcript.userModel).toBe("scripted:m");
  });

  it("simulate: until_stop runs until the user's stop token; then nothing more can be said", async () => {
    const result = await run(
      [{ simulate: "until_stop" }, { expect_tool_call: "lookup" }, { user: "one more thing" }],
      { models: await models() },
      persona,
    );
    expect(statuses(result)).toEqual(["passed", "passed", "error"]);
    expect(result.steps[0]?.message).toBe("3 simulated turns; the simulated user ended it (stop)");
    expect(result.transcript.turns).toHaveLength(3);
    expect(result.transcript.turns[2]?.stop).toBe("stop");
    expect(result.transcript.endReason).toBe("stop");
    expect(result.error).toContain("the conversation has ended");
  });

  it("simulate: until_stop is bounded by max_turns", async () => {
    const result = await run(
      [{ simulate: "until_stop" }],
      { models: await models() },
      { ...persona, max_turns: 1 },
    );
    expect(statuses(result)).toEqual(["passed"]);
    expect(result.transcript.turns).toHaveLength(1);
    expect(result.transcript.endReason).toBe("max_turns");
  });

  it("without models, a config makes the user's and the judge's models when a step needs them", async () => {
    const configured = await models();
    const result = await run(
      [{ simulate: 1 }, { judge: ["The agent answers."] }],
      { config: { ...configured.config, cache: { mode: "off" } } },
      persona,
    );
    expect(result.error).toBeUndefined();
    expect(statuses(result)).toEqual(["passed", "passed"]);
    // plan + message of the user, one judge call
    expect(server?.requests).toHaveLength(3);
  });

  it("judge passes when every criterion is met and fails naming the unmet ones", async () => {
    const ok = await run(
      [{ user: "hello" }, { judge: ["The agent greets the user.", "The agent answers in English."] }],
      { models: await models() },
    );
    expect(statuses(ok)).toEqual(["passed", "passed"]);
    expect(ok.steps[1]?.criteria?.map((c) => c.passed)).toEqual([true, true]);
    // The judge saw the conversation so far.
    expect(ok.steps[1]?.criteria?.[0]?.reasoning).toContain("User: hello");
    await server?.close();
    const bad = await run(
      [{ user: "hello" }, { judge: ["The agent is polite.", "The agent offers a refund."] }, "stop"],
      { models: await models({ judgeFails: /refund/ }) },
    );
    expect(statuses(bad)).toEqual(["passed", "failed", "not_run"]);
    expect(bad.failedStep?.message).toBe(
      'the judge found 1 of 2 criteria unmet: "The agent offers a refund." (failed: the agent never did it)',
    );
    expect(bad.failedStep?.criteria?.map((c) => c.passed)).toEqual([true, false]);
  });
});

describe("scripts in scenario files", () => {
  function write(name: string, text: string): string {
    const dir = tempDir();
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  }

  function loadError(file: string): TerrariumError {
    try {
      loadScenarioFile(file);
    } catch (error) {
      expect(error).toBeInstanceOf(TerrariumError);
      return error as TerrariumError;
    }
    throw new Error("expected the file to be refused");
  }

  it("a test needs only id and script; its steps are normalised", () => {
    const file = write(
      "t.yaml",
      [
        "id: cancel",
        "script:",
        "  - user: hello",
        "  - expect_tool_call: lookup",
        "  - judge: The agent is polite.",
        "  - stop",
        "  - stop:",
      ].join("\n"),
    );
    const [scenario] = loadScenarioFile(file);
    expect(scenario?.script).toEqual([
      { user: "hello" },
      { expect_tool_call: { name: "lookup" } },
      { judge: ["The agent is polite."] },
      { stop: true },
      { stop: true },
    ]);
    expect(scenario?.maxTurns).toBe(20);
    expect(scenario?.goal).toBe("");
  });

  it("the scenario JSON Schema describes script steps for editors", () => {
    const schema = scenarioJsonSchema() as any;
    expect(schema.required).not.toContain("script");
    const kinds = schema.properties.script.items.oneOf.map((step: any) => step.const ?? step.required?.[0]);
    expect(kinds).toEqual([
      "stop",
      "stop",
      "user",
      "simulate",
      "expect_reply",
      "expect_tool_call",
      "expect_no_tool_call",
      "expect_state",
      "judge",
    ]);
  });

  it("files without script load exactly as before (and still need their keys)", () => {
    const scenarios = loadScenarios(join(import.meta.dirname, "..", "..", "examples", "users", "scenarios"));
    expect(scenarios.length).toBeGreaterThan(0);
    for (const scenario of scenarios) expect(Object.hasOwn(scenario, "script")).toBe(false);
    expect(() => parseScenario({ id: "x", goal: "g", knowledge: "k", max_turns: 3 })).toThrow(
      'missing required key "profile"',
    );
  });

  it("an unknown step kind is refused with its file, pointer and line", () => {
    const file = write(
      "bad.yaml",
      ["id: t", "script:", "  - user: hi", "  - expect_replay: {matches: x}"].join("\n"),
    );
    const error = loadError(file);
    expect(error.message).toContain(
      'script[1]: unknown step kind "expect_replay" (did you mean "expect_reply"?)',
    );
    expect(error.where).toMatchObject({ file, pointer: "/script/1/expect_replay", line: 4 });
  });

  it("a bad regular expression is refused at load with its location", () => {
    const file = write(
      "regex.yaml",
      ["id: t", "script:", "  - user: hi", "  - expect_reply:", "      matches: '([a-z'"].join("\n"),
    );
    const error = loadError(file);
    expect(error.message).toContain("script[1].expect_reply.matches: not a valid regular expression");
    expect(error.where).toMatchObject({ file, pointer: "/script/1/expect_reply/matches", line: 5 });
  });

  it("refuses malformed steps, each at its place", () => {
    const cases: Array<[unknown, string, string]> = [
      ["hello", 'unknown step "hello"', "/script/0"],
      ["user", 'the user step needs a value (write "user: …")', "/script/0"],
      [{ user: "a", stop: null }, "a step has exactly one key, not 2", "/script/0"],
      [{ simulate: 0 }, "a number of turns (1-1000) or until_stop", "/script/0/simulate"],
      [
        { expect_reply: { matches: "a", not_matches: "b" } },
        "exactly one of matches and not_matches",
        "/script/0/expect_reply",
      ],
      [
        { expect_reply: { matches: "a", flags: "g" } },
        "some of the letters i, m, s, u",
        "/script/0/expect_reply/flags",
      ],
      [
        { expect_tool_call: { name: "" } },
        "the tool name must be non-empty text",
        "/script/0/expect_tool_call/name",
      ],
      [
        { expect_tool_call: { name: "a", args: {} } },
        'unknown key "args"',
        "/script/0/expect_tool_call/args",
      ],
      [
        { expect_state: { pointer: "orders", equals: 1 } },
        'must be empty or start with "/"',
        "/script/0/expect_state/pointer",
      ],
      [{ expect_state: { pointer: "/a" } }, 'missing required key "equals"', "/script/0/expect_state"],
      [{ judge: [] }, "a list of criteria", "/script/0/judge"],
      [{ stop: "now" }, "stop takes no value", "/script/0/stop"],
    ];
    for (const [step, message, pointer] of cases) {
      let error: TerrariumError | undefined;
      try {
        parseScenario({ id: "t", script: [step] });
      } catch (caught) {
        error = caught as TerrariumError;
      }
      expect(error?.message, JSON.stringify(step)).toContain(message);
      expect(error?.where.pointer, JSON.stringify(step)).toBe(pointer);
    }
  });

  it("refuses a simulate step without the user's profile and goal, and talk after stop", () => {
    expect(() => parseScenario({ id: "t", script: [{ simulate: 2 }] })).toThrow(
      "script[0]: simulate needs the scenario's profile and goal",
    );
    expect(() => parseScenario({ id: "t", script: ["stop", { user: "more" }] })).toThrow(
      "script[1]: a user step after the stop at script[0]",
    );
    expect(() => parseScenario({ id: "t", script: [] })).toThrow("script must not be empty");
  });
});

describe("transcripts", () => {
  it("a result's transcript lines are read back by users run's reader", async () => {
    const result = await run([{ user: "x" }, { expect_tool_call: "lookup" }, "stop"]);
    const file = join(tempDir(), "t.1.jsonl");
    writeFileSync(
      file,
      scenarioTestTranscriptLines(result, { runId: "t.1", index: 1 })
        .map((line) => JSON.stringify(line))
        .join("\n"),
    );
    const stored = readTranscript(file);
    expect(stored.scenarioId).toBe("t");
    expect(stored.mode).toBe("test");
    expect(stored.turns[0]?.agent?.message).toContain("You said: x");
    expect(stored.end?.endReason).toBe("stop");
    expect(stored.end?.agentToolCalls).toHaveLength(2);
  });
});
