import { createHash } from "node:crypto";
import { fullFormats } from "ajv-formats/dist/formats.js";
import { type LinearRegExp, translateToLinear } from "../catalog/linear-regex.js";
import type { JsonSchema } from "../catalog/tool.js";
import { contentId } from "../core/ids.js";
import { setOwn } from "../core/immutable-json.js";
import { same } from "../core/json-diff.js";
import { getAtPointer, parsePointer } from "../core/json-pointer.js";
import type { Random } from "../core/random.js";

/**
 * Deterministic synthesis of a value that satisfies a JSON Schema 2020-12, from a seeded random source.
 * Strings that name identifiers (`id`, `*_id`, `*Id`) are derived from a hash of `idSeed` and their path,
 * so the same call always yields the same identifiers. Used by the `schema` simulator (no model needed)
 * and to make up tool-call arguments.
 *
 * Local `$ref`s ("#/$defs/Node", any "#/…" JSON Pointer) are followed against `root`. Recursion is
 * bounded: once a reference is open more than {@link REF_REPEATS} times on the current path, or values
 * nest deeper than {@link MINIMAL_DEPTH}, or a synthesis has made {@link NODE_BUDGET} values, the rest is
 * built minimal — optional properties left out, arrays at `minItems`, null or the alternative that needs
 * no further recursion chosen — so that the value still validates and stays small.
 */
export interface SynthesisOptions {
  random: Random;
  /** Text that identifiers are derived from (the tool and its arguments). */
  idSeed: string;
  /** ISO date-time the synthesized dates and times are near. */
  now?: string;
  /**
   * The document that local `$ref`s point into: usually the tool's whole schema, with its `$defs`.
   * Defaults to the schema given to `synthesize`.
   */
  root?: JsonSchema;
  /**
   * Include every optional property that may appear (rather than most of them). Values get bigger, but
   * `oneOf` branches that differ only in an optional property's type can then be told apart.
   */
  complete?: boolean;
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

/** How often one `$ref` target may be open on the current path before the values below it turn minimal. */
const REF_REPEATS = 2;
/** Values nested deeper than this are minimal. */
const MINIMAL_DEPTH = 8;
/** After this many values in one synthesis, the remaining ones are minimal. */
const NODE_BUDGET = 400;
/** A schema that still asks for another level this deep admits no finite value; give up with null. */
const GIVE_UP_DEPTH = 48;
const GIVE_UP_REFS = 16;
/** Tries per value when a candidate fails the schema, and for one whole synthesis. */
const NODE_ATTEMPTS = 6;
const RETRY_BUDGET = 160;
const COST_STEPS = 4000;
const MAX_PARTS = 256;

type SchemaObject = Record<string, unknown>;
type Kind = "null" | "boolean" | "object" | "array" | "integer" | "number" | "string";

const KINDS: readonly Kind[] = ["null", "boolean", "object", "array", "integer", "number", "string"];
/** The order in which a minimal value prefers types: the cheapest first. */
const MINIMAL_ORDER: readonly Kind[] = ["null", "boolean", "integer", "number", "string", "array", "object"];
/** The types an untyped value falls back to, most natural first. */
const ANY_ORDER: readonly Kind[] = ["string", "integer", "number", "boolean", "object", "array", "null"];
const SCALARS: ReadonlySet<Kind> = new Set(["null", "boolean", "integer", "number", "string"]);

interface Budget {
  nodes: number;
  retries: number;
  serial: number;
  costSteps: number;
  readonly costs: Map<object, number>;
  /** Patterns (with their length bounds) no string was found for in this synthesis: not tried again. */
  readonly defeated: Set<string>;
}

interface Context {
  readonly options: SynthesisOptions;
  readonly random: Random;
  readonly root: JsonSchema;
  /** How many times each `$ref` is open on the current path. */
  readonly refs: ReadonlyMap<string, number>;
  readonly depth: number;
  /** Build the smallest valid value from here down. */
  readonly minimal: boolean;
  readonly budget: Budget;
}

/** What the `not`s of a schema (and the branches of a `oneOf` not taken) rule out, as far as it is cheap to say. */
interface Exclusions {
  readonly kinds: Set<Kind>;
  readonly values: unknown[];
  readonly keys: Set<string>;
  /**
   * For a `not` that only lists properties (say, the other branch of a oneOf whose branches differ only
   * in optional properties): ways to fail it, each a key to add with a value of none of these types.
   */
  readonly mismatches: Array<Array<{ key: string; kinds: Kind[] }>>;
}

const NOTHING: unique symbol = Symbol("nothing");

// ---------------------------------------------------------------------------------------------------------
// Entry points

export function synthesize(
  schema: JsonSchema | undefined,
  options: SynthesisOptions,
  path: string[] = [],
): unknown {
  const context: Context = {
    options,
    random: options.random,
    root: options.root ?? schema ?? true,
    refs: new Map(),
    depth: 0,
    minimal: false,
    budget: {
      nodes: 0,
      retries: RETRY_BUDGET,
      serial: 0,
      costSteps: 0,
      costs: new Map(),
      defeated: new Set(),
    },
  };
  return generate(schema, context, path);
}

/**
 * Synthesizes a value and checks it with `validate` (for instance the tool's Ajv validator); when it
 * fails, tries again with sources derived from `options.random`, up to `attempts` times in all. The same
 * inputs give the same result. `valid` tells whether the returned value passed.
 */
export function synthesizeValid(
  schema: JsonSchema | undefined,
  options: SynthesisOptions,
  validate: (value: unknown) => boolean,
  attempts = 8,
): { value: unknown; valid: boolean } {
  let first: unknown = NOTHING;
  for (let attempt = 0; attempt < Math.max(1, attempts); attempt++) {
    const random = attempt === 0 ? options.random : options.random.derive(`synthesizeValid ${attempt}`);
    // The later half of the attempts includes every optional property (see `complete`).
    const complete = options.complete === true || attempt >= Math.ceil(attempts / 2);
    const value = synthesize(schema, { ...options, random, complete });
    if (validate(value)) return { value, valid: true };
    if (first === NOTHING) first = value;
  }
  return { value: first, valid: false };
}

// ---------------------------------------------------------------------------------------------------------
// Generation

function generate(schema: JsonSchema | undefined, context: Context, path: string[]): unknown {
  return generateChecked(schema, context, path).value;
}

/** A value for `schema`, and whether it satisfies the schema (false when every attempt failed). */
function generateChecked(
  schema: JsonSchema | undefined,
  context: Context,
  path: string[],
): { value: unknown; ok: boolean } {
  const { budget } = context;
  budget.nodes++;
  if (schema === undefined || schema === true) return { value: freeString(context, path), ok: true };
  if (!isRecord(schema) || context.depth > GIVE_UP_DEPTH) return { value: null, ok: false };
  const here =
    !context.minimal && (budget.nodes > NODE_BUDGET || context.depth > MINIMAL_DEPTH)
      ? { ...context, minimal: true }
      : context;
  let fallback: unknown = NOTHING;
  // The branches each attempt took, so that a retry tries the others first.
  const tried: Tried = new Map();
  for (let attempt = 0; attempt < NODE_ATTEMPTS; attempt++) {
    let ctx = here;
    if (attempt > 0) {
      if (budget.retries <= 0) break;
      budget.retries--;
      ctx = { ...here, random: here.random.derive(`retry ${budget.serial++}`) };
    }
    const value = generateOnce(schema, ctx, path, tried, attempt > 0);
    if (value === NOTHING) break;
    if (conforms(value, schema, here.root)) return { value, ok: true };
    if (fallback === NOTHING) fallback = value;
  }
  return { value: fallback === NOTHING ? null : fallback, ok: false };
}

function generateOnce(
  schema: SchemaObject,
  context: Context,
  path: string[],
  tried: Tried,
  insist: boolean,
): unknown {
  const node = collect(schema, context, tried, insist);
  if (node === undefined) return NOTHING;
  const { parts, exclusions } = node;
  const ctx = node.context;
  const domain = valueDomain(parts);
  if (domain !== undefined) return pickValue(domain, parts, exclusions, ctx);
  const kinds = allowedKinds(parts, exclusions);
  switch (chooseKind(kinds, ctx)) {
    case "object":
      return generateObject(parts, exclusions, ctx, path);
    case "array":
      return generateArray(parts, ctx, path);
    case "integer":
      return generateNumber(parts, exclusions, ctx, true);
    case "number":
      return generateNumber(parts, exclusions, ctx, false);
    case "boolean": {
      const pool = [true, false].filter((value) => !exclusions.values.includes(value));
      return ctx.random.pick(pool.length > 0 ? pool : [true, false]);
    }
    case "null":
      return null;
    default:
      return generateString(parts, exclusions, ctx, path);
  }
}

interface Collected {
  parts: SchemaObject[];
  context: Context;
  exclusions: Exclusions;
}

/**
 * The schema as a list of parts that must all hold: `$ref`s followed (and counted on the path), `allOf`
 * members spread, and one branch of each `anyOf`/`oneOf` and of each `if`/`then`/`else` taken. The other
 * branches of a `oneOf`, the `not`s and a skipped `if` become exclusions. Undefined when the recursion has
 * to be given up.
 */
function collect(
  schema: JsonSchema,
  context: Context,
  tried: Tried = new Map(),
  insist = false,
): Collected | undefined {
  const parts: SchemaObject[] = [];
  const nots: unknown[] = [];
  let ctx = context;
  let gaveUp = false;
  const add = (sub: unknown): void => {
    if (sub === undefined || sub === true || parts.length > MAX_PARTS) return;
    if (!isRecord(sub)) {
      parts.push(NEVER);
      return;
    }
    if (typeof sub.$ref === "string") {
      const open = (ctx.refs.get(sub.$ref) ?? 0) + 1;
      if (open > GIVE_UP_REFS) {
        gaveUp = true;
        return;
      }
      const refs = new Map(ctx.refs);
      refs.set(sub.$ref, open);
      ctx = { ...ctx, refs, minimal: ctx.minimal || open > REF_REPEATS };
      add(resolveRef(sub.$ref, ctx.root));
    }
    parts.push(sub);
    if (Array.isArray(sub.allOf)) for (const member of sub.allOf) add(member);
  };
  add(schema);
  for (let index = 0; index < parts.length && !gaveUp; index++) {
    const part = parts[index] as SchemaObject;
    if (Array.isArray(part.anyOf) && part.anyOf.length > 0)
      add(part.anyOf[chooseBranch(part.anyOf, ctx, tried)]);
    if (Array.isArray(part.oneOf) && part.oneOf.length > 0) {
      const chosen = chooseBranch(part.oneOf, ctx, tried);
      add(part.oneOf[chosen]);
      part.oneOf.forEach((branch, other) => {
        if (other !== chosen) nots.push(branch);
      });
    }
    if (part.if !== undefined && (part.then !== undefined || part.else !== undefined)) {
      const thenChance = part.else === undefined ? 0.8 : part.then === undefined ? 0.2 : 0.5;
      if (ctx.random.next() < thenChance) {
        add(part.if);
        add(part.then);
      } else {
        add(part.else);
        nots.push(part.if);
      }
    }
    if (part.not !== undefined) nots.push(part.not);
  }
  if (gaveUp) return undefined;
  return { parts, context: ctx, exclusions: exclusionsOf(nots, ctx.root, insist) };
}

const NEVER: SchemaObject = { not: {} };

type Tried = Map<unknown[], number[]>;

/** Which branch of an `anyOf`/`oneOf` to take: the cheapest when minimal, else a random one; untried first. */
function chooseBranch(branches: unknown[], ctx: Context, tried: Tried): number {
  const taken = tried.get(branches) ?? [];
  tried.set(branches, taken);
  let indexes = branches.map((_, index) => index);
  if (taken.length < indexes.length) indexes = indexes.filter((index) => !taken.includes(index));
  let chosen: number;
  if (ctx.minimal) {
    const costs = branches.map((branch) => minimalCost(branch, ctx));
    const rank = (index: number): number => (isNullSchema(branches[index]) ? 0 : 1);
    indexes.sort((a, b) => (costs[a] as number) - (costs[b] as number) || rank(a) - rank(b) || a - b);
    chosen = indexes[0] as number;
  } else {
    // Prefer a non-null alternative: an API's "X or null" usually carries an X.
    const preferred = indexes.filter((index) => !isNullSchema(branches[index]) && branches[index] !== false);
    chosen = ctx.random.pick(preferred.length > 0 ? preferred : indexes);
  }
  taken.push(chosen);
  return chosen;
}

function isNullSchema(schema: unknown): boolean {
  return isRecord(schema) && (schema.type === "null" || (schema.const === null && "const" in schema));
}

/**
 * How many levels of `$ref` the smallest value of `schema` has to open; Infinity when it can only recurse
 * forever. Guides the choice of a branch when values must be minimal.
 */
function minimalCost(schema: unknown, ctx: Context, visiting: readonly string[] = [], depth = 0): number {
  const { budget } = ctx;
  if (++budget.costSteps > COST_STEPS) return 0;
  if (schema === undefined || schema === true) return 0;
  if (!isRecord(schema) || depth > 32) return Number.POSITIVE_INFINITY;
  if (visiting.length === 0) {
    const known = budget.costs.get(schema);
    if (known !== undefined) return known;
  }
  let cost = 0;
  if (typeof schema.$ref === "string") {
    cost += visiting.includes(schema.$ref)
      ? Number.POSITIVE_INFINITY
      : 1 + minimalCost(resolveRef(schema.$ref, ctx.root), ctx, [...visiting, schema.$ref], depth + 1);
  }
  if (Array.isArray(schema.allOf))
    for (const member of schema.allOf) cost += minimalCost(member, ctx, visiting, depth + 1);
  for (const key of ["anyOf", "oneOf"]) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0)
      cost += Math.min(...branches.map((branch) => minimalCost(branch, ctx, visiting, depth + 1)));
  }
  const kinds = schema.type !== undefined ? kindsOf(schema.type) : inferKinds([schema]);
  if (!kinds.some((kind) => SCALARS.has(kind))) {
    if (kinds.includes("object") && Array.isArray(schema.required)) {
      const properties = isRecord(schema.properties) ? schema.properties : {};
      for (const name of schema.required) {
        if (typeof name !== "string") continue;
        const property = Object.hasOwn(properties, name) ? properties[name] : schema.additionalProperties;
        cost += minimalCost(property, ctx, visiting, depth + 1);
      }
    } else if (kinds.includes("array") && num(schema.minItems) && schema.minItems > 0) {
      const first = Array.isArray(schema.prefixItems) ? schema.prefixItems[0] : schema.items;
      cost += minimalCost(first, ctx, visiting, depth + 1);
    }
  }
  if (visiting.length === 0) budget.costs.set(schema, cost);
  return cost;
}

