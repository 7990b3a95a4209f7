import { TerrariumError } from "./errors.js";
import { DEFAULT_MAX_JSON_DEPTH } from "./json-limits.js";
import { formatPointer } from "./json-pointer.js";

/** How deeply a body or message may nest arrays and objects, unless the app is configured otherwise: the
 * engine's limit too, so that every stored session exports and imports back. */
export { DEFAULT_MAX_JSON_DEPTH };

/**
 * Parses a request body as JSON and refuses what `JSON.parse` accepts but terrarium could not keep
 * faithfully:
 * - nesting deeper than `maxDepth`: validation, cloning and hashing walk values recursively, so a body
 *   nested 100,000 levels deep would overflow the stack later instead of failing here;
 * - numbers that overflow a double (`1e99999` parses to Infinity, which JSON writes back as null);
 * - integers a double cannot hold exactly (`123456789012345678901234567890` would be silently rounded).
 *   An integer is accepted when the double equals it exactly, or when it is the shortest form of its
 *   double (what JSON.stringify itself writes, so exported documents read back).
 * Errors name the place as a JSON Pointer.
 */
export function parseJsonText(text: string, maxDepth = DEFAULT_MAX_JSON_DEPTH, what = "the body"): unknown {
  let value: unknown;
  try {
    // V8's JSON.parse is iterative: deep nesting cannot overflow here, only in what comes after.
    value = JSON.parse(text);
  } catch (error) {
    throw new TerrariumError("INVALID_INPUT", `${what} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value === "object" && value !== null) {
    if (!needsCheck(text, maxDepth)) return value;
    checkJsonText(text, maxDepth, what);
  } else if (typeof value === "number") checkNumber(text.trim(), [], what);
  return value;
}

/**
 * Numbers `checkNumber` could refuse: 16 digits in a row (an integer past 2^53, or a huge one), or an
 * exponent. Matched anywhere, strings included: a match only means the full check runs.
 */
const NUMBER_TO_CHECK = /[0-9]{16}|[0-9.][eE]/;

/**
 * Whether text JSON.parse accepted could fail `checkJsonText`: deeper than `maxDepth` needs more than
 * `maxDepth` opening brackets and as many closing ones, and a number to refuse matches NUMBER_TO_CHECK.
 * Small messages (a step, a call) skip the walk, which cost as much as parsing them.
 */
export function needsCheck(text: string, maxDepth: number): boolean {
  return text.length > 2 * maxDepth || NUMBER_TO_CHECK.test(text);
}

interface Frame {
  array: boolean;
  index: number;
  /** Bounds of the last key read in an object (raw JSON string, quotes included). */
  keyStart: number;
  keyEnd: number;
  expectKey: boolean;
}

/** One pass over text that JSON.parse accepted: depth and number checks with the path kept as a stack. */
function checkJsonText(text: string, maxDepth: number, what: string): void {
  const stack: Frame[] = [];
  const pathOf = () =>
    stack.map((frame) =>
      frame.array ? frame.index : (JSON.parse(text.slice(frame.keyStart, frame.keyEnd)) as string),
    );
  const length = text.length;
  let i = 0;
  while (i < length) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      if (top && !top.array && top.expectKey) {
        top.keyStart = i;
        top.keyEnd = end;
        top.expectKey = false;
      }
      i = end;
    } else if (ch === 0x5b || ch === 0x7b) {
      if (stack.length >= maxDepth) {
        const pointer = formatPointer(pathOf());
        throw new TerrariumError(
          "INVALID_INPUT",
          `${what} nests arrays and objects deeper than the limit of ${maxDepth} levels (at ${shorten(pointer || "/", 80)})`,
        );
      }
      stack.push({ array: ch === 0x5b, index: 0, keyStart: -1, keyEnd: -1, expectKey: ch === 0x7b });
      i++;
    } else if (ch === 0x5d || ch === 0x7d) {
      stack.pop();
      i++;
    } else if (ch === 0x2c) {
      const top = stack[stack.length - 1];
      if (top?.array) top.index++;
      else if (top) top.expectKey = true;
      i++;
    } else if (ch === 0x2d || (ch >= 0x30 && ch <= 0x39)) {
      const start = i;
      i++;
      while (i < length && isNumberChar(text.charCodeAt(i))) i++;
      const token = text.slice(start, i);
      // Short plain numbers are always exact and finite; only look closer at the others.
      if (token.length > 15) checkNumber(token, pathOf(), what);
      else if (token.includes("e") || token.includes("E")) checkNumber(token, pathOf(), what);
    } else {
      i++;
    }
  }
}

/** `path` undefined: the number is the whole value (a parameter), so no place is named. */
function checkNumber(token: string, path: Array<string | number> | undefined, what: string): void {
  const value = Number(token);
  const at = path ? ` at ${shorten(formatPointer(path) || "/", 80)}` : "";
  if (!Number.isFinite(value)) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `${what} has a number${at} that JSON cannot hold: ${shorten(token, 30)} is beyond the largest double (about 1.8e308)`,
    );
  }
  if (/^-?\d+$/.test(token) && !Number.isSafeInteger(value)) {
    if (BigInt(token) === BigInt(value) || String(value) === token) return;
    throw new TerrariumError(
      "INVALID_INPUT",
      `${what} has an integer${at} that cannot be held exactly: ${shorten(token, 30)} would be rounded to ${value} (send integers beyond 2^53 as strings)`,
    );
  }
}

function isNumberChar(ch: number): boolean {
  // digits, '.', 'e', 'E', '+', '-'
  return (
    (ch >= 0x30 && ch <= 0x39) || ch === 0x2e || ch === 0x65 || ch === 0x45 || ch === 0x2b || ch === 0x2d
  );
}

/** Index just after the string that starts at `start` (an opening quote). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) return text.length;
    let backslashes = 0;
    for (let j = quote - 1; j > start && text.charCodeAt(j) === 0x5c; j--) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * A path or query parameter that the schema says is a number: plain decimal only, finite, and exact when
 * it is an integer. Anything else stays text (validation then says what was expected).
 */
export function numberFromParameter(raw: string, name: string): number | string {
  const text = raw.trim();
  if (!/^-?(\d+)(\.\d+)?([eE][+-]?\d+)?$/.test(text)) return raw;
  checkNumber(text, undefined, `parameter "${name}"`);
  return Number(text);
}
