import { fullFormats } from "ajv-formats/dist/formats.js";
import { setOwn } from "../core/immutable-json.js";
import { escapeToken } from "../core/json-pointer.js";
import {
  isPlainObject,
  isSchema,
  SCHEMA_LIST_KEYWORDS as LISTS,
  SCHEMA_MAP_KEYWORDS as MAPS,
  SCHEMA_KEYWORDS as SINGLE,
} from "./json-schema.js";
import { linearPatternProblem, linearTest } from "./linear-regex.js";
import { DEFS_PREFIX } from "./refs.js";
import { translatePattern } from "./regex-dialect.js";
import type { JsonObjectSchema, JsonSchema } from "./tool.js";

/**
 * Normalisation of schemas as they are written in the field into canonical JSON Schema 2020-12. Each
 * change that is a reading of the author's intent (rather than a plain dialect translation) is reported
 * as a warning with a code, so nothing is rewritten silently. The cases, and why each is handled the way
 * it is, are listed in docs/catalog.md.
 */

/** The dialect a schema was written in; decides which forms are normal and which earn a warning. */
export type SchemaDialect = "openapi-3.0" | "openapi-3.1" | "json-schema";
/** Request schemas drop `readOnly` properties from `required`; response schemas drop `writeOnly` ones. */
export type SchemaDirection = "request" | "response" | "any";

export type SchemaWarn = (code: string, message: string, pointer: string) => void;

export interface NormaliseOptions {
  dialect: SchemaDialect;
  warn?: SchemaWarn;
}

const JSON_TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);
/** Type names seen in real schemas that have a clear JSON Schema meaning. */
const TYPE_SYNONYMS: Record<string, string | null> = {
  int: "integer",
  long: "integer",
  int32: "integer",
  int64: "integer",
  float: "number",
  double: "number",
  decimal: "number",
  bool: "boolean",
  str: "string",
  text: "string",
  date: "string",
  datetime: "string",
  file: "string",
  dict: "object",
  map: "object",
  list: "array",
  any: null,
};
/** Keywords whose value must be a non-negative integer. */
const COUNTS = [
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "minContains",
  "maxContains",
];
const NUMBERS = ["minimum", "maximum", "multipleOf", "exclusiveMinimum", "exclusiveMaximum"];
const KNOWN_FORMATS = new Set(Object.keys(fullFormats));
/** Keywords whose value must be a string. */
const STRING_KEYWORDS = ["title", "description", "$comment", "contentEncoding", "contentMediaType"];
/** Keywords whose value must be a boolean. */
const BOOLEAN_KEYWORDS = ["deprecated", "readOnly", "writeOnly", "uniqueItems"];
/** Keywords that only describe; a schema with nothing else accepts any value. */
const ANNOTATION_ONLY = new Set([
  "description",
  "title",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "$comment",
  "format",
]);

/**
 * Brings one schema to 2020-12 as OpenAPI 3.0 writes it (`nullable`, boolean exclusive bounds, `example`,
 * draft-07 tuples), with no warnings kept: for schemas written in code, such as environment tools.
 */
export function toJsonSchema2020(schema: JsonSchema): JsonSchema {
  return new SchemaNormaliser({ dialect: "openapi-3.0" }).normalise(schema);
}

/**
 * Normalises schemas of one document. Subschemas shared between tools (an inlined component) are
 * normalised once per direction and the result shared, so warnings name the first place they were met.
 */
export class SchemaNormaliser {
  private readonly options: NormaliseOptions;
  private readonly done = new Map<SchemaDirection, WeakMap<object, JsonSchema>>();
  private readonly reportedFormats = new Set<string>();

  constructor(options: NormaliseOptions) {
    this.options = options;
  }

  normalise(schema: unknown, pointer = "", direction: SchemaDirection = "any"): JsonSchema {
    return this.node(schema, pointer, direction);
  }

  private warn(code: string, message: string, pointer: string): void {
    this.options.warn?.(code, message, pointer);
  }

