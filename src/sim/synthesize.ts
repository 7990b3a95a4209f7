import { createHash } from "node:crypto";
import type { JsonSchema } from "../catalog/tool.js";
import { contentId } from "../core/ids.js";
import { setOwn } from "../core/immutable-json.js";
import type { Random } from "../core/random.js";

/**
 * Deterministic synthesis of a value that satisfies a JSON Schema, from a seeded random source. Strings
 * that name identifiers (`id`, `*_id`, `*Id`) are derived from a hash of `idSeed` and their path, so the
 * same call always yields the same identifiers. Used by the `schema` simulator (no model needed).
 */
export interface SynthesisOptions {
  random: Random;
  /** Text that identifiers are derived from (the tool and its arguments). */
  idSeed: string;
  /** ISO date-time the synthesized dates and times are near. */
  now?: string;
}

const WORDS = [
  "alpha",
  "amber",
  "birch",
  "cedar",
  "delta",
  "ember",
  "fable",
  "harbor",
  "indigo",
  "juniper",
  "maple",
  "nova",
  "orchid",
  "quartz",
  "river",
  "sierra",
  "tundra",
  "willow",
];

export function synthesize(
  schema: JsonSchema | undefined,
  options: SynthesisOptions,
  path: string[] = [],
): unknown {
  if (schema === undefined || schema === true)
    return synthesizeByName(path, options) ?? options.random.pick(WORDS);
  if (schema === false) return null;
  const s = schema as Record<string, unknown>;
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return options.random.pick(s.enum);
  if (Array.isArray(s.allOf) && s.allOf.length > 0) return synthesize(mergeAllOf(s), options, path);
  const alternatives = (s.oneOf ?? s.anyOf) as JsonSchema[] | undefined;
  if (Array.isArray(alternatives) && alternatives.length > 0) {
    // Prefer a non-null alternative: an API's "X or null" usually answers with an X.
    const nonNull = alternatives.filter(
      (alt) => !(typeof alt === "object" && alt && (alt as { type?: unknown }).type === "null"),
    );
    return synthesize(options.random.pick(nonNull.length > 0 ? nonNull : alternatives), options, path);
  }
  const types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === "string" ? [s.type] : [];
  const type = types.find((t) => t !== "null") ?? types[0] ?? inferType(s);
  switch (type) {
    case "object":
      return synthesizeObject(s, options, path);
    case "array":
      return synthesizeArray(s, options, path);
    case "integer":
      return synthesizeNumber(s, options, true);
    case "number":
      return synthesizeNumber(s, options, false);
    case "boolean":
      return options.random.next() < 0.5;
    case "null":
      return null;
    default:
      return synthesizeString(s, options, path);
  }
}

function inferType(s: Record<string, unknown>): string {
  if (s.properties || s.required) return "object";
  if (s.items || s.prefixItems) return "array";
  if (typeof s.minimum === "number" || typeof s.maximum === "number") return "number";
  return "string";
}

function mergeAllOf(s: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...s };
  delete merged.allOf;
  const properties: Record<string, unknown> = { ...((s.properties as object) ?? {}) };
  const required = new Set<string>((s.required as string[]) ?? []);
  for (const part of s.allOf as Array<Record<string, unknown>>) {
    if (typeof part !== "object" || part === null) continue;
    for (const [name, property] of Object.entries(part.properties ?? {})) setOwn(properties, name, property);
    for (const name of (part.required as string[]) ?? []) required.add(name);
    for (const [key, value] of Object.entries(part))
      if (!Object.hasOwn(merged, key) && key !== "properties" && key !== "required")
        setOwn(merged, key, value);
  }
  if (Object.keys(properties).length > 0) merged.properties = properties;
  if (required.size > 0) merged.required = [...required];
  return merged;
}

function synthesizeObject(
  s: Record<string, unknown>,
  options: SynthesisOptions,
  path: string[],
): Record<string, unknown> {
  const properties = (s.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((s.required as string[]) ?? []);
  const out: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    // Required fields always; optional ones mostly, so answers look complete but vary.
    if (!required.has(name) && options.random.next() < 0.25) continue;
    setOwn(out, name, synthesize(property, options, [...path, name]));
  }
  for (const name of required)
    if (!Object.hasOwn(out, name)) setOwn(out, name, synthesize(undefined, options, [...path, name]));
  return out;
}

