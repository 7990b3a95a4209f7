import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/index.js";
import { createBackend, loadConfig, Models, parseConfig, parseModelName } from "../../src/models/index.js";
import { cli } from "../helpers/cli.js";

const EXAMPLE_MOCK = join(import.meta.dirname, "..", "..", "examples", "models", "replies.yaml");

async function failure(promise: Promise<unknown>): Promise<TerrariumError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof TerrariumError)) throw new Error(`expected a TerrariumError, got ${String(error)}`);
  return error;
}

function tempFile(name: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "terrarium-models-")), name);
  writeFileSync(file, text);
  return file;
}

describe("model names and the registry", () => {
  it("splits provider:model at the first colon", () => {
    expect(parseModelName("local:qwen2.5:7b")).toEqual({ provider: "local", model: "qwen2.5:7b" });
    expect(() => parseModelName("gpt-4o")).toThrow(/is not a model name; write provider:model/);
  });

  it("fails fast on an unknown provider, saying how to declare one", async () => {
    const error = await failure(createBackend("vllm:llama3", { config: parseConfig({}), env: {} }));
    expect(error.code).toBe("MODEL_UNKNOWN_PROVIDER");
    expect(error.message).toBe(
      'unknown provider "vllm" in "vllm:llama3". Built in: openai, anthropic, google, llama, mock. To add an OpenAI-compatible endpoint, declare it in terrarium.config.yaml: providers: { vllm: { type: openai-compatible, baseURL: "http://127.0.0.1:8000/v1" } }',
    );
  });

  it("fails fast on a missing key, naming the variable to set", async () => {
    const cases: Array<[string, RegExp]> = [
      ["openai:gpt-4.1-mini", /set OPENAI_API_KEY in the environment/],
      ["anthropic:claude-sonnet-4-0", /set ANTHROPIC_API_KEY in the environment/],
      ["google:gemini-2.5-flash", /set GOOGLE_GENERATIVE_AI_API_KEY or GEMINI_API_KEY or GOOGLE_API_KEY/],
    ];
    for (const [name, message] of cases) {
      const error = await failure(createBackend(name, { config: parseConfig({}), env: {} }));
      expect(error.code).toBe("MODEL_MISSING_KEY");
      expect(error.message).toMatch(message);
    }
    const custom = parseConfig({
      providers: {
        hosted: { type: "openai-compatible", baseURL: "https://x.example/v1", apiKeyEnv: "HOSTED_KEY" },
      },
    });
    expect((await failure(createBackend("hosted:m", { config: custom, env: {} }))).message).toBe(
      "hosted:m needs an API key: set HOSTED_KEY in the environment",
    );
  });

  it("builds every hosted provider when its key is present, with its structured-output mode", async () => {
    const env = { OPENAI_API_KEY: "a", ANTHROPIC_API_KEY: "b", GEMINI_API_KEY: "c" };
    const config = parseConfig({
      providers: { local: { type: "openai-compatible", baseURL: "http://127.0.0.1:11434/v1" } },
    });
    const built = await Promise.all(
      ["openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-0", "google:gemini-2.5-flash", "local:llama3.2"].map(
        (name) => createBackend(name, { config, env }),
      ),
    );
    expect(built.map((b) => [b.name, b.provider, b.capabilities.structured, b.capabilities.seed])).toEqual([
      ["openai:gpt-4.1-mini", "openai", "native", true],
      ["anthropic:claude-sonnet-4-0", "anthropic", "native", false],
      ["google:gemini-2.5-flash", "google", "native", true],
      ["local:llama3.2", "local", "emulated", true],
    ]);
  });

  it("says where to find a missing GGUF file or mock script", async () => {
    const llama = await failure(
      createBackend("llama:/nowhere/model.gguf", { config: parseConfig({}), env: {} }),
    );
    expect(llama.describe()).toBe(
      "/nowhere/model.gguf: no GGUF model at this path (llama:/nowhere/model.gguf); download one first, see docs/models.md [FILE_UNREADABLE]",
    );
    const mock = await failure(createBackend("mock:/nowhere.yaml", { config: parseConfig({}), env: {} }));
    expect(mock.code).toBe("FILE_UNREADABLE");
  });
});

describe("configuration", () => {
  it("maps roles to models with a default", () => {
    const models = new Models({
      config: parseConfig({ roles: { default: "mock:a.yaml", judge: "openai:gpt-4o" } }),
      cache: null,
    });
    expect(models.modelFor("judge")).toBe("openai:gpt-4o");
    expect(models.modelFor("validator")).toBe("mock:a.yaml");
    const none = new Models({ config: parseConfig({}), cache: null });
    expect(() => none.modelFor("judge")).toThrow(
      /no model is configured for the "judge" role: set roles.judge or roles.default/,
    );
  });

  it("reads terrarium.config.yaml and points at the first problem", () => {
    const good = tempFile(
      "terrarium.config.yaml",
      "providers:\n  ollama:\n    type: openai-compatible\n    baseURL: http://127.0.0.1:11434/v1\nroles:\n  default: ollama:qwen2.5:7b\n",
    );
    expect(loadConfig({ path: good }).config.roles).toEqual({ default: "ollama:qwen2.5:7b" });
    const bad = tempFile(
      "terrarium.config.yaml",
      "providers:\n  local:\n    type: openai-compatible\n    baseURL: not a url\n",
    );
    expect(() => loadConfig({ path: bad })).toThrow(
      expect.objectContaining({
        code: "CONFIG_INVALID",
        where: { file: bad, pointer: "/providers/local/baseURL" },
      }),
    );
    const typo = tempFile("terrarium.config.yaml", "rolez: {}\n");
    expect(() => loadConfig({ path: typo })).toThrow(/Unrecognized key/);
    expect(loadConfig({ cwd: mkdtempSync(join(tmpdir(), "empty-")), env: {} }).file).toBeUndefined();
  });
});

