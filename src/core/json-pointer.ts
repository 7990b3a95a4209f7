import { TerrariumError } from "./errors.js";

/** RFC 6901 JSON Pointers: "" is the whole document, "/a/0/b~1c" reaches a.0["b/c"]. */

export function escapeToken(token: string | number): string {
  const text = String(token);
  // Most tokens need no escaping; skip the two regex passes for them (this runs on validation's hot path).
  if (!text.includes("~") && !text.includes("/")) return text;
  return text.replace(/~/g, "~0").replace(/\//g, "~1");
}

export function unescapeToken(token: string): string {
  return token.replace(/~1/g, "/").replace(/~0/g, "~");
}

export function formatPointer(tokens: ReadonlyArray<string | number>): string {
  return tokens.map((token) => `/${escapeToken(token)}`).join("");
}

export function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) {
    throw new TerrariumError("INVALID_POINTER", `JSON Pointer "${pointer}" must be empty or start with "/"`);
  }
  const tokens = pointer.slice(1).split("/");
  for (const token of tokens) {
    if (/~(?![01])/.test(token)) {
      throw new TerrariumError("INVALID_POINTER", `JSON Pointer "${pointer}" has "~" not followed by 0 or 1`);
    }
  }
  return tokens.map(unescapeToken);
}

/** Appends tokens to a pointer. */
export function joinPointer(base: string, ...tokens: Array<string | number>): string {
  return base + formatPointer(tokens);
}

/** Reads the value at `pointer`, or `undefined` when any step is missing. */
export function getAtPointer(document: unknown, pointer: string | readonly string[]): unknown {
  const tokens = typeof pointer === "string" ? parsePointer(pointer) : pointer;
  let current: unknown = document;
  for (const token of tokens) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (current !== null && typeof current === "object") {
      if (!Object.hasOwn(current, token)) return undefined;
      current = (current as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return current;
}

export function hasPointer(document: unknown, pointer: string): boolean {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return true;
  const parent = getAtPointer(document, tokens.slice(0, -1));
  const last = tokens[tokens.length - 1] as string;
  if (Array.isArray(parent)) return /^(0|[1-9][0-9]*)$/.test(last) && Number(last) < parent.length;
  return parent !== null && typeof parent === "object" && Object.hasOwn(parent, last);
}

/** Converts a pointer to the dotted path EnvSimBench uses ("/a/b/0" -> "a.b.0"). */
export function pointerToDotted(pointer: string): string {
  return parsePointer(pointer).join(".");
}

/** Converts a dotted path to a pointer ("a.b.0" -> "/a/b/0"); the paper's paths split on "." only. */
export function dottedToPointer(path: string): string {
  return path === "" ? "" : formatPointer(path.split("."));
}
