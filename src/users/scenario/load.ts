import { readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { distance } from "fastest-levenshtein";
import { isMap, isScalar, LineCounter, parseDocument as parseYamlDocument } from "yaml";
import type { z } from "zod";
import { readDocument } from "../../catalog/read-document.js";
import { TerrariumError } from "../../core/errors.js";
import { formatPointer, parsePointer } from "../../core/json-pointer.js";
import { parseScript } from "../testing/script.js";
import type { ScriptStep } from "../testing/types.js";
import { profileText } from "./profile.js";
import {
  ExpectedSchema,
  type ProfileAttributes,
  type RawScenario,
  RawScenarioSchema,
  type RawScenarioTest,
  RawScenarioTestSchema,
  SCENARIO_KEYS,
  SCENARIO_LIMITS,
  SCENARIO_SCHEMA_VERSION,
  StopSchema,
  UserToolSchema,
} from "./schema.js";

/** `max_turns` of a test that does not set it (it bounds `simulate` steps). */
export const DEFAULT_TEST_MAX_TURNS = 20;

/** tau2's and terrarium's tokens that end a conversation, used when a scenario names none. */
export const DEFAULT_STOP_TOKENS: readonly string[] = ["###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"];

export interface KnowledgeEntry {
  title?: string;
  text: string;
  /** Absolute path of the file the text came from; absent for inline text. */
  file?: string;
}

export interface UserToolDeclaration {
  name: string;
  description?: string;
  kind?: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
  /** A mocked tool's data schema, as declared. */
  data?: Record<string, unknown> | boolean;
  /** A mocked tool's outcomes, as declared (checked by the user-tools layer). */
  outcomes?: Array<Record<string, unknown>>;
  /** Opaque configuration for whoever implements the tool. */
  config?: unknown;
}

export interface ChecklistItem {
  id: string;
  text: string;
}

/** A validated, normalised scenario. */
export interface Scenario {
  schemaVersion: typeof SCENARIO_SCHEMA_VERSION;
  id: string;
  /** Where it was read from: the file (absent for in-memory input) and its JSON Pointer there. */
  source: { file?: string; pointer: string };
  description?: string;
  tags: string[];
  profile: { text: string; attributes?: ProfileAttributes };
  goal: string;
  knowledge: KnowledgeEntry[];
  agentContext?: string;
  userTools: UserToolDeclaration[];
  maxTurns: number;
  stop: { tokens: string[]; when: string[]; onRepeat: "end" | "redirect" };
  expected: { behaviour?: string; checklist: ChecklistItem[] };
  /**
   * Present when the scenario is a test: its steps, normalised (`users test`, `terrarium/testing`). A test
   * may leave out profile, goal and knowledge (then empty) and max_turns (then 20) unless it simulates.
   */
  script?: ScriptStep[];
}

export interface ScenarioIssue {
  pointer: string;
  message: string;
}

export interface ParseScenarioOptions {
  /** File the document came from (for error locations and relative knowledge files). */
  file?: string;
  /** Folder knowledge files are relative to; defaults to the file's folder, else the working directory. */
  baseDir?: string;
  /** Let knowledge files live outside `baseDir` (absolute paths, `..`). Off by default. */
  allowKnowledgeOutside?: boolean;
}

const SCENARIO_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);

/**
 * Loads scenarios from a file (one scenario or a list of them) or from a folder's `.yaml`, `.yml` and
 * `.json` files (not its subfolders, which can hold knowledge files), in file-name order. Ids must be
 * unique across everything loaded; a duplicate is an error naming both places.
 */
export function loadScenarios(
  pathOrDir: string,
  options: Omit<ParseScenarioOptions, "file" | "baseDir"> = {},
) {
  const target = resolve(pathOrDir);
  let files: string[];
  if (statOrThrow(target).isDirectory()) {
    files = readdirSync(target, { withFileTypes: true })
      .filter((entry) => entry.isFile() && SCENARIO_EXTENSIONS.has(extname(entry.name).toLowerCase()))
      .map((entry) => join(target, entry.name))
      .sort();
    if (files.length > SCENARIO_LIMITS.maxFilesPerFolder) {
      throw new TerrariumError(
        "CONFIG_INVALID",
        `the folder holds ${files.length} scenario files, more than ${SCENARIO_LIMITS.maxFilesPerFolder}`,
        { where: { file: target } },
      );
    }
    if (files.length === 0) {
      throw new TerrariumError("CONFIG_INVALID", "the folder holds no .yaml, .yml or .json scenario files", {
        where: { file: target },
      });
    }
  } else {
    files = [target];
  }
  const scenarios: Scenario[] = [];
  const seen = new Map<string, Scenario>();
  // Every file is read before anything is refused, so one message lists every problem of the folder.
  const problems: unknown[] = [];
  for (const file of files) {
    let loaded: Scenario[];
    try {
      loaded = loadScenarioFile(file, options);
    } catch (error) {
      problems.push(error);
      continue;
    }
    for (const scenario of loaded) {
      const first = seen.get(scenario.id);
      if (first) {
        const error = duplicateId(first, scenario);
        const line = lineOf(file, error.where.pointer ?? "");
        problems.push(line === undefined ? error : error.locatedIn({ line }));
        continue;
      }
      seen.set(scenario.id, scenario);
      scenarios.push(scenario);
    }
  }
  throwAll(problems);
  return scenarios;
}