function exclusionsOf(nots: unknown[], root: JsonSchema, insist: boolean): Exclusions {
  const exclusions: Exclusions = { kinds: new Set(), values: [], keys: new Set(), mismatches: [] };
  // Making any one keyword of a `not` fail is enough; pick the narrowest that applies.
  const visit = (schema: unknown, depth: number): void => {
    if (!isRecord(schema) || depth > 4) return;
    if (typeof schema.$ref === "string") visit(resolveRef(schema.$ref, root), depth + 1);
    if ("const" in schema) exclusions.values.push(schema.const);
    else if (Array.isArray(schema.enum)) exclusions.values.push(...schema.enum);
    else if (Array.isArray(schema.required) && schema.required.length > 0) {
      for (const key of schema.required) if (typeof key === "string") exclusions.keys.add(key);
      if (schema.type !== undefined)
        for (const kind of kindsOf(schema.type)) if (kind !== "object") exclusions.kinds.add(kind);
    } else {
      if (schema.type !== undefined) for (const kind of kindsOf(schema.type)) exclusions.kinds.add(kind);
      else if (Array.isArray(schema.anyOf)) for (const branch of schema.anyOf) visit(branch, depth + 1);
      // Only on a retry: adding a property of the wrong type is a last resort.
      if (insist && isRecord(schema.properties)) {
        const ways = Object.entries(schema.properties)
          .filter(([, property]) => isRecord(property) && property.type !== undefined)
          .map(([key, property]) => ({ key, kinds: kindsOf((property as SchemaObject).type) }));
        if (ways.length > 0) exclusions.mismatches.push(ways);
      }
    }
  };
  for (const schema of nots) visit(schema, 0);
  return exclusions;
}

/** The values `const`/`enum` allow (their intersection across parts), or undefined when none restricts. */
function valueDomain(parts: SchemaObject[]): unknown[] | undefined {
  let domain: unknown[] | undefined;
  for (const part of parts) {
    const values = "const" in part ? [part.const] : Array.isArray(part.enum) ? part.enum : undefined;
    if (values === undefined) continue;
    domain =
      domain === undefined
        ? [...values]
        : domain.filter((value) => values.some((other) => same(value, other)));
  }
  return domain;
}

function pickValue(domain: unknown[], parts: SchemaObject[], exclusions: Exclusions, ctx: Context): unknown {
  const fitting = domain.filter(
    (value) =>
      !exclusions.values.some((excluded) => same(excluded, value)) &&
      parts.every((part) => conforms(value, part, ctx.root)),
  );
  const pool = fitting.length > 0 ? fitting : domain;
  if (pool.length === 0) return null;
  const chosen = ctx.minimal && pool.includes(null) ? null : ctx.random.pick(pool);
  return chosen !== null && typeof chosen === "object" ? structuredClone(chosen) : chosen;
}

function kindsOf(type: unknown): Kind[] {
  const names = Array.isArray(type) ? type : [type];
  const kinds: Kind[] = [];
  for (const name of names) {
    if (name === "number") kinds.push("number", "integer");
    else if (KINDS.includes(name as Kind)) kinds.push(name as Kind);
  }
  return [...new Set(kinds)];
}

const OBJECT_KEYWORDS = [
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "minProperties",
  "maxProperties",
  "propertyNames",
  "dependentRequired",
  "dependentSchemas",
  "unevaluatedProperties",
];
const ARRAY_KEYWORDS = ["items", "prefixItems", "minItems", "maxItems", "contains", "uniqueItems"];
const NUMBER_KEYWORDS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];

/** The type a schema without `type` describes, judged from its keywords; a string when nothing tells. */
function inferKinds(parts: SchemaObject[]): Kind[] {
  const has = (keywords: string[]): boolean =>
    parts.some((part) => keywords.some((keyword) => part[keyword] !== undefined));
  if (has(OBJECT_KEYWORDS)) return ["object"];
  if (has(ARRAY_KEYWORDS)) return ["array"];
  if (has(NUMBER_KEYWORDS)) return ["number", "integer"];
  return ["string"];
}

function allowedKinds(parts: SchemaObject[], exclusions: Exclusions): Kind[] {
  let kinds: Kind[] | undefined;
  for (const part of parts) {
    if (part.type === undefined) continue;
    const own = kindsOf(part.type);
    kinds = kinds === undefined ? own : kinds.filter((kind) => own.includes(kind));
  }
  const typed = kinds !== undefined;
  kinds ??= inferKinds(parts);
  let remaining = kinds.filter((kind) => !exclusions.kinds.has(kind));
  // Without a declared type, any type will do when the likely one is ruled out.
  if (remaining.length === 0 && !typed) remaining = ANY_ORDER.filter((kind) => !exclusions.kinds.has(kind));
  return remaining.length > 0 ? remaining : kinds;
}

function chooseKind(kinds: Kind[], ctx: Context): Kind {
  if (kinds.length === 0) return "string";
  if (ctx.minimal) return MINIMAL_ORDER.find((kind) => kinds.includes(kind)) ?? "string";
  let pool = kinds.filter((kind) => kind !== "null");
  if (pool.includes("number")) pool = pool.filter((kind) => kind !== "integer");
  if (pool.length === 0) return kinds[0] as Kind;
  return pool.length === 1 ? (pool[0] as Kind) : ctx.random.pick(pool);
}

