import { TerrariumError } from "../core/errors.js";
import { setOwn } from "../core/immutable-json.js";
import { escapeToken, getAtPointer } from "../core/json-pointer.js";

/** Keywords that may sit beside a `$ref` without changing which values are valid. */
const ANNOTATIONS = new Set([
  "description",
  "title",
  "summary",
  "default",
  "example",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "nullable",
  "$comment",
]);

/**
 * Returns a copy of `node` (found at `basePointer` in `root`) with every local `$ref` ("#/...") replaced
 * by the value it points to, so each tool schema stands alone. A `$ref` that points outside the document,
 * to nothing, or (through any chain) back into itself is an error naming the file and the place.
 */
export function resolveLocalRefs(
  root: unknown,
  node: unknown,
  options: { file?: string; basePointer?: string } = {},
): unknown {
  const where = (pointer: string) => ({ file: options.file, pointer });
  const cache = new Map<string, unknown>();

  const visit = (value: unknown, pointer: string, chain: string[]): unknown => {
    if (Array.isArray(value)) return value.map((item, index) => visit(item, `${pointer}/${index}`, chain));
    if (value === null || typeof value !== "object") return value;
    const record = value as Record<string, unknown>;
    const ref = record.$ref;
    if (typeof ref === "string") {
      const target = resolveTarget(ref, pointer, chain);
      const siblings = Object.entries(record).filter(([key]) => key !== "$ref");
      if (siblings.length === 0) return target;
      const resolvedSiblings = Object.fromEntries(
        siblings.map(([key, sibling]) => [key, visit(sibling, `${pointer}/${escapeToken(key)}`, chain)]),
      );
      // 3.1 allows keywords beside $ref; annotations can be merged, anything else must also hold.
      if (siblings.every(([key]) => ANNOTATIONS.has(key)) && isPlainObject(target)) {
        return { ...target, ...resolvedSiblings };
      }
      return { allOf: [target], ...resolvedSiblings };
    }
    const copy: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(record))
      setOwn(copy, key, visit(member, `${pointer}/${escapeToken(key)}`, chain));
    return copy;
  };

  const resolveTarget = (ref: string, at: string, chain: string[]): unknown => {
    if (!ref.startsWith("#")) {
      throw new TerrariumError(
        "REF_UNRESOLVED",
        `$ref "${ref}" points outside this document; only local references ("#/...") are supported`,
        { where: where(at) },
      );
    }
    const target = decodeURIComponent(ref.slice(1));
    if (chain.includes(target)) {
      const cycle = [...chain.slice(chain.indexOf(target)), target].map((p) => `#${p}`).join(" -> ");
      throw new TerrariumError("REF_CIRCULAR", `circular $ref: ${cycle}`, {
        where: where(at),
        details: { cycle },
      });
    }
    if (cache.has(target)) return cache.get(target);
    const found = getAtPointer(root, target);
    if (found === undefined) {
      throw new TerrariumError("REF_UNRESOLVED", `$ref "${ref}" points to nothing in this document`, {
        where: where(at),
      });
    }
    const resolved = visit(found, target, [...chain, target]);
    cache.set(target, resolved);
    return resolved;
  };

  return visit(node, options.basePointer ?? "", options.basePointer ? [options.basePointer] : []);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