/** Nothing, one error as it is, or one error listing every problem (each with its file and place). */
function throwAll(problems: unknown[]): void {
  if (problems.length === 0) return;
  if (problems.length === 1 || !problems.every((p) => p instanceof TerrariumError)) throw problems[0];
  const lines = (problems as TerrariumError[]).map(
    (problem) => `  ${problem.describe().replace(/ \[[A-Z_]+\]$/, "")}`,
  );
  throw new TerrariumError(
    "CONFIG_INVALID",
    `${problems.length} problems in the scenarios:\n${lines.join("\n")}`,
  );
}

/** Reads one scenario file: a scenario object or a list of them. */
export function loadScenarioFile(
  file: string,
  options: Omit<ParseScenarioOptions, "file" | "baseDir"> = {},
): Scenario[] {
  const path = resolve(file);
  const stats = statOrThrow(path);
  if (stats.isFile() && stats.size > SCENARIO_LIMITS.maxScenarioFileBytes) {
    throw new TerrariumError(
      "CONFIG_INVALID",
      `the scenario file is ${stats.size} bytes, more than ${SCENARIO_LIMITS.maxScenarioFileBytes}`,
      { where: { file: path } },
    );
  }
  const document = readDocument(path);
  try {
    return parseScenarios(document, { ...options, file: path });
  } catch (error) {
    if (error instanceof TerrariumError && error.where.file === path && error.where.pointer !== undefined) {
      const line = lineOf(path, error.where.pointer);
      if (line !== undefined && error.where.line === undefined) throw error.locatedIn({ line });
    }
    throw error;
  }
}

/** The 1-based line of the value at `pointer` in a JSON or YAML file, when it can be found. */
function lineOf(file: string, pointer: string): number | undefined {
  try {
    const lineCounter = new LineCounter();
    const document = parseYamlDocument(readFileSync(file, "utf8"), { lineCounter, uniqueKeys: false });
    const tokens = parsePointer(pointer);
    // A key's own line (where an unknown key is written), else the deepest node that exists.
    const last = tokens[tokens.length - 1];
    const parent = tokens.length === 0 ? undefined : document.getIn(tokens.slice(0, -1), true);
    if (last !== undefined && isMap(parent)) {
      const pair = parent.items.find((item) => isScalar(item.key) && String(item.key.value) === last);
      const range = isScalar(pair?.key) ? pair.key.range : undefined;
      if (range) return lineCounter.linePos(range[0]).line;
    }
    for (let length = tokens.length; length >= 0; length -= 1) {
      const node = length === 0 ? document.contents : document.getIn(tokens.slice(0, length), true);
      const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
      if (range) return lineCounter.linePos(range[0]).line;
    }
  } catch {
    // a location is a nicety: without one the file and pointer still say where
  }
  return undefined;
}

/** Validates and normalises an already-parsed document: one scenario or a list of them. */
export function parseScenarios(document: unknown, options: ParseScenarioOptions = {}): Scenario[] {
  checkShape(document, options.file);
  if (Array.isArray(document)) {
    if (document.length === 0) {
      throw new TerrariumError("CONFIG_INVALID", "the list of scenarios is empty", {
        where: { file: options.file, pointer: "" },
      });
    }
    if (document.length > SCENARIO_LIMITS.maxScenariosPerFile) {
      throw new TerrariumError(
        "CONFIG_INVALID",
        `the file holds ${document.length} scenarios, more than ${SCENARIO_LIMITS.maxScenariosPerFile}`,
        { where: { file: options.file, pointer: "" } },
      );
    }
    const scenarios: Scenario[] = [];
    const problems: unknown[] = [];
    document.forEach((item, index) => {
      try {
        scenarios.push(parseOne(item, `/${index}`, options));
      } catch (error) {
        problems.push(error);
      }
    });
    throwAll(problems);
    const seen = new Map<string, Scenario>();
    for (const scenario of scenarios) {
      const first = seen.get(scenario.id);
      if (first) throw duplicateId(first, scenario);
      seen.set(scenario.id, scenario);
    }
    return scenarios;
  }
  return [parseOne(document, "", options)];
}