function conjunction(schemas: unknown[]): JsonSchema | undefined {
  if (schemas.length === 0) return undefined;
  if (schemas.length === 1) return schemas[0] as JsonSchema;
  return { allOf: schemas };
}

// ---------------------------------------------------------------------------------------------------------
// Objects

function generateObject(
  initial: SchemaObject[],
  exclusions: Exclusions,
  ctx: Context,
  path: string[],
): Record<string, unknown> {
  let parts = initial;
  let keys = chooseKeys(parts, exclusions, ctx, undefined);
  // A present property may bring a dependent schema along; apply it and settle the keys again.
  const applied = new Set<unknown>();
  for (let round = 0; round < 4; round++) {
    const extra: SchemaObject[] = [];
    for (const part of parts) {
      for (const map of [part.dependentSchemas, part.dependencies]) {
        if (!isRecord(map)) continue;
        for (const key of keys) {
          const dependent = Object.hasOwn(map, key) ? map[key] : undefined;
          if (dependent === undefined || Array.isArray(dependent) || applied.has(dependent)) continue;
          applied.add(dependent);
          const collected = collect(dependent as JsonSchema, ctx);
          if (!collected) continue;
          extra.push(...collected.parts);
          for (const key of collected.exclusions.keys) exclusions.keys.add(key);
        }
      }
    }
    if (extra.length === 0) break;
    parts = [...parts, ...extra];
    keys = chooseKeys(parts, exclusions, ctx, keys);
  }
  const out: Record<string, unknown> = {};
  const child: Context = { ...ctx, depth: ctx.depth + 1 };
  const required = new Set(parts.flatMap((part) => (Array.isArray(part.required) ? part.required : [])));
  for (const key of keys) {
    const { value, ok } = generateChecked(conjunction(propertySchemas(key, parts, ctx.root)), child, [
      ...path,
      key,
    ]);
    // An optional property no value fits (say, declared a string but also caught by an object-typed
    // additionalProperties) is better left out.
    if (ok || required.has(key)) setOwn(out, key, value);
  }
  for (const ways of exclusions.mismatches) {
    for (const { key, kinds } of ways) {
      if (required.has(key) || exclusions.keys.has(key)) continue;
      const own = conjunction(propertySchemas(key, parts, ctx.root));
      const value = [0, "x", true, null, {}, []].find(
        (candidate) => !typeHolds(candidate, kinds) && conforms(candidate, own, ctx.root),
      );
      if (value === undefined) continue;
      setOwn(out, key, structuredClone(value));
      break;
    }
  }
  return out;
}

function chooseKeys(
  parts: SchemaObject[],
  exclusions: Exclusions,
  ctx: Context,
  previous: string[] | undefined,
): string[] {
  const required = new Set<string>();
  const declared: string[] = [];
  let minProperties = 0;
  let maxProperties = Number.POSITIVE_INFINITY;
  for (const part of parts) {
    if (Array.isArray(part.required))
      for (const key of part.required) if (typeof key === "string") required.add(key);
    if (isRecord(part.properties))
      for (const key of Object.keys(part.properties)) if (!declared.includes(key)) declared.push(key);
    if (num(part.minProperties)) minProperties = Math.max(minProperties, part.minProperties);
    if (num(part.maxProperties)) maxProperties = Math.min(maxProperties, part.maxProperties);
  }
  const allowed = (key: string): boolean =>
    !exclusions.keys.has(key) &&
    !propertySchemas(key, parts, ctx.root).includes(false) &&
    parts.every((part) => part.propertyNames === undefined || conforms(key, part.propertyNames, ctx.root));
  const keys = new Set<string>(previous ?? []);
  for (const key of required) keys.add(key);
  if (previous === undefined && !ctx.minimal) {
    // Required fields always; optional ones mostly near the top, less often deeper down.
    const rate = ctx.options.complete ? 1 : ctx.depth <= 1 ? 0.75 : ctx.depth <= 3 ? 0.6 : 0.4;
    for (const key of declared) if (!keys.has(key) && ctx.random.next() < rate && allowed(key)) keys.add(key);
  }
  addDependencies(keys, parts);
  for (let guard = 0; keys.size < minProperties && guard < 64; guard++) {
    const next =
      declared.find((key) => !keys.has(key) && allowed(key)) ?? inventKey(parts, keys, allowed, ctx);
    if (next === undefined) break;
    keys.add(next);
    addDependencies(keys, parts);
  }
  if (keys.size > maxProperties) {
    for (const key of [...keys].reverse()) {
      if (keys.size <= maxProperties) break;
      if (!required.has(key) && !neededBy(key, keys, parts)) keys.delete(key);
    }
  }
  const rank = (key: string): number => {
    const index = declared.indexOf(key);
    return index < 0 ? declared.length : index;
  };
  return [...keys].sort((a, b) => rank(a) - rank(b));
}

/** `dependentRequired` (and draft-7 `dependencies` lists): a present key brings the keys it names. */
function addDependencies(keys: Set<string>, parts: SchemaObject[]): void {
  for (let changed = true, guard = 0; changed && guard < 32; guard++) {
    changed = false;
    for (const part of parts) {
      for (const map of [part.dependentRequired, part.dependencies]) {
        if (!isRecord(map)) continue;
        for (const [key, needs] of Object.entries(map)) {
          if (!keys.has(key) || !Array.isArray(needs)) continue;
          for (const need of needs) {
            if (typeof need === "string" && !keys.has(need)) {
              keys.add(need);
              changed = true;
            }
          }
        }
      }
    }
  }
}

function neededBy(key: string, keys: Set<string>, parts: SchemaObject[]): boolean {
  return parts.some((part) =>
    [part.dependentRequired, part.dependencies].some(
      (map) =>
        isRecord(map) &&
        Object.entries(map).some(
          ([owner, needs]) => owner !== key && keys.has(owner) && Array.isArray(needs) && needs.includes(key),
        ),
    ),
  );
}

/** A new property name that the schema admits (for `minProperties`): from `patternProperties`, `propertyNames`, or made up. */
function inventKey(
  parts: SchemaObject[],
  keys: Set<string>,
  allowed: (key: string) => boolean,
  ctx: Context,
): string | undefined {
  const patterns = parts.flatMap((part) =>
    isRecord(part.patternProperties) ? Object.keys(part.patternProperties) : [],
  );
  const names = parts.map((part) => part.propertyNames).filter((schema) => schema !== undefined);
  for (let attempt = 0; attempt < 12; attempt++) {
    let name: unknown;
    if (patterns.length > 0 && attempt < 8)
      name = patternOnce(ctx.random.pick(patterns), 1, Number.POSITIVE_INFINITY, ctx);
    else if (names.length > 0)
      name = generate(conjunction([...names, { type: "string" }]), ctx, [`key${keys.size}`]);
    else name = `${ctx.random.pick(WORDS)}_${keys.size + attempt + 1}`;
    if (typeof name === "string" && !keys.has(name) && allowed(name)) return name;
  }
  return undefined;
}

/** Every schema that applies to property `key`, per part: its own, matching patterns, else the additional one. */
function propertySchemas(key: string, parts: SchemaObject[], root: JsonSchema): unknown[] {
  const out: unknown[] = [];
  for (const part of parts) {
    const own = isRecord(part.properties) && Object.hasOwn(part.properties, key);
    if (own) out.push((part.properties as SchemaObject)[key]);
    let matched = false;
    if (isRecord(part.patternProperties)) {
      for (const [pattern, schema] of Object.entries(part.patternProperties)) {
        if (compilePattern(pattern)?.test(key)) {
          out.push(schema);
          matched = true;
        }
      }
    }
    if (!own && !matched && part.additionalProperties !== undefined) out.push(part.additionalProperties);
    // unevaluatedProperties sees what this part and the schemas inside it look at, nothing beside it.
    if (part.unevaluatedProperties !== undefined && !evaluatesKey(part, key, root, 0))
      out.push(part.unevaluatedProperties);
  }
  return out;
}

/** Whether some keyword of `schema` or of a subschema within it (short of its own unevaluatedProperties) covers `key`. */
function evaluatesKey(schema: unknown, key: string, root: JsonSchema, depth: number): boolean {
  if (!isRecord(schema) || depth > 16) return false;
  if (isRecord(schema.properties) && Object.hasOwn(schema.properties, key)) return true;
  if (isRecord(schema.patternProperties))
    for (const pattern of Object.keys(schema.patternProperties))
      if (compilePattern(pattern)?.test(key)) return true;
  if (schema.additionalProperties !== undefined) return true;
  if (depth > 0 && schema.unevaluatedProperties !== undefined) return true;
  const inner = (sub: unknown): boolean => evaluatesKey(sub, key, root, depth + 1);
  if (typeof schema.$ref === "string" && inner(resolveRef(schema.$ref, root))) return true;
  for (const list of [schema.allOf, schema.anyOf, schema.oneOf])
    if (Array.isArray(list) && list.some(inner)) return true;
  if ([schema.if, schema.then, schema.else].some(inner)) return true;
  return isRecord(schema.dependentSchemas) && Object.values(schema.dependentSchemas).some(inner);
}

// ---------------------------------------------------------------------------------------------------------
// Arrays

function prefixOf(part: SchemaObject): unknown[] {
  if (Array.isArray(part.prefixItems)) return part.prefixItems;
  return Array.isArray(part.items) ? part.items : [];
}

function tailOf(part: SchemaObject): unknown {
  if (Array.isArray(part.prefixItems)) return part.items;
  return Array.isArray(part.items) ? part.additionalItems : part.items;
}

