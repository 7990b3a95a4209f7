import { statSync } from "node:fs";
import { basename, dirname, extname, resolve } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import { createRandom, type Random } from "../../core/random.js";
import type { Models } from "../../models/hub.js";
import { parseScenario } from "../scenario/load.js";
import { type RawScenario, SCENARIO_LIMITS } from "../scenario/schema.js";
import { chunkText } from "../tools/chunk.js";
import { type KnowledgeDocument, loadKnowledgeFiles } from "../tools/knowledge.js";
import {
  type AttributeCategories,
  type AttributeCategoriesInput,
  type AttributeValue,
  parseAttributeCategories,
  sampleAttributes,
  sampleSpace,
} from "./attributes.js";
import {
  SCENARIO_DRAFT_SCHEMA,
  type ScenarioDraft,
  type ScenarioStrategy,
  scenarioMessages,
} from "./prompt.js";
import { goalSimilarity } from "./similarity.js";

export type GenerationStrategy = ScenarioStrategy | "mixed";

export const GENERATION_STRATEGIES: readonly GenerationStrategy[] = ["top-down", "bottom-up", "mixed"];

/** Most scenarios one run writes (a folder of scenarios holds at most this many files). */
export const MAX_GENERATED_SCENARIOS = SCENARIO_LIMITS.maxFilesPerFolder;

export interface GenerateScenariosOptions {
  /** The knowledge documents, or paths of files and folders to read them from (text-like files). */
  documents: readonly KnowledgeDocument[] | readonly string[];
  /** Profile attribute categories, as a file gives them (checked here) or already parsed. */
  attributes: AttributeCategoriesInput | AttributeCategories;
  /** Scenarios to write (1-1000). */
  count: number;
  /** Fixes every choice: documents, strategies, attribute samples, passages, the model's seed. */
  seed: string | number;
  /** Default "mixed": each scenario's strategy is drawn from the seed. */
  strategy?: GenerationStrategy;
  /** `max_turns` of every scenario (default 20). */
  maxTurns?: number;
  /** The model role that writes scenarios (default "scenario_writer"; config falls back to roles.default). */
  role?: string;
  /** A model name (provider:model) used instead of the role. */
  model?: string;
  /** Model calls at the same time (default 4). */
  concurrency?: number;
  /** What the user is told about the agent; added to every scenario and to the writer's prompt. */
  agentContext?: string;
  /** Goals at least this similar (word-set Jaccard) to an earlier one are regenerated (default 0.8). */
  similarity?: number;
  /** Regenerations of a near-duplicate goal before the scenario is skipped (default 2). */
  maxRegenerations?: number;
  /** Sampling temperature of the writer (default 0.8). */
  temperature?: number;
  /**
   * Called once every slot is planned and before the first model call, with what the run will write (a
   * slot may still be skipped later); a throw here stops the run without any model call.
   */
  onPlan?: (planned: readonly PlannedScenario[]) => void | Promise<void>;
  /** Called as scenarios are finished or skipped. */
  onProgress?: (event: GenerationProgress) => void;
}

export type GenerationProgress =
  | { kind: "drafted"; id: string; done: number; total: number }
  | { kind: "accepted"; id: string; done: number; total: number }
  | { kind: "regenerating"; id: string; attempt: number; similarTo: string }
  | { kind: "skipped"; id: string; reason: string; done: number; total: number };

/** A slot as planned from the seed, before the model writes it. */
export interface PlannedScenario {
  id: string;
  slot: number;
  strategy: ScenarioStrategy;
  document: KnowledgeDocument;
  documentSlug: string;
  attributes: Record<string, AttributeValue>;
}

/** One generated scenario with where it came from. */
export interface GeneratedScenario {
  id: string;
  /** 0-based position in the run. */
  slot: number;
  strategy: ScenarioStrategy;
  document: KnowledgeDocument;
  /** The document's slug (unique in the run), used in ids and file names. */
  documentSlug: string;
  /** The sampled profile (the scenario's `profile`, plus `situation` when the writer gave one). */
  attributes: Record<string, AttributeValue>;
  reveal: { attribute: string; value: string };
  /** Regenerations it took to get a goal unlike the earlier ones. */
  regenerations: number;
  /**
   * The scenario document: knowledge is the source document (first, as inline text titled with its
   * source) and the revealed fact. `writeScenarios` turns the first entry into a file reference.
   */
  scenario: RawScenario;
}