/** Validates and normalises one scenario object. */
export function parseScenario(value: unknown, options: ParseScenarioOptions = {}): Scenario {
  checkShape(value, options.file);
  return parseOne(value, "", options);
}

function parseOne(value: unknown, pointer: string, options: ParseScenarioOptions): Scenario {
  const file = options.file;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TerrariumError(
      "CONFIG_INVALID",
      `a scenario must be an object with id, profile, goal, knowledge and max_turns, not ${kindOf(value)}`,
      { where: { file, pointer } },
    );
  }
  // A test needs only id and script; whether its steps need the user's fields is the script's to say.
  const isTest = Object.hasOwn(value, "script");
  const parsed = (isTest ? RawScenarioTestSchema : RawScenarioSchema).safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.flatMap((issue) => describeIssue(issue, value, pointer));
    throw invalid(issues, file);
  }
  return normalise(parsed.data, pointer, options);
}

function normalise(
  raw: RawScenario | RawScenarioTest,
  pointer: string,
  options: ParseScenarioOptions,
): Scenario {
  const file = options.file;
  const issues: ScenarioIssue[] = [];
  const baseDir = resolve(options.baseDir ?? (file ? dirname(file) : process.cwd()));

  const knowledge: KnowledgeEntry[] = [];
  const items =
    raw.knowledge === undefined ? [] : Array.isArray(raw.knowledge) ? raw.knowledge : [raw.knowledge];
  let total = 0;
  items.forEach((item, index) => {
    const at = Array.isArray(raw.knowledge) ? `${pointer}/knowledge/${index}` : `${pointer}/knowledge`;
    let entry: KnowledgeEntry | undefined;
    if (typeof item === "string") entry = { text: item };
    else if ("text" in item) entry = { text: item.text, ...(item.title ? { title: item.title } : {}) };
    else {
      const read = readKnowledgeFile(item.file, baseDir, options.allowKnowledgeOutside === true);
      if (typeof read === "string") issues.push({ pointer: `${at}/file`, message: read });
      else entry = { text: read.text, file: read.file, ...(item.title ? { title: item.title } : {}) };
    }
    if (!entry) return;
    total += entry.text.length;
    knowledge.push(entry);
  });
  if (total > SCENARIO_LIMITS.maxKnowledgeChars) {
    issues.push({
      pointer: `${pointer}/knowledge`,
      message: `knowledge: ${total} characters in all, more than ${SCENARIO_LIMITS.maxKnowledgeChars}`,
    });
  }

  const userTools: UserToolDeclaration[] = [];
  const toolIndex = new Map<string, number>();
  (raw.user_tools ?? []).forEach((tool, index) => {
    const at = `${pointer}/user_tools/${index}`;
    const earlier = toolIndex.get(tool.name);
    if (earlier !== undefined) {
      issues.push({
        pointer: `${at}/name`,
        message: `user_tools[${index}].name: "${tool.name}" is already declared at user_tools[${earlier}]`,
      });
      return;
    }
    toolIndex.set(tool.name, index);
    const parameters = tool.parameters ?? { type: "object", properties: {} };
    if (parameters.type !== undefined && parameters.type !== "object") {
      issues.push({
        pointer: `${at}/parameters/type`,
        message: `user_tools[${index}].parameters: the arguments schema must have type "object"`,
      });
    }
    userTools.push({
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      ...(tool.kind ? { kind: tool.kind } : {}),
      parameters,
      ...(tool.data !== undefined ? { data: tool.data } : {}),
      ...(tool.outcomes !== undefined ? { outcomes: tool.outcomes } : {}),
      ...(tool.config !== undefined ? { config: tool.config } : {}),
    });
  });

  const checklist: ChecklistItem[] = [];
  const checklistIds = new Set<string>();
  (raw.expected?.checklist ?? []).forEach((item, index) => {
    const entry = typeof item === "string" ? { id: `c${index + 1}`, text: item } : item;
    const id = entry.id ?? `c${index + 1}`;
    if (checklistIds.has(id)) {
      issues.push({
        pointer: `${pointer}/expected/checklist/${index}`,
        message: `expected.checklist[${index}]: the id "${id}" is used twice`,
      });
    }
    checklistIds.add(id);
    checklist.push({ id, text: entry.text });
  });

  let script: ScriptStep[] | undefined;
  if (raw.script !== undefined) {
    const parsed = parseScript(raw.script, pointer, {
      hasProfile: raw.profile !== undefined,
      hasGoal: raw.goal !== undefined,
    });
    issues.push(...parsed.issues);
    script = parsed.steps;
  }

  if (issues.length > 0) throw invalid(issues, file);

  const attributes = typeof raw.profile === "string" ? undefined : raw.profile;
  return {
    schemaVersion: SCENARIO_SCHEMA_VERSION,
    id: raw.id,
    source: { ...(file ? { file } : {}), pointer },
    ...(raw.description ? { description: raw.description } : {}),
    tags: raw.tags ?? [],
    profile: {
      text: raw.profile === undefined ? "" : profileText(raw.profile),
      ...(attributes ? { attributes } : {}),
    },
    goal: raw.goal ?? "",
    knowledge,
    ...(raw.agent_context ? { agentContext: raw.agent_context } : {}),
    userTools,
    maxTurns: raw.max_turns ?? DEFAULT_TEST_MAX_TURNS,
    stop: {
      tokens: raw.stop?.tokens ?? [...DEFAULT_STOP_TOKENS],
      when: raw.stop?.when ?? [],
      onRepeat: raw.stop?.on_repeat ?? "end",
    },
    expected: { ...(raw.expected?.behaviour ? { behaviour: raw.expected.behaviour } : {}), checklist },
    ...(script ? { script } : {}),
  };
}