function itemSchemas(parts: SchemaObject[], index: number): unknown[] {
  const out: unknown[] = [];
  for (const part of parts) {
    const prefix = prefixOf(part);
    if (index < prefix.length) out.push(prefix[index]);
    else {
      const tail = tailOf(part);
      if (tail !== undefined) out.push(tail);
    }
  }
  return out;
}

function generateArray(parts: SchemaObject[], ctx: Context, path: string[]): unknown[] {
  let minItems = 0;
  let maxItems = Number.POSITIVE_INFINITY;
  let unique = false;
  let prefixLength = 0;
  const planned: unknown[] = [];
  for (const part of parts) {
    if (num(part.minItems)) minItems = Math.max(minItems, part.minItems);
    if (num(part.maxItems)) maxItems = Math.min(maxItems, part.maxItems);
    if (part.uniqueItems === true) unique = true;
    const prefix = prefixOf(part);
    prefixLength = Math.max(prefixLength, prefix.length);
    if (tailOf(part) === false) maxItems = Math.min(maxItems, prefix.length);
    if (part.contains !== undefined) {
      const least = num(part.minContains) ? part.minContains : 1;
      for (let i = 0; i < least; i++) planned.push(part.contains);
    }
  }
  const lower = Math.max(minItems, planned.length);
  let count: number;
  if (ctx.minimal) count = lower;
  else if (prefixLength > 0) count = prefixLength;
  else {
    const base = Math.max(lower, 1);
    count = ctx.random.int(base, base + (ctx.depth > 2 ? 1 : 2));
  }
  count = Math.max(lower, Math.min(count, maxItems));
  const child: Context = { ...ctx, depth: ctx.depth + 1 };
  // Unique items drawn from a small set (an enum, booleans) are dealt without repetition.
  const tailDomain = unique ? finiteDomain(conjunction(itemSchemas(parts, prefixLength)), child) : undefined;
  if (tailDomain !== undefined && count > prefixLength + tailDomain.length)
    count = Math.max(lower, prefixLength + tailDomain.length);
  const items: unknown[] = [];
  for (let index = 0; index < count; index++) {
    const schemas = itemSchemas(parts, index);
    if (index < planned.length) schemas.push(planned[index]);
    const schema = conjunction(schemas);
    let value: unknown = NOTHING;
    if (unique) {
      const domain =
        index >= prefixLength && index >= planned.length ? tailDomain : finiteDomain(schema, child);
      const unused = domain?.filter((candidate) => !items.some((item) => same(item, candidate)));
      if (unused !== undefined && unused.length > 0) value = structuredClone(ctx.random.pick(unused));
    }
    let ok = true;
    const duplicate = (): boolean => unique && items.some((item) => same(item, value));
    for (let tries = 0; value === NOTHING || (duplicate() && tries < 8); tries++)
      ({ value, ok } = generateChecked(schema, child, [...path, String(index)]));
    // Past the items the schema insists on, a repeat or an item nothing fits is left out.
    if ((duplicate() || !ok) && items.length >= lower) break;
    items.push(value);
  }
  return items;
}

/** All values of a schema that only allows a few (an enum, a const, booleans, null), or undefined. */
function finiteDomain(schema: JsonSchema | undefined, ctx: Context): unknown[] | undefined {
  if (schema === undefined || schema === true) return undefined;
  const collected = collect(schema, { ...ctx, random: ctx.random.derive("domain") });
  if (!collected) return undefined;
  const domain = valueDomain(collected.parts);
  let values: unknown[] | undefined = domain;
  if (values === undefined) {
    const kinds = allowedKinds(collected.parts, collected.exclusions);
    if (kinds.every((kind) => kind === "boolean" || kind === "null"))
      values = [
        ...(kinds.includes("boolean") ? [true, false] : []),
        ...(kinds.includes("null") ? [null] : []),
      ];
    else if (kinds.length === 1 && kinds[0] === "integer") values = integerRange(collected.parts);
  }
  return values?.filter((value) => conforms(value, schema, ctx.root));
}

/** The whole numbers a schema's bounds allow, when there are only a few of them. */
function integerRange(parts: SchemaObject[]): number[] | undefined {
  let low = Number.NEGATIVE_INFINITY;
  let high = Number.POSITIVE_INFINITY;
  for (const part of parts) {
    if (num(part.minimum)) low = Math.max(low, Math.ceil(part.minimum));
    if (num(part.exclusiveMinimum)) low = Math.max(low, Math.floor(part.exclusiveMinimum) + 1);
    if (num(part.maximum)) high = Math.min(high, Math.floor(part.maximum));
    if (num(part.exclusiveMaximum)) high = Math.min(high, Math.ceil(part.exclusiveMaximum) - 1);
  }
  if (!Number.isFinite(low) || !Number.isFinite(high) || high - low > 64) return undefined;
  const values: number[] = [];
  for (let value = low; value <= high; value++) values.push(value);
  return values;
}

// ---------------------------------------------------------------------------------------------------------
// Numbers

function generateNumber(
  parts: SchemaObject[],
  exclusions: Exclusions,
  ctx: Context,
  integerKind: boolean,
): number {
  let low = Number.NEGATIVE_INFINITY;
  let high = Number.POSITIVE_INFINITY;
  let lowOpen = false;
  let highOpen = false;
  let integer = integerKind;
  let formatLow = Number.NEGATIVE_INFINITY;
  let formatHigh = Number.POSITIVE_INFINITY;
  const steps: number[] = [];
  for (const part of parts) {
    if (num(part.minimum) && part.minimum > low) [low, lowOpen] = [part.minimum, false];
    if (num(part.exclusiveMinimum) && part.exclusiveMinimum >= low)
      [low, lowOpen] = [part.exclusiveMinimum, true];
    if (num(part.maximum) && part.maximum < high) [high, highOpen] = [part.maximum, false];
    if (num(part.exclusiveMaximum) && part.exclusiveMaximum <= high)
      [high, highOpen] = [part.exclusiveMaximum, true];
    if (num(part.multipleOf) && part.multipleOf > 0) steps.push(part.multipleOf);
    if (part.format === "int32") {
      integer = true;
      formatLow = Math.max(formatLow, -2147483648);
      formatHigh = Math.min(formatHigh, 2147483647);
    } else if (part.format === "int64") {
      integer = true;
      formatLow = Math.max(formatLow, Number.MIN_SAFE_INTEGER);
      formatHigh = Math.min(formatHigh, Number.MAX_SAFE_INTEGER);
    }
  }
  const nonInteger = !integer && exclusions.kinds.has("integer");
  // Without bounds, or with very wide ones, stay within a hundred of zero or of the bound given.
  if (low === Number.NEGATIVE_INFINITY && high === Number.POSITIVE_INFINITY) [low, high] = [0, 100];
  else if (high === Number.POSITIVE_INFINITY) high = low + 100;
  else if (low === Number.NEGATIVE_INFINITY) low = high >= 0 ? Math.max(0, high - 100) : high - 100;
  else if (high - low > 1e9) {
    if (low <= 0 && high >= 100) [low, high, lowOpen, highOpen] = [0, 100, false, false];
    else if (low > 0) [high, highOpen] = [low + 100, false];
    else [low, lowOpen] = [high - 100, false];
  }
  if (formatLow > low) [low, lowOpen] = [formatLow, false];
  if (formatHigh < high) [high, highOpen] = [formatHigh, false];
  const fits = (value: number): boolean =>
    Number.isFinite(value) &&
    (lowOpen ? value > low : value >= low) &&
    (highOpen ? value < high : value <= high) &&
    (!integer || Number.isInteger(value)) &&
    (!nonInteger || !Number.isInteger(value)) &&
    steps.every((step) => isMultipleOf(value, step)) &&
    !exclusions.values.includes(value);
  const step = steps.length > 0 ? Math.max(...steps) : integer ? 1 : 0;
  let first: number | undefined;
  if (step > 0) {
    const decimals = decimalsOf(step);
    const at = (k: number): number => roundTo(k * step, decimals);
    const firstK = Math.ceil(low / step);
    const lastK = Math.floor(high / step);
    if (firstK <= lastK) {
      const span = Math.min(lastK - firstK, 1_000_000);
      for (let attempt = 0; attempt < 24; attempt++) {
        const value = at(firstK + Math.floor(ctx.random.next() * (span + 1)));
        first ??= value;
        if (fits(value)) return value;
      }
      for (let k = firstK; k <= Math.min(lastK, firstK + 2000); k++) if (fits(at(k))) return at(k);
    }
    if (fits(0)) return 0;
    return first ?? (integer ? Math.ceil(low) : low);
  }
  for (let attempt = 0; attempt < 24; attempt++) {
    let value = Math.round((low + ctx.random.next() * (high - low)) * 100) / 100;
    if (nonInteger && Number.isInteger(value)) value += value + 0.5 <= high ? 0.5 : -0.5;
    first ??= value;
    if (fits(value)) return value;
  }
  const middle = (low + high) / 2;
  return fits(middle) ? middle : (first ?? low);
}

/** Ajv's own test (without `multipleOfPrecision`): the quotient must be a whole number exactly. */
function isMultipleOf(value: number, step: number): boolean {
  const quotient = value / step;
  return quotient === Number.parseInt(String(quotient), 10);
}

function decimalsOf(step: number): number {
  const text = String(step);
  const exponent = /e-(\d+)$/.exec(text);
  const fraction = /\.(\d+)/.exec(text)?.[1]?.length ?? 0;
  return Math.min(20, exponent ? Number(exponent[1]) + fraction : fraction);
}

function roundTo(value: number, decimals: number): number {
  return decimals === 0 ? Math.round(value) : Number(value.toFixed(decimals));
}

// ---------------------------------------------------------------------------------------------------------
// Strings

interface StringRules {
  minLength: number;
  maxLength: number;
  patterns: string[];
  formats: string[];
}

