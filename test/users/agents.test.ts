import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/errors.js";
import { Models, parseConfig } from "../../src/models/index.js";
import { startServer } from "../../src/server/index.js";
import {
  AGENT_API_KEY_ENV,
  type AgentTarget,
  createAgentTarget,
  parseAgentSpec,
} from "../../src/users/agents/index.js";
import { parseScenario } from "../../src/users/scenario/index.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

const EMAIL = "noah.brown7922@example.com";
const scenario = parseScenario({
  id: "retail-1",
  profile: "You are Noah Brown.",
  goal: "Find your user id.",
  knowledge: `Your email is ${EMAIL}.`,
  max_turns: 5,
  agent_context: "The agent authenticates users by email.",
});
const context = (runId: string) => ({ runId, seed: "7", scenario });

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()?.();
});

async function scripted(steps: ScriptStep[] = []): Promise<ScriptedLlmServer> {
  const server = await startScriptedLlmServer(steps);
  cleanup.push(() => server.close());
  return server;
}

function modelsFor(server: ScriptedLlmServer): Models {
  const models = new Models({
    config: parseConfig({
      providers: {
        scripted: { type: "openai-compatible", baseURL: server.baseURL, structuredOutputs: true },
      },
      retry: { retries: 0 },
    }),
    cache: null,
  });
  cleanup.push(() => models.close());
  return models;
}

async function target(spec: string, options: Parameters<typeof createAgentTarget>[1]): Promise<AgentTarget> {
  const created = await createAgentTarget(spec, options);
  cleanup.push(() => created.close());
  return created;
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "terrarium-agents-"));
}

async function failure(promise: Promise<unknown> | (() => unknown)): Promise<TerrariumError> {
  try {
    await (typeof promise === "function" ? promise() : promise);
  } catch (error) {
    expect(error).toBeInstanceOf(TerrariumError);
    return error as TerrariumError;
  }
  throw new Error("expected a failure");
}

const call = (name: string, args: unknown): ScriptStep => ({
  reply: { toolCalls: [{ name, arguments: args }] },
});
const answer = (text: string): ScriptStep => ({ reply: { content: text } });

describe("parseAgentSpec", () => {
  it("reads the four forms", () => {
    expect(parseAgentSpec("planner:openai:gpt-4.1-mini")).toEqual({
      kind: "planner",
      model: "openai:gpt-4.1-mini",
    });
    expect(parseAgentSpec("openai-compatible:http://127.0.0.1:8000/v1/#my-agent")).toEqual({
      kind: "openai-compatible",
      baseURL: "http://127.0.0.1:8000/v1",
      model: "my-agent",
    });
    expect(parseAgentSpec("http:https://agent.example.com/chat")).toEqual({
      kind: "http",
      url: "https://agent.example.com/chat",
    });
    expect(parseAgentSpec("module:./agent.mjs")).toEqual({
      kind: "module",
      path: "./agent.mjs",
      exportName: "default",
    });
    expect(parseAgentSpec("module:lib/agent.js#support")).toEqual({
      kind: "module",
      path: "lib/agent.js",
      exportName: "support",
    });
  });

  it.each([
    ["", "is empty"],
    ["gpt-4", "names no kind"],
    ["robot:x", 'unknown kind "robot"'],
    ["planner:gpt-4", "not <provider:model>"],
    ["planner:openai:", "not <provider:model>"],
    ["openai-compatible:http://127.0.0.1:8000/v1", "no #<model>"],
    ["openai-compatible:http://127.0.0.1:8000/v1#", "empty model"],
    ["openai-compatible:ftp://host/v1#m", "not an http(s) URL"],
    ["http:not a url", "not a URL"],
    ["http:file:///etc/passwd", "not an http(s) URL"],
    ["module:", "no module path"],
    ["module:agent.mjs#1bad", "not a JavaScript identifier"],
  ])("refuses %j", async (spec, reason) => {
    const error = await failure(() => parseAgentSpec(spec));
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toContain(`"${spec}"`);
    expect(error.message).toContain(reason);
    expect(error.message).toContain("planner:<provider:model>");
    expect(error.message).toContain("openai-compatible:<baseURL>#<model>");
    expect(error.message).toContain("http:<url>");
    expect(error.message).toContain("module:<path>[#<export>]");
  });
});

