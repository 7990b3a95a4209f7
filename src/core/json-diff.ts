import { TerrariumError } from "./errors.js";
import { getOwn, setOwn, shallowCopy, toImmutableJson } from "./immutable-json.js";
import { escapeToken, formatPointer, parsePointer } from "./json-pointer.js";

/**
 * State changes in the two forms terrarium uses, and exact application of both.
 *
 * - `JsonChange`: JSON Patch style, `add | replace | remove` at a JSON Pointer, with the value before and
 *   after. Objects and arrays are walked, so applying the changes to `before` gives `after` exactly.
 * - `EnvSimChange`: EnvSimBench style, `{path: "a.b.c", type: added | modified | removed, before, after}`,
 *   walking into objects only: a changed list is one `modified` change. Its count is an environment
 *   step's Δ. Paths are escaped (`formatEnvSimPath`) so that every key can be written: EnvSimBench itself
 *   joins keys with "." unescaped, which `officialEnvSimPath` gives back.
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface JsonChange {
  op: "add" | "replace" | "remove";
  path: string;
  before?: unknown;
  after?: unknown;
}

export interface EnvSimChange {
  path: string;
  type: "added" | "modified" | "removed";
  before?: unknown;
  after?: unknown;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Deep equality of JSON values (key order ignored), without building strings: diffs call it at every level. */
export function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  if (aKeys.length !== Object.keys(b).length) return false;
  for (const key of aKeys) {
    if (
      !Object.hasOwn(b, key) ||
      !same((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])
    )
      return false;
  }
  return true;
}

/** JSON Patch-style changes turning `before` into `after`. */
export function diffJson(before: unknown, after: unknown, path = ""): JsonChange[] {
  // Identical objects are equal: states share every subtree a step did not touch, so this skips them.
  if (before === after) return [];
  if (isObject(before) && isObject(after)) {
    const changes: JsonChange[] = [];
    for (const key of Object.keys(before)) {
      if (!Object.hasOwn(after, key)) {
        changes.push({ op: "remove", path: `${path}/${escapeToken(key)}`, before: before[key] });
      } else if (before[key] !== after[key]) {
        changes.push(...diffJson(before[key], after[key], `${path}/${escapeToken(key)}`));
      }
    }
    for (const key of Object.keys(after)) {
      if (!Object.hasOwn(before, key))
        changes.push({ op: "add", path: `${path}/${escapeToken(key)}`, after: after[key] });
    }
    return changes;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const changes: JsonChange[] = [];
    const common = Math.min(before.length, after.length);
    for (let i = 0; i < common; i++)
      if (before[i] !== after[i]) changes.push(...diffJson(before[i], after[i], `${path}/${i}`));
    for (let i = common; i < after.length; i++)
      changes.push({ op: "add", path: `${path}/${i}`, after: after[i] });
    // Remove from the end so that each index is still right when its turn comes.
    for (let i = before.length - 1; i >= common; i--)
      changes.push({ op: "remove", path: `${path}/${i}`, before: before[i] });
    return changes;
  }
  return same(before, after) ? [] : [{ op: "replace", path, before, after }];
}

/**
 * An EnvSimBench path from keys: keys joined with ".", where a "." inside a key is written `\.`, a
 * backslash `\\`, and an empty key `\e` (so `["home", ".bashrc"]` is `home.\.bashrc` and `[""]` is `\e`,
 * distinct from `""`, the whole state). Keys without ".", "\" or emptiness are written as they are, so
 * ordinary paths are the paper's own.
 */
export function formatEnvSimPath(keys: readonly string[]): string {
  return keys.map(escapeEnvSimKey).join(".");
}

function escapeEnvSimKey(key: string): string {
  if (key === "") return "\\e";
  if (!key.includes(".") && !key.includes("\\")) return key;
  return key.replace(/\\/g, "\\\\").replace(/\./g, "\\.");
}

/**
 * The keys of an EnvSimBench path (the inverse of `formatEnvSimPath`). Lenient, so that paths written
 * without escapes read as the paper reads them: "" is the whole state, an empty segment ("a..b") is an
 * empty key, and a backslash before anything other than ".", "\" or a whole-segment `e` stays as it is.
 */
