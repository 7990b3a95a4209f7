import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/index.js";
import {
  MemoryResponseCache,
  Models,
  type ModelsOptions,
  parseConfig,
  SqliteResponseCache,
} from "../../src/models/index.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

/** Real provider code (AI SDK openai / openai-compatible) over real HTTP against the scripted server. */

let server: ScriptedLlmServer;
const sleeps: number[] = [];

afterEach(async () => {
  await server?.close();
  sleeps.length = 0;
});

async function setup(
  steps: ScriptStep[],
  config: Record<string, unknown> = {},
  options: Partial<ModelsOptions> = {},
) {
  server = await startScriptedLlmServer(steps);
  const models = new Models({
    config: parseConfig({
      providers: {
        openai: { baseURL: server.baseURL },
        local: { type: "openai-compatible", baseURL: server.baseURL },
        strictlocal: { type: "openai-compatible", baseURL: server.baseURL, structuredOutputs: true },
      },
      retry: { retries: 2, baseDelayMs: 10, maxDelayMs: 50 },
      ...config,
    }),
    env: { OPENAI_API_KEY: "sk-test-secret" },
    cache: null,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...options,
  });
  return models;
}

const PERSON = {
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
  required: ["name", "age"],
  additionalProperties: false,
};
const ask = [{ role: "user" as const, content: "Who is it?" }];