function synthesizeArray(s: Record<string, unknown>, options: SynthesisOptions, path: string[]): unknown[] {
  if (Array.isArray(s.prefixItems)) {
    return (s.prefixItems as JsonSchema[]).map((item, index) =>
      synthesize(item, options, [...path, String(index)]),
    );
  }
  const min = typeof s.minItems === "number" ? s.minItems : 1;
  const max = Math.max(min, typeof s.maxItems === "number" ? Math.min(s.maxItems, min + 2) : min + 2);
  const count = options.random.int(min, max);
  const items: unknown[] = [];
  for (let index = 0; items.length < count && index < count * 5; index++) {
    const item = synthesize(s.items as JsonSchema | undefined, options, [...path, String(items.length)]);
    if (s.uniqueItems === true && items.some((existing) => JSON.stringify(existing) === JSON.stringify(item)))
      continue;
    items.push(item);
  }
  return items;
}

function synthesizeNumber(s: Record<string, unknown>, options: SynthesisOptions, integer: boolean): number {
  let min =
    typeof s.minimum === "number"
      ? s.minimum
      : typeof s.exclusiveMinimum === "number"
        ? s.exclusiveMinimum + (integer ? 1 : 0.01)
        : 0;
  let max =
    typeof s.maximum === "number"
      ? s.maximum
      : typeof s.exclusiveMaximum === "number"
        ? s.exclusiveMaximum - (integer ? 1 : 0.01)
        : min + 100;
  if (max < min) max = min;
  const step = typeof s.multipleOf === "number" ? s.multipleOf : integer ? 1 : 0.01;
  min = Math.ceil(min / step) * step;
  const steps = Math.max(0, Math.floor((max - min) / step));
  const value = min + options.random.int(0, steps) * step;
  return integer ? Math.round(value) : Math.round(value * 100) / 100;
}

function synthesizeString(s: Record<string, unknown>, options: SynthesisOptions, path: string[]): string {
  const now = new Date(options.now ?? "2025-01-01T12:00:00.000Z");
  const dayOffset = options.random.int(-30, 30);
  const at = new Date(now.getTime() + dayOffset * 86_400_000);
  let value: string;
  switch (s.format) {
    case "date":
      value = at.toISOString().slice(0, 10);
      break;
    case "date-time":
      value = `${at.toISOString().slice(0, 19)}Z`;
      break;
    case "time":
      value = `${at.toISOString().slice(11, 19)}Z`;
      break;
    case "email":
      value = `${options.random.pick(WORDS)}.${options.random.pick(WORDS)}@example.com`;
      break;
    case "uri":
    case "url":
      value = `https://example.com/${options.random.pick(WORDS)}/${contentId(`${options.idSeed}|${path.join(".")}`, "", 8)}`;
      break;
    case "uuid":
      value = uuidFrom(`${options.idSeed}|${path.join(".")}`);
      break;
    default:
      value =
        (typeof s.pattern === "string" ? fromPattern(s.pattern, options.random) : undefined) ??
        synthesizeByName(path, options) ??
        `${options.random.pick(WORDS)} ${options.random.pick(WORDS)}`;
  }
  const minLength = typeof s.minLength === "number" ? s.minLength : 0;
  const maxLength = typeof s.maxLength === "number" ? s.maxLength : Number.POSITIVE_INFINITY;
  while ([...value].length < minLength) value += options.random.pick(WORDS);
  if ([...value].length > maxLength) value = [...value].slice(0, maxLength).join("");
  return value;
}

/** Identifier-like fields get ids derived from the call, so the same call gives the same ids. */
function synthesizeByName(path: string[], options: SynthesisOptions): string | undefined {
  const name = path[path.length - 1] ?? "";
  if (/(^id$|_id$|Id$|^uuid$)/.test(name)) {
    const prefix = name === "id" ? "" : name.replace(/(_id|Id)$/, "").slice(0, 4);
    return contentId(`${options.idSeed}|${path.join(".")}`, prefix, 10);
  }
  return undefined;
}

