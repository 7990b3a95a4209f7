import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import type { FunctionDoc, PossibleAnswer } from "./ast-checker.js";

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
  "irrelevance",
] as const;

/** Reads BFCL v3 items of the given categories from a BFCL data folder (JSON Lines files). */
export function loadBfcl(folder: string, categories: string[]): BfclItem[] {
  const items: BfclItem[] = [];
  for (const category of categories) {
    const file = join(folder, `BFCL_v3_${category}.json`);
    if (!existsSync(file)) {
      throw new TerrariumError(
        "FILE_UNREADABLE",
        `no BFCL file for category "${category}" (looked for BFCL_v3_${category}.json)`,
        { where: { file } },
      );
    }
    const answers = new Map<string, PossibleAnswer>();
    const answerFile = join(folder, "possible_answer", `BFCL_v3_${category}.json`);
    if (existsSync(answerFile)) {
      for (const line of jsonLines(answerFile))
        answers.set(line.id as string, line.ground_truth as PossibleAnswer);
    } else if (category !== "irrelevance") {
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

function jsonLines(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, index) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch (error) {
        throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
          where: { file, line: index + 1 },
        });
      }
    });
}