export interface GenerationResult {
  scenarios: GeneratedScenario[];
  skipped: Array<{ id: string; slot: number; reason: string }>;
  warnings: string[];
}

interface Plan {
  id: string;
  slot: number;
  strategy: ScenarioStrategy;
  documentIndex: number;
  attributes: Record<string, AttributeValue>;
  focus?: string;
  modelSeed: number;
}

/** Draws of an attribute sample before a slot gives up finding one not used with its document. */
const SAMPLE_TRIES = 200;

/**
 * Writes `count` scenarios with a model (SAGE-style): a profile sampled from the attribute categories, a
 * document drawn in seeded rounds (every document once per round), and a strategy — top-down (a goal this
 * person would have, adapted to the document) or bottom-up (a goal and the fact to reveal derived from a
 * passage of the document). All the sampling comes from `seed`; the model is called only after every input
 * has been checked. No two scenarios share a document and an attribute sample; a goal too close to an
 * earlier one is regenerated, then skipped with a warning. Every scenario is checked with `parseScenario`.
 */
export async function generateScenarios(
  models: Models,
  options: GenerateScenariosOptions,
): Promise<GenerationResult> {
  const settings = checkOptions(options);
  const documents = await readDocuments(options.documents);
  const slugs = documentSlugs(documents);
  const warnings: string[] = [];

  // Who writes: refused now (no role, unknown provider, missing key) rather than at the first call.
  const model = options.model ?? models.modelFor(settings.role);
  await models.backend(model);

  const plans = planScenarios(documents, slugs, settings, warnings);
  await options.onPlan?.(
    plans.map((plan) => ({
      id: plan.id,
      slot: plan.slot,
      strategy: plan.strategy,
      document: documents[plan.documentIndex] as KnowledgeDocument,
      documentSlug: slugs[plan.documentIndex] as string,
      attributes: { ...plan.attributes },
    })),
  );
  const skipped: GenerationResult["skipped"] = [];
  const total = plans.length;
  let done = 0;

  const write = async (plan: Plan, avoid: string[], attempt: number): Promise<ScenarioDraft> => {
    const document = documents[plan.documentIndex] as KnowledgeDocument;
    const result = await models.generateObject<ScenarioDraft>({
      model,
      role: settings.role,
      messages: scenarioMessages({
        strategy: plan.strategy,
        documentSource: document.source,
        documentText: document.text,
        attributes: plan.attributes,
        ...(plan.focus !== undefined ? { focus: plan.focus } : {}),
        ...(options.agentContext ? { agentContext: options.agentContext } : {}),
        ...(avoid.length > 0 ? { avoid } : {}),
      }),
      schema: SCENARIO_DRAFT_SCHEMA,
      schemaName: "scenario",
      temperature: settings.temperature,
      seed: plan.modelSeed,
      scope: `generate:${plan.id}`,
      variant: `${String(options.seed)}/${plan.slot}/${attempt}`,
    });
    return result.object;
  };

  // First drafts in parallel; near-duplicate checks after, in slot order, so the outcome does not depend
  // on which call finished first.
  const drafts = new Map<number, ScenarioDraft | { error: string }>();
  await eachLimited(plans, settings.concurrency, async (plan) => {
    try {
      drafts.set(plan.slot, await write(plan, [], 0));
    } catch (error) {
      if (!isDraftFailure(error)) throw error;
      drafts.set(plan.slot, { error: (error as Error).message });
    }
    options.onProgress?.({ kind: "drafted", id: plan.id, done: drafts.size, total: plans.length });
  });

  const accepted: GeneratedScenario[] = [];
  const skip = (plan: Plan, reason: string) => {
    skipped.push({ id: plan.id, slot: plan.slot, reason });
    warnings.push(`${plan.id}: skipped (${reason})`);
    done += 1;
    options.onProgress?.({ kind: "skipped", id: plan.id, reason, done, total });
  };
  for (const plan of plans) {
    let draft = drafts.get(plan.slot) as ScenarioDraft | { error: string };
    let regenerations = 0;
    let built: GeneratedScenario | undefined;
    let reason = "";
    for (;;) {
      if ("error" in draft) {
        reason = `no usable answer from the model: ${draft.error}`;
        break;
      }
      const goal = draft.goal;
      const similar = accepted.find(
        (other) => goalSimilarity(other.scenario.goal, goal) >= settings.similarity,
      );
      if (!similar) {
        try {
          built = buildScenario(plan, draft, documents, slugs, settings, options.agentContext, regenerations);
        } catch (error) {
          if (!(error instanceof TerrariumError)) throw error;
          reason = `the scenario is invalid: ${error.message}`;
        }
        break;
      }
      if (regenerations >= settings.maxRegenerations) {
        reason = `its goal stays too close to ${similar.id}'s after ${regenerations} regeneration${regenerations === 1 ? "" : "s"}`;
        break;
      }
      regenerations += 1;
      options.onProgress?.({
        kind: "regenerating",
        id: plan.id,
        attempt: regenerations,
        similarTo: similar.id,
      });
      // The goal it came too close to, the rejected draft, and the latest goals on the same document.
      const sameDocument = accepted
        .filter((other) => other.document === documents[plan.documentIndex])
        .map((other) => other.scenario.goal);
      const avoid = [...new Set([similar.scenario.goal, goal, ...sameDocument.slice(-10).reverse()])];
      try {
        draft = await write(plan, avoid, regenerations);
      } catch (error) {
        if (!isDraftFailure(error)) throw error;
        draft = { error: (error as Error).message };
      }
    }
    if (!built) {
      skip(plan, reason);
      continue;
    }
    accepted.push(built);
    done += 1;
    options.onProgress?.({ kind: "accepted", id: built.id, done, total });
  }
  return { scenarios: accepted, skipped, warnings };
}

