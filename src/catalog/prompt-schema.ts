import { setOwn } from "../core/immutable-json.js";
import { DEFS_PREFIX } from "./refs.js";

/** Characters of one schema in a prompt before its shared definitions are shown only to a depth. */
export const PROMPT_SCHEMA_CHARS = 12_000;

/**
 * A tool schema as a model should read it: the schema itself when it is small, else its shared
 * definitions (`$defs`) shown inline only as deep as fits in `maxChars`, deeper references replaced by
 * a note naming the definition. A schema on a large API description can reach hundreds of kilobytes of
 * definitions, which would crowd out the rest of the prompt and tell the model nothing it needs to
 * answer one call. Validation always uses the whole schema.
 */
export function schemaForPrompt(schema: unknown, maxChars = PROMPT_SCHEMA_CHARS): unknown {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return schema;
  if (JSON.stringify(schema).length <= maxChars) return schema;
  const { $defs, ...root } = schema as Record<string, unknown>;
  const definitions = ($defs ?? {}) as Record<string, unknown>;
  let rendered: unknown = root;
  for (let depth = 3; depth >= 0; depth--) {
    rendered = inlineTo(root, definitions, depth);
    if (JSON.stringify(rendered).length <= maxChars) break;
  }
  return rendered;
}

function inlineTo(node: unknown, definitions: Record<string, unknown>, depth: number): unknown {
  if (Array.isArray(node)) return node.map((item) => inlineTo(item, definitions, depth));
  if (node === null || typeof node !== "object") return node;
  const record = node as Record<string, unknown>;
  const ref = record.$ref;
  if (typeof ref === "string" && ref.startsWith(DEFS_PREFIX)) {
    const name = ref.slice(DEFS_PREFIX.length).replace(/~1/g, "/").replace(/~0/g, "~");
    const body = Object.hasOwn(definitions, name) ? definitions[name] : undefined;
    const { $ref: _ref, ...siblings } = record;
    const shown =
      depth > 0 && body !== undefined
        ? inlineTo(body, definitions, depth - 1)
        : {
            ...(isObject(body) && typeof body.type === "string" ? { type: body.type } : {}),
            $comment: `${name}: a shared definition, not shown here`,
          };
    return isObject(shown) ? { ...shown, ...(inlineTo(siblings, definitions, depth) as object) } : shown;
  }
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) setOwn(copy, key, inlineTo(value, definitions, depth));
  return copy;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