export function parseEnvSimPath(path: string): string[] {
  if (path === "") return [];
  if (!path.includes("\\")) return path.split(".");
  const keys: string[] = [];
  let key = "";
  let escapedEmpty = false;
  for (let i = 0; i < path.length; i++) {
    const char = path.charAt(i);
    if (char === ".") {
      keys.push(escapedEmpty ? "" : key);
      key = "";
      escapedEmpty = false;
    } else if (char === "\\" && i + 1 < path.length) {
      const next = path.charAt(i + 1);
      if (next === "." || next === "\\") {
        key += next;
        i++;
      } else if (next === "e" && key === "" && (i + 2 === path.length || path.charAt(i + 2) === ".")) {
        escapedEmpty = true;
        i++;
      } else key += char;
    } else key += char;
  }
  keys.push(escapedEmpty ? "" : key);
  return keys;
}

/**
 * The path as the official EnvSimBench scripts write it: the keys joined with "." and nothing escaped
 * (ambiguous when a key holds a ".", which is why terrarium escapes).
 */
export function officialEnvSimPath(path: string): string {
  return path.includes("\\") ? parseEnvSimPath(path).join(".") : path;
}

/**
 * EnvSimBench-style changes: objects are walked, anything else (lists included) changes as a whole.
 * Paths are escaped with `formatEnvSimPath`, so a key holding "." (`todo.txt`, `.bashrc`) keeps its path
 * exact; their number (Δ) is the paper's.
 */
export function diffEnvSim(before: unknown, after: unknown, path: string[] = []): EnvSimChange[] {
  if (before === after) return [];
  if (isObject(before) && isObject(after)) {
    const changes: EnvSimChange[] = [];
    for (const key of Object.keys(before)) {
      if (!Object.hasOwn(after, key))
        changes.push({ path: formatEnvSimPath([...path, key]), type: "removed", before: before[key] });
      else if (before[key] !== after[key])
        changes.push(...diffEnvSim(before[key], after[key], [...path, key]));
    }
    for (const key of Object.keys(after)) {
      if (!Object.hasOwn(before, key))
        changes.push({ path: formatEnvSimPath([...path, key]), type: "added", after: after[key] });
    }
    return changes;
  }
  return same(before, after) ? [] : [{ path: formatEnvSimPath(path), type: "modified", before, after }];
}

/**
 * The EnvSimBench-style changes between two documents from their JSON Patch-style ones
 * (`diffJson(before, after)`), without walking the documents again: the same list `diffEnvSim(before,
 * after)` gives. Changes at object paths map one to one; the changes diffJson made inside a list (it
 * walks lists, EnvSimBench does not) become one `modified` change of the outermost list on their path.
 */
export function envSimFromJsonChanges(
  before: unknown,
  after: unknown,
  changes: readonly JsonChange[],
): EnvSimChange[] {
  const result: EnvSimChange[] = [];
  let lastList: string | undefined;
  for (const change of changes) {
    const tokens = parsePointer(change.path);
    // diffJson only went below a list when it was a list on both sides, so the first list on the path
    // (strictly above the change) is where EnvSimBench stops.
    let node: unknown = before;
    let cut = -1;
    for (let i = 0; i < tokens.length; i++) {
      if (Array.isArray(node)) {
        cut = i;
        break;
      }
      node = getOwn(node, tokens[i] as string);
    }
    if (cut < 0) {
      lastList = undefined;
      const path = formatEnvSimPath(tokens);
      if (change.op === "add") result.push({ path, type: "added", after: change.after });
      else if (change.op === "remove") result.push({ path, type: "removed", before: change.before });
      else result.push({ path, type: "modified", before: change.before, after: change.after });
      continue;
    }
    const keys = tokens.slice(0, cut);
    const path = formatEnvSimPath(keys);
    // A list's changes come one after another in diffJson's order: the list counts once.
    if (path === lastList) continue;
    lastList = path;
    let reached: unknown = after;
    for (const key of keys) reached = getOwn(reached, key);
    result.push({ path, type: "modified", before: node, after: reached });
  }
  return result;
}