describe("structured output", () => {
  it("uses native json_schema with OpenAI and validates the answer", async () => {
    const models = await setup([{ reply: { content: '{"name":"Ada","age":36}' } }]);
    const result = await models.generateObject({
      model: "openai:gpt-4.1-mini",
      messages: ask,
      schema: PERSON,
      temperature: 0,
      seed: 7,
    });
    expect(result.object).toEqual({ name: "Ada", age: 36 });
    expect(result).toMatchObject({ structuredMode: "native", repairs: 0, cached: false, attempts: 1 });
    const body = server.requests[0]?.body;
    expect(server.requests[0]?.path).toBe("/v1/chat/completions");
    expect(body.response_format.type).toBe("json_schema");
    expect(body.response_format.json_schema.schema).toEqual(PERSON);
    expect(body.response_format.json_schema.strict).toBe(false);
    // Seed and temperature reach the provider.
    expect(body.seed).toBe(7);
    expect(body.temperature).toBe(0);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer sk-test-secret");
  });

  it("emulates it on an OpenAI-compatible server without structured outputs: JSON mode plus the schema in the prompt", async () => {
    const models = await setup([{ reply: { content: 'Sure! {"name":"Grace","age":45}' } }]);
    const result = await models.generateObject({ model: "local:qwen2.5:7b", messages: ask, schema: PERSON });
    expect(result.object).toEqual({ name: "Grace", age: 45 });
    expect(result.structuredMode).toBe("emulated");
    const body = server.requests[0]?.body;
    expect(body.model).toBe("qwen2.5:7b");
    expect(body.response_format).toEqual({ type: "json_object" });
    expect(body.messages[0].role).toBe("system");
    expect(body.messages[0].content).toContain(JSON.stringify(PERSON));
  });

  it("uses json_schema on an OpenAI-compatible server that declares structuredOutputs", async () => {
    const models = await setup([{ reply: { content: '{"name":"Lin","age":1}' } }]);
    const result = await models.generateObject({ model: "strictlocal:m", messages: ask, schema: PERSON });
    expect(result.structuredMode).toBe("native");
    expect(server.requests[0]?.body.response_format.type).toBe("json_schema");
  });

  it("repairs malformed JSON by showing the model its own errors", async () => {
    const models = await setup([
      { reply: { content: '{"name": "Ada", age: 36' } },
      { reply: { content: '{"name":"Ada","age":-1}' } },
      { reply: { content: '{"name":"Ada","age":36}' } },
    ]);
    const result = await models.generateObject({
      model: "openai:gpt-4.1-mini",
      messages: ask,
      schema: PERSON,
    });
    expect(result.object).toEqual({ name: "Ada", age: 36 });
    expect(result.repairs).toBe(2);
    expect(result.usage).toEqual({ inputTokens: 30, outputTokens: 15, cachedInputTokens: 0 });
    const second = server.requests[1]?.body.messages;
    expect(second.at(-2)).toEqual({ role: "assistant", content: '{"name": "Ada", age: 36' });
    expect(second.at(-1).content).toMatch(
      /^Your previous answer could not be used:\n- the answer is not valid JSON/,
    );
    const third = server.requests[2]?.body.messages;
    expect(third.at(-1).content).toContain('- "age" must be ≥ 0, got -1');
  });

  it("fails with a typed error carrying the raw output when repairs run out", async () => {
    const models = await setup([{ reply: { content: "no idea" } }, { reply: { content: '{"name":1}' } }]);
    const error = await models
      .generateObject({ model: "openai:gpt-4.1-mini", messages: ask, schema: PERSON, repairAttempts: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TerrariumError);
    expect((error as TerrariumError).code).toBe("MODEL_OUTPUT_INVALID");
    expect((error as TerrariumError).details).toMatchObject({
      raw: '{"name":1}',
      problems: ['missing required argument "age"', '"name" must be a string, got an integer 1'],
    });
  });
});

describe("tool calls", () => {
  it("sends provider-safe tool names and maps calls back to the catalog's names", async () => {
    const models = await setup([
      { reply: { toolCalls: [{ name: "math_factorial", arguments: { number: 5 } }] } },
    ]);
    const result = await models.generateWithTools({
      model: "openai:gpt-4.1-mini",
      messages: [{ role: "user", content: "5!" }],
      tools: [
        {
          name: "math.factorial",
          description: "Factorial",
          inputSchema: { type: "object", properties: { number: { type: "integer" } }, required: ["number"] },
        },
      ],
    });
    expect(result.toolMode).toBe("native");
    expect(result.finishReason).toBe("tool-calls");
    expect(result.toolCalls).toEqual([{ id: "call_1_0", name: "math.factorial", arguments: { number: 5 } }]);
    expect(server.requests[0]?.body.tools[0].function.name).toBe("math_factorial");
  });

  it("sends earlier tool calls and results back in the conversation", async () => {
    const models = await setup([{ reply: { content: "120" } }]);
    await models.generateWithTools({
      model: "openai:gpt-4.1-mini",
      messages: [
        { role: "user", content: "5!" },
        {
          role: "assistant",
          content: "",
          toolCalls: [{ id: "c1", name: "math.factorial", arguments: { number: 5 } }],
        },
        { role: "tool", toolCallId: "c1", name: "math.factorial", content: '{"result":120}' },
      ],
      tools: [{ name: "math.factorial", description: "", inputSchema: { type: "object", properties: {} } }],
    });
    const messages = server.requests[0]?.body.messages;
    expect(messages[1].tool_calls[0]).toEqual({
      id: "c1",
      type: "function",
      function: { name: "math_factorial", arguments: '{"number":5}' },
    });
    expect(messages[2]).toEqual({ role: "tool", tool_call_id: "c1", content: '{"result":120}' });
  });
});

describe("retries, timeouts and limits", () => {
  it("retries a 429 after the server's Retry-After, then succeeds", async () => {
    const models = await setup([
      { status: 429, headers: { "retry-after": "2" }, error: { message: "Rate limit reached" } },
      { reply: { content: "ok" } },
    ]);
    const result = await models.generateText({ model: "openai:gpt-4.1-mini", messages: ask });
    expect(result).toMatchObject({ text: "ok", attempts: 2 });
    expect(sleeps).toEqual([50]); // 2 s asked, capped by maxDelayMs in this test's policy
    expect(server.requests).toHaveLength(2);
  });

  it("gives up after a storm of 500s with the provider's message and the attempt count", async () => {
    const storm = Array.from({ length: 5 }, () => ({ status: 500, error: { message: "upstream exploded" } }));
    const models = await setup(storm);
    const error = (await models
      .generateText({ model: "openai:gpt-4.1-mini", messages: ask })
      .catch((e) => e)) as TerrariumError;
    expect(error.code).toBe("MODEL_CALL_FAILED");
    expect(error.message).toBe("openai:gpt-4.1-mini failed after 3 attempts: HTTP 500: upstream exploded");
    expect(server.requests).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
    for (const [i, ms] of sleeps.entries()) expect(ms).toBeLessThanOrEqual(Math.min(50, 10 * 2 ** i));
    expect(models.ledger.totals).toMatchObject({ calls: 1, failedCalls: 1, costUsd: 0 });
  });

  it("does not retry a 400", async () => {
    const models = await setup([{ status: 400, error: { message: "bad request" } }]);
    const error = (await models
      .generateText({ model: "openai:gpt-4.1-mini", messages: ask })
      .catch((e) => e)) as TerrariumError;
    expect(error.message).toBe("openai:gpt-4.1-mini failed after 1 attempt: HTTP 400: bad request");
    expect(server.requests).toHaveLength(1);
  });

  it("times out a call that takes too long, and retries it", async () => {
    const models = await setup([
      { delayMs: 2000, reply: { content: "late" } },
      { reply: { content: "fast" } },
    ]);
    const result = await models.generateText({ model: "openai:gpt-4.1-mini", messages: ask, timeoutMs: 100 });
    expect(result).toMatchObject({ text: "fast", attempts: 2 });
    const slow = await setup([{ delayMs: 2000, reply: { content: "late" } }], { retry: { retries: 0 } });
    const error = (await slow
      .generateText({ model: "openai:gpt-4.1-mini", messages: ask, timeoutMs: 100 })
      .catch((e) => e)) as TerrariumError;
    expect(error.code).toBe("MODEL_TIMEOUT");
    expect(error.message).toBe("openai:gpt-4.1-mini gave no answer within 100 ms (after 1 attempt)");
  });

  it("keeps at most `concurrency` calls in flight per provider", async () => {
    server = await startScriptedLlmServer(
      Array.from({ length: 6 }, () => ({ delayMs: 40, reply: { content: "x" } })),
    );
    const models = new Models({
      config: parseConfig({ providers: { openai: { baseURL: server.baseURL, concurrency: 2 } } }),
      env: { OPENAI_API_KEY: "sk-test" },
      cache: null,
    });
    // All six start together; the gate must hold four of them back.
    await Promise.all(
      Array.from({ length: 6 }, () => models.generateText({ model: "openai:gpt-4.1-mini", messages: ask })),
    );
    expect(server.requests).toHaveLength(6);
    expect(server.peakInFlight()).toBe(2);
  });

  it("spaces calls to respect a requests-per-minute limit", async () => {
    let now = 0;
    const waits: number[] = [];
    server = await startScriptedLlmServer([], { repeat: { reply: { content: "x" } } });
    const models = new Models({
      config: parseConfig({ providers: { openai: { baseURL: server.baseURL, rpm: 2 } } }),
      env: { OPENAI_API_KEY: "sk-test" },
      cache: null,
      now: () => now,
      sleep: async (ms) => {
        waits.push(ms);
        now += ms;
      },
    });
    for (let i = 0; i < 3; i++) await models.generateText({ model: "openai:gpt-4.1-mini", messages: ask });
    expect(waits).toEqual([60_000]);
  });
});

describe("cache", () => {
  it("answers a repeated request from the cache, keyed without secrets", async () => {
    const cache = new MemoryResponseCache();
    const models = await setup(
      [{ reply: { content: "first" } }, { reply: { content: "second" } }],
      {},
      { cache },
    );
    const a = await models.generateText({ model: "openai:gpt-4.1-mini", messages: ask, temperature: 0 });
    const b = await models.generateText({ model: "openai:gpt-4.1-mini", messages: ask, temperature: 0 });
    expect([a.text, a.cached, b.text, b.cached]).toEqual(["first", false, "first", true]);
    expect(server.requests).toHaveLength(1);
    // Another key, same request: still a hit (the key holds no secret).
    const other = new Models({ config: models.config, env: { OPENAI_API_KEY: "sk-other" }, cache });
    expect(
      (await other.generateText({ model: "openai:gpt-4.1-mini", messages: ask, temperature: 0 })).cached,
    ).toBe(true);
    // A different temperature, seed or variant is a different request.
    const c = await models.generateText({ model: "openai:gpt-4.1-mini", messages: ask, temperature: 0.5 });
    expect([c.text, c.cached]).toEqual(["second", false]);
    expect(models.ledger.totals).toMatchObject({ calls: 3, cachedCalls: 1 });
  });

  it("can be bypassed or refreshed per call", async () => {
    const cache = new MemoryResponseCache();
    const models = await setup(
      [{ reply: { content: "v1" } }, { reply: { content: "v2" } }, { reply: { content: "v3" } }],
      {},
      { cache },
    );
    const call = (mode?: "bypass" | "refresh") =>
      models.generateText({ model: "openai:gpt-4.1-mini", messages: ask, ...(mode ? { cache: mode } : {}) });
    expect((await call()).text).toBe("v1");
    expect((await call("bypass")).text).toBe("v2");
    expect((await call()).text).toBe("v1"); // bypass neither read nor wrote
    expect((await call("refresh")).text).toBe("v3");
    expect((await call()).text).toBe("v3"); // refresh wrote the new answer
  });

  it("persists in SQLite across runs", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "terrarium-cache-")), "cache.sqlite");
    const first = await setup(
      [{ reply: { content: "stored" } }],
      {},
      { cache: new SqliteResponseCache(path) },
    );
    await first.generateText({ model: "openai:gpt-4.1-mini", messages: ask });
    await first.close();
    // A new process, the same configuration: the answer comes from the file, not the server.
    const second = new Models({ config: first.config, env: {}, cache: new SqliteResponseCache(path) });
    const result = await second.generateText({ model: "openai:gpt-4.1-mini", messages: ask });
    expect([result.text, result.cached]).toEqual(["stored", true]);
    expect(server.requests).toHaveLength(1);
    await second.close();
  });
});