  private node(schema: unknown, pointer: string, direction: SchemaDirection): JsonSchema {
    if (typeof schema === "boolean") return schema;
    if (!isPlainObject(schema)) {
      this.warn(
        "SCHEMA_INVALID",
        `a schema must be an object or a boolean, not ${describe(schema)}; it accepts any value now`,
        pointer,
      );
      return {};
    }
    let cache = this.done.get(direction);
    if (!cache) {
      cache = new WeakMap();
      this.done.set(direction, cache);
    }
    const cached = cache.get(schema);
    if (cached !== undefined) return cached;
    const result = this.transform(schema, pointer, direction);
    cache.set(schema, result);
    return result;
  }

  private transform(input: Record<string, unknown>, pointer: string, direction: SchemaDirection): JsonSchema {
    const at = (...tokens: string[]) => `${pointer}/${tokens.map(escapeToken).join("/")}`;
    const out: JsonObjectSchema = {};
    for (const [key, value] of Object.entries(input)) setOwn(out, key, value);

    // Subschemas first.
    for (const key of SINGLE) {
      if (!(key in out)) continue;
      const value = out[key];
      if (key === "items" && Array.isArray(value)) {
        out[key] = value.map((item, index) => this.node(item, at(key, String(index)), direction));
      } else if (value === null || value === undefined) {
        delete out[key];
      } else out[key] = this.node(value, at(key), direction);
    }
    for (const key of LISTS) {
      if (!(key in out)) continue;
      const value = out[key];
      if (!Array.isArray(value) || value.length === 0) {
        this.warn("KEYWORD_DROPPED", `"${key}" must be a non-empty list of schemas; dropped`, at(key));
        delete out[key];
      } else out[key] = value.map((item, index) => this.node(item, at(key, String(index)), direction));
    }
    for (const key of MAPS) {
      if (!(key in out)) continue;
      const value = out[key];
      if (!isPlainObject(value)) {
        this.warn(
          "KEYWORD_DROPPED",
          `"${key}" must map names to schemas, not ${describe(value)}; dropped`,
          at(key),
        );
        delete out[key];
        continue;
      }
      const mapped: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(value))
        setOwn(mapped, name, this.node(sub, at(key, name), direction));
      out[key] = mapped;
    }

