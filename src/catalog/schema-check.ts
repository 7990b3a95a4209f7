import { Ajv2020 } from "ajv/dist/2020.js";
import { setOwn } from "../core/immutable-json.js";
import { escapeToken, parsePointer } from "../core/json-pointer.js";
import type { SchemaWarn } from "./normalise.js";
import type { JsonSchema } from "./tool.js";

/** Only the meta-schema is used: checking a schema's shape is cheap, compiling it is not. */
let metaAjv: Ajv2020 | undefined;
const MAX_REPAIRS = 50;

/**
 * Checks `schema` against the JSON Schema 2020-12 meta-schema and drops whatever the meta-schema refuses
 * (a keyword with a value of the wrong kind), one warning per drop, so one odd keyword does not cost a
 * whole tool. Returns undefined when the schema itself is unusable (the root is not a schema, or too
 * many repairs are needed).
 */
export function repairSchema(schema: JsonSchema, warn: SchemaWarn, pointer = ""): JsonSchema | undefined {
  metaAjv ??= new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
  let current = schema;
  for (let attempt = 0; attempt < MAX_REPAIRS; attempt++) {
    if (metaAjv.validateSchema(current) === true) return current;
    const error = metaAjv.errors?.[0];
    if (!error) return current;
    const tokens = parsePointer(error.instancePath);
    if (tokens.length === 0) return undefined;
    // An entry of a list-valued keyword (`required/0`, `allOf/2`) takes the keyword with it.
    const { container, key } = keywordToDrop(current, tokens);
    const at = `${pointer}/${[...container, key].map(escapeToken).join("/")}`;
    warn(
      "KEYWORD_DROPPED",
      `"${key}" is not valid JSON Schema here (${error.message ?? "invalid"}); dropped`,
      at,
    );
    current = withoutKey(current, container, key);
  }
  return undefined;
}

function keywordToDrop(schema: unknown, tokens: string[]): { container: string[]; key: string } {
  // Walk down, remembering the last object on the way: its member on the path is what gets dropped.
  let node: unknown = schema;
  let objectDepth = 0;
  for (let depth = 0; depth < tokens.length; depth++) {
    if (node !== null && typeof node === "object" && !Array.isArray(node)) objectDepth = depth;
    node = (node as Record<string, unknown>)[tokens[depth] as string];
  }
  return { container: tokens.slice(0, objectDepth), key: tokens[objectDepth] as string };
}

/** A copy of `root` without `key` in the object at `container`; only the objects on the way are copied. */
function withoutKey(root: JsonSchema, container: string[], key: string): JsonSchema {
  const copyPath = (node: unknown, depth: number): unknown => {
    const token = container[depth] as string;
    if (Array.isArray(node)) {
      const list = node.slice();
      list[Number(token)] = copyPath(list[Number(token)], depth + 1);
      return list;
    }
    // Spreading defines every key as data, `__proto__` included.
    const copy = { ...(node as Record<string, unknown>) };
    if (depth === container.length) delete copy[key];
    else setOwn(copy, token, copyPath(copy[token], depth + 1));
    return copy;
  };
  return copyPath(root, 0) as JsonSchema;
}
