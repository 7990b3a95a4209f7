import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import type { FunctionDoc } from "./ast-checker.js";
import type { BfclWorldSpec } from "./backends.js";
import { snakeCase } from "./backends.js";

export const MULTI_TURN_CATEGORIES = [
  "multi_turn_base",
  "multi_turn_miss_func",
  "multi_turn_miss_param",
  "multi_turn_long_context",
] as const;

export type MultiTurnCategory = (typeof MULTI_TURN_CATEGORIES)[number];

export function isMultiTurnCategory(category: string): boolean {
  return category.startsWith("multi_turn");
}

/** Class -> its function-doc file in BFCL's `multi_turn_func_doc` folder, as BFCL maps them. */
export const BFCL_FUNC_DOC_FILES: Readonly<Record<string, string>> = {
  GorillaFileSystem: "gorilla_file_system.json",
  MathAPI: "math_api.json",
  MessageAPI: "message_api.json",
  TwitterAPI: "posting_api.json",
  TicketAPI: "ticket_api.json",
  TradingBot: "trading_bot.json",
  TravelAPI: "travel_booking.json",
  VehicleControlAPI: "vehicle_control.json",
  WebSearchAPI: "web_search.json",
  MemoryAPI_kv: "memory_kv.json",
  MemoryAPI_vector: "memory_vector.json",
  MemoryAPI_rec_sum: "memory_rec_sum.json",
};

export interface BfclMultiTurnItem {
  id: string;
  category: string;
  /** The user messages of each turn; a turn where withheld functions arrive has none. */
  question: Array<Array<{ role: string; content: string }>>;
  /** Per class, its part of the starting configuration (`_load_scenario`'s argument). */
  initialConfig: Record<string, unknown>;
  /** The backend classes, in the item's order (a later class wins a method name two share). */
  involvedClasses: string[];
  /** The functions offered from the first turn (withheld ones removed). */
  functions: FunctionDoc[];
  /** Turn index -> functions withheld until that turn (multi_turn_miss_func). */
  missedFunctions: Record<number, FunctionDoc[]>;
  /** The ground truth: per turn, calls in Python syntax (an empty turn expects no call). */
  groundTruth: string[][];
  /** Whether the backends load their long-context scenario (BFCL: "long_context" or "composite" in the category). */
  longContext: boolean;
  /** The item's documented path of functions (informative). */
  path?: string[];
  /**
   * The item's JSON line as read: the backends' configuration is taken from it by Python, so that numbers
   * keep the int/float distinction JSON.parse loses (BFCL's results show it: `{"fuelLevel": 50.0}`).
   */
  sourceLine?: string;
}

export interface LoadMultiTurnOptions {
  /** Class -> doc file, over BFCL's table (for backends of your own). */
  funcDocFiles?: Record<string, string>;
}

/**
 * Reads BFCL multi-turn items of the given categories from a BFCL data folder: `BFCL_v3_<category>.json`
 * (or v4), `possible_answer/` with the same name, and `multi_turn_func_doc/` for the involved classes'
 * functions. Functions a miss_func item withholds are taken out of `functions` and kept per turn, as BFCL
 * does before it runs a model.
 */
export function loadBfclMultiTurn(
  folder: string,
  categories: readonly string[],
  options: LoadMultiTurnOptions = {},
): BfclMultiTurnItem[] {
  const docs = functionDocs(join(folder, "multi_turn_func_doc"), options);
  const items: BfclMultiTurnItem[] = [];
  for (const category of categories) {
    if (!isMultiTurnCategory(category))
      throw new TerrariumError("INVALID_INPUT", `"${category}" is not a multi-turn category`);
    const version = ["v3", "v4"].find((v) => existsSync(join(folder, `BFCL_${v}_${category}.json`)));
    if (!version)
      throw new TerrariumError(
        "FILE_UNREADABLE",
        `no BFCL file for category "${category}" (looked for BFCL_v3_${category}.json)`,
        { where: { file: join(folder, `BFCL_v3_${category}.json`) } },
      );
    const file = join(folder, `BFCL_${version}_${category}.json`);
    items.push(...readMultiTurnFile(file, join(folder, "possible_answer", basename(file)), category, docs));
  }
  return items;
}

/**
 * Reads one file of BFCL multi-turn entries, laid out as BFCL's data folder is: its ground truth in
 * `possible_answer/` beside it under the same name, and the classes' function docs in
 * `multi_turn_func_doc/` beside it (either can be given elsewhere). The category is read off the file's
 * name (`BFCL_v3_<category>.json`), else off each entry's id.
 */
export function loadBfclMultiTurnFile(
  file: string,
  options: LoadMultiTurnOptions & { answerFile?: string; funcDocFolder?: string } = {},
): BfclMultiTurnItem[] {
  const folder = dirname(file);
  const docs = functionDocs(options.funcDocFolder ?? join(folder, "multi_turn_func_doc"), options);
  const named = /^BFCL_v\d+_(multi_turn\w*)\.jsonl?$/.exec(basename(file))?.[1];
  return readMultiTurnFile(
    file,
    options.answerFile ?? join(folder, "possible_answer", basename(file)),
    named,
    docs,
  );
}