function uuidFrom(text: string): string {
  const hex = createHash("sha256").update(text).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * A string matching a regular expression, for the common shapes of API patterns: literals, escapes
 * (\d \w \s), classes ([A-Z0-9_-]), groups with alternation, and quantifiers (? * + {n} {n,m}).
 * Returns undefined for anything it cannot build; the caller then checks and falls back.
 */
export function fromPattern(pattern: string, random: Random): string | undefined {
  const source = pattern.replace(/^\^/, "").replace(/\$$/, "");
  let index = 0;
  const parseAlternation = (): (() => string) | undefined => {
    const branches: Array<() => string> = [];
    let current = parseSequence();
    if (!current) return undefined;
    branches.push(current);
    while (source[index] === "|") {
      index++;
      current = parseSequence();
      if (!current) return undefined;
      branches.push(current);
    }
    return () => (random.pick(branches) as () => string)();
  };
  const parseSequence = (): (() => string) | undefined => {
    const parts: Array<() => string> = [];
    while (index < source.length && source[index] !== "|" && source[index] !== ")") {
      const atom = parseAtom();
      if (!atom) return undefined;
      parts.push(applyQuantifier(atom));
    }
    return () => parts.map((part) => part()).join("");
  };
  const applyQuantifier = (atom: () => string): (() => string) => {
    const char = source[index];
    let min = 1;
    let max = 1;
    if (char === "?") [min, max] = [0, 1];
    else if (char === "*") [min, max] = [0, 3];
    else if (char === "+") [min, max] = [1, 3];
    else if (char === "{") {
      const match = /^\{(\d+)(?:,(\d*))?\}/.exec(source.slice(index));
      if (!match) return atom;
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[2] === "" ? min + 3 : Number(match[2]);
      index += match[0].length - 1;
    } else return atom;
    index++;
    return () => {
      let out = "";
      for (let i = random.int(min, max); i > 0; i--) out += atom();
      return out;
    };
  };
  const classChars = (body: string): string[] | undefined => {
    const chars: string[] = [];
    for (let i = 0; i < body.length; i++) {
      const c = body[i] as string;
      if (c === "\\") {
        const next = body[++i];
        if (next === "d") chars.push(..."0123456789");
        else if (next === "w") chars.push(..."abcdefghijklmnopqrstuvwxyz0123456789_");
        else if (next === "s") chars.push(" ");
        else if (next !== undefined) chars.push(next);
      } else if (body[i + 1] === "-" && body[i + 2] !== undefined && body[i + 2] !== "]") {
        const end = (body[i + 2] as string).charCodeAt(0);
        for (let code = c.charCodeAt(0); code <= end; code++) chars.push(String.fromCharCode(code));
        i += 2;
      } else chars.push(c);
    }
    return chars.length > 0 ? chars : undefined;
  };
  const parseAtom = (): (() => string) | undefined => {
    const char = source[index];
    if (char === undefined) return undefined;
    if (char === "(") {
      index++;
      if (source.startsWith("?:", index)) index += 2;
      const inner = parseAlternation();
      if (!inner || source[index] !== ")") return undefined;
      index++;
      return inner;
    }
    if (char === "[") {
      const end = source.indexOf("]", index + 1);
      if (end < 0 || source[index + 1] === "^") return undefined;
      const chars = classChars(source.slice(index + 1, end));
      index = end + 1;
      return chars ? () => random.pick(chars) : undefined;
    }
    if (char === "\\") {
      const next = source[index + 1];
      index += 2;
      if (next === "d") return () => String(random.int(0, 9));
      if (next === "w") return () => random.pick([..."abcdefghijklmnopqrstuvwxyz"]);
      if (next === "s") return () => " ";
      return next === undefined ? undefined : () => next;
    }
    if (char === ".") {
      index++;
      return () => random.pick([..."abcdefghijklmnopqrstuvwxyz"]);
    }
    if ("^$*+?{}".includes(char)) return undefined;
    index++;
    return () => char;
  };
  const generator = parseAlternation();
  if (!generator || index !== source.length) return undefined;
  return generator();
}