describe("createAgentTarget refuses bad input before any model call", () => {
  it("refuses a planner without --agent-tools, an unknown provider and unknown tools", async () => {
    const server = await scripted();
    const models = modelsFor(server);
    const noTools = await failure(createAgentTarget("planner:scripted:agent", { models }));
    expect(noTools.code).toBe("INVALID_INPUT");
    expect(noTools.message).toContain("needs --agent-tools");
    const provider = await failure(
      createAgentTarget("planner:nowhere:agent", { models, agentTools: ["tau2-retail"] }),
    );
    expect(provider.code).toBe("MODEL_UNKNOWN_PROVIDER");
    expect(provider.message).toContain('--agent "planner:nowhere:agent"');
    const tools = await failure(
      createAgentTarget("planner:scripted:agent", {
        models,
        agentTools: ["no-such-tools.yaml"],
        cwd: tempDir(),
      }),
    );
    expect(tools.message).toContain("--agent-tools");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses bad options", async () => {
    const models = modelsFor(await scripted());
    const error = await failure(createAgentTarget("module:a.mjs", { models, timeoutMs: 0 }));
    expect(error.message).toContain("timeoutMs must be a positive whole number");
  });

  it("refuses a missing, unreadable or invalid http config, saying where", async () => {
    const models = modelsFor(await scripted());
    const dir = tempDir();
    const spec = "http:http://127.0.0.1:9/chat";
    const missing = await failure(createAgentTarget(spec, { models }));
    expect(missing.message).toContain("needs --http-config");
    const unreadable = await failure(
      createAgentTarget(spec, { models, httpConfig: "absent.yaml", cwd: dir }),
    );
    expect(unreadable.code).toBe("FILE_UNREADABLE");
    expect(unreadable.where.file).toBe(join(dir, "absent.yaml"));
    expect(unreadable.message).toContain("--http-config");

    const cases: Array<[string, string, string]> = [
      ["method: POST\n", "", 'missing required key "response"'],
      ["response:\n  message: reply\n  mesage: x\n", "/response", 'unknown key "mesage"'],
      ["response:\n  message: a.__proto__.b\n", "/response/message", '"__proto__"'],
      ["response:\n  message: /a/constructor\n", "/response/message", '"constructor"'],
      ["response:\n  message: a..b\n", "/response/message", "not a JSON Pointer"],
      [
        "response:\n  message: reply\nbody:\n  text: '{{secret}}'\n",
        "/body/text",
        "unknown placeholder {{secret}}",
      ],
      ["response:\n  message: reply\nbody:\n  text: '{{env:HOME}}'\n", "/body/text", "unknown placeholder"],
      [
        "response:\n  message: reply\nbody:\n  h: 'past: {{history}}'\n",
        "/body/h",
        "must be the whole string",
      ],
      ["response:\n  message: reply\nmethod: DELETE\n", "/method", ""],
      ["response:\n  message: reply\nterrariumServer: ftp://x\n", "/terrariumServer", "http(s) URL"],
      ["response:\n  message: reply\nheaders:\n  'bad header': x\n", "/headers/bad header", "header name"],
      ["- 1\n", "", "must be an object"],
      [
        "response:\n  message: m\nterrariumServer: http://127.0.0.1:9\nbody: { text: '{{message}}' }\n",
        "/terrariumServer",
        "the session id reaches the agent nowhere",
      ],
    ];
    for (const [text, pointer, message] of cases) {
      const file = join(dir, "agent.yaml");
      writeFileSync(file, text);
      const error = await failure(createAgentTarget(spec, { models, httpConfig: file }));
      expect(error.code, text).toBe("CONFIG_INVALID");
      expect(error.where, text).toMatchObject({ file, pointer });
      expect(error.message, text).toContain(message);
    }
  });

  it("refuses a module that is missing, unloadable, or whose export is not a function", async () => {
    const models = modelsFor(await scripted());
    const dir = tempDir();
    writeFileSync(join(dir, "agent.mjs"), "export const name = 'x';\nexport default 42;\n");
    writeFileSync(join(dir, "broken.mjs"), "export default (;\n");
    writeFileSync(join(dir, "agent.txt"), "hello");
    const missing = await failure(createAgentTarget("module:nope.mjs", { models, cwd: dir }));
    expect(missing.message).toContain(`${join(dir, "nope.mjs")} does not exist`);
    const notFunction = await failure(createAgentTarget("module:agent.mjs", { models, cwd: dir }));
    expect(notFunction.message).toContain('export "default" is a number, not a function');
    expect(notFunction.where.file).toBe(join(dir, "agent.mjs"));
    const noExport = await failure(createAgentTarget("module:agent.mjs#respond", { models, cwd: dir }));
    expect(noExport.message).toContain('no export "respond" (its exports: default, name)');
    const broken = await failure(createAgentTarget("module:broken.mjs", { models, cwd: dir }));
    expect(broken.message).toContain("cannot load the agent module");
    const text = await failure(createAgentTarget("module:agent.txt", { models, cwd: dir }));
    expect(text.message).toContain("not a JavaScript or TypeScript file");
  });
});