interface Settings {
  count: number;
  strategy: GenerationStrategy;
  maxTurns: number;
  role: string;
  concurrency: number;
  similarity: number;
  maxRegenerations: number;
  temperature: number;
  seed: string;
  categories: AttributeCategories;
}

function checkOptions(options: GenerateScenariosOptions): Settings {
  const bad = (message: string): never => {
    throw new TerrariumError("INVALID_INPUT", message);
  };
  const wholeIn = (value: number, what: string, min: number, max: number) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      bad(`${what} must be a whole number from ${min} to ${max}, got ${value}`);
    }
    return value;
  };
  const strategy = options.strategy ?? "mixed";
  if (!GENERATION_STRATEGIES.includes(strategy)) {
    bad(`strategy must be one of ${GENERATION_STRATEGIES.join(", ")}, got "${String(strategy)}"`);
  }
  const similarity = options.similarity ?? 0.8;
  if (!(similarity > 0 && similarity <= 1)) bad(`similarity must be in (0, 1], got ${similarity}`);
  const temperature = options.temperature ?? 0.8;
  if (!(temperature >= 0 && temperature <= 2)) bad(`temperature must be in [0, 2], got ${temperature}`);
  const role = options.role ?? "scenario_writer";
  if (role.trim() === "") bad("role must not be empty");
  if (typeof options.seed !== "string" && typeof options.seed !== "number")
    bad("seed must be a string or number");
  return {
    count: wholeIn(options.count, "count", 1, MAX_GENERATED_SCENARIOS),
    strategy,
    maxTurns: wholeIn(options.maxTurns ?? 20, "maxTurns", 1, SCENARIO_LIMITS.maxTurns),
    role,
    concurrency: wholeIn(options.concurrency ?? 4, "concurrency", 1, 64),
    similarity,
    maxRegenerations: wholeIn(options.maxRegenerations ?? 2, "maxRegenerations", 0, 10),
    temperature,
    seed: String(options.seed),
    categories: normaliseCategories(options.attributes),
  };
}

