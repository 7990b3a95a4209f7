import type { JsonSchema } from "../catalog/tool.js";
import { SchemaCompiler } from "../validate/ajv.js";
import { toViolations } from "../validate/violations.js";

export type JsonCheck = { ok: true; value: unknown } | { ok: false; problems: string[] };

/**
 * Reads a JSON value out of a model's text: the whole text, else the inside of a ```json fence, else the
 * first balanced {...} or [...] in it (models like to add a sentence around their JSON).
 */
export function extractJson(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  const candidates = [text.trim()];
  const fence = /```(?:json)?\s*\n?([\s\S]*?)```/i.exec(text);
  if (fence?.[1]) candidates.push(fence[1].trim());
  const balanced = firstBalanced(text);
  if (balanced) candidates.push(balanced);
  for (const candidate of candidates) {
    if (candidate === "") continue;
    try {
      return { ok: true, value: JSON.parse(candidate) };
    } catch {
      // try the next reading
    }
  }
  if (text.trim() === "") return { ok: false, reason: "the answer was empty" };
  try {
    JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `the answer is not valid JSON (${(error as Error).message})` };
  }
  return { ok: false, reason: "the answer is not valid JSON" };
}

function firstBalanced(text: string): string | undefined {
  const start = text.search(/[[{]/);
  if (start < 0) return undefined;
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i] as string;
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === "{" || char === "[") stack.push(char === "{" ? "}" : "]");
    else if (char === "}" || char === "]") {
      if (stack.pop() !== char) return undefined;
      if (stack.length === 0) return text.slice(start, i + 1);
    }
  }
  return undefined;
}

/** Checks a model's text against a schema; problems are worded for the repair prompt. */
export class JsonAnswerChecker {
  constructor(private readonly compiler: SchemaCompiler = new SchemaCompiler()) {}

  check(text: string, schema: JsonSchema): JsonCheck {
    const parsed = extractJson(text);
    if (!parsed.ok) return { ok: false, problems: [parsed.reason] };
    const validate = this.compiler.compile(schema);
    if (validate(parsed.value)) return { ok: true, value: parsed.value };
    const problems = toViolations(validate.errors ?? [], parsed.value).map((v) =>
      v.message.replace(/^the arguments/, "the answer"),
    );
    return { ok: false, problems };
  }
}
