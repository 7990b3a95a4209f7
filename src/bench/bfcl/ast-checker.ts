/**
 * A TypeScript implementation of BFCL's AST checker for single-turn categories (simple, multiple,
 * parallel, parallel_multiple) and irrelevance. A call passes when its function name matches, every
 * required parameter is present, every parameter it gives is in the function doc and in the possible
 * answer, each value has the documented type (an int is accepted for a float), and each value is among the
 * acceptable ones: strings compared case-insensitively without spaces and `,./-_*^`, lists element by
 * element, dicts field by field. A parameter left out passes only when "" is among its acceptable values.
 * Parallel calls may come in any order.
 */

export type PossibleAnswer = Array<Record<string, Record<string, unknown[]>>>;

export interface FunctionDoc {
  name: string;
  parameters?: { properties?: Record<string, Record<string, unknown>>; required?: string[] };
}

export interface AstCall {
  name: string;
  arguments: Record<string, unknown>;
}

export type CheckResult = { valid: true } | { valid: false; errorType: string; error: string };

const OK: CheckResult = { valid: true };
const fail = (errorType: string, error: string): CheckResult => ({ valid: false, errorType, error });

/** Checks the calls a model made for one BFCL item. */
export function checkItem(
  category: string,
  functions: FunctionDoc[],
  answer: PossibleAnswer | undefined,
  calls: AstCall[],
): CheckResult {
  if (category.includes("irrelevance")) {
    return calls.length === 0
      ? OK
      : fail(
          "irrelevance:called",
          `no function fits this question, but the model called ${calls.map((c) => c.name).join(", ")}`,
        );
  }
  if (!answer) return fail("data:no_answer", "the item has no possible answer");
  if (category === "simple" || category === "multiple") {
    if (calls.length !== 1) return fail("count:wrong", `expected exactly one call, got ${calls.length}`);
    const expected = answer[0] as Record<string, Record<string, unknown[]>>;
    return checkCall(functions, expected, calls[0] as AstCall);
  }
  // parallel and parallel_multiple: the same number of calls, matched in any order.
  if (calls.length !== answer.length)
    return fail("parallel:count", `expected ${answer.length} calls, got ${calls.length}`);
  const used = new Set<number>();
  let firstFailure: CheckResult | undefined;
  const match = (index: number): boolean => {
    if (index === answer.length) return true;
    for (let c = 0; c < calls.length; c++) {
      if (used.has(c)) continue;
      const result = checkCall(
        functions,
        answer[index] as Record<string, Record<string, unknown[]>>,
        calls[c] as AstCall,
      );
      if (!result.valid) {
        firstFailure ??= result;
        continue;
      }
      used.add(c);
      if (match(index + 1)) return true;
      used.delete(c);
    }
    return false;
  };
  if (match(0)) return OK;
  return fail(
    "parallel:no_match",
    `the calls do not match the expected ones in any order (${firstFailure && !firstFailure.valid ? firstFailure.error : "no candidate"})`,
  );
}

/** Checks one call against one expected call (`{function name: {param: acceptable values}}`). */
export function checkCall(
  functions: FunctionDoc[],
  expected: Record<string, Record<string, unknown[]>>,
  call: AstCall,
): CheckResult {
  const [expectedName, params] = Object.entries(expected)[0] as [string, Record<string, unknown[]>];
  if (!sameName(call.name, expectedName))
    return fail(
      "simple_function_checker:wrong_func_name",
      `expected a call to ${expectedName}, got ${call.name}`,
    );
  const doc = functions.find((f) => f.name === expectedName);
  if (!doc) return fail("data:no_doc", `no function doc for ${expectedName}`);
  const properties = doc.parameters?.properties ?? {};
  const args = call.arguments ?? {};
  for (const required of doc.parameters?.required ?? []) {
    if (!(required in args))
      return fail("simple_function_checker:missing_required", `missing required parameter "${required}"`);
  }
  for (const [name, value] of Object.entries(args)) {
    const schema = properties[name];
    if (!schema)
      return fail(
        "simple_function_checker:unexpected_param",
        `parameter "${name}" is not in the function doc`,
      );
    const acceptable = params[name];
    if (!acceptable)
      return fail(
        "simple_function_checker:unexpected_param",
        `parameter "${name}" is not expected for this question`,
      );
    const typeProblem = typeMismatch(value, schema);
    if (typeProblem) return fail("type_error:simple", `"${name}": ${typeProblem}`);
    if (!acceptable.some((candidate) => valuesMatch(value, candidate))) {
      return fail(
        "value_error",
        `"${name}" is ${JSON.stringify(value)}, not one of ${JSON.stringify(acceptable.filter((v) => v !== ""))}`,
      );
    }
  }
  for (const [name, acceptable] of Object.entries(params)) {
    if (!(name in args) && !acceptable.includes(""))
      return fail("simple_function_checker:missing_optional", `"${name}" is missing and has no default`);
  }
  return OK;
}

