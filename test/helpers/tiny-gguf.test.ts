import { statSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTinyGguf, tinyGgufPath } from "./tiny-gguf.js";

// node-llama-cpp is an optional dependency: without it the model tests are skipped, loudly.
type NodeLlamaCpp = typeof import("node-llama-cpp");
let lib: NodeLlamaCpp | undefined;
try {
  lib = await import("node-llama-cpp");
} catch (error) {
  console.warn(
    `tiny-gguf: skipping local llama tests, node-llama-cpp could not be imported (${(error as Error).message})`,
  );
}

describe("buildTinyGguf", () => {
  it("is deterministic for the same options and differs across seeds and variants", () => {
    const a = buildTinyGguf();
    expect(buildTinyGguf().equals(a)).toBe(true);
    expect(buildTinyGguf({ seed: 1, steered: true }).equals(a)).toBe(true);
    expect(buildTinyGguf({ seed: 2 }).equals(a)).toBe(false);
    expect(buildTinyGguf({ steered: false }).equals(a)).toBe(false);
  });

  it("is a GGUF v3 file of a few hundred KB", () => {
    const bytes = buildTinyGguf();
    expect(bytes.subarray(0, 4).toString("ascii")).toBe("GGUF");
    expect(bytes.readUInt32LE(4)).toBe(3);
    expect(bytes.length % 32).toBe(0);
    expect(bytes.length).toBeGreaterThan(300_000);
    expect(bytes.length).toBeLessThan(600_000);
  });

  it("tinyGgufPath writes the file once and returns a stable path", () => {
    const path = tinyGgufPath({ seed: 7 });
    expect(tinyGgufPath({ seed: 7 })).toBe(path);
    expect(path).toMatch(/terrarium-tiny-gguf[/\\]steered-7\.gguf$/);
    expect(statSync(path).size).toBe(buildTinyGguf({ seed: 7 }).length);
  });
});

// Always set threads: the library default (at least 4) on a 2-core machine is ~100x slower. For this
// tiny model one thread is best, not os.availableParallelism(): node-llama-cpp 3.22.1 starts n-1 helper
// threads for every decode (seen with strace), which costs far more than the microseconds of math per
// token. Measured on 2 vCPUs: 1 thread ~2,500 tok/s, 2 threads ~60 tok/s (and >30 s for this file
// under load), 4 threads ~3 tok/s. Real models are compute-bound and want the core count.
const TINY_MODEL_THREADS = 1;

const schema = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 12 },
    count: { type: "integer" },
    ok: { type: "boolean" },
  },
  required: ["name", "count", "ok"],
  additionalProperties: false,
} as const;

describe.skipIf(!lib)("tiny GGUF through node-llama-cpp", () => {
  type Llama = Awaited<ReturnType<NodeLlamaCpp["getLlama"]>>;
  type Model = Awaited<ReturnType<Llama["loadModel"]>>;
  type Context = Awaited<ReturnType<Model["createContext"]>>;
  let llama: Llama;
  const models: Model[] = [];
  const contexts: Context[] = [];
  const validate = new Ajv2020({ strict: true }).compile(schema);

  beforeAll(async () => {
    if (!lib) return;
    // build "never": a source build would try to download llama.cpp.
    llama = await lib.getLlama({ gpu: false, build: "never", logLevel: lib.LlamaLogLevel.error });
  });

  afterAll(async () => {
    for (const context of contexts) await context.dispose();
    for (const model of models) await model.dispose();
    await llama?.dispose();
  });

  async function openSession(steered: boolean) {
    if (!lib) throw new Error("unreachable: suite is skipped without node-llama-cpp");
    const model = await llama.loadModel({ modelPath: tinyGgufPath({ steered }) });
    models.push(model);
    const context = await model.createContext({ contextSize: 512, threads: TINY_MODEL_THREADS });
    contexts.push(context);
    const session = new lib.LlamaChatSession({
      contextSequence: context.getSequence(),
      systemPrompt: "Reply with JSON.",
    });
    const grammar = await llama.createGrammarForJsonSchema(schema);
    // Each prompt starts from an empty history so runs are comparable.
    const ask = async (prompt: string) => {
      session.resetChatHistory();
      return session.promptWithMeta(prompt, { grammar, temperature: 0, seed: 1, maxTokens: 96 });
    };
    return { session, ask };
  }

  it("steered model: grammar output is schema-valid JSON for every prompt, and deterministic", async () => {
    const { session, ask } = await openSession(true);
    expect(session.chatWrapper.wrapperName).toBe("ChatML");

    const prompts = ["Describe a cat.", "count to three", "{}", "Ünïcödé and emoji 🦎?"];
    for (const prompt of prompts) {
      const { responseText, stopReason } = await ask(prompt);
      expect(stopReason, responseText).not.toBe("maxTokens");
      const value: unknown = JSON.parse(responseText);
      expect(validate(value), `${responseText} ${JSON.stringify(validate.errors)}`).toBe(true);
    }

    const first = await ask("Same prompt twice.");
    const second = await ask("Same prompt twice.");
    expect(second.responseText).toBe(first.responseText);
  });

  it("random (unsteered) model loads and generates under the grammar", async () => {
    // Random weights give syntactically constrained but not necessarily schema-valid or complete
    // output, so only the code path is checked here.
    const { ask } = await openSession(false);
    const first = await ask("hello");
    expect(first.responseText.startsWith("{")).toBe(true);
    expect((await ask("hello")).responseText).toBe(first.responseText);
  });
});
