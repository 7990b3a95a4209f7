import { Ajv2020, type Options, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { linearRegExpEngine, withPatternBudget } from "../catalog/linear-regex.js";
import type { JsonSchema } from "../catalog/tool.js";
import { hashJson } from "../core/canonical-json.js";
import { TerrariumError } from "../core/errors.js";
import { escapeToken } from "../core/json-pointer.js";

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
type AddFormats = (ajv: Ajv2020) => Ajv2020;
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ??
  (addFormatsModule as unknown as AddFormats);

/**
 * The Ajv options terrarium validates with: every error (not only the first), with the failing schema
 * attached so messages can describe what was expected; lenient about unknown keywords, because tool
 * schemas in the field carry annotations of all kinds (`optional`, `x-…`, `discriminator`). Only own
 * properties count, so arguments named `__proto__` or `constructor` are data like any other. Patterns
 * (`pattern`, `patternProperties`) run on a linear-time engine (linear-regex.ts), never on the
 * backtracking `RegExp`: a schema's pattern must not be able to stall the process.
 */
export const AJV_OPTIONS: Options = {
  allErrors: true,
  ownProperties: true,
  verbose: true,
  strict: false,
  allowUnionTypes: true,
  validateFormats: true,
  code: { regExp: linearRegExpEngine },
};

export function createAjv(options: Options = AJV_OPTIONS): Ajv2020 {
  // Whatever else a caller changes, patterns stay on the linear engine.
  const ajv = new Ajv2020({ ...options, code: { ...options.code, regExp: linearRegExpEngine } });
  addFormats(ajv);
  return ajv;
}

/**
 * Compiles schemas once and keeps them: by identity for repeated use of the same object, and by content
 * hash so that equal schemas met in different places (the same tool in many dataset lines) share code.
 */
export class SchemaCompiler {
  private readonly ajv: Ajv2020;
  private readonly byObject = new WeakMap<object, ValidateFunction>();
  private readonly byHash = new Map<string, ValidateFunction>();

  constructor(ajv: Ajv2020 = createAjv()) {
    this.ajv = ajv;
  }

  /** The compiled validator of `schema`; `where` locates the schema in errors. */
  compile(
    schema: JsonSchema,
    where: { file?: string; pointer?: string; tool?: string } = {},
  ): ValidateFunction {
    if (typeof schema === "object" && schema !== null) {
      const cached = this.byObject.get(schema);
      if (cached) return cached;
    }
    const key = hashJson(schema);
    let validate = this.byHash.get(key);
    if (!validate) {
      this.registerUnknownFormats(schema);
      try {
        const compiled = this.ajv.compile(stripId(schema));
        // Only patterns spend the budget: a schema without any validates without the wrapper's cost.
        validate = usesPatterns(schema) ? withBudget(compiled) : compiled;
      } catch (error) {
        const subject = where.tool ? `the input schema of "${where.tool}"` : "the schema";
        const badPattern = findInvalidPattern(schema);
        const reason = badPattern
          ? `invalid regular expression ${JSON.stringify(badPattern.pattern)} at ${badPattern.pointer} (${badPattern.reason})`
          : (error as Error).message;
        throw new TerrariumError("SCHEMA_COMPILE", `${subject} cannot be compiled: ${reason}`, {
          where: { file: where.file, pointer: where.pointer },
          cause: error,
        });
      }
      this.byHash.set(key, validate);
    }
    if (typeof schema === "object" && schema !== null) this.byObject.set(schema, validate);
    return validate;
  }

  get size(): number {
    return this.byHash.size;
  }

  /** Formats nobody defined (`int32` aside, APIs invent many) are accepted as annotations, not errors. */
  private registerUnknownFormats(schema: unknown): void {
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) {
        node.forEach(visit);
        return;
      }
      if (node === null || typeof node !== "object") return;
      for (const [key, value] of Object.entries(node)) {
        if (key === "format" && typeof value === "string" && !this.ajv.formats[value])
          this.ajv.addFormat(value, true);
        else visit(value);
      }
    };
    visit(schema);
  }
}

/**
 * `validate` with a fresh pattern budget for each call (see withPatternBudget): the patterns of one
 * validation together cannot hold the event loop for long, however many strings the value carries.
 */
function withBudget(validate: ValidateFunction): ValidateFunction {
  const bounded = function (this: unknown, data: unknown, context?: unknown) {
    const valid = withPatternBudget(() =>
      (validate as (...args: unknown[]) => boolean).call(this, data, context),
    );
    bounded.errors = validate.errors;
    return valid;
  } as ValidateFunction;
  bounded.schema = validate.schema;
  bounded.schemaEnv = validate.schemaEnv;
  return bounded;
}

/** Whether a `pattern` or `patternProperties` keyword (or a property of that name) occurs anywhere. */
function usesPatterns(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.some(usesPatterns);
  if (schema === null || typeof schema !== "object") return false;
  for (const [key, value] of Object.entries(schema)) {
    if (key === "pattern" || key === "patternProperties") return true;
    if (usesPatterns(value)) return true;
  }
  return false;
}

/** Two tools may carry schemas with the same `$id`; Ajv would refuse the second, and ids mean nothing here. */
function stripId(schema: JsonSchema): JsonSchema {
  if (typeof schema !== "object" || schema === null || !("$id" in schema)) return schema;
  const { $id: _id, ...rest } = schema;
  return rest;
}

/** The first `pattern` (or `patternProperties` key) that is not a valid Unicode regular expression. */
function findInvalidPattern(
  schema: unknown,
  pointer = "",
): { pattern: string; pointer: string; reason: string } | undefined {
  if (Array.isArray(schema)) {
    for (const [index, item] of schema.entries()) {
      const found = findInvalidPattern(item, `${pointer}/${index}`);
      if (found) return found;
    }
    return undefined;
  }
  if (schema === null || typeof schema !== "object") return undefined;
  for (const [key, value] of Object.entries(schema)) {
    const here = `${pointer}/${escapeToken(key)}`;
    const candidates = key === "pattern" && typeof value === "string" ? [value] : [];
    if (key === "patternProperties" && value && typeof value === "object")
      candidates.push(...Object.keys(value));
    for (const pattern of candidates) {
      try {
        new RegExp(pattern, "u");
      } catch (error) {
        const reason = (error as Error).message.replace(/^Invalid regular expression: \/.*\/u?: /, "");
        return { pattern, pointer: key === "pattern" ? here : `${here}/${escapeToken(pattern)}`, reason };
      }
    }
    const found = findInvalidPattern(value, here);
    if (found) return found;
  }
  return undefined;
}