function generateString(parts: SchemaObject[], exclusions: Exclusions, ctx: Context, path: string[]): string {
  const rules: StringRules = {
    minLength: 0,
    maxLength: Number.POSITIVE_INFINITY,
    patterns: [],
    formats: [],
  };
  for (const part of parts) {
    if (num(part.minLength)) rules.minLength = Math.max(rules.minLength, part.minLength);
    if (num(part.maxLength)) rules.maxLength = Math.min(rules.maxLength, part.maxLength);
    if (typeof part.pattern === "string" && compilePattern(part.pattern)) rules.patterns.push(part.pattern);
    if (typeof part.format === "string") rules.formats.push(part.format);
  }
  let first: string | undefined;
  for (let attempt = 0; attempt < 10; attempt++) {
    const text = makeString(rules, ctx, path, attempt);
    if (stringFits(text, rules) && !exclusions.values.includes(text)) return text;
    first ??= text;
  }
  return first ?? "";
}

function stringFits(text: string, rules: StringRules): boolean {
  const length = codePoints(text);
  return (
    length >= rules.minLength &&
    length <= rules.maxLength &&
    rules.patterns.every((pattern) => compilePattern(pattern)?.test(text) ?? true) &&
    rules.formats.every((format) => formatHolds(text, format))
  );
}

function makeString(rules: StringRules, ctx: Context, path: string[], attempt: number): string {
  const { random } = ctx;
  const format = rules.formats.find((name) => FORMAT_WRITERS[name] !== undefined);
  if (rules.patterns.length > 0 && (format === undefined || attempt % 2 === 1)) {
    const pattern = rules.patterns[attempt % rules.patterns.length] as string;
    const text = patternOnce(pattern, rules.minLength, rules.maxLength, ctx);
    if (text !== undefined) return text;
  }
  if (format !== undefined) return fitFormat(writeFormat(format, ctx, path, attempt), format, rules, random);
  const base =
    (attempt === 0 ? synthesizeByName(path, ctx.options) : undefined) ??
    `${random.pick(WORDS)} ${random.pick(WORDS)}`;
  return fitLength(base, rules, random);
}

function fitLength(text: string, rules: StringRules, random: Random): string {
  let value = text;
  while (codePoints(value) < rules.minLength) value += random.pick(WORDS);
  if (codePoints(value) > rules.maxLength) value = [...value].slice(0, rules.maxLength).join("");
  return value;
}

const FORMAT_WRITERS: Record<string, (ctx: Context, path: string[], attempt: number) => string> = {
  date: (ctx) => nearNow(ctx).toISOString().slice(0, 10),
  "date-time": (ctx) => `${nearNow(ctx).toISOString().slice(0, 19)}Z`,
  "iso-date-time": (ctx) => `${nearNow(ctx).toISOString().slice(0, 19)}Z`,
  time: (ctx) => `${nearNow(ctx).toISOString().slice(11, 19)}Z`,
  "iso-time": (ctx) => `${nearNow(ctx).toISOString().slice(11, 19)}Z`,
  duration: (ctx) => ctx.random.pick(["P1D", "PT15M", "P2W", "PT1H30M", "P1Y2M", "P3DT4H"]),
  email: (ctx) => `${ctx.random.pick(WORDS)}.${ctx.random.pick(WORDS)}@example.com`,
  "idn-email": (ctx) => `${ctx.random.pick(WORDS)}@example.com`,
  hostname: (ctx) => `${ctx.random.pick(WORDS)}.example.com`,
  "idn-hostname": (ctx) => `${ctx.random.pick(WORDS)}.example.com`,
  ipv4: (ctx) => `192.0.2.${ctx.random.int(1, 254)}`,
  ipv6: (ctx) => `2001:db8::${ctx.random.int(1, 0xffff).toString(16)}`,
  uri: (ctx, path, attempt) => exampleUrl(ctx, path, attempt),
  url: (ctx, path, attempt) => exampleUrl(ctx, path, attempt),
  iri: (ctx, path, attempt) => exampleUrl(ctx, path, attempt),
  "uri-reference": (ctx, path, attempt) =>
    attempt % 2 === 0 ? exampleUrl(ctx, path, attempt) : `/${ctx.random.pick(WORDS)}`,
  "iri-reference": (ctx, path, attempt) => exampleUrl(ctx, path, attempt),
  "uri-template": (ctx) => `https://example.com/${ctx.random.pick(WORDS)}/{id}`,
  uuid: (ctx, path, attempt) =>
    uuidFrom(`${ctx.options.idSeed}|${path.join(".")}${attempt > 0 ? `|${attempt}` : ""}`),
  byte: (ctx) => Buffer.from(`${ctx.random.pick(WORDS)} ${ctx.random.pick(WORDS)}`).toString("base64"),
  binary: (ctx) => `${ctx.random.pick(WORDS)} ${ctx.random.pick(WORDS)}`,
  password: (ctx) => `${ctx.random.pick(WORDS)}-${ctx.random.int(1000, 9999)}-Secret!`,
  regex: () => "^[a-z]+$",
  "json-pointer": (ctx) => `/${ctx.random.pick(WORDS)}/${ctx.random.int(0, 9)}`,
  "json-pointer-uri-fragment": (ctx) => `#/${ctx.random.pick(WORDS)}`,
  "relative-json-pointer": (ctx) => `${ctx.random.int(0, 2)}/${ctx.random.pick(WORDS)}`,
};

/** The shortest value of a format, for tight `maxLength`s. */
const SHORT_FORMS: Record<string, string> = {
  email: "a@b.io",
  "idn-email": "a@b.io",
  hostname: "a.io",
  "idn-hostname": "a.io",
  uri: "http://a.io",
  url: "http://a.io",
  iri: "http://a.io",
  "uri-reference": "a",
  "iri-reference": "a",
  "uri-template": "a",
  byte: "",
  binary: "",
  password: "",
  regex: "a",
  "json-pointer": "",
  "relative-json-pointer": "0",
  ipv6: "::1",
  ipv4: "1.1.1.1",
  duration: "P1D",
};

function writeFormat(format: string, ctx: Context, path: string[], attempt: number): string {
  return (FORMAT_WRITERS[format] as (ctx: Context, path: string[], attempt: number) => string)(
    ctx,
    path,
    attempt,
  );
}

/** Brings a formatted string within the length bounds in a way that keeps it in its format. */
function fitFormat(text: string, format: string, rules: StringRules, random: Random): string {
  let value = text;
  for (let guard = 0; codePoints(value) < rules.minLength && guard < 200; guard++) {
    const word = random.pick(WORDS);
    if (
      ["uri", "url", "iri", "uri-reference", "iri-reference", "uri-template", "json-pointer"].includes(format)
    )
      value += `/${word}`;
    else if (
      format === "email" ||
      format === "idn-email" ||
      format === "hostname" ||
      format === "idn-hostname"
    )
      value = `${word}.${value}`;
    else if (format === "byte")
      value = Buffer.from(`${Buffer.from(value, "base64").toString()} ${word}`).toString("base64");
    else if (format === "binary" || format === "password") value += word;
    else break;
  }
  if (codePoints(value) > rules.maxLength) {
    const short = SHORT_FORMS[format];
    if (short !== undefined && codePoints(short) <= rules.maxLength) return short;
    if (format === "binary" || format === "password") return [...value].slice(0, rules.maxLength).join("");
  }
  return value;
}

function nearNow(ctx: Context): Date {
  const now = new Date(ctx.options.now ?? "2025-01-01T12:00:00.000Z");
  const base = Number.isNaN(now.getTime()) ? Date.UTC(2025, 0, 1, 12) : now.getTime();
  return new Date(base + ctx.random.int(-30, 30) * 86_400_000);
}

function exampleUrl(ctx: Context, path: string[], attempt: number): string {
  const id = contentId(`${ctx.options.idSeed}|${path.join(".")}|${attempt}`, "", 8);
  return `https://example.com/${ctx.random.pick(WORDS)}/${id}`;
}