/** Class -> its function docs, read from the folder on first use. */
function functionDocs(folder: string, options: LoadMultiTurnOptions): (className: string) => FunctionDoc[] {
  const docFiles = { ...BFCL_FUNC_DOC_FILES, ...(options.funcDocFiles ?? {}) };
  const docCache = new Map<string, FunctionDoc[]>();
  return (className: string): FunctionDoc[] => {
    // A class of your own has its docs in the file named after it (NotesAPI -> notes_api.json).
    const fileName = docFiles[className] ?? `${snakeCase(className)}.json`;
    let docs = docCache.get(fileName);
    if (!docs) {
      const file = join(folder, fileName);
      if (!existsSync(file))
        throw new TerrariumError("FILE_UNREADABLE", `no function docs for ${className}`, { where: { file } });
      docs = jsonLines(file).map(({ value }) => value) as unknown as FunctionDoc[];
      docCache.set(fileName, docs);
    }
    return docs;
  };
}

function readMultiTurnFile(
  file: string,
  answerFile: string,
  category: string | undefined,
  docsOf: (className: string) => FunctionDoc[],
): BfclMultiTurnItem[] {
  if (!existsSync(file))
    throw new TerrariumError("FILE_UNREADABLE", "no such BFCL multi-turn file", { where: { file } });
  if (!existsSync(answerFile))
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `no possible answers for ${category !== undefined ? `"${category}"` : basename(file)}`,
      { where: { file: answerFile } },
    );
  const answers = new Map<string, string[][]>();
  for (const { value } of jsonLines(answerFile))
    answers.set(value.id as string, value.ground_truth as string[][]);
  const items: BfclMultiTurnItem[] = [];
  for (const { value: line, text } of jsonLines(file)) {
    const id = String(line.id);
    const where = { file };
    const involvedClasses = line.involved_classes as string[] | undefined;
    const question = line.question as BfclMultiTurnItem["question"] | undefined;
    if (!Array.isArray(involvedClasses) || !Array.isArray(question))
      throw new TerrariumError("INVALID_INPUT", `${id}: not a multi-turn item (involved_classes, question)`, {
        where,
      });
    const groundTruth = answers.get(id);
    if (!groundTruth)
      throw new TerrariumError("INVALID_INPUT", `${id}: no possible answer`, {
        where: { file: answerFile },
      });
    const functions = involvedClasses.flatMap((className) => docsOf(className));
    const missedFunctions: Record<number, FunctionDoc[]> = {};
    const missed = (line.missed_function ?? {}) as Record<string, string[]>;
    for (const [turn, names] of Object.entries(missed)) {
      const withheld: FunctionDoc[] = [];
      for (const name of names) {
        const at = functions.findIndex((doc) => doc.name === name);
        if (at < 0) continue;
        withheld.push(functions[at] as FunctionDoc);
        functions.splice(at, 1);
      }
      missedFunctions[Number(turn)] = withheld;
    }
    // BFCL reads the flag off the id's category (`multi_turn_long_context_3` -> multi_turn_long_context).
    const idCategory = id.includes("_") ? id.slice(0, id.lastIndexOf("_")) : (category ?? id);
    items.push({
      id,
      category: category ?? idCategory,
      question,
      initialConfig: (line.initial_config ?? {}) as Record<string, unknown>,
      involvedClasses,
      functions,
      missedFunctions,
      groundTruth,
      longContext: idCategory.includes("long_context") || idCategory.includes("composite"),
      ...(Array.isArray(line.path) ? { path: line.path as string[] } : {}),
      sourceLine: text,
    });
  }
  return items;
}

/** How the item's backends are built (the configuration read by Python from the item's line when there is one). */
export function worldSpecOf(item: BfclMultiTurnItem): BfclWorldSpec {
  return {
    classes: item.involvedClasses,
    config: item.initialConfig,
    longContext: item.longContext,
    ...(item.sourceLine !== undefined
      ? { configSource: { json: item.sourceLine, key: "initial_config" } }
      : {}),
    floatParameters: floatParameters(allFunctions(item)),
  };
}

/** Per function, its parameters the docs type as float (or as a list of floats). */
export function floatParameters(
  docs: readonly FunctionDoc[],
): Record<string, Record<string, "float" | "items">> {
  const result: Record<string, Record<string, "float" | "items">> = {};
  for (const doc of docs) {
    const properties = (doc.parameters?.properties ?? {}) as Record<
      string,
      { type?: string; items?: { type?: string } }
    >;
    const floats: Record<string, "float" | "items"> = {};
    for (const [name, schema] of Object.entries(properties)) {
      if (schema?.type === "float") floats[name] = "float";
      else if (schema?.type === "array" && schema.items?.type === "float") floats[name] = "items";
    }
    if (Object.keys(floats).length > 0) result[doc.name] = floats;
  }
  return result;
}

/** All the item's functions (offered and withheld). */
export function allFunctions(item: BfclMultiTurnItem): FunctionDoc[] {
  return [...item.functions, ...Object.values(item.missedFunctions).flat()];
}

/** The file's JSON lines (blank lines skipped), each with its text. */
function jsonLines(file: string): Array<{ value: Record<string, unknown>; text: string }> {
  const lines: Array<{ value: Record<string, unknown>; text: string }> = [];
  for (const [index, text] of readFileSync(file, "utf8").split("\n").entries()) {
    if (text.trim() === "") continue;
    try {
      lines.push({ value: JSON.parse(text) as Record<string, unknown>, text });
    } catch (error) {
      throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
        where: { file, line: index + 1 },
      });
    }
  }
  return lines;
}