    if (typeof out.$schema === "string" && !out.$schema.includes("2020-12")) delete out.$schema;
    // Ids would change what "#/$defs/..." means below them; ids mean nothing once refs are resolved.
    delete out.$id;
    if ("dependencies" in out) this.splitDependencies(out, pointer);
    this.fixType(out, pointer);
    this.fixRequired(out, input, pointer, direction);
    this.fixNumbers(out, pointer);
    this.fixExclusiveBounds(out, pointer);
    if (Array.isArray(out.items)) {
      out.prefixItems = out.items;
      if (out.additionalItems !== undefined) out.items = out.additionalItems;
      else delete out.items;
      delete out.additionalItems;
    }
    this.fixExamples(out, pointer);
    this.fixEnum(out, pointer);
    this.fixPatterns(out, pointer);
    this.fixFormat(out, pointer);
    this.fixClosedAllOf(out, pointer);
    dropUndeclaredRequired(out, pointer, this.options.warn);
    this.fixKeywordKinds(out, pointer);
    return this.fixNullable(out, pointer);
  }

  /**
   * The remaining keywords the meta-schema gives a kind (a string, a boolean, a map of name lists): a
   * value of the wrong kind would stop the schema compiling, so it is dropped (or, for "true"/"false"
   * written as text, read as the boolean). Checked here, once per schema node, because checking whole
   * tool schemas against the meta-schema costs as much as their fully expanded size.
   */
  private fixKeywordKinds(out: JsonObjectSchema, pointer: string): void {
    for (const key of STRING_KEYWORDS) {
      if (key in out && typeof out[key] !== "string") {
        this.warn(
          "KEYWORD_DROPPED",
          `"${key}" must be a string, not ${describe(out[key])}; dropped`,
          `${pointer}/${escapeToken(key)}`,
        );
        delete out[key];
      }
    }
    for (const key of BOOLEAN_KEYWORDS) {
      if (!(key in out) || typeof out[key] === "boolean") continue;
      if (out[key] === "true" || out[key] === "false") {
        this.warn(
          "KEYWORD_COERCED",
          `"${key}" should be a boolean; read ${JSON.stringify(out[key])} as ${out[key]}`,
          `${pointer}/${key}`,
        );
        out[key] = out[key] === "true";
      } else {
        this.warn(
          "KEYWORD_DROPPED",
          `"${key}" must be a boolean, not ${describe(out[key])}; dropped`,
          `${pointer}/${key}`,
        );
        delete out[key];
      }
    }
    if ("dependentRequired" in out) {
      const value = out.dependentRequired;
      const valid =
        isPlainObject(value) &&
        Object.values(value).every(
          (names) => Array.isArray(names) && names.every((name) => typeof name === "string"),
        );
      if (!valid) {
        this.warn(
          "KEYWORD_DROPPED",
          `"dependentRequired" must map names to lists of names; dropped`,
          `${pointer}/dependentRequired`,
        );
        delete out.dependentRequired;
      }
    }
    for (const key of ["$dynamicRef", "$recursiveRef", "$dynamicAnchor", "$recursiveAnchor", "$anchor"]) {
      if (!(key in out)) continue;
      if (key.endsWith("Ref")) {
        this.warn(
          "KEYWORD_DROPPED",
          `"${key}" is not followed; dropped, so that part accepts any value`,
          `${pointer}/${key}`,
        );
      }
      delete out[key];
    }
    if ("$ref" in out && (typeof out.$ref !== "string" || !out.$ref.startsWith(DEFS_PREFIX))) {
      this.warn(
        "KEYWORD_DROPPED",
        `"$ref" ${describe(out.$ref)} was not resolved; dropped`,
        `${pointer}/$ref`,
      );
      delete out.$ref;
    }
  }

  private fixType(out: JsonObjectSchema, pointer: string): void {
    if (!("type" in out)) return;
    const mapOne = (type: unknown): string | null | undefined => {
      if (typeof type !== "string") return undefined;
      if (JSON_TYPES.has(type)) return type;
      const lower = type.toLowerCase();
      if (JSON_TYPES.has(lower)) return lower;
      return lower in TYPE_SYNONYMS ? TYPE_SYNONYMS[lower] : undefined;
    };
    const original = out.type;
    const list = Array.isArray(original) ? original : [original];
    const mapped: string[] = [];
    let anything = false;
    for (const type of list) {
      const result = mapOne(type);
      if (result === null) anything = true;
      else if (result === undefined) {
        this.warn(
          "TYPE_UNKNOWN",
          `type ${JSON.stringify(type)} is not a JSON Schema type; ignored`,
          `${pointer}/type`,
        );
      } else {
        if (result !== type) {
          this.warn("TYPE_RENAMED", `type ${JSON.stringify(type)} read as "${result}"`, `${pointer}/type`);
          if (type === "file" && out.format === undefined) out.format = "binary";
        }
        if (!mapped.includes(result)) mapped.push(result);
      }
    }
    if (anything || mapped.length === 0) delete out.type;
    else out.type = Array.isArray(original) ? mapped : mapped[0];
  }

  private fixRequired(
    out: JsonObjectSchema,
    input: Record<string, unknown>,
    pointer: string,
    direction: SchemaDirection,
  ): void {
    const required = out.required;
    let names: string[] | undefined;
    if (typeof required === "boolean") {
      // Draft-3 style `required: true` on a property: the parent lifts it into its own list.
      delete out.required;
    } else if (typeof required === "string") {
      this.warn(
        "REQUIRED_NOT_LIST",
        `"required" must be a list of names; read "${required}" as ["${required}"]`,
        `${pointer}/required`,
      );
      names = [required];
    } else if (Array.isArray(required)) {
      names = required.filter((name): name is string => typeof name === "string");
      if (names.length !== required.length)
        this.warn(
          "REQUIRED_NOT_LIST",
          `"required" may list only names; other entries dropped`,
          `${pointer}/required`,
        );
    } else if (required !== undefined) {
      this.warn(
        "KEYWORD_DROPPED",
        `"required" must be a list of names, not ${describe(required)}; dropped`,
        `${pointer}/required`,
      );
      delete out.required;
    }
    const rawProperties = isPlainObject(input.properties) ? input.properties : undefined;
    const properties = isPlainObject(out.properties) ? out.properties : undefined;
    if (rawProperties) {
      for (const [name, property] of Object.entries(rawProperties)) {
        if (isPlainObject(property) && typeof property.required === "boolean") {
          this.warn(
            "REQUIRED_ON_PROPERTY",
            `"required: ${property.required}" belongs in the parent's "required" list; ${property.required ? "moved there" : "dropped"}`,
            `${pointer}/properties/${escapeToken(name)}/required`,
          );
          if (property.required === true) names = [...(names ?? []), name];
        }
      }
    }
    if (names === undefined) return;
    names = [...new Set(names)];
    if (properties && direction !== "any") {
      // OpenAPI: a readOnly property is not sent in requests, a writeOnly one not returned in responses,
      // even when the shared schema lists it as required.
      const hidden = direction === "request" ? "readOnly" : "writeOnly";
      names = names.filter((name) => {
        const property = properties[name];
        return !(isPlainObject(property) && property[hidden] === true);
      });
    }
    if (names.length === 0) delete out.required;
    else out.required = names;
  }

  private fixNumbers(out: JsonObjectSchema, pointer: string): void {
    for (const key of [...COUNTS, ...NUMBERS]) {
      if (!(key in out)) continue;
      let value = out[key];
      if (typeof value === "boolean" && key.startsWith("exclusive")) continue;
      if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) {
        this.warn(
          "KEYWORD_COERCED",
          `"${key}" should be a number; read ${JSON.stringify(value)} as ${Number(value)}`,
          `${pointer}/${key}`,
        );
        value = Number(value);
        out[key] = value;
      }
      const valid =
        typeof value === "number" &&
        Number.isFinite(value) &&
        (!COUNTS.includes(key) || (Number.isInteger(value) && value >= 0)) &&
        (key !== "multipleOf" || value > 0);
      if (!valid) {
        this.warn(
          "KEYWORD_DROPPED",
          `"${key}" cannot be ${JSON.stringify(value)}; dropped`,
          `${pointer}/${key}`,
        );
        delete out[key];
      }
    }
  }

  private fixExclusiveBounds(out: JsonObjectSchema, pointer: string): void {
    for (const [flag, bound] of [
      ["exclusiveMinimum", "minimum"],
      ["exclusiveMaximum", "maximum"],
    ] as const) {
      const value = out[flag];
      if (typeof value !== "boolean") continue;
      // OpenAPI 3.0 (draft 4) writes a boolean beside the bound; 2020-12 writes the bound itself.
      if (value && typeof out[bound] === "number") {
        if (this.options.dialect !== "openapi-3.0")
          this.warn(
            "EXCLUSIVE_BOUND_BOOLEAN",
            `boolean "${flag}" is the OpenAPI 3.0 form; read as "${flag}: ${out[bound]}"`,
            `${pointer}/${flag}`,
          );
        out[flag] = out[bound];
        delete out[bound];
      } else {
        if (value)
          this.warn(
            "KEYWORD_DROPPED",
            `"${flag}: true" without "${bound}" means nothing; dropped`,
            `${pointer}/${flag}`,
          );
        delete out[flag];
      }
    }
  }

  private fixExamples(out: JsonObjectSchema, pointer: string): void {
    if ("example" in out) {
      if (!("examples" in out)) out.examples = [out.example];
      delete out.example;
    }
    const examples = out.examples;
    if (examples === undefined || Array.isArray(examples)) return;
    // OpenAPI's media-type `examples` (a map of named examples) written inside a schema.
    this.warn(
      "EXAMPLES_NOT_LIST",
      `"examples" in a schema must be a list; its values were kept as the list`,
      `${pointer}/examples`,
    );
    out.examples = isPlainObject(examples)
      ? Object.values(examples).map((example) =>
          isPlainObject(example) && "value" in example ? example.value : example,
        )
      : [examples];
  }

  private fixEnum(out: JsonObjectSchema, pointer: string): void {
    if (!("enum" in out) || Array.isArray(out.enum)) return;
    this.warn(
      "KEYWORD_DROPPED",
      `"enum" must be a list, not ${describe(out.enum)}; dropped`,
      `${pointer}/enum`,
    );
    delete out.enum;
  }

  private fixPatterns(out: JsonObjectSchema, pointer: string): void {
    if ("pattern" in out) {
      const translated = this.translate(out.pattern, `${pointer}/pattern`);
      if (translated === undefined) delete out.pattern;
      else out.pattern = translated;
    }
    if (isPlainObject(out.patternProperties)) {
      const kept: Record<string, unknown> = {};
      for (const [pattern, schema] of Object.entries(out.patternProperties)) {
        const translated = this.translate(pattern, `${pointer}/patternProperties/${escapeToken(pattern)}`);
        if (translated !== undefined) setOwn(kept, translated, schema);
      }
      out.patternProperties = kept;
    }
  }

  /** A pattern as an ECMAScript (`u` flag) pattern, or undefined when it has to be dropped. */
  private translate(pattern: unknown, pointer: string): string | undefined {
    if (typeof pattern !== "string") {
      this.warn("PATTERN_DROPPED", `pattern ${describe(pattern)} is not a string; dropped`, pointer);
      return undefined;
    }
    const result = translatePattern(pattern);
    if (!result.ok) {
      this.warn(
        "PATTERN_DROPPED",
        `pattern ${JSON.stringify(pattern)} has no JavaScript equivalent (${result.reason}); dropped, so it is not checked`,
        pointer,
      );
      return undefined;
    }
    // The validator runs patterns in linear time; one that needs backtracking cannot be enforced.
    const problem = linearPatternProblem(result.pattern);
    if (problem !== undefined) {
      this.warn(
        "PATTERN_NOT_LINEAR",
        `pattern ${JSON.stringify(pattern)} cannot be checked in linear time (${problem}); dropped, so it is not checked`,
        pointer,
      );
      return undefined;
    }
    if (result.changed) {
      this.warn(
        "PATTERN_TRANSLATED",
        `pattern ${JSON.stringify(pattern)} translated to ${JSON.stringify(result.pattern)}${result.notes.length > 0 ? ` (${result.notes.join("; ")})` : ""}`,
        pointer,
      );
    }
    return result.pattern;
  }

  private fixFormat(out: JsonObjectSchema, pointer: string): void {
    if (!("format" in out)) return;
    if (typeof out.format !== "string") {
      this.warn(
        "KEYWORD_DROPPED",
        `"format" must be a string, not ${describe(out.format)}; dropped`,
        `${pointer}/format`,
      );
      delete out.format;
      return;
    }
    if (!KNOWN_FORMATS.has(out.format) && !this.reportedFormats.has(out.format)) {
      this.reportedFormats.add(out.format);
      this.warn(
        "FORMAT_UNKNOWN",
        `format "${out.format}" is not known to the validator; it is kept as a description and not checked`,
        `${pointer}/format`,
      );
    }
  }

  /**
   * `allOf: [A (additionalProperties: false), {properties: {extra}}]` rejects every value with `extra`:
   * each member judges alone. What the author meant is "no properties beyond those declared anywhere in
   * the allOf", which is `unevaluatedProperties: false` on the composition.
   */
  private fixClosedAllOf(out: JsonObjectSchema, pointer: string): void {
    if (!Array.isArray(out.allOf) || out.allOf.length < 1) return;
    const members = out.allOf as JsonSchema[];
    const declared = (schema: JsonSchema): string[] =>
      isPlainObject(schema) && isPlainObject(schema.properties) ? Object.keys(schema.properties) : [];
    const all = new Set([...declared(out), ...members.flatMap(declared)]);
    let changed = false;
    const fixed = members.map((member) => {
      if (!isPlainObject(member) || member.additionalProperties !== false) return member;
      const own = new Set(declared(member));
      if ([...all].every((name) => own.has(name))) return member;
      changed = true;
      const { additionalProperties: _closed, ...open } = member;
      return open;
    });
    if (!changed) return;
    this.warn(
      "ALLOF_CLOSED_MEMBER",
      `an allOf member has "additionalProperties: false" but other members add properties, so no value could pass; read as "unevaluatedProperties: false" on the allOf`,
      `${pointer}/allOf`,
    );
    out.allOf = fixed;
    if (!("unevaluatedProperties" in out)) out.unevaluatedProperties = false;
  }

  private fixNullable(out: JsonObjectSchema, pointer: string): JsonSchema {
    const hasNullable = "nullable" in out;
    const xNullable = out["x-nullable"] === true;
    if (!hasNullable && !xNullable) return out;
    const nullable = out.nullable === true || xNullable;
    delete out.nullable;
    delete out["x-nullable"];
    if (!nullable) return out;
    const where = `${pointer}/${hasNullable ? "nullable" : "x-nullable"}`;
    if (this.options.dialect !== "openapi-3.0") {
      this.warn("NULLABLE_NOT_31", `"nullable" is OpenAPI 3.0; read as also allowing null`, where);
    }
    const type = out.type;
    if (typeof type === "string") {
      if (type === "null") return out;
      const result: JsonObjectSchema = { ...out, type: [type, "null"] };
      if (Array.isArray(out.enum) && !out.enum.includes(null)) result.enum = [...out.enum, null];
      return result;
    }
    if (Array.isArray(type)) {
      if (type.includes("null")) {
        this.warn(
          "NULLABLE_WITH_TYPE_LIST",
          `"nullable" beside a type list that already has "null"; dropped`,
          where,
        );
        return out;
      }
      this.warn(
        "NULLABLE_WITH_TYPE_LIST",
        `"nullable" beside a type list; read as adding "null" to it`,
        where,
      );
      return { ...out, type: [...type, "null"] };
    }
    if (Array.isArray(out.enum)) {
      this.warn("NULLABLE_WITHOUT_TYPE", `"nullable" without "type"; read as adding null to the enum`, where);
      return out.enum.includes(null) ? out : { ...out, enum: [...out.enum, null] };
    }
    if (Object.keys(out).every((key) => ANNOTATION_ONLY.has(key) || key.startsWith("x-"))) {
      // Nothing constrains the value, so null is already allowed.
      return out;
    }
    this.warn("NULLABLE_WITHOUT_TYPE", `"nullable" without "type"; read as "this schema, or null"`, where);
    return { anyOf: [out, { type: "null" }] };
  }

  /** Draft-07 `dependencies` splits into `dependentRequired` (name lists) and `dependentSchemas`. */
  private splitDependencies(out: JsonObjectSchema, pointer: string): void {
    const dependencies = out.dependencies;
    delete out.dependencies;
    if (!isPlainObject(dependencies)) return;
    const required: Record<string, unknown> = {};
    const schemas: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(dependencies)) {
      if (Array.isArray(value))
        setOwn(
          required,
          name,
          value.filter((item) => typeof item === "string"),
        );
      else if (isSchema(value))
        setOwn(schemas, name, this.node(value, `${pointer}/dependencies/${escapeToken(name)}`, "any"));
    }
    if (Object.keys(required).length > 0) out.dependentRequired = required;
    if (Object.keys(schemas).length > 0) out.dependentSchemas = schemas;
  }
}

