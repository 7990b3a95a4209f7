import { createHash } from "node:crypto";

/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, `undefined` members dropped (as
 * JSON.stringify does). Two values that are equal as JSON always give the same text, so it is safe to
 * hash for cache keys and to compare documents.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, ancestors: Set<object>): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} has no JSON form`);
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      return value.toString();
    case "object":
      break;
    default:
      throw new TypeError(`canonicalJson: a ${typeof value} has no JSON form`);
  }
  const object = value as object;
  if (ancestors.has(object)) throw new TypeError("canonicalJson: the value contains a cycle");
  ancestors.add(object);
  let text: string;
  if (Array.isArray(object)) {
    // An index loop, not map(): map skips the holes of sparse arrays, which JSON writes as null.
    const items: string[] = [];
    for (let index = 0; index < object.length; index++) {
      const item = object[index];
      items.push(item === undefined ? "null" : write(item, ancestors));
    }
    text = `[${items.join(",")}]`;
  } else {
    const toJson = (object as { toJSON?: () => unknown }).toJSON;
    if (typeof toJson === "function") {
      text = write(toJson.call(object), ancestors);
    } else {
      const record = object as Record<string, unknown>;
      const parts: string[] = [];
      for (const key of Object.keys(record).sort()) {
        const member = record[key];
        if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
        parts.push(`${JSON.stringify(key)}:${write(member, ancestors)}`);
      }
      text = `{${parts.join(",")}}`;
    }
  }
  ancestors.delete(object);
  return text;
}

/** SHA-256 (hex) of the canonical JSON of `value`. */
export function hashJson(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

/** Deep equality of two JSON values (key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