describe("planner target", () => {
  it("acts on tau2-retail through the engine; tool calls come from the engine's history", async () => {
    const server = await scripted([
      call("find_user_id_by_email", { email: EMAIL }),
      answer("Your user id is noah_brown_6181."),
      call("find_user_id_by_email", { email: 42 }),
      call("find_user_id_by_email", { email: "nobody@example.com" }),
      answer("I could not find that account."),
    ]);
    const agent = await target("planner:scripted:agent", {
      models: modelsFor(server),
      agentTools: ["tau2-retail"],
      seed: "7",
    });
    expect(agent.kind).toBe("planner");
    expect(agent.tools).toContain("find_user_id_by_email");
    expect(agent.tools).toContain("modify_user_address");
    const session = await agent.open(context("run-1"));
    const first = await session.send(`Hi, my email is ${EMAIL}.`);
    expect(first).toEqual({
      message: "Your user id is noah_brown_6181.",
      toolCalls: [
        {
          tool: "find_user_id_by_email",
          arguments: { email: EMAIL },
          status: "ok",
          result: "noah_brown_6181",
        },
      ],
      usage: { inputTokens: 20, outputTokens: 10 },
    });
    // The model saw the tool's result, and the thread is its own (no scenario agentContext).
    const toolMessage = server.requests[1]?.body.messages.at(-1);
    expect(toolMessage).toMatchObject({ role: "tool", content: JSON.stringify("noah_brown_6181") });
    expect(JSON.stringify(server.requests[0]?.body.messages)).not.toContain("authenticates users by email");
    expect(server.requests[0]?.body.messages[0].role).toBe("system");

    const second = await session.send("Try another one please.");
    expect(second.message).toBe("I could not find that account.");
    expect(second.toolCalls.map((c) => [c.tool, c.status])).toEqual([
      ["find_user_id_by_email", "invalid"],
      ["find_user_id_by_email", "tool_error"],
    ]);
    expect(second.toolCalls[1]?.result).toEqual({ error: "User not found" });
    expect(second.usage).toEqual({ inputTokens: 30, outputTokens: 15 });
    // The whole thread goes with each request: system, user, assistant call, tool, answer, new user.
    const thread = server.requests[2]?.body.messages.map((m: any) => m.role);
    expect(thread).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
  });

  it("gives every run its own engine session: one run's writes are not seen by another", async () => {
    const server = await scripted([
      call("modify_user_address", {
        user_id: "noah_brown_6181",
        address1: "1 Main St",
        address2: "",
        city: "Austin",
        state: "TX",
        country: "USA",
        zip: "73301",
      }),
      answer("Done."),
    ]);
    const agent = await target("planner:scripted:agent", {
      models: modelsFor(server),
      agentTools: ["tau2-retail"],
    });
    const a = await agent.open(context("run-a"));
    const b = await agent.open(context("run-b"));
    expect(a.sessionId).not.toBe(b.sessionId);
    const reply = await a.send("Please move me to Austin.");
    expect(reply.toolCalls[0]).toMatchObject({ tool: "modify_user_address", status: "ok" });
    const stateA = (await a.finalState()) as any;
    const stateB = (await b.finalState()) as any;
    expect(stateA.users.noah_brown_6181.address.city).toBe("Austin");
    expect(stateB.users.noah_brown_6181.address.city).toBe("Denver");
  });

  it("stops after maxToolSteps and throws AGENT_ERROR when the model fails mid-run", async () => {
    const server = await scripted([
      call("find_user_id_by_email", { email: EMAIL }),
      call("find_user_id_by_email", { email: EMAIL }),
      { status: 500, error: { message: "the model is down" } },
    ]);
    const agent = await target("planner:scripted:agent", {
      models: modelsFor(server),
      agentTools: ["tau2-retail"],
      maxToolSteps: 2,
    });
    const session = await agent.open(context("run-1"));
    const capped = await session.send("hello");
    expect(capped.toolCalls).toHaveLength(2);
    expect(capped.message).toBe("");
    const error = await failure(session.send("still there?"));
    expect(error.code).toBe("AGENT_ERROR");
    expect(error.message).toContain("the planner agent's model scripted:agent failed");
  });
});