function normaliseCategories(input: AttributeCategoriesInput | AttributeCategories): AttributeCategories {
  // Already normalised (every category {values, weights} of equal length) or as a file gives it: the
  // parser accepts both, so categories built in code get the same checks as a file's.
  return parseAttributeCategories(input);
}

/**
 * The documents to write from. Paths are read with `loadKnowledgeFiles` (a folder recursively); a
 * document's source is its path relative to the folder given (a file's own name when a file is given).
 */
export async function readDocuments(
  input: GenerateScenariosOptions["documents"],
): Promise<KnowledgeDocument[]> {
  const documents: KnowledgeDocument[] = [];
  for (const item of input) {
    if (typeof item !== "string") {
      documents.push(item);
      continue;
    }
    const path = resolve(item);
    let isDirectory: boolean;
    try {
      isDirectory = statSync(path).isDirectory();
    } catch (error) {
      throw new TerrariumError("FILE_UNREADABLE", `cannot read the documents (${(error as Error).message})`, {
        where: { file: path },
      });
    }
    documents.push(
      ...(await loadKnowledgeFiles([isDirectory ? "." : basename(path)], {
        baseDir: isDirectory ? path : dirname(path),
      })),
    );
  }
  const usable = documents.filter((document) => document.text.trim() !== "");
  if (usable.length === 0) {
    throw new TerrariumError("INVALID_INPUT", "no knowledge documents with text to generate scenarios from");
  }
  for (const document of usable) {
    if (document.text.trim().length > SCENARIO_LIMITS.maxTextChars) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `the document is ${document.text.trim().length} characters; scenario knowledge documents are limited to ${SCENARIO_LIMITS.maxTextChars}`,
        { where: { file: document.source } },
      );
    }
  }
  return usable;
}

/** Lower-case slugs of the documents' file names, made unique with -2, -3… in document order. */
export function documentSlugs(documents: readonly KnowledgeDocument[]): string[] {
  const used = new Set<string>();
  return documents.map((document) => {
    const name = basename(document.source, extname(document.source));
    const base =
      name
        .normalize("NFKD")
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-+|-+$/g, "")
        .slice(0, 40)
        .replace(/-+$/, "") || "doc";
    let slug = base;
    for (let n = 2; used.has(slug); n++) slug = `${base}-${n}`;
    used.add(slug);
    return slug;
  });
}

/**
 * Every slot's document, strategy, attributes and passage, from the seed alone. Slot n depends only on the
 * seed and slots before it, so a larger count extends a smaller one's scenarios (same ids, same sampling).
 */
function planScenarios(
  documents: readonly KnowledgeDocument[],
  slugs: readonly string[],
  settings: Settings,
  warnings: string[],
): Plan[] {
  const root = createRandom(`users-generate\u0000${settings.seed}`);
  const used = new Map<number, Set<string>>();
  const space = sampleSpace(settings.categories);
  const plans: Plan[] = [];
  let order: number[] = [];
  for (let slot = 0; slot < settings.count; slot++) {
    const round = Math.floor(slot / documents.length);
    if (slot % documents.length === 0)
      order = shuffle(
        documents.map((_, index) => index),
        root.derive(`round/${round}`),
      );
    const documentIndex = order[slot % documents.length] as number;
    const id = `gen-${slugs[documentIndex]}-${String(slot + 1).padStart(3, "0")}`;
    const taken = used.get(documentIndex) ?? new Set<string>();
    used.set(documentIndex, taken);
    if (taken.size >= space) {
      warnings.push(
        `${id}: not planned (every one of the ${space} attribute samples is already used with ${documents[documentIndex]?.source})`,
      );
      continue;
    }
    const sampler = root.derive(`attributes/${slot}`);
    let attributes: Record<string, AttributeValue> | undefined;
    for (let tries = 0; tries < SAMPLE_TRIES && !attributes; tries++) {
      const sample = sampleAttributes(settings.categories, sampler);
      const key = JSON.stringify(sample);
      if (!taken.has(key)) {
        taken.add(key);
        attributes = sample;
      }
    }
    if (!attributes) {
      warnings.push(
        `${id}: not planned (no new attribute sample for ${documents[documentIndex]?.source} in ${SAMPLE_TRIES} draws)`,
      );
      continue;
    }
    const strategy: ScenarioStrategy =
      settings.strategy === "mixed"
        ? root.derive(`strategy/${slot}`).next() < 0.5
          ? "top-down"
          : "bottom-up"
        : settings.strategy;
    const plan: Plan = {
      id,
      slot,
      strategy,
      documentIndex,
      attributes,
      modelSeed: root.derive(`model/${slot}`).int(0, 2_147_483_647),
    };
    if (strategy === "bottom-up") {
      const document = documents[documentIndex] as KnowledgeDocument;
      const chunks = chunkText(document.text, document.source, { maxChars: 1500 });
      const chunk = chunks.length > 0 ? root.derive(`passage/${slot}`).pick(chunks) : undefined;
      if (chunk) plan.focus = [...chunk.headings.map((heading) => `# ${heading}`), chunk.text].join("\n");
    }
    plans.push(plan);
  }
  return plans;
}