/**
 * A closed object (`additionalProperties: false`) that requires a property it does not declare can never
 * be satisfied: usually a renamed property whose old name stayed in `required`. The name is dropped from
 * `required`, so the schema means what the declared properties say. Changes `schema` in place (callers
 * pass their own copies) and returns it.
 */
export function dropUndeclaredRequired<T extends JsonObjectSchema>(
  schema: T,
  pointer: string,
  warn?: SchemaWarn,
): T {
  if (schema.additionalProperties !== false || !Array.isArray(schema.required)) return schema;
  const properties = isPlainObject(schema.properties) ? schema.properties : {};
  const patterns = isPlainObject(schema.patternProperties) ? Object.keys(schema.patternProperties) : [];
  const declared = (name: string) =>
    Object.hasOwn(properties, name) || patterns.some((pattern) => safeTest(pattern, name));
  const undeclared = (schema.required as string[]).filter((name) => !declared(name));
  if (undeclared.length === 0) return schema;
  warn?.(
    "REQUIRED_UNDECLARED",
    `${undeclared.map((name) => `"${name}"`).join(", ")} ${undeclared.length === 1 ? "is" : "are"} required but not a declared property of a closed object, so no value could pass; dropped from "required"`,
    `${pointer}/required`,
  );
  const kept = (schema.required as string[]).filter(declared);
  if (kept.length === 0) delete schema.required;
  else (schema as JsonObjectSchema).required = kept;
  return schema;
}

/** Names and patterns come from the document: run in linear time (false when that is impossible). */
function safeTest(pattern: string, name: string): boolean {
  return linearTest(pattern, name);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  return JSON.stringify(value) ?? typeof value;
}
