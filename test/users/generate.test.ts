import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { TerrariumError } from "../../src/core/errors.js";
import { createRandom } from "../../src/core/random.js";
import { Models, parseConfig } from "../../src/models/index.js";
import {
  type GenerateScenariosOptions,
  generateScenarios,
  goalSimilarity,
  loadAttributeCategories,
  parseAttributeCategories,
  sampleAttributes,
  writeScenarios,
} from "../../src/users/generate/index.js";
import { loadScenarios } from "../../src/users/scenario/index.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const DOCS = [
  {
    source: "refunds.md",
    text: "# Refunds\n\nRefunds take 5 days. You need the order number (W and 7 digits).",
  },
  {
    source: "shipping.md",
    text: "# Shipping\n\nParcels ship in 2 days.\n\n# Lost parcels\n\nReport within 30 days.",
  },
  { source: "accounts.md", text: "# Accounts\n\nPassword resets need the account email address." },
];

const ATTRIBUTES = {
  age: { values: [25, 40, 63], weights: [1, 2, 1] },
  occupation: ["nurse", "teacher", "plumber", "student"],
  personality: ["patient", "in a hurry", "anxious"],
};

/** The writer's prompt (the first user message; later ones are repair turns). */
const promptOf = (body: any): string => body.messages.find((m: any) => m.role === "user").content;

