import { getOwn, setOwn, toImmutableJson } from "../core/immutable-json.js";
import { arrayIndex, type JsonChange, PathWriter } from "../core/json-diff.js";
import { escapeToken, parsePointer } from "../core/json-pointer.js";

/**
 * Applies changes the way a simulated state must take them from a model: `add` creates missing parents,
 * `replace` of a missing path becomes `add`, `remove` of a missing path is skipped, and a change whose
 * path cannot be reached (an array index that is not a number, a path through a string) is skipped.
 * Returns the new immutable state (the input is not modified; only changed paths are copied) and the
 * changes as they actually applied. Keys are own data: `/__proto__/x` writes a key named `__proto__`.
 */
export function applyTolerantly(
  state: unknown,
  changes: readonly JsonChange[],
): { state: unknown; applied: JsonChange[] } {
  const writer = new PathWriter(toImmutableJson(state ?? {}));
  const applied: JsonChange[] = [];
  for (const change of changes) {
    const tokens = parsePointer(change.path);
    if (tokens.length === 0) {
      if (change.op !== "remove") {
        applied.push({ op: "replace", path: "", before: writer.root, after: change.after });
        writer.root = toImmutableJson(change.after);
      }
      continue;
    }
    if (writer.root === null || typeof writer.root !== "object") continue;
    writer.root = writer.writable(writer.root);
    let parent = writer.root as Record<string, unknown> | unknown[];
    let reachable = true;
    for (const [depth, token] of tokens.slice(0, -1).entries()) {
      const index = Array.isArray(parent) ? (token === "-" ? parent.length : arrayIndex(token)) : undefined;
      if (Array.isArray(parent) && (index === undefined || index > parent.length)) {
        reachable = false;
        break;
      }
      let next = Array.isArray(parent) ? parent[index as number] : getOwn(parent, token);
      if (next === null || typeof next !== "object") {
        if (change.op === "remove") {
          reachable = false;
          break;
        }
        // Missing parents are created as objects (numeric keys are usually ids), or as an array for "-".
        next = tokens[depth + 1] === "-" ? [] : Object.create(null);
      }
      const copy = writer.writable(next as object) as Record<string, unknown> | unknown[];
      if (Array.isArray(parent)) parent[index as number] = copy;
      else setOwn(parent, token, copy);
      parent = copy;
    }
    if (!reachable) continue;
    const last = tokens[tokens.length - 1] as string;
    if (Array.isArray(parent)) {
      const index = last === "-" ? parent.length : arrayIndex(last);
      if (index === undefined) continue;
      if (change.op === "remove") {
        if (index < parent.length) {
          applied.push({ op: "remove", path: change.path, before: parent[index] });
          parent.splice(index, 1);
        }
      } else if (change.op === "add" || index >= parent.length) {
        const at = Math.min(index, parent.length);
        parent.splice(at, 0, toImmutableJson(change.after));
        applied.push({ op: "add", path: pathWithIndex(tokens, at), after: change.after });
      } else {
        applied.push({ op: "replace", path: change.path, before: parent[index], after: change.after });
        parent[index] = toImmutableJson(change.after);
      }
      continue;
    }
    const exists = Object.hasOwn(parent, last);
    if (change.op === "remove") {
      if (exists) {
        applied.push({ op: "remove", path: change.path, before: parent[last] });
        delete parent[last];
      }
    } else {
      applied.push(
        exists
          ? { op: "replace", path: change.path, before: parent[last], after: change.after }
          : { op: "add", path: change.path, after: change.after },
      );
      setOwn(parent, last, toImmutableJson(change.after));
    }
  }
  return { state: toImmutableJson(writer.root), applied };
}

function pathWithIndex(tokens: string[], index: number): string {
  return [...tokens.slice(0, -1), String(index)].map((token) => `/${escapeToken(token)}`).join("");
}