describe("openai-compatible target", () => {
  it("sends the thread and the tools, simulates the tool calls, and loops until a plain answer", async () => {
    const agentServer = await scripted([
      {
        reply: {
          toolCalls: [{ name: "find_user_id_by_email", arguments: { email: EMAIL } }],
          usage: { prompt_tokens: 7, completion_tokens: 3 },
        },
      },
      { reply: { content: "You are noah_brown_6181.", usage: { prompt_tokens: 11, completion_tokens: 4 } } },
      answer("Anything else?"),
    ]);
    const models = modelsFor(await scripted());
    process.env[AGENT_API_KEY_ENV] = "agent-secret";
    cleanup.push(() => {
      delete process.env[AGENT_API_KEY_ENV];
    });
    const agent = await target(`openai-compatible:${agentServer.baseURL}#support-bot`, {
      models,
      agentTools: ["tau2-retail"],
    });
    expect(agent.tools).toContain("find_user_id_by_email");
    const session = await agent.open(context("run-1"));
    const reply = await session.send(`I am ${EMAIL}`);
    expect(reply).toEqual({
      message: "You are noah_brown_6181.",
      toolCalls: [
        {
          tool: "find_user_id_by_email",
          arguments: { email: EMAIL },
          status: "ok",
          result: "noah_brown_6181",
        },
      ],
      usage: { inputTokens: 18, outputTokens: 7 },
    });
    const [firstRequest, secondRequest] = agentServer.requests;
    expect(firstRequest?.path).toBe("/v1/chat/completions");
    expect(firstRequest?.headers.authorization).toBe("Bearer agent-secret");
    expect(firstRequest?.body.model).toBe("support-bot");
    expect(firstRequest?.body.messages).toEqual([{ role: "user", content: `I am ${EMAIL}` }]);
    expect(firstRequest?.body.tools.map((t: any) => t.function.name)).toContain("find_user_id_by_email");
    expect(secondRequest?.body.messages.at(-1)).toMatchObject({ role: "tool", content: '"noah_brown_6181"' });
    expect(((await session.finalState()) as any).users.noah_brown_6181).toBeDefined();
    const again = await session.send("no thanks");
    expect(again.toolCalls).toEqual([]);
    expect(agentServer.requests[2]?.body.messages).toHaveLength(5);
  });

  it("without --agent-tools offers no tools and a tool call is an AGENT_ERROR", async () => {
    const agentServer = await scripted([answer("hello"), call("lookup", {})]);
    const agent = await target(`openai-compatible:${agentServer.baseURL}#bot`, {
      models: modelsFor(await scripted()),
    });
    expect(agent.tools).toEqual([]);
    const session = await agent.open(context("run-1"));
    expect((await session.send("hi")).message).toBe("hello");
    expect(agentServer.requests[0]?.body.tools).toBeUndefined();
    expect(await session.finalState()).toBeUndefined();
    const error = await failure(session.send("look it up"));
    expect(error.code).toBe("AGENT_ERROR");
    expect(error.message).toContain('called the tool "lookup", but no tools were given');
  });

  it("reports non-200 answers, malformed JSON and timeouts as AGENT_ERROR with the status and the body", async () => {
    const agentServer = await scripted([
      { status: 503, raw: "upstream overloaded" },
      { raw: "{not json" },
      { raw: JSON.stringify({ choices: [] }) },
      { delayMs: 400, reply: { content: "late" } },
    ]);
    const agent = await target(`openai-compatible:${agentServer.baseURL}#bot`, {
      models: modelsFor(await scripted()),
      timeoutMs: 100,
    });
    const session = await agent.open(context("run-1"));
    const status = await failure(session.send("a"));
    expect(status.code).toBe("AGENT_ERROR");
    expect(status.message).toContain("HTTP 503: upstream overloaded");
    const json = await failure(session.send("b"));
    expect(json.message).toContain("not JSON: {not json");
    const shape = await failure(session.send("c"));
    expect(shape.message).toContain("without choices[0].message");
    const timeout = await failure(session.send("d"));
    expect(timeout.message).toContain("no answer within 100 ms");
  });
});

