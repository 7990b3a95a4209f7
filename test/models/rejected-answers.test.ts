import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/index.js";
import {
  MemoryResponseCache,
  type ModelBackend,
  Models,
  parseConfig,
  SqliteResponseCache,
} from "../../src/models/index.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

/**
 * Only answers their caller accepted are cached: an invalid answer is never replayed, and a later identical
 * run (same request, same seed) calls the model for it again. Real provider code over real HTTP.
 */

let server: ScriptedLlmServer;

afterEach(async () => {
  await server?.close();
});

const PERSON = {
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
  required: ["name", "age"],
  additionalProperties: false,
};
const ask = [{ role: "user" as const, content: "Who?" }];
const reply = (content: string): ScriptStep => ({ reply: { content } });

function cachePath(): string {
  return join(mkdtempSync(join(tmpdir(), "terrarium-rejected-")), "cache.sqlite");
}

/** One "run": a fresh Models over the shared cache file, as a second process would have. */
function run(path: string): Models {
  return new Models({
    config: parseConfig({
      providers: { local: { type: "openai-compatible", baseURL: server.baseURL } },
      retry: { retries: 0 },
    }),
    env: {},
    cache: new SqliteResponseCache(path),
  });
}

const person = (models: Models) =>
  models.generateObject<{ name: string; age: number }>({
    model: "local:m",
    messages: ask,
    schema: PERSON,
    temperature: 0,
    seed: 7,
    repairAttempts: 1,
  });

