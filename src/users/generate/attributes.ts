import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { isMap, isScalar, LineCounter, parseDocument as parseYamlDocument } from "yaml";
import { z } from "zod";
import { readDocument } from "../../catalog/read-document.js";
import { TerrariumError } from "../../core/errors.js";
import { formatPointer } from "../../core/json-pointer.js";
import type { Random } from "../../core/random.js";

/** Limits of an attributes file. */
export const ATTRIBUTE_LIMITS = {
  maxFileBytes: 1024 * 1024,
  /** Categories (a scenario's profile holds at most 256 attributes). */
  maxCategories: 256,
  maxValuesPerCategory: 1000,
  maxValueChars: 500,
} as const;

/** One value a category can take. */
export type AttributeValue = string | number | boolean;

/** The normalised form: every category with its values and one weight per value. */
export type AttributeCategories = Record<string, { values: AttributeValue[]; weights: number[] }>;

/**
 * What a file may say: `category: [values…]` or `category: {values: […], weights?: […]}`. Category names
 * follow the scenario format's profile attribute names, so a sample is always a valid profile.
 */
export type AttributeCategoriesInput = Record<
  string,
  AttributeValue[] | { values: AttributeValue[]; weights?: number[] }
>;

const CategoryName = /^[A-Za-z][A-Za-z0-9_ -]{0,63}$/;

const ValueSchema = z.union(
  [
    z
      .string()
      .trim()
      .min(1, "a value must not be empty")
      .max(
        ATTRIBUTE_LIMITS.maxValueChars,
        `a value is longer than ${ATTRIBUTE_LIMITS.maxValueChars} characters`,
      ),
    z.number().finite(),
    z.boolean(),
  ],
  { error: "a value is a non-empty string, a number or a boolean" },
);

const ValuesSchema = z
  .array(ValueSchema, { error: "values must be a list" })
  .min(1, "a category needs at least one value")
  .max(
    ATTRIBUTE_LIMITS.maxValuesPerCategory,
    `a category has more than ${ATTRIBUTE_LIMITS.maxValuesPerCategory} values`,
  );

const WeightedSchema = z.strictObject(
  {
    values: ValuesSchema,
    weights: z
      .array(
        z.number({ error: "a weight must be a number" }).finite().min(0, "a weight must not be negative"),
        { error: "weights must be a list of numbers" },
      )
      .optional(),
  },
  { error: "a category is a list of values or {values, weights?}" },
);

const CategorySchema = z.union([ValuesSchema, WeightedSchema], {
  error: "a category is a list of values or {values, weights?}",
});

/** Checks and normalises attribute categories (from a parsed file or given in code); errors name the place. */
export function parseAttributeCategories(document: unknown, file?: string): AttributeCategories {
  const fail = (pointer: string, message: string): never => {
    throw new TerrariumError("CONFIG_INVALID", `invalid attributes: ${message}`, {
      where: { ...(file ? { file } : {}), pointer },
    });
  };
  if (document === null || typeof document !== "object" || Array.isArray(document)) {
    fail("", "the file must be a map of categories (category: [values…] or {values, weights})");
  }
  const entries = Object.entries(document as Record<string, unknown>);
  if (entries.length === 0) fail("", "there are no categories");
  if (entries.length > ATTRIBUTE_LIMITS.maxCategories) {
    fail("", `${entries.length} categories, more than ${ATTRIBUTE_LIMITS.maxCategories}`);
  }
  const categories: AttributeCategories = {};
  for (const [name, raw] of entries) {
    const at = formatPointer([name]);
    if (name === "__proto__" || !CategoryName.test(name)) {
      fail(at, `category "${name}": names are 1-64 letters, digits, '_', '-' or ' ', starting with a letter`);
    }
    // A list is checked as values, anything else as {values, weights}: errors then point at the element.
    const parsed = (Array.isArray(raw) ? ValuesSchema : CategorySchema).safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0] as z.core.$ZodIssue;
      const path = issue.path.map((token) => (typeof token === "symbol" ? String(token) : token));
      fail(formatPointer([name, ...path]), `${name}: ${issue.message}`);
    }
    const value = parsed.data as AttributeValue[] | { values: AttributeValue[]; weights?: number[] };
    const values = Array.isArray(value) ? value : value.values;
    const weights = Array.isArray(value) || !value.weights ? values.map(() => 1) : value.weights;
    const valuesAt = Array.isArray(value) ? [name] : [name, "values"];
    const seen = new Map<string, number>();
    values.forEach((item, index) => {
      const key = JSON.stringify(typeof item === "string" ? item.trim().toLowerCase() : item);
      const first = seen.get(key);
      if (first !== undefined) {
        fail(
          formatPointer([...valuesAt, index]),
          `${name}: the value ${JSON.stringify(item)} is listed twice`,
        );
      }
      seen.set(key, index);
    });
    if (weights.length !== values.length) {
      fail(
        formatPointer([name, "weights"]),
        `${name}: ${weights.length} weights for ${values.length} values (give one weight per value)`,
      );
    }
    if (weights.reduce((sum, weight) => sum + weight, 0) <= 0) {
      fail(formatPointer([name, "weights"]), `${name}: the weights add up to 0`);
    }
    categories[name] = { values: [...values], weights: [...weights] };
  }
  return categories;
}

