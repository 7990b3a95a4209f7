import { readFileSync } from "node:fs";
import { join } from "node:path";

/** A copy of the BFCL v3 subset from shared/datasets (see its NOTICE). */
export const BFCL_DIR = join(import.meta.dirname, "..", "fixtures", "bfcl");

export interface BfclQuestion {
  id: string;
  function: unknown[];
}

export interface BfclAnswer {
  id: string;
  ground_truth: Array<Record<string, Record<string, unknown[]>>>;
}

export function readJsonLines<T>(file: string): T[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
}

export function bfclCategory(category: string): Array<{ question: BfclQuestion; answer: BfclAnswer }> {
  const questions = readJsonLines<BfclQuestion>(join(BFCL_DIR, `BFCL_v3_${category}.json`));
  const answers = new Map(
    readJsonLines<BfclAnswer>(join(BFCL_DIR, "possible_answer", `BFCL_v3_${category}.json`)).map((a) => [
      a.id,
      a,
    ]),
  );
  return questions.map((question) => {
    const answer = answers.get(question.id);
    if (!answer) throw new Error(`no possible answer for ${question.id}`);
    return { question, answer };
  });
}

/**
 * One concrete value from BFCL's lists of acceptable values: the first one; `""` means "leave the
 * parameter out" (returned as undefined). For object parameters each acceptable value is an object whose
 * fields are again lists of acceptable values, resolved the same way.
 */
export function firstAcceptable(acceptable: unknown[]): unknown {
  const first = acceptable[0];
  if (first === "") return undefined;
  return resolveNested(first);
}

function resolveNested(value: unknown): unknown {
  // Objects inside lists are written the same way (fields as lists of acceptable values).
  if (Array.isArray(value)) return value.map(resolveNested);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    const resolved = Array.isArray(field) ? firstAcceptable(field) : resolveNested(field);
    if (resolved !== undefined) out[key] = resolved;
  }
  return out;
}

/** The ground-truth calls of one BFCL answer, with concrete arguments. */
export function groundTruthCalls(
  answer: BfclAnswer,
): Array<{ name: string; arguments: Record<string, unknown> }> {
  return answer.ground_truth.map((entry) => {
    const [name, params] = Object.entries(entry)[0] as [string, Record<string, unknown[]>];
    const args: Record<string, unknown> = {};
    for (const [param, acceptable] of Object.entries(params)) {
      const value = firstAcceptable(acceptable);
      if (value !== undefined) args[param] = value;
    }
    return { name, arguments: args };
  });
}
