import { readFileSync } from "node:fs";
import { type BatchErrorKind, ErrorTally } from "../../core/error-tally.js";
import { TerrariumError } from "../../core/errors.js";
import { type AstCall, checkItem } from "./ast-checker.js";
import {
  assertSupportedCategories,
  type BfclItem,
  groupedOverall,
  loadBfcl,
  meanAccuracy,
  tallyCategories,
} from "./data.js";
import { scoreMultiTurn } from "./multi-turn-checker.js";
import { isMultiTurnCategory, loadBfclMultiTurn } from "./multi-turn-data.js";
import { parseArgumentsPreservingFloats, parseJsonPreservingFloats } from "./py-values.js";

export interface ItemScore {
  id: string;
  category: string;
  valid: boolean;
  errorType?: string;
  error?: string;
  /**
   * The item errored rather than being judged on an answer: its result records an error (the model
   * call failed), or the checker could not give a verdict. It counts as wrong, as in BFCL.
   */
  errored?: true;
}

/** The checker's error types that are no verdict (BFCL's checker would raise): the item errored. */
export const ERRORED_TYPES: ReadonlySet<string> = new Set(["checker:exception"]);

export interface BfclScore {
  schemaVersion: number;
  /** Per category: items, correct, errored (counted wrong, as BFCL does) and accuracy over all items. */
  categories: Record<string, { items: number; correct: number; errored: number; accuracy: number }>;
  /** Unweighted mean of the category accuracies, as BFCL averages categories. */
  overall: number;
  /** The Gecko paper's overall: the mean of the non-live, live and multi-turn group means. */
  groupedOverall: number;
  /** Items that errored (see `ItemScore.errored`): part of every accuracy, as wrong answers. */
  errored: number;
  /** Each kind of error (the item's error type) with its count and first message. */
  errorKinds: BatchErrorKind[];
  items: ItemScore[];
  /** Items of the categories with no line in the results. */
  missing: number;
  /** How items with no result were treated: scored as making no call, or left out (`onlyPresent`). */
  missingTreatment: "scored as no call" | "left out";
}

/**
 * Scores calls (by item id) with the AST checker. An item with no line in the results counts as making no
 * call (BFCL's own treatment of an empty answer), or, with `onlyPresent`, is left out; either way the
 * number of such items is reported.
 */
export function scoreBfcl(
  items: BfclItem[],
  callsById: Map<string, AstCall[]>,
  options: {
    onlyPresent?: boolean;
    underscoreToDot?: boolean;
    /** Items whose result records an error (the model call failed), by id, with its message. */
    errors?: ReadonlyMap<string, string>;
  } = {},
): BfclScore {
  const errors = options.errors ?? new Map<string, string>();
  const present = (item: BfclItem) => callsById.has(item.id) || errors.has(item.id);
  const missing = items.filter((item) => !present(item)).length;
  const scored = options.onlyPresent ? items.filter(present) : items;
  const scores: ItemScore[] = scored.map((item) => {
    const failed = errors.get(item.id);
    if (failed !== undefined)
      return {
        id: item.id,
        category: item.category,
        valid: false,
        errorType: "inference_error",
        error: failed,
        errored: true,
      };
    const result = checkItem(
      item.category,
      item.functions,
      item.answer,
      callsById.get(item.id) ?? [],
      options.underscoreToDot === undefined ? {} : { underscoreToDot: options.underscoreToDot },
    );
    return result.valid
      ? { id: item.id, category: item.category, valid: true }
      : {
          id: item.id,
          category: item.category,
          valid: false,
          errorType: result.errorType,
          error: result.error,
          ...(ERRORED_TYPES.has(result.errorType) ? { errored: true as const } : {}),
        };
  });
  const { categories, overall } = tallyCategories(scores);
  return {
    schemaVersion: 2,
    categories,
    overall,
    groupedOverall: groupedOverall(accuracyByCategory(categories)),
    ...erroredOf(scores),
    items: scores,
    missing,
    missingTreatment: options.onlyPresent ? "left out" : "scored as no call",
  };
}

/** One line of a results file: single-turn `calls`, or multi-turn `turns` (BFCL's `result` too). */
export interface ResultRecord {
  calls?: AstCall[];
  turns?: unknown;
  /** The model call that should have given the result failed (`error`, or BFCL's "Error during inference" text). */
  error?: string;
}

/** The errored items of scores, counted and grouped by error type. */
function erroredOf(scores: readonly ItemScore[]): Pick<BfclScore, "errored" | "errorKinds"> {
  const tally = new ErrorTally();
  for (const score of scores)
    if (score.errored) tally.add(score.id, score.errorType ?? "error", score.error ?? "");
  return { errored: tally.errored, errorKinds: tally.kinds() };
}

