import { canonicalJson } from "../core/canonical-json.js";
import { setOwn } from "../core/immutable-json.js";
import { escapeToken } from "../core/json-pointer.js";
import { isPlainObject } from "./json-schema.js";
import { DEFS_PREFIX, rewriteDefinitionRefs } from "./refs.js";
import type { JsonSchema } from "./tool.js";

/**
 * Collects the `$defs` of many tool schemas into one place, written once: a document's large or recursive
 * shared schemas are attached to every tool that reaches them, and writing them per tool repeats them
 * (Microsoft Graph's tool list would be gigabytes). Each schema's references are rewritten to
 * `<prefix><name>`, the place the caller puts `schemas` (`#/components/schemas/` in an OpenAPI document,
 * `#/$defs/` at the root of a listing). Definitions keep their names; two different definitions with one
 * name get a numbered suffix (equal ones are written once).
 */
export class SharedDefinitions {
  readonly schemas: Record<string, unknown> = {};
  private readonly contents = new Map<string, string>();
  /** Tools of one document share their definitions' objects: each is serialised and rewritten once. */
  private readonly placed = new WeakMap<object, Map<string, string>>();
  private readonly rewritten = new WeakMap<object, unknown>();

  constructor(private readonly prefix: string) {}

  get size(): number {
    return this.contents.size;
  }

  /** `schema` without its `$defs` (now in `schemas`), its references pointing there. */
  hoist(schema: JsonSchema): JsonSchema {
    if (typeof schema !== "object" || schema === null || !isPlainObject(schema.$defs)) return schema;
    const { $defs, ...rest } = schema;
    const names = new Map<string, string>();
    // Names first (bodies may refer to each other), then bodies with their references rewritten.
    for (const [name, body] of Object.entries($defs)) names.set(name, this.place(name, body));
    const toRef = (name: string) => `${this.prefix}${escapeToken(names.get(name) ?? name)}`;
    for (const [name, body] of Object.entries($defs)) {
      const placedName = names.get(name) as string;
      if (Object.hasOwn(this.schemas, placedName)) continue;
      setOwn(this.schemas, placedName, this.rewrite(body, toRef));
    }
    return rewriteDefinitionRefs(rest, toRef) as JsonSchema;
  }

  private rewrite(body: unknown, toRef: (name: string) => string): unknown {
    if (body === null || typeof body !== "object") return rewriteDefinitionRefs(body, toRef);
    let done = this.rewritten.get(body);
    if (done === undefined) {
      done = rewriteDefinitionRefs(body, toRef);
      this.rewritten.set(body, done);
    }
    return done;
  }

  private place(name: string, body: unknown): string {
    const byName = body !== null && typeof body === "object" ? this.placed.get(body) : undefined;
    const known = byName?.get(name);
    if (known !== undefined) return known;
    const content = canonicalJson(body);
    let placedName = name;
    for (let suffix = 2; ; suffix++) {
      const existing = this.contents.get(placedName);
      if (existing === undefined) {
        this.contents.set(placedName, content);
        break;
      }
      if (existing === content) break;
      placedName = `${name}_${suffix}`;
    }
    if (body !== null && typeof body === "object") {
      const names = byName ?? new Map<string, string>();
      names.set(name, placedName);
      this.placed.set(body, names);
    }
    return placedName;
  }
}

/**
 * The reverse of hoisting, for reading a listing back: `schema` with the `$defs` it reaches (directly or
 * through other definitions) taken from `shared`, the listing's own `$defs`. Definitions the schema
 * carries itself win. `direct` caches each definition's own references across the tools of one listing.
 */
export function withReachableDefinitions(
  schema: unknown,
  shared: Record<string, unknown>,
  direct = new Map<string, string[]>(),
): unknown {
  if (!isPlainObject(schema)) return schema;
  const own = isPlainObject(schema.$defs) ? schema.$defs : {};
  const reached = new Set<string>();
  const pending = definitionNamesIn(schema);
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (reached.has(name) || Object.hasOwn(own, name) || !Object.hasOwn(shared, name)) continue;
    reached.add(name);
    let names = direct.get(name);
    if (names === undefined) {
      names = definitionNamesIn(shared[name]);
      direct.set(name, names);
    }
    pending.push(...names);
  }
  if (reached.size === 0) return schema;
  const $defs: Record<string, unknown> = { ...own };
  for (const name of [...reached].sort()) setOwn($defs, name, shared[name]);
  return { ...schema, $defs };
}

/** The names in the `#/$defs/<name>` references under `node`. */
function definitionNamesIn(node: unknown): string[] {
  const names: string[] = [];
  const pending: unknown[] = [node];
  while (pending.length > 0) {
    const current = pending.pop();
    if (current === null || typeof current !== "object") continue;
    if (Array.isArray(current)) {
      pending.push(...current);
      continue;
    }
    for (const [key, value] of Object.entries(current)) {
      if (key === "$ref" && typeof value === "string" && value.startsWith(DEFS_PREFIX))
        names.push(value.slice(DEFS_PREFIX.length).replace(/~1/g, "/").replace(/~0/g, "~"));
      else pending.push(value);
    }
  }
  return names;
}
