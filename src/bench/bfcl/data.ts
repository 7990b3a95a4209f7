import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import type { FunctionDoc, PossibleAnswer } from "./ast-checker.js";
import { MULTI_TURN_CATEGORIES } from "./multi-turn-data.js";
import { parseJsonPreservingFloats } from "./py-values.js";

export interface BfclItem {
  id: string;
  category: string;
  /** The user turns (single-turn items have one). */
  question: Array<Array<{ role: string; content: string }>>;
  functions: FunctionDoc[];
  answer?: PossibleAnswer;
}

export const SINGLE_TURN_CATEGORIES = [
  "simple",
  "multiple",
  "parallel",
  "parallel_multiple",
  "java",
  "javascript",
  // BFCL v4's names for the same three (its data files use them).
  "simple_python",
  "simple_java",
  "simple_javascript",
  "irrelevance",
  "live_simple",
  "live_multiple",
  "live_parallel",
  "live_parallel_multiple",
  "live_irrelevance",
  "live_relevance",
] as const;

/** Categories without a possible-answer file: scored on whether the model called anything. */
const NO_ANSWER_CATEGORIES = new Set(["irrelevance", "live_irrelevance", "live_relevance"]);

/**
 * Refuses, by name, categories terrarium cannot score the way BFCL does (executable, REST, SQL, memory,
 * web search, format sensitivity…), before any file is read or any model is called. A category is never
 * scored under another category's rules.
 */
export function assertSupportedCategories(
  categories: string[],
  supported: readonly string[] = [...SINGLE_TURN_CATEGORIES, ...MULTI_TURN_CATEGORIES],
): void {
  if (categories.length === 0)
    throw new TerrariumError("INVALID_INPUT", "no BFCL category given (--categories simple,multiple,…)");
  const unsupported = categories.filter((category) => !supported.includes(category));
  if (unsupported.length > 0) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `terrarium cannot score the BFCL categor${unsupported.length === 1 ? "y" : "ies"} ${unsupported.map((c) => `"${c}"`).join(", ")} as BFCL does; supported: ${supported.join(", ")}`,
    );
  }
}

/** BFCL's category groups, which the Gecko paper averages: non-live single-turn, live single-turn, multi-turn. */
export function categoryGroup(category: string): "non-live" | "live" | "multi-turn" {
  if (category.startsWith("multi_turn")) return "multi-turn";
  return category.startsWith("live_") ? "live" : "non-live";
}

/**
 * The overall accuracy as the Gecko paper's Table 3 computes it: the mean of each present group's mean
 * category accuracy (non-live, live, multi-turn).
 */
export function groupedOverall(accuracies: Record<string, number>): number {
  const groups = new Map<string, number[]>();
  for (const [category, accuracy] of Object.entries(accuracies)) {
    const group = categoryGroup(category);
    groups.set(group, [...(groups.get(group) ?? []), accuracy]);
  }
  const means = [...groups.values()].map((values) => values.reduce((a, b) => a + b, 0) / values.length);
  return means.length ? means.reduce((a, b) => a + b, 0) / means.length : 0;
}

/** The data file of a category: BFCL v3 names, or v4's where only those exist. */
export function categoryFile(folder: string, category: string, answers = false): string {
  const base = answers ? join(folder, "possible_answer") : folder;
  const candidates = [`BFCL_v3_${category}.json`, `BFCL_v4_${category}.json`].map((name) => join(base, name));
  return candidates.find((file) => existsSync(file)) ?? (candidates[0] as string);
}

/** Reads BFCL single-turn items of the given categories from a BFCL data folder (JSON Lines files). */
export function loadBfcl(folder: string, categories: string[]): BfclItem[] {
  assertSupportedCategories(categories, SINGLE_TURN_CATEGORIES);
  const items: BfclItem[] = [];
  for (const category of categories) {
    const file = categoryFile(folder, category);
    if (!existsSync(file)) {
      throw new TerrariumError(
        "FILE_UNREADABLE",
        `no BFCL file for category "${category}" (looked for BFCL_v3_${category}.json)`,
        { where: { file } },
      );
    }
    const answers = new Map<string, PossibleAnswer>();
    const answerFile = categoryFile(folder, category, true);
    if (existsSync(answerFile)) {
      for (const line of jsonLines(answerFile, { preserveFloats: true }))
        answers.set(line.id as string, line.ground_truth as PossibleAnswer);
    } else if (!NO_ANSWER_CATEGORIES.has(category)) {
      throw new TerrariumError("FILE_UNREADABLE", `no possible answers for "${category}"`, {
        where: { file: answerFile },
      });
    }
    for (const line of jsonLines(file)) {
      const answer = answers.get(line.id as string);
      items.push({
        id: line.id as string,
        category,
        question: line.question as BfclItem["question"],
        functions: line.function as FunctionDoc[],
        ...(answer ? { answer } : {}),
      });
    }
  }
  return items;
}

/**
 * Reads a JSON Lines file. `preserveFloats` keeps whether a number was written as a float (BFCL's possible
 * answers: `1.0` is not an int there); other readers get plain numbers.
 */
export function jsonLines(
  file: string,
  options: { preserveFloats?: boolean } = {},
): Array<Record<string, unknown>> {
  const parse = options.preserveFloats ? parseJsonPreservingFloats : JSON.parse;
  const records: Array<Record<string, unknown>> = [];
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, index) => {
      if (line.trim() === "") return;
      try {
        records.push(parse(line) as Record<string, unknown>);
      } catch (error) {
        throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
          where: { file, line: index + 1 },
        });
      }
    });
  return records;
}

/** Per category: items, correct ones, errored ones (counted wrong, as BFCL counts them) and accuracy. */
export type CategoryTally = Record<
  string,
  { items: number; correct: number; errored: number; accuracy: number }
>;

/**
 * Items, correct and errored ones per category, each category's accuracy over all its items, and their
 * unweighted mean (BFCL's).
 */
export function tallyCategories(
  scores: ReadonlyArray<{ category: string; valid: boolean; errored?: boolean }>,
): {
  categories: CategoryTally;
  overall: number;
} {
  const categories: CategoryTally = {};
  for (const score of scores) {
    const entry = categories[score.category] ?? { items: 0, correct: 0, errored: 0, accuracy: 0 };
    categories[score.category] = entry;
    entry.items++;
    if (score.valid) entry.correct++;
    if (score.errored) entry.errored++;
  }
  for (const entry of Object.values(categories))
    entry.accuracy = entry.items ? entry.correct / entry.items : 0;
  return { categories, overall: meanAccuracy(categories) };
}

/** The unweighted mean of the categories' accuracies. */
export function meanAccuracy(categories: CategoryTally): number {
  const accuracies = Object.values(categories).map((entry) => entry.accuracy);
  return accuracies.length ? accuracies.reduce((a, b) => a + b, 0) / accuracies.length : 0;
}