function freeString(ctx: Context, path: string[]): string {
  return synthesizeByName(path, ctx.options) ?? ctx.random.pick(WORDS);
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

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

// ---------------------------------------------------------------------------------------------------------
// Patterns

type Range = readonly [number, number];

type PatternNode =
  | { kind: "sequence"; items: PatternNode[] }
  | { kind: "choice"; options: PatternNode[] }
  | { kind: "text"; text: string }
  | { kind: "set"; ranges: Range[]; negated: boolean }
  | { kind: "repeat"; node: PatternNode; min: number; max: number }
  | { kind: "group"; node: PatternNode; index: number; name: string | undefined }
  | { kind: "backreference"; ref: number | string }
  | { kind: "assertion"; ahead?: PatternNode };

/** How repetitions are drawn: at random within a stretch, as many as allowed, or as few. */
type Reach = {
  stretch: number;
  mode: "random" | "long" | "short";
  /** Write out what positive lookaheads ask for (briefly) where they stand, instead of nothing. */
  spellLookaheads?: boolean;
};

const DIGIT_RANGES: Range[] = [[48, 57]];
const WORD_RANGES: Range[] = [
  [48, 57],
  [65, 90],
  [95, 95],
  [97, 122],
];
const SPACE_RANGES: Range[] = [
  [9, 13],
  [32, 32],
  [160, 160],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const LETTER_RANGES: Range[] = [
  [65, 90],
  [97, 122],
  [0xc0, 0xd6],
  [0xd8, 0xf6],
  [0xf8, 0x24f],
];
const ALNUM_RANGES: Range[] = [
  [48, 57],
  [65, 90],
  [97, 122],
];
const PRINTABLE_RANGES: Range[] = [[32, 126]];
const DOT_RANGES: Range[] = [
  [48, 57],
  [97, 122],
];
const ASSERTION: PatternNode = { kind: "assertion" };

class UnsupportedPattern extends Error {}

/** A recursive-descent reader of the regular expressions API schemas use (ECMAScript syntax, `u` flag). */
class PatternParser {
  private index = 0;
  private groups = 0;

  constructor(private readonly source: string) {}

  parse(): PatternNode {
    const node = this.choice();
    if (this.index !== this.source.length) throw new UnsupportedPattern("trailing input");
    return node;
  }

  private peek(offset = 0): string | undefined {
    return this.source[this.index + offset];
  }

  private rest(): string {
    return this.source.slice(this.index);
  }

  private choice(): PatternNode {
    const options = [this.sequence()];
    while (this.peek() === "|") {
      this.index++;
      options.push(this.sequence());
    }
    return options.length === 1 ? (options[0] as PatternNode) : { kind: "choice", options };
  }

  private sequence(): PatternNode {
    const items: PatternNode[] = [];
    while (this.index < this.source.length && this.peek() !== "|" && this.peek() !== ")")
      items.push(this.quantified(this.atom()));
    return items.length === 1 ? (items[0] as PatternNode) : { kind: "sequence", items };
  }

  private quantified(node: PatternNode): PatternNode {
    let min: number;
    let max: number;
    const char = this.peek();
    if (char === "?") [min, max] = [0, 1];
    else if (char === "*") [min, max] = [0, Number.POSITIVE_INFINITY];
    else if (char === "+") [min, max] = [1, Number.POSITIVE_INFINITY];
    else if (char === "{") {
      const match = /^\{(\d+)(?:(,)(\d*))?\}/.exec(this.rest());
      if (!match) return node;
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === "" ? Number.POSITIVE_INFINITY : Number(match[3]);
      this.index += match[0].length - 1;
    } else return node;
    this.index++;
    if (this.peek() === "?") this.index++; // lazy: same strings
    return { kind: "repeat", node, min, max };
  }

  private atom(): PatternNode {
    const char = this.peek();
    switch (char) {
      case "(":
        return this.group();
      case "[":
        return this.charClass();
      case "\\":
        return this.escape();
      case ".":
        this.index++;
        return { kind: "set", ranges: DOT_RANGES, negated: false };
      case "^":
      case "$":
        this.index++;
        return ASSERTION;
      case "*":
      case "+":
      case "?":
      case undefined:
        throw new UnsupportedPattern("nothing to repeat");
      default: {
        const code = this.source.codePointAt(this.index) as number;
        this.index += code > 0xffff ? 2 : 1;
        return { kind: "text", text: String.fromCodePoint(code) };
      }
    }
  }

  private group(): PatternNode {
    this.index++;
    let capture = true;
    let name: string | undefined;
    const rest = this.rest();
    if (rest.startsWith("?:")) {
      this.index += 2;
      capture = false;
    } else if (/^\?<?[=!]/.test(rest)) {
      // Lookarounds take no room; whether they hold is checked on the result.
      const lookbehind = rest[1] === "<";
      const positive = rest[lookbehind ? 2 : 1] === "=";
      this.index += lookbehind ? 3 : 2;
      const body = this.choice();
      this.expect(")");
      return positive && !lookbehind ? { kind: "assertion", ahead: body } : ASSERTION;
    } else if (rest.startsWith("?<")) {
      const match = /^\?<([A-Za-z_$][\w$]*)>/.exec(rest);
      if (!match) throw new UnsupportedPattern("group name");
      name = match[1];
      this.index += match[0].length;
    } else if (rest.startsWith("?")) throw new UnsupportedPattern("group modifier");
    const index = capture ? ++this.groups : 0;
    const node = this.choice();
    this.expect(")");
    return capture ? { kind: "group", node, index, name } : node;
  }

  private expect(char: string): void {
    if (this.peek() !== char) throw new UnsupportedPattern(`expected ${char}`);
    this.index++;
  }

  private escape(): PatternNode {
    const next = this.peek(1);
    if (next !== undefined && /[1-9]/.test(next)) {
      const digits = /^\d+/.exec(this.source.slice(this.index + 1))?.[0] as string;
      this.index += 1 + digits.length;
      return { kind: "backreference", ref: Number(digits) };
    }
    if (next === "k" && this.peek(2) === "<") {
      const match = /^k<([^>]+)>/.exec(this.source.slice(this.index + 1));
      if (!match) throw new UnsupportedPattern("named reference");
      this.index += 1 + match[0].length;
      return { kind: "backreference", ref: match[1] as string };
    }
    if (next === "b" || next === "B") {
      this.index += 2;
      return ASSERTION;
    }
    const read = this.readEscape(false);
    return typeof read === "number"
      ? { kind: "text", text: String.fromCodePoint(read) }
      : { kind: "set", ranges: read.ranges, negated: read.negated };
  }

  /** Reads an escape at the current backslash: a single code point, or a class of them. */
  private readEscape(inClass: boolean): number | { ranges: Range[]; negated: boolean } {
    const char = this.peek(1);
    if (char === undefined) throw new UnsupportedPattern("lone backslash");
    this.index += 2;
    switch (char) {
      case "d":
      case "D":
        return { ranges: DIGIT_RANGES, negated: char === "D" };
      case "w":
      case "W":
        return { ranges: WORD_RANGES, negated: char === "W" };
      case "s":
      case "S":
        return { ranges: SPACE_RANGES, negated: char === "S" };
      case "p":
      case "P": {
        const match = /^\{([^}]*)\}/.exec(this.rest());
        if (!match) throw new UnsupportedPattern("property escape");
        this.index += match[0].length;
        return { ranges: propertyRanges(match[1] as string), negated: char === "P" };
      }
      case "n":
        return 10;
      case "r":
        return 13;
      case "t":
        return 9;
      case "f":
        return 12;
      case "v":
        return 11;
      case "0":
        return 0;
      case "b":
        if (inClass) return 8;
        throw new UnsupportedPattern("word boundary");
      case "x": {
        const match = /^[0-9a-fA-F]{2}/.exec(this.rest());
        if (!match) return "x".codePointAt(0) as number;
        this.index += 2;
        return Number.parseInt(match[0], 16);
      }
      case "u": {
        const braced = /^\{([0-9a-fA-F]+)\}/.exec(this.rest());
        if (braced) {
          this.index += braced[0].length;
          return Number.parseInt(braced[1] as string, 16);
        }
        const plain = /^[0-9a-fA-F]{4}/.exec(this.rest());
        if (!plain) return "u".codePointAt(0) as number;
        this.index += 4;
        const code = Number.parseInt(plain[0], 16);
        const low = /^\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(this.rest());
        if (code >= 0xd800 && code <= 0xdbff && low) {
          this.index += 6;
          return 0x10000 + ((code - 0xd800) << 10) + (Number.parseInt(low[1] as string, 16) - 0xdc00);
        }
        return code;
      }
      case "c": {
        const letter = this.peek();
        if (letter === undefined || !/[A-Za-z]/.test(letter)) throw new UnsupportedPattern("control escape");
        this.index++;
        return (letter.codePointAt(0) as number) % 32;
      }
      default: {
        this.index--;
        const code = this.source.codePointAt(this.index) as number;
        this.index += code > 0xffff ? 2 : 1;
        return code;
      }
    }
  }

  private charClass(): PatternNode {
    this.index++;
    let negated = false;
    if (this.peek() === "^") {
      negated = true;
      this.index++;
    }
    const ranges: Range[] = [];
    while (this.index < this.source.length && this.peek() !== "]") {
      const start = this.classAtom();
      if (
        typeof start === "number" &&
        this.peek() === "-" &&
        this.peek(1) !== "]" &&
        this.peek(1) !== undefined
      ) {
        this.index++;
        const end = this.classAtom();
        if (typeof end === "number") {
          if (end < start) throw new UnsupportedPattern("range out of order");
          ranges.push([start, end]);
        } else ranges.push([start, start], [45, 45], ...end);
      } else if (typeof start === "number") ranges.push([start, start]);
      else ranges.push(...start);
    }
    this.expect("]");
    return { kind: "set", ranges, negated };
  }

  private classAtom(): number | Range[] {
    if (this.peek() === "\\") {
      const read = this.readEscape(true);
      if (typeof read === "number") return read;
      return read.negated ? complement(read.ranges) : read.ranges;
    }
    const code = this.source.codePointAt(this.index) as number;
    this.index += code > 0xffff ? 2 : 1;
    return code;
  }
}

/** Rough stand-ins for Unicode property escapes: letters, digits, punctuation, symbols, spaces. */
function propertyRanges(name: string): Range[] {
  const value = name.includes("=") ? (name.split("=")[1] as string) : name;
  if (/^(N|Nd|Number|Decimal_Number|digit)$/i.test(value)) return DIGIT_RANGES;
  if (/^(Lu|Uppercase_Letter|Uppercase)$/.test(value)) return [[65, 90]];
  if (/^(Ll|Lowercase_Letter|Lowercase)$/.test(value)) return [[97, 122]];
  if (/^(P|Punctuation|Po)$/.test(value))
    return [
      [33, 35],
      [37, 42],
      [44, 47],
      [58, 59],
      [63, 64],
    ];
  if (/^(S|Symbol|Sm|Sc)$/.test(value))
    return [
      [36, 36],
      [43, 43],
      [60, 62],
      [94, 94],
      [124, 124],
      [126, 126],
    ];
  if (/^(Z|Zs|Separator|Space_Separator|White_Space)$/.test(value)) return [[32, 32]];
  return LETTER_RANGES;
}

function normalize(ranges: readonly Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const [low, high] of sorted) {
    const last = out[out.length - 1];
    if (last && low <= last[1] + 1) last[1] = Math.max(last[1], high);
    else out.push([low, high]);
  }
  return out;
}

function complement(ranges: readonly Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [low, high] of normalize(ranges)) {
    if (low > next) out.push([next, low - 1]);
    next = Math.max(next, high + 1);
  }
  if (next <= 0x10ffff) out.push([next, 0x10ffff]);
  return out;
}

function intersect(a: readonly Range[], b: readonly Range[]): Range[] {
  const out: Range[] = [];
  for (const [lowA, highA] of normalize(a))
    for (const [lowB, highB] of normalize(b)) {
      const low = Math.max(lowA, lowB);
      const high = Math.min(highA, highB);
      if (low <= high) out.push([low, high]);
    }
  return out;
}

