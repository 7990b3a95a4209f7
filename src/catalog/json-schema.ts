import type { JsonObjectSchema, JsonSchema } from "./tool.js";

/**
 * Normalisation of the JSON-Schema dialects tools are written in (OpenAPI 3.0, draft-07 style function
 * parameters, BFCL's Python/Java type names) into JSON Schema 2020-12. Every function returns a new
 * value; inputs are never mutated.
 */

/** Keywords whose value is one subschema. */
export const SCHEMA_KEYWORDS = [
  "items",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "propertyNames",
  "contains",
  "not",
  "if",
  "then",
  "else",
  "additionalItems",
  "contentSchema",
];
/** Keywords whose value is a list of subschemas. */
export const SCHEMA_LIST_KEYWORDS = ["allOf", "anyOf", "oneOf", "prefixItems"];
/** Keywords whose value maps names to subschemas. */
export const SCHEMA_MAP_KEYWORDS = [
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
];

/** Applies `transform` to a schema node after its subschemas have been transformed. */
export function mapSchema(
  schema: JsonSchema,
  transform: (node: JsonObjectSchema) => JsonObjectSchema,
): JsonSchema {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const out: JsonObjectSchema = { ...schema };
  for (const key of SCHEMA_KEYWORDS) {
    const sub = out[key];
    if (Array.isArray(sub)) out[key] = sub.map((item) => mapSchema(item as JsonSchema, transform));
    else if (isSchema(sub)) out[key] = mapSchema(sub, transform);
  }
  for (const key of SCHEMA_LIST_KEYWORDS) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map((item) => mapSchema(item as JsonSchema, transform));
  }
  for (const key of SCHEMA_MAP_KEYWORDS) {
    const map = out[key];
    if (isPlainObject(map)) {
      out[key] = Object.fromEntries(
        Object.entries(map).map(([name, sub]) => [name, isSchema(sub) ? mapSchema(sub, transform) : sub]),
      );
    }
  }
  return transform(out);
}

/**
 * Brings one schema to 2020-12: OpenAPI 3.0's `nullable`, boolean `exclusiveMinimum/Maximum` and
 * `example`; draft-07's array form of `items` and `additionalItems`; a `$schema` of another draft.
 */
export function toJsonSchema2020(schema: JsonSchema): JsonSchema {
  return mapSchema(schema, (node) => {
    const out = { ...node };
    if (typeof out.$schema === "string" && !out.$schema.includes("2020-12")) delete out.$schema;
    for (const [flag, bound] of [
      ["exclusiveMinimum", "minimum"],
      ["exclusiveMaximum", "maximum"],
    ] as const) {
      if (out[flag] === true && typeof out[bound] === "number") {
        out[flag] = out[bound];
        delete out[bound];
      } else if (out[flag] === false) {
        delete out[flag];
      }
    }
    if (Array.isArray(out.items)) {
      out.prefixItems = out.items;
      if (out.additionalItems !== undefined) out.items = out.additionalItems;
      else delete out.items;
      delete out.additionalItems;
    }
    if ("example" in out && !("examples" in out)) {
      out.examples = [out.example];
      delete out.example;
    }
    if (out.nullable === true) {
      delete out.nullable;
      return makeNullable(out);
    }
    if (out.nullable === false) delete out.nullable;
    return out;
  });
}

function makeNullable(node: JsonObjectSchema): JsonObjectSchema {
  const type = node.type;
  if (typeof type === "string") {
    const out: JsonObjectSchema = { ...node, type: type === "null" ? "null" : [type, "null"] };
    if (Array.isArray(node.enum) && !node.enum.includes(null)) out.enum = [...node.enum, null];
    return out;
  }
  if (Array.isArray(type)) return type.includes("null") ? node : { ...node, type: [...type, "null"] };
  // No type to extend (e.g. a composition): allow null beside whatever the schema allows.
  return { anyOf: [node, { type: "null" }] };
}

/** BFCL's (Python- and Java-flavoured) type names and what they mean in JSON Schema. */
const BFCL_TYPES: Record<string, string | null> = {
  dict: "object",
  HashMap: "object",
  Hashtable: "object",
  Map: "object",
  object: "object",
  float: "number",
  double: "number",
  Double: "number",
  Float: "number",
  number: "number",
  tuple: "array",
  list: "array",
  ArrayList: "array",
  Array: "array",
  array: "array",
  Set: "array",
  long: "integer",
  short: "integer",
  byte: "integer",
  int: "integer",
  integer: "integer",
  Integer: "integer",
  Long: "integer",
  char: "string",
  String: "string",
  string: "string",
  str: "string",
  boolean: "boolean",
  Boolean: "boolean",
  bool: "boolean",
  any: null,
};

export function isBfclTypeName(type: unknown): boolean {
  return typeof type === "string" && type in BFCL_TYPES && !JSON_SCHEMA_TYPES.has(type);
}

const JSON_SCHEMA_TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

/** Translates a BFCL parameter schema: type names, and an `enum` on an array meaning its item values. */
export function fromBfclSchema(schema: JsonSchema): JsonSchema {
  return mapSchema(schema, (node) => {
    const out = { ...node };
    if (typeof out.type === "string" && out.type in BFCL_TYPES) {
      const mapped = BFCL_TYPES[out.type];
      if (mapped === null) delete out.type;
      else out.type = mapped;
    }
    if (out.type === "array" && Array.isArray(out.enum)) {
      const items = isPlainObject(out.items) ? out.items : {};
      out.items = { ...items, enum: out.enum };
      delete out.enum;
    }
    return out;
  });
}

/** Whether a schema mentions BFCL-only type names anywhere. */
export function usesBfclTypes(schema: unknown): boolean {
  let found = false;
  mapSchema(schema as JsonSchema, (node) => {
    if (isBfclTypeName(node.type)) found = true;
    return node;
  });
  return found;
}

/**
 * Makes a tool's top-level argument object closed (unknown arguments are errors), unless the schema
 * already says what to do with extra properties. With a composition at the top, only
 * `unevaluatedProperties` sees the properties declared inside it.
 */
export function closeArgumentObject(schema: JsonObjectSchema): JsonObjectSchema {
  if ("additionalProperties" in schema || "unevaluatedProperties" in schema) return schema;
  if ("patternProperties" in schema) return schema;
  const composed = ["allOf", "anyOf", "oneOf", "if", "$ref", "dependentSchemas"].some((key) => key in schema);
  return composed ? { ...schema, unevaluatedProperties: false } : { ...schema, additionalProperties: false };
}

/** An argument schema for a tool that declares none: an object with no arguments at all. */
export function emptyArgumentSchema(): JsonObjectSchema {
  return { type: "object", properties: {}, additionalProperties: false };
}

export function isSchema(value: unknown): value is JsonSchema {
  return typeof value === "boolean" || isPlainObject(value);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
