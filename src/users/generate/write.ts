import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import { stringify } from "yaml";
import { TerrariumError } from "../../core/errors.js";
import { parseScenario } from "../scenario/load.js";
import { type RawScenario, SCENARIO_SCHEMA_VERSION } from "../scenario/schema.js";
import type { GeneratedScenario } from "./generate.js";

/** Folder under the output folder that holds the documents the scenarios cite. */
export const KNOWLEDGE_FOLDER = "knowledge";

export interface WriteScenariosOptions {
  /** Replace files that already exist (refused otherwise, before anything is written). */
  force?: boolean;
  /** A line for the header comment of every file (e.g. how the scenarios were made). */
  header?: string;
}

export interface WrittenScenarios {
  /** The scenario files, in the order given. */
  files: string[];
  /** The knowledge files written (documents shared by several scenarios are written once). */
  knowledgeFiles: string[];
}

/**
 * Writes one YAML file per scenario (`<id>.yaml`) into `outDir`, and each source document once into
 * `outDir/knowledge/` so that the scenarios cite it as `{file: knowledge/<slug><ext>}` inside their own
 * folder (what `loadScenarios` accepts). The scenario format has no version key, so the version is in the
 * header comment (`schemaVersion: 1`). Existing files are never replaced unless `force`; a knowledge file
 * that already holds the same text is fine. Every scenario is checked with `parseScenario` against the
 * written knowledge before its file is written.
 */
export function writeScenarios(
  scenarios: readonly GeneratedScenario[],
  outDir: string,
  options: WriteScenariosOptions = {},
): WrittenScenarios {
  const dir = resolve(outDir);
  const { plans, knowledge } = layout(scenarios, dir);
  if (!options.force) refuseExisting(existing(plans, knowledge));
  mkdirSync(join(dir, KNOWLEDGE_FOLDER), { recursive: true });
  const knowledgeFiles: string[] = [];
  for (const { path, text } of knowledge.values()) {
    if (!existsSync(path) || readFileSync(path, "utf8") !== text) writeFileSync(path, text);
    knowledgeFiles.push(path);
  }
  const documents = plans.map(({ generated, relativePath, file }) => {
    const scenario = withKnowledgeFile(generated.scenario, relativePath);
    parseScenario(scenario, { file, baseDir: dir });
    return { file, text: scenarioYaml(generated, scenario, options.header) };
  });
  for (const { file, text } of documents) writeFileSync(file, text);
  return { files: documents.map((document) => document.file), knowledgeFiles };
}

/** What a scenario file needs to be placed: its id and its document. */
export type ScenarioFileTarget = Pick<GeneratedScenario, "id" | "documentSlug" | "document">;

/**
 * The files writing these scenarios to `outDir` would replace: scenario files that exist, and knowledge
 * files that exist with other text. Empty when nothing would be lost. Also refuses (throws) an output
 * path that is not a folder, two scenarios with one id, or two documents with one file name.
 */
export function existingScenarioFiles(targets: readonly ScenarioFileTarget[], outDir: string): string[] {
  const dir = resolve(outDir);
  if (existsSync(dir) && !statSync(dir).isDirectory()) {
    throw new TerrariumError("INVALID_INPUT", "the output path exists and is not a folder", {
      where: { file: dir },
    });
  }
  const { plans, knowledge } = layout(targets, dir);
  return existing(plans, knowledge);
}

/** Throws when `taken` is not empty, naming the first files. */
export function refuseExisting(taken: readonly string[]): void {
  if (taken.length === 0) return;
  throw new TerrariumError(
    "INVALID_INPUT",
    `${taken.length} file${taken.length === 1 ? "" : "s"} already exist${taken.length === 1 ? "s" : ""} (pass --force to replace): ${taken.slice(0, 5).join(", ")}${taken.length > 5 ? ", …" : ""}`,
    { where: { file: taken[0] } },
  );
}

function layout<T extends ScenarioFileTarget>(targets: readonly T[], dir: string) {
  const knowledge = new Map<string, { path: string; text: string }>();
  const plans = targets.map((target) => {
    const name = `${target.documentSlug}${knowledgeExtension(target.document.source)}`;
    const relativePath = `${KNOWLEDGE_FOLDER}/${name}`;
    const text = `${target.document.text.trim()}\n`;
    const earlier = knowledge.get(relativePath);
    if (earlier && earlier.text !== text) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `two different documents would be written to ${relativePath}; give documents distinct slugs`,
      );
    }
    knowledge.set(relativePath, { path: join(dir, KNOWLEDGE_FOLDER, name), text });
    return { generated: target, relativePath, file: join(dir, `${target.id}.yaml`) };
  });
  const seen = new Set<string>();
  for (const plan of plans) {
    if (seen.has(plan.file)) {
      throw new TerrariumError("INVALID_INPUT", `two scenarios have the id "${plan.generated.id}"`, {
        where: { file: plan.file },
      });
    }
    seen.add(plan.file);
  }
  return { plans, knowledge };
}

function existing(
  plans: ReadonlyArray<{ file: string }>,
  knowledge: ReadonlyMap<string, { path: string; text: string }>,
): string[] {
  const taken = plans.map((plan) => plan.file).filter((file) => existsSync(file));
  for (const { path, text } of knowledge.values()) {
    if (existsSync(path) && readFileSync(path, "utf8") !== text) taken.push(path);
  }
  return taken;
}

/** The scenario with its first knowledge entry (the source document) replaced by a file reference. */
function withKnowledgeFile(scenario: RawScenario, relativePath: string): RawScenario {
  const entries = Array.isArray(scenario.knowledge) ? scenario.knowledge : [scenario.knowledge];
  const [first, ...rest] = entries;
  const title = first && typeof first === "object" && first.title ? { title: first.title } : {};
  return { ...scenario, knowledge: [{ file: relativePath, ...title }, ...rest] };
}

function knowledgeExtension(source: string): string {
  const ext = extname(source).toLowerCase();
  if (ext === "" || /^\.(?:html?|xhtml)$/.test(ext)) return ".txt"; // HTML was read as text
  return ext;
}

function scenarioYaml(generated: GeneratedScenario, scenario: RawScenario, header?: string): string {
  const lines = [
    `# terrarium scenario, schemaVersion: ${SCENARIO_SCHEMA_VERSION}`,
    `# generated ${generated.strategy} from ${oneLine(generated.document.source)}; reveals: ${oneLine(generated.reveal.attribute)}`,
  ];
  if (header) lines.push(...header.split(/\r?\n/).map((line) => `# ${oneLine(line)}`));
  // Keys in the order people read a scenario.
  const ordered: Record<string, unknown> = { schemaVersion: SCENARIO_SCHEMA_VERSION };
  for (const key of [
    "id",
    "description",
    "tags",
    "profile",
    "goal",
    "knowledge",
    "agent_context",
    "user_tools",
    "max_turns",
    "stop",
    "expected",
  ] as const) {
    if (scenario[key] !== undefined) ordered[key] = scenario[key];
  }
  return `${lines.join("\n")}\n${stringify(ordered, { lineWidth: 100 })}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}