function pickFromRanges(ranges: readonly Range[], random: Random): number | undefined {
  const total = ranges.reduce((sum, [low, high]) => sum + (high - low + 1), 0);
  if (total <= 0) return undefined;
  let offset = Math.floor(random.next() * total);
  for (const [low, high] of ranges) {
    const size = high - low + 1;
    if (offset < size) {
      const code = low + offset;
      return code >= 0xd800 && code <= 0xdfff ? undefined : code;
    }
    offset -= size;
  }
  return undefined;
}

/** A character of a class, preferring letters and digits, then printable ASCII, then anything it allows. */
function pickCharacter(node: { ranges: Range[]; negated: boolean }, random: Random): string {
  const allowed = node.negated ? complement(node.ranges) : normalize(node.ranges);
  for (const preferred of [ALNUM_RANGES, PRINTABLE_RANGES]) {
    const pool = intersect(allowed, preferred);
    if (pool.length > 0 && (preferred === PRINTABLE_RANGES || random.next() < 0.9)) {
      const code = pickFromRanges(pool, random);
      if (code !== undefined) return String.fromCodePoint(code);
    }
  }
  for (let attempt = 0; attempt < 8; attempt++) {
    const code = pickFromRanges(allowed, random);
    if (code !== undefined) return String.fromCodePoint(code);
  }
  return "";
}

function emit(
  node: PatternNode,
  random: Random,
  reach: Reach,
  captures: Map<number | string, string>,
): string {
  switch (node.kind) {
    case "text":
      return node.text;
    case "set":
      return pickCharacter(node, random);
    case "sequence":
      return node.items.map((item) => emit(item, random, reach, captures)).join("");
    case "choice":
      return emit(random.pick(node.options), random, reach, captures);
    case "group": {
      const text = emit(node.node, random, reach, captures);
      captures.set(node.index, text);
      if (node.name !== undefined) captures.set(node.name, text);
      return text;
    }
    case "backreference":
      return captures.get(node.ref) ?? "";
    case "assertion":
      return node.ahead && reach.spellLookaheads
        ? emit(node.ahead, random, { ...reach, mode: "short", spellLookaheads: false }, captures)
        : "";
    case "repeat": {
      const upper = Math.min(node.max, node.min + reach.stretch);
      const times =
        reach.mode === "long"
          ? upper
          : reach.mode === "short"
            ? node.min
            : random.int(node.min, Math.max(node.min, upper));
      let out = "";
      for (let i = 0; i < times && out.length < 100_000; i++) out += emit(node.node, random, reach, captures);
      return out;
    }
  }
}

const treeCache = new Map<string, PatternNode | null>();

/**
 * The pattern as terrarium's Ajv runs it (`u` flag, linear time), or null when it is not a valid regular
 * expression or cannot be checked in linear time (the validator does not check it either).
 */
function compilePattern(pattern: string): LinearRegExp | null {
  const translated = translateToLinear(pattern);
  return translated.ok ? translated.regex : null;
}

function parsePattern(pattern: string): PatternNode | null {
  let tree = treeCache.get(pattern);
  if (tree !== undefined) return tree;
  try {
    tree = new PatternParser(pattern).parse();
  } catch (error) {
    if (!(error instanceof UnsupportedPattern)) throw error;
    tree = null;
  }
  if (treeCache.size > 5000) treeCache.clear();
  treeCache.set(pattern, tree);
  return tree;
}

function emitPattern(tree: PatternNode, random: Random, reach: Reach): string {
  return emit(tree, random, reach, new Map());
}

/**
 * A string matching a regular expression, built from its syntax: literals, escapes (\d \w \s \p{…} \x…
 * \u…), classes and negated classes, groups (capturing, named, non-capturing) with alternation and back
 * references, and quantifiers (? * + {n} {n,} {n,m}, lazy or not). Lookarounds and word boundaries take
 * no room and are checked on the result. Returns undefined when the pattern is not valid, or when no
 * string built in a few tries matches it.
 */
export function fromPattern(pattern: string, random: Random): string | undefined {
  const regex = compilePattern(pattern);
  const tree = parsePattern(pattern);
  if (!regex || !tree) return undefined;
  for (let attempt = 0; attempt < 8; attempt++) {
    const text = emitPattern(tree, random, {
      stretch: 3,
      mode: "random",
      spellLookaheads: attempt % 2 === 1,
    });
    if (regex.test(text)) return text;
  }
  return undefined;
}

/** Strings that match many patterns the generator cannot build (lookaheads, unusual syntax). */
const PATTERN_FALLBACKS = [
  "a",
  "A",
  "0",
  "1",
  "abc",
  "ABC",
  "Abc1",
  "abc123",
  "Alpha1!",
  "Passw0rd!",
  "alpha-beta",
  "alpha_beta",
  "alpha.beta",
  "12345",
  "US",
  "USD",
  "en-US",
  "2025-01-01",
  "2025-01-01T12:00:00Z",
  "12:00",
  "user@example.com",
  "https://example.com",
  "example.com",
  "192.0.2.1",
  "+15555550100",
  "",
  " ",
  "-",
  "_",
];

/**
 * A string matching `pattern` within the length bounds, trying harder than `fromPattern`: repetitions are
 * stretched or shrunk towards the bounds, unanchored ends padded, and common strings tried last.
 */
/** `patternString`, skipped for a pattern that already defeated it in this synthesis. */
function patternOnce(
  pattern: string,
  minLength: number,
  maxLength: number,
  ctx: Context,
): string | undefined {
  const key = `${minLength},${maxLength},${pattern}`;
  if (ctx.budget.defeated.has(key)) return undefined;
  const text = patternString(pattern, minLength, maxLength, ctx.random);
  if (text === undefined) ctx.budget.defeated.add(key);
  return text;
}