/**
 * Applies JSON Patch-style changes exactly; returns a new immutable document (see `immutable-json.ts`).
 * The input is not modified: only the containers on changed paths are copied, the rest is shared. Keys
 * are always own data (`__proto__` included); array indexes must be canonical decimal numbers.
 */
export function applyChanges<T>(document: T, changes: readonly JsonChange[]): T {
  const writer = new PathWriter(document);
  for (const change of changes) applyOne(writer, change);
  return toImmutableJson(writer.root) as T;
}

/** Copies each container on a written path once per batch of changes, so later writes reuse the copy. */
export class PathWriter {
  private readonly fresh = new WeakSet<object>();

  constructor(public root: unknown) {}

  /** `container` itself when this writer made it, else a shallow copy it may change. */
  writable<C extends object>(container: C): C {
    if (this.fresh.has(container)) return container;
    const copy = shallowCopy(container);
    this.fresh.add(copy);
    return copy;
  }
}

/** The index an array token names, or undefined when it is not a canonical non-negative integer. */
export function arrayIndex(token: string): number | undefined {
  return /^(0|[1-9][0-9]*)$/.test(token) ? Number(token) : undefined;
}

function applyOne(writer: PathWriter, change: JsonChange): void {
  const tokens = parsePointer(change.path);
  if (tokens.length === 0) {
    if (change.op === "remove")
      throw new TerrariumError("INVALID_POINTER", "cannot remove the whole document");
    writer.root = toImmutableJson(change.after);
    return;
  }
  if (writer.root === null || typeof writer.root !== "object")
    throw new TerrariumError("INVALID_POINTER", `the path ${change.path} does not exist`);
  writer.root = writer.writable(writer.root);
  let parent = writer.root as Record<string, unknown> | unknown[];
  for (const token of tokens.slice(0, -1)) {
    const child = Array.isArray(parent) ? parent[arrayIndex(token) ?? -1] : getOwn(parent, token);
    if (child === null || typeof child !== "object")
      throw new TerrariumError("INVALID_POINTER", `the path ${change.path} does not exist`);
    const copy = writer.writable(child as object) as Record<string, unknown> | unknown[];
    if (Array.isArray(parent)) parent[arrayIndex(token) as number] = copy;
    else setOwn(parent, token, copy);
    parent = copy;
  }
  const last = tokens[tokens.length - 1] as string;
  const value = change.op === "remove" ? undefined : toImmutableJson(change.after);
  if (Array.isArray(parent)) {
    const index = last === "-" ? parent.length : arrayIndex(last);
    if (index === undefined || index > parent.length) {
      throw new TerrariumError("INVALID_POINTER", `index ${last} is outside the array at ${change.path}`);
    }
    if (change.op === "add") parent.splice(index, 0, value);
    else if (index >= parent.length) throw new TerrariumError("INVALID_POINTER", `nothing at ${change.path}`);
    else if (change.op === "replace") parent[index] = value;
    else parent.splice(index, 1);
    return;
  }
  const exists = Object.hasOwn(parent, last);
  if (change.op === "remove") {
    if (!exists) throw new TerrariumError("INVALID_POINTER", `nothing to remove at ${change.path}`);
    delete parent[last];
  } else {
    if (change.op === "replace" && !exists) {
      throw new TerrariumError("INVALID_POINTER", `nothing to replace at ${change.path}`);
    }
    setOwn(parent, last, value);
  }
}

/** Applies EnvSimBench-style changes exactly (escaped dotted paths into objects); returns a new document. */
export function applyEnvSimChanges<T>(document: T, changes: readonly EnvSimChange[]): T {
  return applyChanges(document, changes.map(envSimToJsonChange));
}

/** The JSON Patch-style equivalent of an EnvSimBench change (paths read with `parseEnvSimPath`). */
export function envSimToJsonChange(change: EnvSimChange): JsonChange {
  const path = formatPointer(parseEnvSimPath(change.path));
  if (change.type === "added") return { op: "add", path, after: change.after };
  if (change.type === "removed") return { op: "remove", path, before: change.before };
  return { op: "replace", path, before: change.before, after: change.after };
}
