import type { JsonObjectSchema, Tool } from "../../src/catalog/tool.js";
import type { Random } from "../../src/core/random.js";

/**
 * Random tool calls for property tests: arguments drawn from each tool's schema, with strings taken from
 * the current state where possible (keys and values), so guards and state-changing branches are reached.
 */
export function randomCall(
  tools: Tool[],
  state: unknown,
  random: Random,
): { name: string; arguments: Record<string, unknown> } {
  const tool = random.pick(tools);
  const strings = collectStrings(state);
  return { name: tool.name, arguments: randomObject(tool.inputSchema, strings, random, 0) };
}

function randomObject(
  schema: JsonObjectSchema,
  strings: string[],
  random: Random,
  depth: number,
): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, JsonObjectSchema>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const out: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    if (!required.has(name) && random.next() < 0.5) continue;
    out[name] = randomValue(property, strings, random, depth + 1);
  }
  return out;
}

function randomValue(schema: JsonObjectSchema, strings: string[], random: Random, depth: number): unknown {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return random.pick(schema.enum);
  if ("const" in schema) return schema.const;
  const type = Array.isArray(schema.type) ? random.pick(schema.type as string[]) : schema.type;
  switch (type) {
    case "integer": {
      const min = typeof schema.minimum === "number" ? schema.minimum : 0;
      const max = typeof schema.maximum === "number" ? schema.maximum : min + 20;
      return random.int(Math.ceil(min), Math.floor(max));
    }
    case "number": {
      const min = typeof schema.minimum === "number" ? schema.minimum : 1;
      const max = typeof schema.maximum === "number" ? schema.maximum : min + 500;
      return Math.round((min + random.next() * (max - min)) * 100) / 100;
    }
    case "boolean":
      return random.next() < 0.5;
    case "array": {
      if (depth > 3) return [];
      const items = (schema.items ?? {}) as JsonObjectSchema;
      const count = random.int(typeof schema.minItems === "number" ? schema.minItems : 0, 3);
      return Array.from({ length: count }, () => randomValue(items, strings, random, depth + 1));
    }
    case "object":
      return depth > 3 ? {} : randomObject(schema, strings, random, depth);
    case "null":
      return null;
    default:
      if (schema.format === "date") return `2025-0${random.int(1, 9)}-1${random.int(0, 9)}`;
      return strings.length > 0 && random.next() < 0.8 ? random.pick(strings) : `value-${random.int(0, 99)}`;
  }
}

function collectStrings(state: unknown, out: string[] = [], depth = 0): string[] {
  if (depth > 6 || out.length > 400) return out;
  if (typeof state === "string" && state.length < 60) out.push(state);
  else if (Array.isArray(state)) for (const item of state) collectStrings(item, out, depth + 1);
  else if (state && typeof state === "object") {
    for (const [key, value] of Object.entries(state)) {
      out.push(key);
      collectStrings(value, out, depth + 1);
    }
  }
  return out;
}