/** Reads an attributes file (YAML or JSON); errors give the file, the JSON Pointer and the line. */
export function loadAttributeCategories(file: string): AttributeCategories {
  const path = resolve(file);
  let size: number;
  try {
    size = statSync(path).size;
  } catch (error) {
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `cannot read the attributes file (${(error as Error).message})`,
      {
        where: { file: path },
      },
    );
  }
  if (size > ATTRIBUTE_LIMITS.maxFileBytes) {
    throw new TerrariumError(
      "CONFIG_INVALID",
      `the attributes file is ${size} bytes, more than ${ATTRIBUTE_LIMITS.maxFileBytes}`,
      { where: { file: path } },
    );
  }
  const document = readDocument(path);
  try {
    return parseAttributeCategories(document, path);
  } catch (error) {
    if (
      error instanceof TerrariumError &&
      error.where.pointer !== undefined &&
      error.where.line === undefined
    ) {
      const line = lineOf(path, error.where.pointer);
      if (line !== undefined) throw error.locatedIn({ line });
    }
    throw error;
  }
}

/** The 1-based line of the node at `pointer` (a key's own line where the key exists), when it can be found. */
function lineOf(file: string, pointer: string): number | undefined {
  try {
    const lineCounter = new LineCounter();
    const document = parseYamlDocument(readFileSync(file, "utf8"), { lineCounter, uniqueKeys: false });
    const tokens = pointer
      .split("/")
      .slice(1)
      .map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~"));
    const keys = tokens.map((token) => (/^\d+$/.test(token) ? Number(token) : token));
    for (let length = keys.length; length >= 0; length -= 1) {
      const node = length === 0 ? document.contents : document.getIn(keys.slice(0, length), true);
      const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
      if (range) return lineCounter.linePos(range[0]).line;
      if (length === 1) {
        const root = document.contents;
        if (isMap(root)) {
          const pair = root.items.find((item) => isScalar(item.key) && String(item.key.value) === keys[0]);
          const keyRange = isScalar(pair?.key) ? pair.key.range : undefined;
          if (keyRange) return lineCounter.linePos(keyRange[0]).line;
        }
      }
    }
  } catch {
    // a line is a nicety: the file and pointer still say where
  }
  return undefined;
}

/** Draws one value per category (weighted), categories in name order so the draw does not depend on key order. */
export function sampleAttributes(
  categories: AttributeCategories,
  random: Random,
): Record<string, AttributeValue> {
  const sample: Record<string, AttributeValue> = {};
  for (const name of Object.keys(categories).sort()) {
    const { values, weights } = categories[name] as AttributeCategories[string];
    const total = weights.reduce((sum, weight) => sum + weight, 0);
    let point = random.next() * total;
    let last = weights.length - 1;
    while (last > 0 && (weights[last] as number) <= 0) last -= 1;
    let chosen = values[last] as AttributeValue;
    for (let index = 0; index < values.length; index++) {
      point -= weights[index] as number;
      if (point < 0 && (weights[index] as number) > 0) {
        chosen = values[index] as AttributeValue;
        break;
      }
    }
    sample[name] = chosen;
  }
  return sample;
}

/** How many distinct samples the categories allow (capped at Number.MAX_SAFE_INTEGER). */
export function sampleSpace(categories: AttributeCategories): number {
  let total = 1;
  for (const { weights } of Object.values(categories)) {
    total *= weights.filter((weight) => weight > 0).length;
    if (total > Number.MAX_SAFE_INTEGER) return Number.MAX_SAFE_INTEGER;
  }
  return total;
}