function shuffle<T>(items: T[], random: Random): T[] {
  for (let index = items.length - 1; index > 0; index--) {
    const other = random.int(0, index);
    [items[index], items[other]] = [items[other] as T, items[index] as T];
  }
  return items;
}

function buildScenario(
  plan: Plan,
  draft: ScenarioDraft,
  documents: readonly KnowledgeDocument[],
  slugs: readonly string[],
  settings: Settings,
  agentContext: string | undefined,
  regenerations: number,
): GeneratedScenario {
  const document = documents[plan.documentIndex] as KnowledgeDocument;
  const attribute = draft.reveal_attribute
    .trim()
    .replace(/\s+/g, " ")
    .replace(/[.:]+$/, "");
  const value = draft.reveal_value.trim();
  const attributes: Record<string, AttributeValue> = { ...plan.attributes };
  const situation = draft.situation.trim();
  if (situation && !Object.hasOwn(attributes, "situation")) attributes.situation = situation;
  const raw: RawScenario = {
    id: plan.id,
    description: `Generated ${plan.strategy} from ${document.source}; the user must reveal their ${attribute}.`,
    tags: ["generated", plan.strategy, `doc:${slugs[plan.documentIndex]}`],
    profile: attributes as RawScenario["profile"],
    goal: draft.goal.trim(),
    knowledge: [
      { text: document.text.trim(), title: shortTitle(document.source) },
      {
        text: `Your ${attribute} is ${value}. The agent will need it from you; give it when asked.`,
        title: "What you know",
      },
    ],
    ...(agentContext ? { agent_context: agentContext } : {}),
    max_turns: settings.maxTurns,
    expected: {
      checklist: draft.checklist.map((item) => item.trim()).filter((item) => item !== ""),
    },
  };
  // The same checks as a file gets; a failure names the field.
  parseScenario(raw);
  return {
    id: plan.id,
    slot: plan.slot,
    strategy: plan.strategy,
    document,
    documentSlug: slugs[plan.documentIndex] as string,
    attributes,
    reveal: { attribute, value },
    regenerations,
    scenario: raw,
  };
}

function shortTitle(source: string): string {
  const name = basename(resolve(source));
  return name.length > 200 ? `${name.slice(0, 197)}…` : name;
}

/**
 * Errors that cost one scenario (an answer still invalid after repairs, a call that failed after its
 * retries), not the run (no model, an unknown provider, a missing key, the budget).
 */
function isDraftFailure(error: unknown): boolean {
  return (
    error instanceof TerrariumError &&
    (error.code === "MODEL_OUTPUT_INVALID" ||
      error.code === "MODEL_CALL_FAILED" ||
      error.code === "MODEL_TIMEOUT")
  );
}

async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (next < items.length && failure === undefined) {
      const item = items[next++] as T;
      try {
        await run(item);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure;
}
