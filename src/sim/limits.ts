import { TerrariumError } from "../core/errors.js";
import { isImmutableJson } from "../core/immutable-json.js";

/**
 * Measures of JSON values the engine stores, and the pacing of long loops over histories.
 *
 * Depth counts nested arrays and objects as the server's body check does: a scalar is 0, `{}` is 1,
 * `{"a": []}` is 2. A session export wraps what the engine stores in a few levels of its own, so a value
 * may be only as deep as the document limit minus that wrapping (see EXPORT_WRAPPING).
 */

/**
 * Levels a session export puts around what it carries:
 * `{history: [{request: {arguments}, result: {observation, changes, errors}}]}` (4 around arguments and
 * around each of observation, changes and errors) and `{snapshots: [{state}]}` (3 around a state).
 */
export const EXPORT_WRAPPING = { resultPart: 4, state: 3 } as const;

/** Depths of frozen containers (immutable states and their subtrees) already measured, when large. */
const knownDepths = new WeakMap<object, number>();
/** Only subtrees with at least this many containers are remembered: cheap ones are measured again. */
const REMEMBER_FROM = 64;

/**
 * How deeply `value` nests arrays and objects, or a number above `cap` as soon as it is known to be deeper
 * than `cap` (the walk never goes further down than that, so `cap` bounds its recursion). Subtrees of
 * immutable states are shared between snapshots and steps, so the depth of a large frozen one is remembered.
 */
export function jsonDepth(value: unknown, cap: number): number {
  if (value === null || typeof value !== "object") return 0;
  containers = 0;
  return depthOf(value, cap);
}

/** Containers met so far by the running `jsonDepth` walk (synchronous, so one counter serves them all). */
let containers = 0;

/**
 * The depth of `node`'s subtree; above `room` (the levels left) means too deep, and the walk stops. A
 * container without containers in it is answered without a look in `knownDepths` (it is never
 * remembered), so the walk over the small values of a call costs no table look-up.
 */
function depthOf(node: object, room: number): number {
  if (room <= 0) return 1;
  const first = containers++;
  let deepest = 0;
  let looked = false;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child = node[i];
      if (child === null || typeof child !== "object") continue;
      if (!looked) {
        looked = true;
        const known = knownDepths.get(node);
        if (known !== undefined) return known;
      }
      const depth = depthOf(child, room - 1);
      if (depth > deepest) deepest = depth;
      if (deepest >= room) return deepest + 1;
    }
  } else {
    for (const key in node) {
      if (!Object.hasOwn(node, key)) continue;
      const child = (node as Record<string, unknown>)[key];
      if (child === null || typeof child !== "object") continue;
      if (!looked) {
        looked = true;
        const known = knownDepths.get(node);
        if (known !== undefined) return known;
      }
      const depth = depthOf(child, room - 1);
      if (depth > deepest) deepest = depth;
      if (deepest >= room) return deepest + 1;
    }
  }
  if (containers - first >= REMEMBER_FROM && isImmutable(node)) knownDepths.set(node, deepest + 1);
  return deepest + 1;
}

/** Frozen, or immutable without being frozen (a state's large object held as a persistent record). */
function isImmutable(node: object): boolean {
  return Object.isFrozen(node) || isImmutableJson(node);
}

/**
 * The length of `value`'s JSON text in bytes (strings counted in UTF-8, without escapes), or a number
 * above `max` as soon as it passes `max`: a huge value is not walked to its end.
 */
export function jsonSize(value: unknown, max: number): number {
  let size = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    switch (typeof item) {
      case "string":
        size += Buffer.byteLength(item) + 2;
        break;
      case "number":
        size += Number.isFinite(item) ? String(item).length : 4;
        break;
      case "boolean":
        size += item ? 4 : 5;
        break;
      case "object":
        if (item === null) {
          size += 4;
        } else if (Array.isArray(item)) {
          size += 2 + Math.max(0, item.length - 1);
          for (let i = item.length - 1; i >= 0; i--) pending.push(item[i]);
        } else {
          const keys = Object.keys(item);
          size += 2 + Math.max(0, keys.length - 1);
          for (const key of keys) {
            // "key": (quotes and colon)
            size += Buffer.byteLength(key) + 3;
            pending.push((item as Record<string, unknown>)[key]);
          }
        }
        break;
      default:
        size += 4; // undefined and functions: null in arrays, dropped from objects (counted generously)
    }
    if (size > max) return size;
  }
  return size;
}

/**
 * Long loops over a history (replays, imports) run in slices of about `sliceMs`; between two slices the
 * loop waits for its turn at one gate that the process's loops share. The gate lets one slice run per
 * turn of the event loop (setImmediate, which comes after pending I/O), so /health and other sessions
 * wait for one slice, not for one slice of every loop in progress, however many run at once.
 */
export class Slicer {
  private started = performance.now();

  constructor(private readonly sliceMs = 5) {}

  async pause(): Promise<void> {
    if (performance.now() - this.started < this.sliceMs) return;
    await nextTurn();
    this.started = performance.now();
  }
}

const waiting: Array<() => void> = [];
let scheduled = false;

/** Resolves at a later turn of the event loop; loops waiting here go one per turn, in order of arrival. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!scheduled) schedule();
  });
}

function schedule(): void {
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    // The resumed loop's slice runs in the microtasks after this callback; the next waiter gets the
    // next turn (an immediate scheduled now runs after the event loop has polled for I/O again).
    waiting.shift()?.();
    if (waiting.length > 0) schedule();
  });
}

/** A whole number option from `min` to `max`, or CONFIG_INVALID naming it. */
export function checkedLimit(
  name: string,
  value: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new TerrariumError(
      "CONFIG_INVALID",
      max === Number.MAX_SAFE_INTEGER
        ? `${name} must be a whole number of at least ${min}, got ${value}`
        : `${name} must be a whole number from ${min} to ${max}, got ${value}`,
    );
  return value;
}
