import { TerrariumError } from "./errors.js";

/**
 * States as immutable JSON trees.
 *
 * A state that flows through terrarium (an environment's state, a session's snapshots) is kept as a tree
 * of frozen objects with a null prototype. Two things follow:
 * - Steps share structure: a new state copies only the containers on the paths it changed, and every
 *   untouched subtree is the same object as before. Copies, diffs and stored snapshots then cost what a
 *   step touched, not the size of the state.
 * - Keys are data, never the prototype: on a null-prototype object `state.accounts["__proto__"]` and
 *   `"constructor" in state.accounts` see only what the state holds, so hostile keys can neither reach
 *   `Object.prototype` nor be mistaken for existing entries.
 */

/**
 * Up to this many keys, a state's object is made in V8's fast mode (see `nullPrototypeObject`); larger
 * ones start as dictionaries. V8 turns an object that gains more than about 16 properties by computed keys
 * into a dictionary anyway, and filling a fast object past that costs a map transition per key and then
 * the conversion: several times what filling a dictionary costs.
 */
export const FAST_OBJECT_KEYS = 16;

/**
 * A new empty object with a null prototype, for `keyCount` keys. `Object.create(null)` makes a
 * dictionary-mode object: slower to fill, to read, to list and to freeze (its freeze allocates a map every
 * time). Changing the prototype of an empty `{}` follows one cached map transition and keeps fast mode, so
 * small objects of the same keys share hidden classes (and their freeze transitions) as ordinary objects
 * do. With no prototype there is no `__proto__` setter either: every key assigned to it, that one
 * included, is stored as data.
 */
export function nullPrototypeObject<T = Record<string, unknown>>(keyCount = 0): T {
  return (keyCount <= FAST_OBJECT_KEYS ? Object.setPrototypeOf({}, null) : Object.create(null)) as T;
}

/** Deepest nesting a state may have; deeper documents are refused (they only come from attacks or bugs). */
export const MAX_JSON_DEPTH = 512;

/** Returns the object it is given, so that a subclass's field initialisers run on that object. */
class Stamp {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the point: `new Final(x)` stamps x itself
    return target;
  }
}

/**
 * The brand of every container made by `toImmutableJson` (or adopted): a subtree that carries it is in
 * final form and is reused. A private field rather than a WeakSet: stamping costs about a property
 * store, and the garbage collector has no weak table to process (states make one or more containers a
 * step). Private fields are invisible to keys, JSON, copies and proxies; the stamp goes on before the
 * freeze.
 */
class Final extends Stamp {
  #final = true;

  static has(value: object): boolean {
    return #final in value;
  }

  static stamp(value: object): void {
    if (!(#final in value)) new Final(value);
  }
}

/**
 * The value as JSON would carry it (JSON.stringify's rules: `toJSON`, undefined members dropped, undefined
 * array items and non-finite numbers as null), as frozen null-prototype objects and frozen arrays.
 * Subtrees that are already immutable are shared, not copied, so converting the result of a step that
 * changed a few paths costs only those paths. Cycles, BigInts and nesting deeper than `MAX_JSON_DEPTH`
 * are refused.
 */
export function toImmutableJson(value: unknown): unknown {
  return convert(value, 0, undefined, undefined);
}

/**
 * `toImmutableJson` for a value that will sit `depth` levels down in a document (the depth limit counts
 * from the document's root). `resolve` may stand in for objects it recognises (an environment's drafts):
 * what it returns (already immutable) is used as it is; undefined means "not mine, convert it".
 */
export function toImmutableJsonAt(
  value: unknown,
  depth: number,
  resolve?: (value: object) => unknown,
): unknown {
  return convert(value, depth, undefined, resolve);
}

/**
 * Whether `value` is a container made by `toImmutableJson` (or adopted): final, immutable, shareable.
 * Ask this, not `Object.isFrozen`: a large object of a state may be a persistent record, immutable but
 * not frozen (see `persistent-record.ts`).
 */
export function isImmutableJson(value: unknown): boolean {
  return typeof value === "object" && value !== null && Final.has(value);
}

/**
 * Marks a container built elsewhere as final (and freezes it). The caller vouches that it is a plain
 * array or null-prototype object whose members are all immutable JSON already.
 */
export function adoptImmutable<T extends object>(container: T): T {
  Final.stamp(container);
  Object.freeze(container);
  return container;
}

/**
 * Marks as final a container that is immutable without being frozen: a persistent record's proxy (see
 * `persistent-record.ts`), which refuses every write itself and cannot be frozen (a Proxy over a frozen
 * target would have to list the target's keys).
 */
export function markImmutable<T extends object>(container: T): T {
  Final.stamp(container);
  return container;
}

function convert(
  value: unknown,
  depth: number,
  ancestors: Set<object> | undefined,
  resolve: ((value: object) => unknown) | undefined,
): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : null;
    case "bigint":
      throw new TerrariumError("INVALID_INPUT", `a BigInt (${value}n) has no JSON form`);
    case "object":
      break;
    default:
      return undefined; // functions and symbols: dropped from objects, null in arrays
  }
  if (value === null) return null;
  if (Final.has(value)) return value;
  if (resolve !== undefined) {
    const resolved = resolve(value);
    if (resolved !== undefined) return resolved;
  }
  if (depth >= MAX_JSON_DEPTH)
    throw new TerrariumError("INVALID_INPUT", `the value is nested deeper than ${MAX_JSON_DEPTH} levels`);
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return convert(toJSON.call(value), depth, ancestors, resolve);
  if (value instanceof Number || value instanceof String || value instanceof Boolean)
    return convert(value.valueOf(), depth, ancestors, resolve);
  // Made on first need: most conversions meet only already-immutable subtrees and primitives.
  ancestors ??= new Set();
  if (ancestors.has(value)) throw new TerrariumError("INVALID_INPUT", "the value contains a cycle");
  ancestors.add(value);
  let result: object;
  if (Array.isArray(value)) {
    const items = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = convert(value[i], depth + 1, ancestors, resolve);
      items[i] = item === undefined ? null : item;
    }
    result = items;
  } else {
    const keys = Object.keys(value);
    const record = nullPrototypeObject(keys.length);
    for (const key of keys) {
      const member = convert((value as Record<string, unknown>)[key], depth + 1, ancestors, resolve);
      // A null-prototype object has no `__proto__` setter: every key, that one included, is plain data.
      if (member !== undefined) record[key] = member;
    }
    result = record;
  }
  ancestors.delete(value);
  Final.stamp(result);
  Object.freeze(result);
  return result;
}

/** A shallow, writable copy of a container (null-prototype for objects), for path copying. */
export function shallowCopy<T>(container: T): T {
  if (Array.isArray(container)) return container.slice() as T;
  // Object.assign onto a null-prototype target defines every key, `__proto__` included, as data.
  return Object.assign(nullPrototypeObject(Object.keys(container as object).length), container) as T;
}

/** The member stored under `key` itself, never one inherited from a prototype. */
export function getOwn(container: unknown, key: string): unknown {
  if (container === null || typeof container !== "object") return undefined;
  return Object.hasOwn(container, key) ? (container as Record<string, unknown>)[key] : undefined;
}

/** Stores `value` under `key` as data, also when the key is `__proto__` on an ordinary object. */
export function setOwn(container: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__")
    Object.defineProperty(container, key, { value, writable: true, enumerable: true, configurable: true });
  else container[key] = value;
}