/** The scenario's knowledge as one text, entries separated by blank lines and titled when they have one. */
export function knowledgeText(scenario: Pick<Scenario, "knowledge">): string {
  return scenario.knowledge
    .map((entry) => (entry.title ? `# ${entry.title}\n\n${entry.text}` : entry.text))
    .join("\n\n");
}

/**
 * The scenario's knowledge as `{source, text}` documents (the shape the retrieval tool indexes): the
 * source is the file, else the title, else `<id>#/knowledge/<index>`.
 */
export function knowledgeDocuments(
  scenario: Pick<Scenario, "id" | "knowledge">,
): Array<{ source: string; text: string }> {
  return scenario.knowledge.map((entry, index) => ({
    source: entry.file ?? entry.title ?? `${scenario.id}#/knowledge/${index}`,
    text: entry.text,
  }));
}

function readKnowledgeFile(
  path: string,
  baseDir: string,
  allowOutside: boolean,
): string | { text: string; file: string } {
  if (path.includes("\0")) return "the knowledge file name contains a NUL character";
  if (isAbsolute(path) && !allowOutside) {
    return `knowledge file "${path}" is absolute; give it relative to the scenario file`;
  }
  const file = resolve(baseDir, path);
  let real: string;
  try {
    real = realpathSync(file);
  } catch {
    return `knowledge file "${path}" does not exist (looked for ${file})`;
  }
  if (!allowOutside) {
    let realBase: string;
    try {
      realBase = realpathSync(baseDir);
    } catch {
      realBase = baseDir;
    }
    const rel = relative(realBase, real);
    if (rel === "" || rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel)) {
      return `knowledge file "${path}" is outside the scenario's folder`;
    }
  }
  const stats = statSync(real);
  if (!stats.isFile()) return `knowledge file "${path}" is not a file`;
  if (stats.size > SCENARIO_LIMITS.maxKnowledgeFileBytes) {
    return `knowledge file "${path}" is ${stats.size} bytes, more than ${SCENARIO_LIMITS.maxKnowledgeFileBytes}`;
  }
  const text = readFileSync(real, "utf8");
  if (text.includes("\0")) return `knowledge file "${path}" is not text`;
  if (text.trim() === "") return `knowledge file "${path}" is empty`;
  return { text: text.trim(), file };
}

/** Refuses documents nested too deep, too large after alias expansion, or with `__proto__` keys. */
function checkShape(document: unknown, file: string | undefined): void {
  const stack: Array<{ value: unknown; path: Array<string | number>; depth: number }> = [
    { value: document, path: [], depth: 0 },
  ];
  let nodes = 0;
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop() as (typeof stack)[number];
    if (++nodes > 1_000_000) {
      throw new TerrariumError("CONFIG_INVALID", "the document has more than 1,000,000 values", {
        where: { file },
      });
    }
    if (value === null || typeof value !== "object") continue;
    if (depth >= SCENARIO_LIMITS.maxDepth) {
      throw new TerrariumError(
        "CONFIG_INVALID",
        `the document is nested more than ${SCENARIO_LIMITS.maxDepth} levels deep`,
        { where: { file, pointer: formatPointer(path) } },
      );
    }
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        stack.push({ value: item, path: [...path, index], depth: depth + 1 });
      });
      continue;
    }
    for (const key of Object.keys(value)) {
      if (key === "__proto__") {
        throw new TerrariumError("CONFIG_INVALID", 'the key "__proto__" is not allowed', {
          where: { file, pointer: formatPointer([...path, key]) },
        });
      }
      stack.push({ value: (value as Record<string, unknown>)[key], path: [...path, key], depth: depth + 1 });
    }
  }
}

