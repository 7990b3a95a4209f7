import type { JsonChange } from "../core/json-diff.js";
import { escapeToken, parsePointer } from "../core/json-pointer.js";

/**
 * Applies changes the way a simulated state must take them from a model: `add` creates missing parents,
 * `replace` of a missing path becomes `add`, `remove` of a missing path is skipped. Returns the new state
 * (the input is not modified) and the changes as they actually applied.
 */
export function applyTolerantly(
  state: unknown,
  changes: readonly JsonChange[],
): { state: unknown; applied: JsonChange[] } {
  let document: unknown = structuredClone(state ?? {});
  const applied: JsonChange[] = [];
  for (const change of changes) {
    const tokens = parsePointer(change.path);
    if (tokens.length === 0) {
      if (change.op !== "remove") {
        applied.push({ op: "replace", path: "", before: document, after: change.after });
        document = structuredClone(change.after);
      }
      continue;
    }
    let parent: unknown = document;
    for (const [depth, token] of tokens.slice(0, -1).entries()) {
      const container = parent as Record<string, unknown>;
      let next = Array.isArray(parent)
        ? parent[token === "-" ? parent.length : Number(token)]
        : container[token];
      if (next === null || typeof next !== "object") {
        if (change.op === "remove") break;
        // Missing parents are created as objects (numeric keys are usually ids), or as an array for "-".
        next = tokens[depth + 1] === "-" ? [] : {};
        if (Array.isArray(parent)) parent[token === "-" ? parent.length : Number(token)] = next;
        else container[token] = next;
      }
      parent = next;
    }
    const last = tokens[tokens.length - 1] as string;
    if (parent === null || typeof parent !== "object") continue;
    if (Array.isArray(parent)) {
      const index = last === "-" ? parent.length : Number(last);
      if (!Number.isInteger(index) || index < 0) continue;
      if (change.op === "remove") {
        if (index < parent.length) {
          applied.push({ op: "remove", path: change.path, before: parent[index] });
          parent.splice(index, 1);
        }
      } else if (change.op === "add" || index >= parent.length) {
        const at = Math.min(index, parent.length);
        parent.splice(at, 0, structuredClone(change.after));
        applied.push({ op: "add", path: pathWithIndex(tokens, at), after: change.after });
      } else {
        applied.push({ op: "replace", path: change.path, before: parent[index], after: change.after });
        parent[index] = structuredClone(change.after);
      }
      continue;
    }
    const record = parent as Record<string, unknown>;
    const exists = Object.hasOwn(record, last);
    if (change.op === "remove") {
      if (exists) {
        applied.push({ op: "remove", path: change.path, before: record[last] });
        delete record[last];
      }
    } else {
      applied.push(
        exists
          ? { op: "replace", path: change.path, before: record[last], after: change.after }
          : { op: "add", path: change.path, after: change.after },
      );
      record[last] = structuredClone(change.after);
    }
  }
  return { state: document, applied };
}

function pathWithIndex(tokens: string[], index: number): string {
  return [...tokens.slice(0, -1), String(index)].map((token) => `/${escapeToken(token)}`).join("");
}
