import { parsePointer } from "../core/json-pointer.js";

/** `#/$defs/Comment` -> `Comment`. */
function definitionName(ref: string): string {
  const last = ref.slice(ref.lastIndexOf("/") + 1);
  return last.replace(/~1/g, "/").replace(/~0/g, "~");
}

/** Small helpers that turn schemas, values and paths into words a model (or a person) can act on. */

const TYPE_WORDS: Record<string, string> = {
  integer: "an integer",
  number: "a number",
  string: "a string",
  boolean: "a boolean (true or false)",
  array: "an array",
  object: "an object",
  null: "null",
};

export const FORMAT_WORDS: Record<string, string> = {
  date: "a date (YYYY-MM-DD)",
  "date-time": "a date-time with time zone (RFC 3339, like 2024-05-01T09:30:00Z)",
  time: "a time with time zone (HH:MM:SS+00:00)",
  email: "an email address",
  uri: "an absolute URI (with a scheme, like https://…)",
  "uri-reference": "a URI reference",
  url: "a URL",
  uuid: "a UUID (8-4-4-4-12 hex digits)",
  hostname: "a host name",
  ipv4: "an IPv4 address",
  ipv6: "an IPv6 address",
  duration: "an ISO 8601 duration (like P3DT4H)",
  regex: "a regular expression",
  int32: "a 32-bit integer",
  int64: "a 64-bit integer",
  byte: "base64-encoded data",
};

const pathLabels = new Map<string, string>();

/** `/filters/0/name` -> `"filters[0].name"`; the root is "the arguments". Labels are cached (bounded). */
export function describePath(pointer: string): string {
  const cached = pathLabels.get(pointer);
  if (cached !== undefined) return cached;
  const label = labelOf(pointer);
  if (pathLabels.size > 10_000) pathLabels.clear();
  pathLabels.set(pointer, label);
  return label;
}

function labelOf(pointer: string): string {
  if (pointer === "") return "the arguments";
  let text = "";
  for (const token of parsePointer(pointer)) {
    if (/^(0|[1-9][0-9]*)$/.test(token) && text !== "") text += `[${token}]`;
    else text += text === "" ? token : `.${token}`;
  }
  return `"${text}"`;
}

/** A value as it appears in a message: JSON, cut short when long. */
export function describeValue(value: unknown, max = 60): string {
  if (value === undefined) return "nothing";
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** What kind of JSON value this is, in words ("a string", "an array of 3 items"). */
export function describeKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a number";
  return TYPE_WORDS[typeof value] ?? typeof value;
}

export function describeList(values: readonly unknown[], max = 12): string {
  const shown = values.slice(0, max).map((value) => describeValue(value, 40));
  const rest = values.length > max ? ` (and ${values.length - max} more)` : "";
  if (shown.length <= 1) return (shown[0] ?? "") + rest;
  return `${shown.slice(0, -1).join(", ")} or ${shown[shown.length - 1]}${rest}`;
}

/**
 * The whole expectation a schema states, as a noun phrase: "an integer ≥ 1", "a string of at most 10
 * characters", "one of "a" or "b"". Used when a value has the wrong type, so the model learns every
 * constraint at once instead of one per retry.
 */
export function describeExpectation(schema: unknown): string {
  if (schema === true || schema === undefined) return "any value";
  if (schema === false) return "absent";
  if (schema === null || typeof schema !== "object") return "a valid value";
  const s = schema as Record<string, unknown>;
  // A recursive definition is named, not expanded (expanding it would never end).
  if (typeof s.$ref === "string") return `a "${definitionName(s.$ref)}" value`;
  if (Array.isArray(s.enum)) return `one of ${describeList(s.enum)}`;
  if ("const" in s) return `exactly ${describeValue(s.const)}`;
  const alternatives = (s.oneOf ?? s.anyOf) as unknown[] | undefined;
  if (!s.type && Array.isArray(alternatives)) return alternatives.map(describeExpectation).join(", or ");

  const types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === "string" ? [s.type] : [];
  const format = typeof s.format === "string" ? FORMAT_WORDS[s.format] : undefined;
  const nonNull = types.filter((type) => type !== "null");
  let noun =
    format && nonNull.length <= 1 && (nonNull[0] === "string" || nonNull.length === 0)
      ? format
      : nonNull.map((type) => TYPE_WORDS[type] ?? type).join(" or ");
  if (noun === "") noun = types.length > 0 ? "null" : "a value";

  const details: string[] = [];
  const bounds: string[] = [];
  if (typeof s.minimum === "number") bounds.push(`≥ ${s.minimum}`);
  if (typeof s.exclusiveMinimum === "number") bounds.push(`> ${s.exclusiveMinimum}`);
  if (typeof s.maximum === "number") bounds.push(`≤ ${s.maximum}`);
  if (typeof s.exclusiveMaximum === "number") bounds.push(`< ${s.exclusiveMaximum}`);
  if (bounds.length > 0) details.push(bounds.join(" and "));
  if (typeof s.multipleOf === "number") details.push(`that is a multiple of ${s.multipleOf}`);
  if (typeof s.minLength === "number" && typeof s.maxLength === "number") {
    details.push(`of ${s.minLength} to ${s.maxLength} characters`);
  } else if (typeof s.minLength === "number") {
    details.push(`of at least ${s.minLength} character${s.minLength === 1 ? "" : "s"}`);
  } else if (typeof s.maxLength === "number") {
    details.push(`of at most ${s.maxLength} characters`);
  }
  if (typeof s.pattern === "string") details.push(`matching the pattern ${s.pattern}`);
  if (typeof s.minItems === "number")
    details.push(`with at least ${s.minItems} item${s.minItems === 1 ? "" : "s"}`);
  if (typeof s.maxItems === "number") details.push(`with at most ${s.maxItems} items`);
  if (s.uniqueItems === true) details.push("without duplicates");
  if (nonNull.length === 1 && nonNull[0] === "array" && s.items && typeof s.items === "object") {
    const item = describeExpectation(s.items);
    if (item !== "any value") details.push(`whose items are each ${item}`);
  }
  if (nonNull.length === 1 && nonNull[0] === "object" && Array.isArray(s.required) && s.required.length > 0) {
    details.push(`with ${(s.required as string[]).map((name) => `"${name}"`).join(", ")}`);
  }
  const text = [noun, ...details].join(" ");
  return types.includes("null") && nonNull.length > 0 ? `${text}, or null` : text;
}