type Issue = z.core.$ZodIssue;

function describeIssue(issue: Issue, root: unknown, base: string): ScenarioIssue[] {
  const path = issue.path.map((token) => (typeof token === "symbol" ? String(token) : token));
  if (issue.code === "unrecognized_keys") {
    const known = knownKeysAt(path);
    return issue.keys.map((key) => {
      const closest = closestKey(key, known);
      const hint = closest
        ? ` (did you mean "${closest}"?)`
        : known.length > 0
          ? ` (known keys: ${known.join(", ")})`
          : "";
      return {
        pointer: base + formatPointer([...path, key]),
        message: `${prefix(path)}unknown key "${key}"${hint}`,
      };
    });
  }
  if (path.length > 0) {
    const parent = valueAt(root, path.slice(0, -1));
    const last = path[path.length - 1] as string | number;
    if (
      parent !== null &&
      typeof parent === "object" &&
      !Array.isArray(parent) &&
      !Object.hasOwn(parent, String(last))
    ) {
      return [
        {
          pointer: base + formatPointer(path.slice(0, -1)),
          message: `${prefix(path.slice(0, -1))}missing required key "${last}"`,
        },
      ];
    }
  }
  return [{ pointer: base + formatPointer(path), message: `${prefix(path)}${issue.message}` }];
}

function prefix(path: ReadonlyArray<string | number>): string {
  if (path.length === 0) return "";
  let label = "";
  for (const token of path) label += typeof token === "number" ? `[${token}]` : label ? `.${token}` : token;
  return `${label}: `;
}

function knownKeysAt(path: ReadonlyArray<string | number>): string[] {
  const [head, ...rest] = path;
  if (head === undefined) return SCENARIO_KEYS;
  if (head === "stop") return Object.keys(StopSchema.shape);
  if (head === "expected") return rest.length === 0 ? Object.keys(ExpectedSchema.shape) : ["id", "text"];
  if (head === "user_tools") return Object.keys(UserToolSchema.shape);
  if (head === "knowledge") return ["file", "text", "title"];
  return [];
}

function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  const lower = key.toLowerCase().replace(/-/g, "_");
  for (const candidate of known) {
    const d = distance(lower, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  if (best === undefined) return undefined;
  return bestDistance <= Math.max(2, Math.floor(best.length / 3)) ? best : undefined;
}

function valueAt(root: unknown, path: ReadonlyArray<string | number>): unknown {
  let current = root;
  for (const token of path) {
    if (current === null || typeof current !== "object") return undefined;
    if (!Object.hasOwn(current, String(token))) return undefined;
    current = (current as Record<string, unknown>)[String(token)];
  }
  return current;
}

function invalid(issues: ScenarioIssue[], file: string | undefined): TerrariumError {
  const first = issues[0] as ScenarioIssue;
  const more =
    issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? "s" : ""})` : "";
  return new TerrariumError("CONFIG_INVALID", `invalid scenario: ${first.message}${more}`, {
    where: { file, pointer: first.pointer },
    details: { issues },
  });
}

function duplicateId(first: Scenario, second: Scenario): TerrariumError {
  const place = (scenario: Scenario) =>
    `${scenario.source.file ?? "<input>"}${scenario.source.pointer ? `#${scenario.source.pointer}` : ""}`;
  return new TerrariumError(
    "CONFIG_INVALID",
    `duplicate scenario id "${second.id}": in ${place(first)} and in ${place(second)}`,
    {
      where: { file: second.source.file, pointer: `${second.source.pointer}/id` },
      details: { id: second.id, first: first.source, second: second.source },
    },
  );
}

function statOrThrow(path: string) {
  try {
    return statSync(path);
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === "ENOENT"
        ? "no such file or folder"
        : (error as Error).message;
    throw new TerrariumError("FILE_UNREADABLE", `cannot read scenarios (${reason})`, {
      where: { file: path },
    });
  }
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return `a ${typeof value}`;
}