/** Providers may turn dots into underscores; BFCL accepts either. */
function sameName(actual: string, expected: string): boolean {
  return actual === expected || actual === expected.replace(/\./g, "_");
}

const NUMBER_TYPES = new Set(["float", "double", "number", "Float", "Double"]);
const INTEGER_TYPES = new Set(["integer", "int", "long", "short", "byte", "Integer", "Long"]);
const LIST_TYPES = new Set(["array", "tuple", "list", "ArrayList", "Array", "Set"]);
const DICT_TYPES = new Set(["dict", "object", "HashMap", "Hashtable", "Map"]);
const STRING_TYPES = new Set(["string", "str", "String", "char"]);
const BOOLEAN_TYPES = new Set(["boolean", "bool", "Boolean"]);

function typeMismatch(value: unknown, schema: Record<string, unknown>): string | undefined {
  const type = schema.type as string | undefined;
  if (!type || type === "any") return undefined;
  if (NUMBER_TYPES.has(type))
    return typeof value === "number" ? undefined : `expected a number, got ${describe(value)}`;
  if (INTEGER_TYPES.has(type))
    return typeof value === "number" && Number.isInteger(value)
      ? undefined
      : `expected an integer, got ${describe(value)}`;
  if (STRING_TYPES.has(type))
    return typeof value === "string" ? undefined : `expected a string, got ${describe(value)}`;
  if (BOOLEAN_TYPES.has(type))
    return typeof value === "boolean" ? undefined : `expected a boolean, got ${describe(value)}`;
  if (DICT_TYPES.has(type))
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? undefined
      : `expected a dict, got ${describe(value)}`;
  if (LIST_TYPES.has(type)) {
    if (!Array.isArray(value)) return `expected a list, got ${describe(value)}`;
    const items = schema.items as Record<string, unknown> | undefined;
    if (items) {
      for (const item of value) {
        const problem = typeMismatch(item, items);
        if (problem) return `an item: ${problem}`;
      }
    }
  }
  return undefined;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a float";
  return `a ${typeof value === "object" ? "dict" : typeof value}`;
}

/** BFCL's string normalisation: lower case, without spaces and `,./-_*^`. */
export function normaliseString(text: string): string {
  return text.toLowerCase().replace(/[\s,./\-_*^]/g, "");
}

function valuesMatch(value: unknown, acceptable: unknown): boolean {
  if (typeof value === "string" && typeof acceptable === "string")
    return normaliseString(value) === normaliseString(acceptable);
  if (typeof value === "number" && typeof acceptable === "number") return value === acceptable;
  if (Array.isArray(value) && Array.isArray(acceptable)) {
    return (
      value.length === acceptable.length && value.every((item, index) => valuesMatch(item, acceptable[index]))
    );
  }
  if (isDict(value) && isDict(acceptable)) {
    // A dict's possible answer gives each field its own list of acceptable values ("" = may be left out).
    for (const [key, options] of Object.entries(acceptable)) {
      const list = Array.isArray(options) ? options : [options];
      if (!(key in value)) {
        if (!list.includes("")) return false;
        continue;
      }
      if (!list.some((option) => valuesMatch(value[key], option))) return false;
    }
    return Object.keys(value).every((key) => key in acceptable);
  }
  return value === acceptable;
}

function isDict(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