/** A tiny HTTP agent: answers with what `reply` makes of each request. */
async function httpAgent(
  reply: (body: any, request: IncomingMessage) => Promise<{ status?: number; body: string }>,
) {
  const requests: Array<{ headers: IncomingMessage["headers"]; body: any; method?: string }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
      requests.push({ headers: req.headers, body, ...(req.method ? { method: req.method } : {}) });
      const answer = await reply(body, req);
      res.writeHead(answer.status ?? 200, { "content-type": "application/json" });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/chat`, requests };
}

describe("http target", () => {
  it("fills the body template safely, passes the session id, and reads the reply, tool calls and usage", async () => {
    const agentHttp = await httpAgent(async (body) => ({
      body: JSON.stringify({
        data: { reply: [{ text: `echo: ${body.input.text}` }] },
        calls: [
          { tool: "lookup", arguments: '{"q":1}', result: 2 },
          { name: "other", status: "failed" },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 2 },
      }),
    }));
    const dir = tempDir();
    const file = join(dir, "agent.yaml");
    writeFileSync(
      file,
      [
        "method: put",
        "headers:",
        "  X-Run: 'run {{run_id}}'",
        "  Authorization: 'Bearer {{env:TEST_AGENT_TOKEN}}'",
        "sessionHeader: X-Session-ID",
        "body:",
        "  input: { text: '{{message}}', session: '{{session_id}}' }",
        "  past: '{{history}}'",
        "  all: '{{messages}}'",
        "  constant: [1, true, null]",
        "response:",
        "  message: data.reply[0].text",
        "  toolCalls: /calls",
        "  usage: usage",
      ].join("\n"),
    );
    process.env.TEST_AGENT_TOKEN = "tok";
    cleanup.push(() => {
      delete process.env.TEST_AGENT_TOKEN;
    });
    const agent = await target(`http:${agentHttp.url}`, {
      models: modelsFor(await scripted()),
      httpConfig: "agent.yaml",
      cwd: dir,
    });
    expect(agent.tools).toEqual([]);
    const session = await agent.open(context("run-1"));
    expect(session.sessionId).toMatch(/^run-1-[0-9a-f]{8}$/);
    const other = await agent.open(context("run-1"));
    expect(other.sessionId).not.toBe(session.sessionId);

    const tricky = 'quote " and {{run_id}} and \\ and }}';
    const reply = await session.send(tricky);
    expect(reply).toEqual({
      message: `echo: ${tricky}`,
      toolCalls: [
        { tool: "lookup", arguments: { q: 1 }, status: "ok", result: 2 },
        { tool: "other", arguments: {}, status: "failed", result: null },
      ],
      usage: { inputTokens: 5, outputTokens: 2 },
    });
    const first = agentHttp.requests[0];
    expect(first?.method).toBe("PUT");
    expect(first?.body).toEqual({
      input: { text: tricky, session: session.sessionId },
      past: [],
      all: [{ role: "user", content: tricky }],
      constant: [1, true, null],
    });
    expect(first?.headers["x-session-id"]).toBe(session.sessionId);
    expect(first?.headers["x-run"]).toBe("run run-1");
    expect(first?.headers.authorization).toBe("Bearer tok");
    await session.send("second");
    expect(agentHttp.requests[1]?.body.past).toEqual([
      { role: "user", content: tricky },
      { role: "assistant", content: `echo: ${tricky}` },
    ]);
    expect(await session.finalState()).toBeUndefined();
  });

  it("turns failures into AGENT_ERROR: a status, a body that is not JSON, a missing reply", async () => {
    const answers = [
      { status: 502, body: "bad gateway" },
      { body: "<html>" },
      { body: JSON.stringify({ other: 1 }) },
      { body: JSON.stringify({ reply: { nested: true } }) },
    ];
    const agentHttp = await httpAgent(async () => answers.shift() as { body: string });
    const agent = await target(`http:${agentHttp.url}`, {
      models: modelsFor(await scripted()),
      httpConfig: { response: { message: "reply" } },
    });
    const session = await agent.open(context("run-1"));
    expect((await failure(session.send("a"))).message).toContain("answered HTTP 502: bad gateway");
    expect((await failure(session.send("b"))).message).toContain("not JSON: <html>");
    const missing = await failure(session.send("c"));
    expect(missing.code).toBe("AGENT_ERROR");
    expect(missing.message).toContain('nothing at response.message "reply"');
    expect((await failure(session.send("d"))).message).toContain('an object at response.message "reply"');
    // The default body.
    expect(agentHttp.requests[0]?.body).toEqual({ message: "a", session_id: session.sessionId });
  });

  it("with terrariumServer: uses the server's session, reads this reply's calls from its history and the final state", async () => {
    const tools = await startServer({ sources: ["tau2-retail"], port: 0, seed: "1" });
    cleanup.push(() => tools.close());
    // The agent calls its tools on the terrarium server under the session id it is given.
    const agentHttp = await httpAgent(async (body, request) => {
      const session = request.headers["x-session-id"] as string;
      const lookups = body.message === "twice" ? 2 : 1;
      for (let i = 0; i < lookups; i++)
        await fetch(`${tools.url}/sessions/${session}/calls`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: "find_user_id_by_email", arguments: { email: EMAIL } }),
        });
      return { body: JSON.stringify({ answer: `done ${lookups}` }) };
    });
    const agent = await target(`http:${agentHttp.url}`, {
      models: modelsFor(await scripted()),
      httpConfig: {
        response: { message: "answer" },
        sessionHeader: "X-Session-ID",
        terrariumServer: tools.url,
      },
    });
    expect(agent.tools).toContain("find_user_id_by_email");
    const session = await agent.open(context("run-1"));
    expect((await tools.engine.session(session.sessionId)).id).toBe(session.sessionId);
    const first = await session.send("once");
    expect(first.toolCalls).toEqual([
      { tool: "find_user_id_by_email", arguments: { email: EMAIL }, status: "ok", result: "noah_brown_6181" },
    ]);
    const second = await session.send("twice");
    expect(second.message).toBe("done 2");
    expect(second.toolCalls).toHaveLength(2);
    expect(((await session.finalState()) as any).users.noah_brown_6181.email).toBe(EMAIL);
    const another = await agent.open(context("run-2"));
    expect(another.sessionId).not.toBe(session.sessionId);
  });

  it("refuses a response body over 5 MB and stops when the run is cancelled", async () => {
    const agentHttp = await httpAgent(async () => ({
      body: JSON.stringify({ reply: "x".repeat(6 * 1024 * 1024) }),
    }));
    const agent = await target(`http:${agentHttp.url}`, {
      models: modelsFor(await scripted()),
      httpConfig: { response: { message: "reply" } },
    });
    const session = await agent.open(context("run-1"));
    const big = await failure(session.send("a"));
    expect(big.code).toBe("AGENT_ERROR");
    expect(big.message).toContain("over the 5242880-byte limit");
    const controller = new AbortController();
    controller.abort();
    const cancelled = await agent.open({ ...context("run-2"), signal: controller.signal });
    expect((await failure(cancelled.send("b"))).message).toContain("the run was cancelled");
  });

  it("refuses a terrariumServer that cannot be reached, at creation", async () => {
    const error = await failure(
      createAgentTarget("http:http://127.0.0.1:9/chat", {
        models: modelsFor(await scripted()),
        httpConfig: { response: { message: "m" }, terrariumServer: "http://127.0.0.1:9" },
        timeoutMs: 2000,
      }),
    );
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toContain("terrariumServer http://127.0.0.1:9 cannot be used");
  });
});

describe("module target", () => {
  it("calls a function export with the message and the history, and an object's respond", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "agent.mjs"),
      [
        "export default function agent({ message, history, sessionId, runId, scenario }) {",
        "  if (message === 'tools') return { message: 'used', toolCalls: [{ name: 'x', arguments: { a: 1 } }], usage: { inputTokens: 3, outputTokens: 1 } };",
        "  if (message === 'boom') throw new Error('kaput');",
        "  if (message === 'bad') return 42;",
        "  return scenario.id + '/' + runId + ': ' + message + ' (' + history.length + ' before)';",
        "}",
        "export const support = { respond: async ({ message }) => ({ message: message.toUpperCase() }) };",
      ].join("\n"),
    );
    const models = modelsFor(await scripted());
    const agent = await target("module:agent.mjs", { models, cwd: dir, agentTools: ["tau2-retail"] });
    expect(agent.kind).toBe("module");
    expect(agent.tools).toContain("find_user_id_by_email");
    const session = await agent.open(context("run-1"));
    expect((await session.send("hi")).message).toBe("retail-1/run-1: hi (0 before)");
    expect((await session.send("again")).message).toBe("retail-1/run-1: again (2 before)");
    expect(await session.send("tools")).toEqual({
      message: "used",
      toolCalls: [{ tool: "x", arguments: { a: 1 }, status: "ok", result: null }],
      usage: { inputTokens: 3, outputTokens: 1 },
    });
    const thrown = await failure(session.send("boom"));
    expect(thrown.code).toBe("AGENT_ERROR");
    expect(thrown.message).toContain("the agent module threw: kaput");
    expect((await failure(session.send("bad"))).message).toContain("answered number, not a string");

    const object = await target("module:agent.mjs#support", { models, cwd: dir });
    const upper = await object.open(context("run-2"));
    expect((await upper.send("quiet")).message).toBe("QUIET");
  });

  it("caps the reply at 100 kB", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "big.mjs"), "export default () => 'é'.repeat(80000);\n");
    const agent = await target("module:big.mjs", { models: modelsFor(await scripted()), cwd: dir });
    const reply = await (await agent.open(context("run-1"))).send("hi");
    expect(Buffer.byteLength(reply.message)).toBeLessThanOrEqual(100_000);
    expect(reply.message.length).toBe(50_000);
  });
});