describe("answers that failed validation", () => {
  it("are not cached: a second identical run asks for them again and replays only accepted answers", async () => {
    server = await startScriptedLlmServer([
      // Run 1: an invalid answer, then a valid repair.
      reply('{"name": "Ada", "age": -1}'),
      reply('{"name": "Ada", "age": 36}'),
      // Run 2: the model errs the same way; its repair (same conversation) is the one accepted and cached.
      reply('{"name": "Ada", "age": -1}'),
    ]);
    const path = cachePath();
    const first = run(path);
    const a = await person(first);
    expect([a.object, a.repairs, a.cached]).toEqual([{ name: "Ada", age: 36 }, 1, false]);
    expect(first.ledger.totals).toMatchObject({ calls: 2, cachedCalls: 0, rejectedCalls: 1 });
    await first.close();

    const second = run(path);
    const b = await person(second);
    expect([b.object, b.repairs]).toEqual([{ name: "Ada", age: 36 }, 1]);
    // The first answer was asked for again (a real call); the accepted repair came from the cache.
    expect(server.requests).toHaveLength(3);
    expect(second.ledger.all.map((r) => ({ cached: r.cached, rejected: r.rejected ?? false }))).toEqual([
      { cached: false, rejected: true },
      { cached: true, rejected: false },
    ]);
    expect(second.ledger.totals).toMatchObject({ calls: 2, cachedCalls: 1, rejectedCalls: 1 });
    await second.close();
  });

  it("a run that never got a valid answer is not stuck: the next run makes its calls again", async () => {
    server = await startScriptedLlmServer([
      reply("no JSON here"),
      reply('{"name": "Ada"}'),
      // Run 2: the model answers well this time.
      reply('{"name": "Ada", "age": 36}'),
    ]);
    const path = cachePath();
    const first = run(path);
    const failure = await person(first).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TerrariumError);
    expect((failure as TerrariumError).code).toBe("MODEL_OUTPUT_INVALID");
    expect(first.ledger.totals).toMatchObject({ calls: 2, cachedCalls: 0, rejectedCalls: 2 });
    await first.close();
    expect(new SqliteResponseCache(path).size).toBe(0);

    const second = run(path);
    const b = await person(second);
    expect([b.object, b.repairs, b.cached]).toEqual([{ name: "Ada", age: 36 }, 0, false]);
    expect(server.requests).toHaveLength(3);
    expect(second.ledger.totals).toMatchObject({ calls: 1, cachedCalls: 0, rejectedCalls: 0 });
    await second.close();
  });

  it("a value the caller's accept refuses is repaired, not cached, and the problems reach the model", async () => {
    server = await startScriptedLlmServer([
      reply('{"name": "", "age": 3}'),
      reply('{"name": "Ada", "age": 3}'),
      reply('{"name": "Ada", "age": 3}'),
    ]);
    const cache = new MemoryResponseCache();
    const models = new Models({
      config: parseConfig({ providers: { local: { type: "openai-compatible", baseURL: server.baseURL } } }),
      env: {},
      cache,
    });
    const ask1 = () =>
      models.generateObject<{ name: string; age: number }>({
        model: "local:m",
        messages: ask,
        schema: PERSON,
        seed: 7,
        accept: (value) => (value.name === "" ? ["name is empty"] : undefined),
        repairPrompt: (problems) => `Fix: ${problems.join(", ")}`,
      });
    const a = await ask1();
    expect([a.object, a.repairs]).toEqual([{ name: "Ada", age: 3 }, 1]);
    expect(server.requests[1]?.body.messages.at(-1).content).toBe("Fix: name is empty");
    expect(cache.size).toBe(1);
    // The same request again: the refused first answer is not replayed; the model is asked.
    const b = await ask1();
    expect([b.object, b.repairs, b.cached]).toEqual([{ name: "Ada", age: 3 }, 0, false]);
    expect(server.requests).toHaveLength(3);
  });

  it("a plain answer the caller rejects is returned with its problems, and asking again calls the model", async () => {
    server = await startScriptedLlmServer([reply(""), reply("hello"), reply("never asked")]);
    const cache = new MemoryResponseCache();
    const models = new Models({
      config: parseConfig({ providers: { local: { type: "openai-compatible", baseURL: server.baseURL } } }),
      env: {},
      cache,
    });
    const say = () =>
      models.generateText({
        model: "local:m",
        messages: ask,
        seed: 7,
        accept: (answer) => (answer.text.trim() === "" ? ["the answer is empty"] : undefined),
      });
    const a = await say();
    expect([a.text, a.rejected, a.cached]).toEqual(["", ["the answer is empty"], false]);
    const b = await say(); // same request, same seed: a real call, not the empty answer
    expect([b.text, b.rejected, b.cached]).toEqual(["hello", undefined, false]);
    const c = await say();
    expect([c.text, c.cached]).toEqual(["hello", true]);
    expect(server.requests).toHaveLength(2);
    expect(models.ledger.totals).toMatchObject({ calls: 3, cachedCalls: 1, rejectedCalls: 1 });
  });

  it("a stored answer the caller now refuses is dropped from the cache, never served", async () => {
    server = await startScriptedLlmServer([reply("stale"), reply("fresh")]);
    const path = cachePath();
    // An older caller (or terrarium) stored an answer without checking it.
    const old = run(path);
    await old.generateText({ model: "local:m", messages: ask, seed: 1 });
    await old.close();
    const models = run(path);
    const result = await models.generateText({
      model: "local:m",
      messages: ask,
      seed: 1,
      accept: (answer) => (answer.text === "stale" ? ["stale"] : undefined),
    });
    expect([result.text, result.cached]).toEqual(["fresh", false]);
    expect(server.requests).toHaveLength(2);
    // The ledger reports the one real call, not a cache hit.
    expect(models.ledger.all.map((r) => r.cached)).toEqual([false]);
    await models.close();
  });

  it("tool calls the caller rejects are not cached, natively or emulated", async () => {
    server = await startScriptedLlmServer([
      { reply: { content: "", toolCalls: [{ name: "nosuch", arguments: {} }] } },
      { reply: { content: "", toolCalls: [{ name: "get_weather", arguments: { city: "Oslo" } }] } },
      // Emulated (JSON mode): the same rejection, then an accepted turn.
      reply('{"content": "", "tool_calls": []}'),
      reply('{"content": "", "tool_calls": [{"name": "get.weather", "arguments": {"city": "Oslo"}}]}'),
    ]);
    const config = parseConfig({
      providers: { local: { type: "openai-compatible", baseURL: server.baseURL } },
    });
    // The same provider code, declared without native tool calling, so the hub emulates it.
    const real = await new Models({ config, env: {}, cache: null }).backend("local:m");
    const plain: ModelBackend = {
      name: "local:plain",
      provider: real.provider,
      capabilities: { ...real.capabilities, tools: false },
      generate: (request) => real.generate(request),
    };
    const models = new Models({
      config,
      env: {},
      cache: new MemoryResponseCache(),
      backends: { "local:plain": plain },
    });
    const tools = [
      {
        name: "get.weather",
        description: "Weather",
        inputSchema: { type: "object", properties: { city: { type: "string" } } },
      },
    ];
    const turn = (model: string) =>
      models.generateWithTools({
        model,
        messages: ask,
        tools,
        seed: 3,
        accept: (answer) =>
          answer.toolCalls.length === 1 && answer.toolCalls[0]?.name === "get.weather"
            ? undefined
            : ["call get.weather once"],
      });
    for (const model of ["local:m", "local:plain"]) {
      const a = await turn(model);
      expect(a.rejected).toEqual(["call get.weather once"]);
      const b = await turn(model);
      expect([b.rejected, b.toolCalls.map((c) => [c.name, c.arguments]), b.cached]).toEqual([
        undefined,
        [["get.weather", { city: "Oslo" }]],
        false,
      ]);
      expect((await turn(model)).cached).toBe(true);
    }
    expect(server.requests).toHaveLength(4);
  });
});