function patternString(
  pattern: string,
  minLength: number,
  maxLength: number,
  random: Random,
): string | undefined {
  const regex = compilePattern(pattern);
  if (!regex) return undefined;
  const fits = (text: string): boolean => {
    const length = codePoints(text);
    return length >= minLength && length <= maxLength && regex.test(text);
  };
  const tree = parsePattern(pattern);
  if (tree) {
    const emitWith = (reach: Reach): string => emitPattern(tree, random, reach);
    const tryText = (text: string): string | undefined => {
      if (fits(text)) return text;
      // An end the pattern does not anchor can take filler.
      const missing = minLength - codePoints(text);
      if (missing > 0)
        for (const padded of [text + "a".repeat(missing), "a".repeat(missing) + text])
          if (fits(padded)) return padded;
      return undefined;
    };
    // Most patterns come with loose bounds: a few random draws.
    const usual = Math.max(3, Math.min(minLength, 64));
    for (let attempt = 0; attempt < 8; attempt++) {
      const found = tryText(emitWith({ stretch: usual, mode: "random", spellLookaheads: attempt % 2 === 1 }));
      if (found !== undefined) return found;
    }
    // Tight bounds: find how far repetitions must stretch to reach minLength, then draw around that.
    if (minLength > 0 || maxLength < Number.POSITIVE_INFINITY) {
      for (const spellLookaheads of [false, true]) {
        const lengthAt = (stretch: number): number =>
          codePoints(emitWith({ stretch, mode: "long", spellLookaheads }));
        let high = 1;
        while (high < 1024 && lengthAt(high) < minLength) high *= 2;
        let low = 0;
        while (low < high) {
          const middle = Math.floor((low + high) / 2);
          if (lengthAt(middle) < minLength) low = middle + 1;
          else high = middle;
        }
        const candidates = [
          emitWith({ stretch: low, mode: "long", spellLookaheads }),
          emitWith({ stretch: 0, mode: "short", spellLookaheads }),
          ...Array.from({ length: 6 }, () => emitWith({ stretch: low, mode: "random", spellLookaheads })),
        ];
        for (const text of candidates) {
          const found = tryText(text);
          if (found !== undefined) return found;
        }
      }
    }
  }
  for (const candidate of [...PATTERN_FALLBACKS, ...WORDS]) if (fits(candidate)) return candidate;
  for (const candidate of PATTERN_FALLBACKS) {
    const padded = fitLength(candidate, { minLength, maxLength, patterns: [], formats: [] }, random);
    if (fits(padded)) return padded;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// References

const refCache = new WeakMap<object, Map<string, JsonSchema | undefined>>();

/** The schema a local reference ("#", "#/$defs/Node", "#/properties/a~1b", percent-encoded or not) names. */
function resolveRef(ref: string, root: JsonSchema): JsonSchema | undefined {
  if (!isRecord(root)) return ref === "#" || ref === "" ? root : undefined;
  let cache = refCache.get(root);
  if (!cache) {
    cache = new Map();
    refCache.set(root, cache);
  }
  if (cache.has(ref)) return cache.get(ref);
  const target = lookUpRef(ref, root);
  cache.set(ref, target);
  return target;
}

function lookUpRef(ref: string, root: SchemaObject): JsonSchema | undefined {
  if (!ref.startsWith("#")) return undefined;
  let fragment = ref.slice(1);
  try {
    fragment = decodeURIComponent(fragment);
  } catch {
    // A "%" that starts no escape stays as written.
  }
  if (fragment === "") return root;
  if (!fragment.startsWith("/")) return findAnchor(root, fragment, 0);
  let tokens: string[];
  try {
    tokens = parsePointer(fragment);
  } catch {
    return undefined;
  }
  const target = getAtPointer(root, tokens);
  return typeof target === "boolean" || isRecord(target) ? target : undefined;
}

function findAnchor(node: unknown, name: string, depth: number): JsonSchema | undefined {
  if (depth > 64 || node === null || typeof node !== "object") return undefined;
  if (!Array.isArray(node) && (node as SchemaObject).$anchor === name) return node as SchemaObject;
  for (const value of Object.values(node)) {
    const found = findAnchor(value, name, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Checking: JSON Schema 2020-12 the way Ajv (with ajv-formats) reads it, used to pick among candidates

function conforms(value: unknown, schema: unknown, root: JsonSchema, depth = 0): boolean {
  if (schema === undefined || schema === true) return true;
  if (schema === false) return false;
  if (!isRecord(schema) || depth > 200) return true;
  const s = schema;
  if (typeof s.$ref === "string") {
    const target = resolveRef(s.$ref, root);
    if (target !== undefined && !conforms(value, target, root, depth + 1)) return false;
  }
  if (s.type !== undefined && !typeHolds(value, s.type)) return false;
  if ("const" in s && !same(value, s.const)) return false;
  if (Array.isArray(s.enum) && !s.enum.some((option) => same(value, option))) return false;
  if (typeof value === "number" && !numberHolds(value, s)) return false;
  if (typeof value === "string" && !stringHolds(value, s)) return false;
  if (typeof s.format === "string" && !formatHolds(value, s.format)) return false;
  if (Array.isArray(value)) {
    if (!arrayHolds(value, s, root, depth)) return false;
  } else if (isRecord(value) && !objectHolds(value, s, root, depth)) return false;
  const holds = (sub: unknown): boolean => conforms(value, sub, root, depth + 1);
  if (Array.isArray(s.allOf) && !s.allOf.every(holds)) return false;
  if (Array.isArray(s.anyOf) && !s.anyOf.some(holds)) return false;
  if (Array.isArray(s.oneOf) && s.oneOf.filter(holds).length !== 1) return false;
  if (s.not !== undefined && holds(s.not)) return false;
  if (s.if !== undefined) {
    const branch = holds(s.if) ? s.then : s.else;
    if (branch !== undefined && !holds(branch)) return false;
  }
  if (s.unevaluatedProperties !== undefined && isRecord(value)) {
    const evaluated = new Set<string>();
    markEvaluated(value, s, root, evaluated, depth);
    for (const key of Object.keys(value))
      if (!evaluated.has(key) && !conforms(value[key], s.unevaluatedProperties, root, depth + 1))
        return false;
  }
  if (s.unevaluatedItems !== undefined && Array.isArray(value)) {
    const from = evaluatedItems(value, s, root, depth);
    for (let index = from; index < value.length; index++)
      if (!conforms(value[index], s.unevaluatedItems, root, depth + 1)) return false;
  }
  return true;
}

function typeHolds(value: unknown, type: unknown): boolean {
  const names = Array.isArray(type) ? type : [type];
  return names.some((name) => {
    switch (name) {
      case "null":
        return value === null;
      case "boolean":
        return typeof value === "boolean";
      case "integer":
        return typeof value === "number" && Number.isInteger(value);
      case "number":
        return typeof value === "number" && Number.isFinite(value);
      case "string":
        return typeof value === "string";
      case "array":
        return Array.isArray(value);
      case "object":
        return isRecord(value);
      default:
        return false;
    }
  });
}

function numberHolds(value: number, s: SchemaObject): boolean {
  if (num(s.minimum) && value < s.minimum) return false;
  if (num(s.maximum) && value > s.maximum) return false;
  if (num(s.exclusiveMinimum) && value <= s.exclusiveMinimum) return false;
  if (num(s.exclusiveMaximum) && value >= s.exclusiveMaximum) return false;
  if (num(s.multipleOf) && (s.multipleOf === 0 || !isMultipleOf(value, s.multipleOf))) return false;
  return true;
}

function stringHolds(value: string, s: SchemaObject): boolean {
  if (num(s.minLength) || num(s.maxLength)) {
    const length = codePoints(value);
    if (num(s.minLength) && length < s.minLength) return false;
    if (num(s.maxLength) && length > s.maxLength) return false;
  }
  if (typeof s.pattern === "string") {
    const regex = compilePattern(s.pattern);
    if (regex && !regex.test(value)) return false;
  }
  return true;
}

type FormatCheck = RegExp | ((data: never) => boolean);

/** ajv-formats' full formats; a format it does not define is an annotation, as in terrarium's Ajv. */
function formatHolds(value: unknown, format: string): boolean {
  const definition = (fullFormats as Record<string, unknown>)[format];
  if (definition === undefined || definition === true) return true;
  let type = "string";
  let check: unknown = definition;
  if (isRecord(definition) && !(definition instanceof RegExp)) {
    type = typeof definition.type === "string" ? definition.type : "string";
    check = definition.validate;
  }
  if (typeof value !== type) return true;
  if (check instanceof RegExp) return check.test(value as string);
  if (typeof check === "function")
    return Boolean((check as FormatCheck as (data: unknown) => boolean)(value));
  return true;
}

function arrayHolds(value: unknown[], s: SchemaObject, root: JsonSchema, depth: number): boolean {
  const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : [];
  for (let index = 0; index < Math.min(prefix.length, value.length); index++)
    if (!conforms(value[index], prefix[index], root, depth + 1)) return false;
  if (s.items !== undefined && !Array.isArray(s.items))
    for (let index = prefix.length; index < value.length; index++)
      if (!conforms(value[index], s.items, root, depth + 1)) return false;
  if (num(s.minItems) && value.length < s.minItems) return false;
  if (num(s.maxItems) && value.length > s.maxItems) return false;
  if (s.uniqueItems === true)
    for (let i = 0; i < value.length; i++)
      for (let j = i + 1; j < value.length; j++) if (same(value[i], value[j])) return false;
  if (s.contains !== undefined) {
    const matches = value.filter((item) => conforms(item, s.contains, root, depth + 1)).length;
    if (matches < (num(s.minContains) ? s.minContains : 1)) return false;
    if (num(s.maxContains) && matches > s.maxContains) return false;
  }
  return true;
}

function objectHolds(value: SchemaObject, s: SchemaObject, root: JsonSchema, depth: number): boolean {
  const keys = Object.keys(value);
  if (
    Array.isArray(s.required) &&
    !s.required.every((key) => typeof key !== "string" || Object.hasOwn(value, key))
  )
    return false;
  if (num(s.minProperties) && keys.length < s.minProperties) return false;
  if (num(s.maxProperties) && keys.length > s.maxProperties) return false;
  const properties = isRecord(s.properties) ? s.properties : undefined;
  const patterns = isRecord(s.patternProperties)
    ? Object.entries(s.patternProperties).map(
        ([pattern, schema]) => [compilePattern(pattern), schema] as const,
      )
    : [];
  for (const key of keys) {
    const own = properties !== undefined && Object.hasOwn(properties, key);
    if (own && !conforms(value[key], properties[key], root, depth + 1)) return false;
    let matched = false;
    for (const [regex, schema] of patterns) {
      if (regex?.test(key)) {
        matched = true;
        if (!conforms(value[key], schema, root, depth + 1)) return false;
      }
    }
    if (!own && !matched && s.additionalProperties !== undefined)
      if (!conforms(value[key], s.additionalProperties, root, depth + 1)) return false;
    if (s.propertyNames !== undefined && !conforms(key, s.propertyNames, root, depth + 1)) return false;
  }
  for (const map of [s.dependentRequired, s.dependentSchemas, s.dependencies]) {
    if (!isRecord(map)) continue;
    for (const [key, dependent] of Object.entries(map)) {
      if (!Object.hasOwn(value, key)) continue;
      if (Array.isArray(dependent)) {
        if (!dependent.every((need) => typeof need !== "string" || Object.hasOwn(value, need))) return false;
      } else if (!conforms(value, dependent, root, depth + 1)) return false;
    }
  }
  return true;
}

/** Which properties of `value` some keyword of `schema` (or of its applicable subschemas) looked at. */
function markEvaluated(
  value: SchemaObject,
  s: unknown,
  root: JsonSchema,
  into: Set<string>,
  depth: number,
  top = true,
): void {
  if (!isRecord(s) || depth > 64) return;
  const keys = Object.keys(value);
  if (isRecord(s.properties)) for (const key of keys) if (Object.hasOwn(s.properties, key)) into.add(key);
  if (isRecord(s.patternProperties))
    for (const pattern of Object.keys(s.patternProperties))
      for (const key of keys) if (compilePattern(pattern)?.test(key)) into.add(key);
  // A nested unevaluatedProperties has looked at every property; the one being checked has not.
  if (s.additionalProperties !== undefined || (!top && s.unevaluatedProperties !== undefined))
    for (const key of keys) into.add(key);
  const visit = (sub: unknown): void => markEvaluated(value, sub, root, into, depth + 1, false);
  if (typeof s.$ref === "string") visit(resolveRef(s.$ref, root));
  if (Array.isArray(s.allOf)) s.allOf.forEach(visit);
  for (const list of [s.anyOf, s.oneOf])
    if (Array.isArray(list)) for (const sub of list) if (conforms(value, sub, root, depth + 1)) visit(sub);
  if (s.if !== undefined) {
    if (conforms(value, s.if, root, depth + 1)) {
      visit(s.if);
      visit(s.then);
    } else visit(s.else);
  }
  if (isRecord(s.dependentSchemas))
    for (const [key, sub] of Object.entries(s.dependentSchemas)) if (Object.hasOwn(value, key)) visit(sub);
}

function evaluatedItems(value: unknown[], s: unknown, root: JsonSchema, depth: number, top = true): number {
  if (!isRecord(s) || depth > 64) return 0;
  if (s.items !== undefined || (!top && s.unevaluatedItems !== undefined)) return value.length;
  let reach = Array.isArray(s.prefixItems) ? s.prefixItems.length : 0;
  const visit = (sub: unknown): void => {
    reach = Math.max(reach, evaluatedItems(value, sub, root, depth + 1, false));
  };
  if (typeof s.$ref === "string") visit(resolveRef(s.$ref, root));
  if (Array.isArray(s.allOf)) s.allOf.forEach(visit);
  for (const list of [s.anyOf, s.oneOf])
    if (Array.isArray(list)) for (const sub of list) if (conforms(value, sub, root, depth + 1)) visit(sub);
  return reach;
}

// ---------------------------------------------------------------------------------------------------------

function isRecord(value: unknown): value is SchemaObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function num(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}