/** A draft built from the prompt, so the same prompt always gives the same answer. */
function draftFor(body: any, goal?: string): ScriptStep {
  const prompt = promptOf(body);
  // Words unique to the prompt keep the goals of different prompts apart.
  const words = createHash("sha256").update(prompt).digest("hex").match(/.{6}/g)?.slice(0, 6).join(" ");
  const source = /<document source="([^"]+)">/.exec(prompt)?.[1] ?? "doc";
  const lines = [...prompt.matchAll(/^- (\w+): (.+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  const strategy = prompt.includes("Work from the person") ? "person" : "document";
  return {
    reply: {
      content: JSON.stringify({
        goal: goal ?? `You want help with ${source} as a ${lines.join(", ")} (${strategy}) ${words}.`,
        reveal_attribute: "order number",
        reveal_value: "W1234567",
        checklist: ["The agent asks for the order number.", "The agent states the policy correctly."],
        situation: strategy === "person" ? "that you are writing from your phone" : "",
      }),
    },
  };
}

function modelsFor(url: string): Models {
  return new Models({
    config: parseConfig({
      providers: { scripted: { type: "openai-compatible", baseURL: url, structuredOutputs: true } },
      roles: { default: "scripted:writer" },
      retry: { retries: 0 },
    }),
    cache: null,
  });
}

function options(overrides: Partial<GenerateScenariosOptions> = {}): GenerateScenariosOptions {
  return { documents: DOCS, attributes: ATTRIBUTES, count: 6, seed: "s1", ...overrides };
}

const summary = (result: Awaited<ReturnType<typeof generateScenarios>>) =>
  result.scenarios.map((s) => ({
    id: s.id,
    strategy: s.strategy,
    document: s.document.source,
    attributes: s.attributes,
    goal: s.scenario.goal,
  }));

describe("generateScenarios", () => {
  it("repeats exactly with the same seed (concurrency does not matter) and samples differently with another", async () => {
    server = await startScriptedLlmServer([], { respond: (body) => draftFor(body) });
    const a = await generateScenarios(modelsFor(server.baseURL), options({ concurrency: 1 }));
    const promptsA = server.requests.map((r) => JSON.stringify(r.body.messages)).sort();
    const b = await generateScenarios(modelsFor(server.baseURL), options({ concurrency: 4 }));
    const promptsB = server.requests.slice(promptsA.length).map((r) => JSON.stringify(r.body.messages));
    expect(a.scenarios).toHaveLength(6);
    expect(summary(b)).toEqual(summary(a));
    expect(promptsB.sort()).toEqual(promptsA);
    // Each model call carries a seed derived from the run's seed.
    const seeds = server.requests.map((r) => r.body.seed);
    expect(seeds.slice(0, 6).sort()).toEqual(seeds.slice(6).sort());

    // A smaller count is a prefix of a larger one.
    const prefix = await generateScenarios(modelsFor(server.baseURL), options({ count: 4 }));
    expect(summary(prefix)).toEqual(summary(a).slice(0, 4));

    const c = await generateScenarios(modelsFor(server.baseURL), options({ seed: "s2" }));
    const sample = (r: typeof a) => r.scenarios.map((s) => [s.document.source, s.strategy, s.attributes]);
    expect(sample(c)).not.toEqual(sample(a));

    // Ids are stable and name the document; every document is used once per round of three.
    for (const scenario of a.scenarios)
      expect(scenario.id).toMatch(/^gen-(refunds|shipping|accounts)-00[1-6]$/);
    const firstRound = a.scenarios.slice(0, 3).map((s) => s.document.source);
    expect(new Set(firstRound).size).toBe(3);
    // Both strategies appear in a mixed run of six (fixed by the seed), and bottom-up prompts hold a passage.
    expect(new Set(a.scenarios.map((s) => s.strategy)).size).toBe(2);
    expect(server.requests.some((r) => r.body.messages.at(-1).content.includes("(passage)"))).toBe(true);
  });

  it("builds valid scenarios: sampled profile, document and revealed fact as knowledge, checklist", async () => {
    server = await startScriptedLlmServer([], { respond: (body) => draftFor(body) });
    const result = await generateScenarios(
      modelsFor(server.baseURL),
      options({ count: 2, strategy: "top-down", maxTurns: 12, agentContext: "The shop's assistant." }),
    );
    const [first] = result.scenarios;
    expect(first?.strategy).toBe("top-down");
    expect(first?.scenario).toMatchObject({
      max_turns: 12,
      agent_context: "The shop's assistant.",
      expected: {
        checklist: ["The agent asks for the order number.", "The agent states the policy correctly."],
      },
      tags: ["generated", "top-down", expect.stringMatching(/^doc:/)],
    });
    const profile = first?.scenario.profile as Record<string, unknown>;
    expect(Object.keys(profile).sort()).toEqual(["age", "occupation", "personality", "situation"]);
    expect(first?.reveal).toEqual({ attribute: "order number", value: "W1234567" });
    const knowledge = first?.scenario.knowledge as Array<{ text: string; title: string }>;
    expect(knowledge[0]?.text).toBe(first?.document.text);
    expect(knowledge[1]?.text).toContain("Your order number is W1234567.");
    // The writer was asked with a JSON schema, under the scenario_writer role's fallback model.
    expect(server.requests[0]?.body.model).toBe("writer");
    expect(server.requests[0]?.body.response_format?.type).toBe("json_schema");
  });

  it("never repeats a (document, attribute sample) pair; a small space plans fewer scenarios with a warning", async () => {
    server = await startScriptedLlmServer([], { respond: (body) => draftFor(body) });
    const tiny = { tone: ["calm", "cross"] };
    const result = await generateScenarios(
      modelsFor(server.baseURL),
      options({ documents: DOCS.slice(0, 1), attributes: tiny, count: 4 }),
    );
    expect(result.scenarios).toHaveLength(2);
    expect(result.scenarios.map((s) => s.attributes.tone).sort()).toEqual(["calm", "cross"]);
    expect(result.warnings.filter((w) => w.includes("not planned"))).toHaveLength(2);
    expect(server.requests).toHaveLength(2);

    const many = await generateScenarios(modelsFor(server.baseURL), options({ count: 12 }));
    const keys = many.scenarios.map(
      (s) => `${s.document.source} ${JSON.stringify({ ...s.attributes, situation: 0 })}`,
    );
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("regenerates a near-duplicate goal with the earlier goals to avoid, then skips one that stays close", async () => {
    let regenerations = 0;
    server = await startScriptedLlmServer([], {
      respond: (body) => {
        const prompt = promptOf(body);
        if (prompt.includes("already taken")) {
          regenerations += 1;
          return draftFor(
            body,
            `You need a refund for the broken kettle bought last spring at the city store, attempt ${regenerations}.`,
          );
        }
        return draftFor(body, "You want to know how long a refund takes for your order.");
      },
    });
    const events: string[] = [];
    const result = await generateScenarios(
      modelsFor(server.baseURL),
      options({ documents: DOCS.slice(0, 1), count: 3, onProgress: (e) => events.push(e.kind) }),
    );
    // First accepted; second regenerated once into a different goal; third's regenerations stay close to
    // the second's ("attempt 2" vs "attempt 1" share nearly every word) and it is skipped.
    expect(result.scenarios.map((s) => s.regenerations)).toEqual([0, 1]);
    expect(result.scenarios[1]?.scenario.goal).toContain("broken kettle");
    expect(result.skipped).toHaveLength(1);
    expect(result.skipped[0]?.reason).toMatch(/too close to gen-refunds-00\d/);
    expect(result.warnings.some((w) => w.includes("skipped"))).toBe(true);
    expect(events.filter((e) => e === "regenerating")).toHaveLength(3);
    const regeneration = server.requests.find((r) => promptOf(r.body).includes("already taken"));
    const regenerationPrompt = promptOf(regeneration?.body);
    expect(regenerationPrompt).toContain("You want to know how long a refund takes for your order.");
  });

  it("skips a scenario whose answer stays invalid or whose call fails, and keeps the others", async () => {
    let calls = 0;
    server = await startScriptedLlmServer([], {
      respond: (body) => {
        calls += 1;
        const prompt = promptOf(body);
        if (prompt.includes("refunds.md") && !prompt.includes("shipping.md")) {
          return { reply: { content: JSON.stringify({ goal: "Refund please" }) } };
        }
        if (prompt.includes('source="accounts.md"')) return { status: 500, error: { message: "boom" } };
        return draftFor(body);
      },
    });
    const result = await generateScenarios(modelsFor(server.baseURL), options({ count: 3 }));
    expect(result.scenarios.map((s) => s.document.source)).toEqual(["shipping.md"]);
    expect(result.skipped.map((s) => s.reason).sort()).toEqual([
      expect.stringMatching(/no usable answer.*did not produce a valid answer/),
      expect.stringMatching(/no usable answer/),
    ]);
    expect(calls).toBeGreaterThan(3); // repair turns were tried first
  });

  it("refuses bad options and missing models before any model call", async () => {
    server = await startScriptedLlmServer([], { respond: (body) => draftFor(body) });
    const models = modelsFor(server.baseURL);
    await expect(generateScenarios(models, options({ count: 0 }))).rejects.toThrow(/count/);
    await expect(generateScenarios(models, options({ strategy: "sideways" as never }))).rejects.toThrow(
      /strategy/,
    );
    await expect(generateScenarios(models, options({ attributes: { age: [] } }))).rejects.toThrow(
      /at least one value/,
    );
    await expect(generateScenarios(models, options({ documents: [] }))).rejects.toThrow(/no knowledge/);
    const noRole = new Models({ config: parseConfig({}), cache: null });
    await expect(generateScenarios(noRole, options())).rejects.toMatchObject({ code: "MODEL_NO_ROLE" });
    await expect(
      generateScenarios(models, options({ onPlan: () => Promise.reject(new Error("stop here")) })),
    ).rejects.toThrow("stop here");
    expect(server.requests).toHaveLength(0);
  });

  it("reads documents from a folder, sources relative to it", async () => {
    server = await startScriptedLlmServer([], { respond: (body) => draftFor(body) });
    const dir = mkdtempSync(join(tmpdir(), "terrarium-gen-docs-"));
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "a.md"), "# A\n\nAlpha policy.");
    writeFileSync(join(dir, "sub", "b.txt"), "Beta policy.");
    writeFileSync(join(dir, "image.png"), "not text");
    const result = await generateScenarios(
      modelsFor(server.baseURL),
      options({ documents: [dir], count: 2 }),
    );
    expect(result.scenarios.map((s) => s.document.source).sort()).toEqual(["a.md", join("sub", "b.txt")]);
  });
});

describe("writeScenarios", () => {
  it("writes YAML files that loadScenarios reads, documents copied once, never overwriting without force", async () => {
    server = await startScriptedLlmServer([], { respond: (body) => draftFor(body) });
    const result = await generateScenarios(modelsFor(server.baseURL), options({ count: 4 }));
    const out = join(mkdtempSync(join(tmpdir(), "terrarium-gen-out-")), "scenarios");
    const written = writeScenarios(result.scenarios, out);
    expect(written.files).toHaveLength(4);
    expect(written.knowledgeFiles).toHaveLength(3);
    const text = readFileSync(written.files[0] as string, "utf8");
    expect(text.startsWith("# terrarium scenario, schemaVersion: 1\n")).toBe(true);
    expect(text).toContain("file: knowledge/");

    const loaded = loadScenarios(out);
    expect(loaded.map((s) => s.id)).toEqual(result.scenarios.map((s) => s.id).sort());
    for (const scenario of loaded) {
      const generated = result.scenarios.find((s) => s.id === scenario.id);
      expect(scenario.goal).toBe(generated?.scenario.goal);
      expect(scenario.knowledge[0]?.file).toBe(join(out, "knowledge", `${generated?.documentSlug}.md`));
      expect(scenario.knowledge[0]?.text).toBe(generated?.document.text.trim());
      expect(scenario.knowledge[1]?.text).toContain("W1234567");
      expect(scenario.profile.attributes).toEqual(generated?.attributes);
      expect(scenario.profile.text).toMatch(/^You are \d+ years old\./);
      expect(scenario.maxTurns).toBe(20);
      expect(scenario.expected.checklist).toHaveLength(2);
    }

    expect(() => writeScenarios(result.scenarios, out)).toThrow(/already exist.*--force/);
    // Identical knowledge files are not a conflict; force replaces scenario files.
    writeFileSync(written.files[0] as string, "changed");
    writeScenarios(result.scenarios, out, { force: true });
    expect(readFileSync(written.files[0] as string, "utf8")).toBe(text);
  });
});

describe("attribute categories", () => {
  it("accepts lists and weighted values; weights steer the draw", () => {
    const categories = parseAttributeCategories({
      tier: { values: ["gold", "free"], weights: [0, 1] },
      n: [1],
    });
    expect(categories.tier).toEqual({ values: ["gold", "free"], weights: [0, 1] });
    const random = createRandom(3);
    for (let i = 0; i < 50; i++) expect(sampleAttributes(categories, random).tier).toBe("free");
  });

  it("gives located errors: file, JSON Pointer and line", () => {
    const dir = mkdtempSync(join(tmpdir(), "terrarium-gen-attr-"));
    const file = join(dir, "attributes.yaml");
    writeFileSync(file, "age: [20, 30]\noccupation:\n  values: [nurse, teacher]\n  weights: [1]\n");
    let error: TerrariumError | undefined;
    try {
      loadAttributeCategories(file);
    } catch (caught) {
      error = caught as TerrariumError;
    }
    expect(error?.code).toBe("CONFIG_INVALID");
    expect(error?.where).toMatchObject({ file, pointer: "/occupation/weights", line: 4 });
    expect(error?.message).toMatch(/1 weights for 2 values/);

    const cases: Array<[string, RegExp, string, number]> = [
      ["tone: [calm, calm]\n", /listed twice/, "/tone/1", 1],
      ["tone:\n  - calm\n  - {a: 1}\n", /string, a number or a boolean/, "/tone/1", 3],
      ["1bad: [x]\n", /names are 1-64/, "/1bad", 1],
      ["- a\n- b\n", /map of categories/, "", 1],
      ["tone: {values: [a], weigths: [1]}\n", /weigths|list of values/, "/tone", 1],
      ["tone: {values: [a, b], weights: [0, 0]}\n", /add up to 0/, "/tone/weights", 1],
    ];
    for (const [content, message, pointer, line] of cases) {
      writeFileSync(file, content);
      expect(() => loadAttributeCategories(file), content).toThrow(message);
      try {
        loadAttributeCategories(file);
      } catch (caught) {
        expect((caught as TerrariumError).where.pointer, content).toBe(pointer);
        expect((caught as TerrariumError).where.line, content).toBe(line);
      }
    }
    expect(() => loadAttributeCategories(join(dir, "missing.yaml"))).toThrow(/cannot read/);
  });

  it("the example file is valid", () => {
    const categories = loadAttributeCategories("examples/users/generate/attributes.yaml");
    expect(Object.keys(categories)).toContain("occupation");
    expect(existsSync("examples/users/generate/README.md")).toBe(true);
  });
});

describe("goal similarity", () => {
  it("is word-set Jaccard without case, punctuation or filler words", () => {
    expect(goalSimilarity("You want a REFUND for order #12.", "you want: a refund for order 12")).toBe(1);
    expect(goalSimilarity("You want a refund.", "You want to move house.")).toBe(0);
    expect(goalSimilarity("refund kettle order", "refund kettle parcel")).toBeCloseTo(0.5);
  });
});