describe("usage, cost and budget", () => {
  it("accounts tokens, cached tokens, latency and cost per call, per role and per scope", async () => {
    const models = await setup(
      [
        {
          reply: { content: "a", usage: { prompt_tokens: 1000, completion_tokens: 200, cached_tokens: 400 } },
        },
        { reply: { content: "b", usage: { prompt_tokens: 3000, completion_tokens: 100 } } },
      ],
      { prices: { "openai:gpt-4.1-mini": { input: 1, output: 10, cachedInput: 0.5 } } },
    );
    const a = await models.generateText({
      model: "openai:gpt-4.1-mini",
      messages: ask,
      role: "judge",
      scope: "task-1",
    });
    // 600 fresh x $1/M + 400 cached x $0.5/M + 200 out x $10/M
    expect(a.costUsd).toBeCloseTo(0.0006 + 0.0002 + 0.002, 10);
    expect(a.usage).toEqual({ inputTokens: 1000, outputTokens: 200, cachedInputTokens: 400 });
    await models.generateText({
      role: "planner",
      model: "openai:gpt-4.1-mini",
      messages: [{ role: "user", content: "b" }],
      scope: "task-2",
    });
    const totals = models.ledger.totals;
    expect(totals).toMatchObject({ calls: 2, inputTokens: 4000, outputTokens: 300, cachedInputTokens: 400 });
    expect(totals.costUsd).toBeCloseTo(0.0028 + 0.003 + 0.001, 10);
    expect(Object.keys(models.ledger.by("role"))).toEqual(["judge", "planner"]);
    expect(models.ledger.forScope("task-2").inputTokens).toBe(3000);
  });

  it("stops starting calls once the budget is spent", async () => {
    const models = await setup(
      [
        { reply: { content: "a", usage: { prompt_tokens: 1_000_000, completion_tokens: 0 } } },
        { reply: { content: "b" } },
      ],
      { budgetUsd: 0.5, prices: { "openai:gpt-4.1-mini": { input: 1, output: 1 } } },
    );
    await models.generateText({ model: "openai:gpt-4.1-mini", messages: ask });
    const error = (await models
      .generateText({ model: "openai:gpt-4.1-mini", messages: [{ role: "user", content: "again" }] })
      .catch((e) => e)) as TerrariumError;
    expect(error.code).toBe("MODEL_BUDGET_EXCEEDED");
    expect(error.message).toMatch(
      /^the run's budget of \$0\.5000 is spent \(\$1\.0000 used\); no new call to openai:gpt-4\.1-mini was started/,
    );
    expect(server.requests).toHaveLength(1);
  });
});