/**
 * Reads a results file: one `{"id", "calls": [{"name", "arguments"}]}` (single-turn) or `{"id", "turns":
 * [[calls…]…]}` (multi-turn) per line. Numbers keep whether they were written as floats (`1.0` is not an
 * int to BFCL); arguments given as text that is not JSON stay text, so the item fails as an undecodable
 * answer does in BFCL instead of stopping the scoring.
 */
export function readBfclResults(file: string): Map<string, ResultRecord> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the results (no such file)", {
      where: { file },
    });
  }
  const results = new Map<string, ResultRecord>();
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    const where = { file, line: index + 1 };
    let record: Record<string, unknown>;
    try {
      record = parseJsonPreservingFloats(line) as Record<string, unknown>;
    } catch (error) {
      throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, { where });
    }
    const calls = record?.calls;
    const turns = record?.turns ?? record?.result;
    // A failed inference: terrarium's `error`, or BFCL's result text for it.
    const error =
      typeof record?.error === "string"
        ? record.error
        : typeof record?.result === "string" && record.result.startsWith("Error during inference")
          ? record.result
          : undefined;
    const callsOk =
      Array.isArray(calls) &&
      calls.every((call) => call !== null && typeof call === "object" && typeof call.name === "string");
    if (typeof record?.id !== "string" || (!callsOk && !Array.isArray(turns) && error === undefined)) {
      throw new TerrariumError(
        "INVALID_INPUT",
        'each line must be {"id": string, "calls": [{"name", "arguments"}, ...]} or, multi-turn, {"id": string, "turns": [[calls...], ...]}, or {"id": string, "error": "why the model gave no result"}',
        { where },
      );
    }
    results.set(record.id, {
      ...(error !== undefined ? { error } : {}),
      ...(callsOk
        ? {
            calls: (calls as Array<{ name: string; arguments?: unknown }>).map((call) => ({
              name: call.name,
              arguments: (typeof call.arguments === "string"
                ? decodeArguments(call.arguments)
                : (call.arguments ?? {})) as Record<string, unknown>,
            })),
          }
        : {}),
      ...(Array.isArray(turns) ? { turns } : {}),
    });
  });
  return results;
}

function decodeArguments(text: string): unknown {
  try {
    return parseArgumentsPreservingFloats(text);
  } catch {
    return text;
  }
}

/**
 * Scores a results file's records on BFCL categories, single- and multi-turn together: single-turn items
 * with the AST checker, multi-turn items with BFCL's multi-turn checker on its Python backends (needed
 * then, and checked before anything runs). Categories terrarium cannot score are refused by name.
 */
export async function scoreBfclResults(
  data: string,
  categories: string[],
  results: Map<string, ResultRecord>,
  options: { onlyPresent?: boolean; underscoreToDot?: boolean; backends?: string } = {},
): Promise<BfclScore> {
  assertSupportedCategories(categories);
  const multi = categories.filter(isMultiTurnCategory);
  const single = categories.filter((category) => !isMultiTurnCategory(category));
  if (multi.length > 0 && !options.backends) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `scoring ${multi.join(", ")} runs the calls on BFCL's Python backends: give --backends <dir>`,
    );
  }
  const calls = new Map<string, AstCall[]>();
  const errors = new Map<string, string>();
  for (const [id, record] of results) {
    if (record.error !== undefined) errors.set(id, record.error);
    else if (record.calls) calls.set(id, record.calls);
  }
  const singleScore = scoreBfcl(single.length ? loadBfcl(data, single) : [], calls, { ...options, errors });
  if (multi.length === 0) return singleScore;
  const turns = new Map<string, unknown>();
  for (const [id, record] of results)
    if (record.error === undefined && record.turns !== undefined) turns.set(id, record.turns);
  const multiItems = loadBfclMultiTurn(data, multi);
  const has = (id: string) => turns.has(id) || errors.has(id);
  const present = options.onlyPresent ? multiItems.filter((item) => has(item.id)) : multiItems;
  const multiScore = await scoreMultiTurn(present, turns, { dir: options.backends as string }, errors);
  const items = [...singleScore.items, ...multiScore.items];
  const categoriesScored = { ...singleScore.categories, ...multiScore.categories };
  return {
    schemaVersion: 2,
    categories: categoriesScored,
    overall: meanAccuracy(categoriesScored),
    groupedOverall: groupedOverall(accuracyByCategory(categoriesScored)),
    ...erroredOf(items),
    items,
    missing: singleScore.missing + multiItems.filter((item) => !has(item.id)).length,
    missingTreatment: singleScore.missingTreatment,
  };
}

function accuracyByCategory(categories: BfclScore["categories"]): Record<string, number> {
  return Object.fromEntries(Object.entries(categories).map(([name, entry]) => [name, entry.accuracy]));
}
