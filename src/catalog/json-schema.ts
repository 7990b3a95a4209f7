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