describe("mock models", () => {
  it("replays scripted replies, honouring `when`, and reports when the script runs out", async () => {
    const script = tempFile(
      "replies.yaml",
      [
        "replies:",
        "  - when: refund",
        "    text: Refund issued",
        "  - toolCalls: [{ name: lookup.order, arguments: { id: 7 } }]",
        "  - error: { status: 503, message: warming up }",
      ].join("\n"),
    );
    const models = new Models({ cache: null, config: parseConfig({ retry: { retries: 0 } }) });
    const name = `mock:${script}`;
    const tools = await models.generateWithTools({
      model: name,
      messages: [{ role: "user", content: "where is my order?" }],
      tools: [{ name: "lookup.order", description: "", inputSchema: { type: "object" } }],
    });
    expect(tools.toolCalls).toEqual([{ id: "call_1_0", name: "lookup.order", arguments: { id: 7 } }]);
    expect(
      (await models.generateText({ model: name, messages: [{ role: "user", content: "I want a refund" }] }))
        .text,
    ).toBe("Refund issued");
    const unavailable = await failure(
      models.generateText({ model: name, messages: [{ role: "user", content: "hi" }] }),
    );
    expect(unavailable.message).toBe(`${name} failed after 1 attempt: HTTP 503: warming up`);
    const exhausted = await failure(
      models.generateText({ model: name, messages: [{ role: "user", content: "hi" }] }),
    );
    expect(exhausted.message).toBe(
      `${name}: the script has no reply left for this request (last user message: "hi")`,
    );
  });

  it("emulates tool calls through structured output for models without native tools", async () => {
    const script = tempFile(
      "grammar.yaml",
      'structured: grammar\nreplies:\n  - json: { content: "", tool_calls: [{ name: "math.factorial", arguments: { number: 5 } }] }\n',
    );
    const models = new Models({ cache: null });
    const backend = await models.backend(`mock:${script}`);
    (backend.capabilities as { tools: boolean }).tools = false;
    const result = await models.generateWithTools({
      model: `mock:${script}`,
      messages: [{ role: "user", content: "5!" }],
      tools: [
        {
          name: "math.factorial",
          description: "n!",
          inputSchema: { type: "object", properties: { number: { type: "integer" } }, required: ["number"] },
        },
      ],
    });
    expect(result.toolMode).toBe("emulated");
    expect(result.toolCalls).toEqual([{ id: "call_0", name: "math.factorial", arguments: { number: 5 } }]);
  });
});

describe("terrarium models", () => {
  it("check: a structured round trip against a scripted model", async () => {
    const run = await cli(["models", "check", `mock:${EXAMPLE_MOCK}`, "--json"]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      schemaVersion: 1,
      provider: "mock",
      ok: true,
      structuredMode: "native",
      answer: { ok: true, sum: 5 },
      correct: true,
      attempts: 1,
    });
  });

  it("check: exits non-zero with the provider's error", async () => {
    const run = await cli(["models", "check", "openai:gpt-4.1-mini"], "");
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^terrarium: openai:gpt-4\.1-mini needs an API key: set OPENAI_API_KEY/);
  });

  it("list: providers with key variables (never keys) and roles", async () => {
    const config = tempFile(
      "terrarium.config.yaml",
      "providers:\n  ollama:\n    type: openai-compatible\n    baseURL: http://127.0.0.1:11434/v1\n    rpm: 30\nroles:\n  default: ollama:qwen2.5:7b\n  judge: openai:gpt-4.1-mini\n",
    );
    const run = await cli(["--config", config, "models", "list", "--json"]);
    const listed = JSON.parse(run.stdout);
    expect(listed.configFile).toBe(config);
    expect(listed.roles).toEqual({ default: "ollama:qwen2.5:7b", judge: "openai:gpt-4.1-mini" });
    expect(listed.providers.find((p: { name: string }) => p.name === "ollama")).toEqual({
      name: "ollama",
      type: "openai-compatible",
      baseURL: "http://127.0.0.1:11434/v1",
      keyVariable: null,
      keySet: null,
      structured: "emulated",
      concurrency: 4,
      rpm: 30,
    });
    const table = await cli(["--config", config, "models", "list"]);
    expect(table.stdout).toContain("  judge        openai:gpt-4.1-mini");
  });
});
