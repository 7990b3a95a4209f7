import { unchangedDraftBase } from "./draft.js";

/**
 * The two copies a TypeScript step makes of values it does not own: the arguments a tool gets (so that a
 * tool changing them cannot change the recorded call) and the observation it returns (so that it is
 * plain JSON, detached from the tool's objects and drafts). Both take a fast path for plain JSON data
 * and fall back to the general operation (`structuredClone`, a JSON round trip) for anything else, so
 * the result is always the one the general operation gives.
 */

/** Deeper than this, the fast paths give up and the general operation decides (it also catches cycles). */
const FAST_DEPTH = 64;

/** Thrown inside the fast paths when a value needs the general operation. */
const GENERAL = Symbol("general");

function isPlainRecord(value: object): boolean {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** `structuredClone(args)`, fast for what arguments are: plain objects, dense arrays and primitives. */
export function cloneArguments<T>(args: T): T {
  try {
    return cloneValue(args, 0) as T;
  } catch (error) {
    if (error !== GENERAL) throw error;
    return structuredClone(args);
  }
}

function cloneValue(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null) {
    if (typeof value === "function" || typeof value === "symbol") throw GENERAL;
    return value;
  }
  if (depth > FAST_DEPTH) throw GENERAL;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) throw GENERAL;
    const items = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (item === undefined && !(i in value)) throw GENERAL; // holes stay holes in structuredClone
      items[i] = cloneValue(item, depth + 1);
    }
    if (Object.keys(value).length !== value.length) throw GENERAL;
    return items;
  }
  if (!isPlainRecord(value)) throw GENERAL;
  const record: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const member = cloneValue((value as Record<string, unknown>)[key], depth + 1);
    if (key === "__proto__")
      Object.defineProperty(record, key, {
        value: member,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    else record[key] = member;
  }
  return record;
}

/** `JSON.parse(JSON.stringify(result))` (undefined as null), fast for plain data and state drafts. */
export function observationOf(result: unknown): unknown {
  if (result === undefined) return null;
  try {
    const copied = jsonValue(result, 0);
    return copied === undefined ? null : copied;
  } catch (error) {
    if (error !== GENERAL) throw error;
    const text = JSON.stringify(result);
    return text === undefined ? null : JSON.parse(text);
  }
}

/** The value JSON.stringify would write and JSON.parse read back; undefined for what it leaves out. */
function jsonValue(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      // JSON writes -0 as 0 and non-finite numbers as null.
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : null;
    case "object":
      break;
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    default:
      throw GENERAL; // BigInt: JSON.stringify's own error
  }
  if (value === null) return null;
  if (depth > FAST_DEPTH) throw GENERAL;
  const source = (unchangedDraftBase(value) ?? value) as object;
  if (Array.isArray(source)) {
    if (Object.getPrototypeOf(source) !== Array.prototype || "toJSON" in source) throw GENERAL;
    const items = new Array<unknown>(source.length);
    for (let i = 0; i < source.length; i++) {
      const item = jsonValue(source[i], depth + 1);
      items[i] = item === undefined ? null : item;
    }
    return items;
  }
  if (!isPlainRecord(source) || typeof (source as { toJSON?: unknown }).toJSON === "function") throw GENERAL;
  const record: Record<string, unknown> = {};
  for (const key of Object.keys(source)) {
    const member = jsonValue((source as Record<string, unknown>)[key], depth + 1);
    if (member === undefined) continue;
    if (key === "__proto__")
      Object.defineProperty(record, key, {
        value: member,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    else record[key] = member;
  }
  return record;
}
