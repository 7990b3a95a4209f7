import { TerrariumError } from "../core/errors.js";
import { setOwn } from "../core/immutable-json.js";
import { escapeToken, getAtPointer } from "../core/json-pointer.js";
import type { LoadReport } from "./report.js";
import type { JsonObjectSchema, JsonSchema } from "./tool.js";

/** Keywords that may sit beside a `$ref` without changing which values are valid. */
const ANNOTATIONS = new Set([
  "description",
  "title",
  "summary",
  "default",
  "example",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "nullable",
  "$comment",
]);

const NO_NAMES: ReadonlySet<string> = new Set();

/** Where a recursive definition lives inside a canonical schema. */
export const DEFS_PREFIX = "#/$defs/";

/**
 * Where documents keep named schemas. Only these may stay definitions for their size: a reference to a
 * parameter, a request body or a response is structure the reader walks, never a schema.
 */
const SCHEMA_HOMES = /^\/(components\/schemas|definitions|\$defs)\/[^/]+$/;
/** Where documents keep the reusable parts of operations that are not schemas. */
const STRUCTURE_HOMES =
  /^\/components\/(parameters|responses|requestBodies|headers|examples|links|callbacks|pathItems)\//;
/**
 * A shared schema larger than this many objects and arrays, fully expanded, is kept as a definition;
 * text counts too, one node per `CHARS_PER_NODE` characters.
 */
const MAX_INLINED_NODES = 200;
/**
 * Text weighs in because a schema can be few objects and much text: Microsoft Graph's base entity is a
 * discriminator mapping of a thousand names (67 KB in three objects), and inlined into every schema
 * derived from it, it made single tool schemas megabytes and the listing gigabytes.
 */
const CHARS_PER_NODE = 100;
/**
 * Objects and arrays in `node` once expanded (shared parts counted each time), plus its text in units of
 * `CHARS_PER_NODE`, counted up to `cap` + 1; `sizes` remembers parts already counted.
 */
function expandedSize(node: unknown, cap: number, sizes: WeakMap<object, number>): number {
  if (node === null || typeof node !== "object") return 0;
  const known = sizes.get(node);
  if (known !== undefined) return known;
  let total = 1;
  let chars = 0;
  for (const [key, child] of Object.entries(node)) {
    if (!Array.isArray(node)) chars += key.length;
    if (typeof child === "string") chars += child.length;
    else total += expandedSize(child, cap, sizes);
    if (total + chars / CHARS_PER_NODE > cap) break;
  }
  total += Math.floor(chars / CHARS_PER_NODE);
  const size = Math.min(total, cap + 1);
  sizes.set(node, size);
  return size;
}

/** Inlining a chain of references may nest schemas deeply; past this a schema is refused, not a stack. */
const MAX_RESOLVED_DEPTH = 512;

export interface RefResolverOptions {
  file?: string;
  /** Where external and dangling references are reported; without one they are errors. */
  report?: LoadReport;
}

/**
 * Resolves the local `$ref`s ("#/...") of one document. A reference is inlined (each tool schema stands
 * alone, which keeps messages and prompts simple) unless its target takes part in a cycle: recursive
 * schemas (trees, nested comments, filters) are kept as recursion, as `{"$ref": "#/$defs/<Name>"}`, and
 * `rooted` gives a tool's schema the `$defs` it needs. Which targets become definitions is decided once
 * per document (the targets of back edges in a depth-first walk of the reference graph, which breaks
 * every cycle), so the result does not depend on which operation is read first.
 *
 * A reference outside the document or to nothing becomes an unconstrained schema with a warning when a
 * report is given (the operation still loads), and an error otherwise.
 */
export class RefResolver {
  private readonly root: unknown;
  private readonly options: RefResolverOptions;
  private readonly inlined = new Map<string, unknown>();
  /** Recursive targets by pointer -> their definition name and (once resolved) schema. */
  private readonly definitions = new Map<string, { name: string; schema?: unknown }>();
  private readonly definitionNames = new Map<string, string>();
  private readonly takenNames = new Set<string>();
  private readonly definitionsByName = new Map<string, { name: string; schema?: unknown }>();
  private recursiveTargets?: Set<string>;
  private readonly referenceCache = new WeakMap<object, ReadonlySet<string>>();
  private readonly sizes = new WeakMap<object, number>();
  private readonly referenceLoops = new Map<string, string[] | null>();

  constructor(root: unknown, options: RefResolverOptions = {}) {
    this.root = root;
    this.options = options;
  }

  /** A copy of `node` (found at `pointer`) with every reference resolved as described above. */
  resolve(node: unknown, pointer = ""): unknown {
    return this.visit(node, pointer, 0);
  }

  /** Whether any target of this document is recursive (so schemas may carry `$defs`). */
  get hasDefinitions(): boolean {
    return this.recursive().size > 0;
  }

  /** `schema` as the root of a tool schema: unwrapped, with the `$defs` it needs attached. */
  rooted(schema: JsonSchema): JsonSchema {
    return this.withDefinitions(this.unwrap(schema));
  }

  /**
   * A schema that is only a reference to a definition (plus annotations), replaced by the definition's
   * body, so a root shows its own keywords; anything else is returned as it is.
   */
  unwrap<T>(schema: T): T {
    if (!isPlainObject(schema)) return schema;
    const ref = schema.$ref;
    if (typeof ref !== "string" || !ref.startsWith(DEFS_PREFIX)) return schema;
    const body = this.definitionByName(unescapeName(ref));
    const { $ref: _ref, ...siblings } = schema;
    if (!isPlainObject(body) || !Object.keys(siblings).every((key) => ANNOTATIONS.has(key))) return schema;
    return { ...body, ...siblings } as T;
  }

  /** `schema` with the `$defs` it needs, directly or through each other, attached at its top. */
  withDefinitions(schema: JsonSchema): JsonSchema {
    if (this.definitions.size === 0 || !isPlainObject(schema)) return schema;
    const needed = this.definitionsUsedBy(schema);
    if (needed.size === 0) return schema;
    const $defs: Record<string, unknown> = {};
    for (const name of [...needed].sort()) setOwn($defs, name, this.definitionByName(name));
    return { ...schema, $defs };
  }

  private visit(value: unknown, pointer: string, depth: number): unknown {
    if (depth > MAX_RESOLVED_DEPTH) {
      throw new TerrariumError(
        "SCHEMA_TOO_DEEP",
        `schemas nest deeper than ${MAX_RESOLVED_DEPTH} levels once references are resolved`,
        { where: { file: this.options.file, pointer } },
      );
    }
    if (Array.isArray(value))
      return value.map((item, index) => this.visit(item, `${pointer}/${index}`, depth + 1));
    if (value === null || typeof value !== "object") return value;
    const record = value as Record<string, unknown>;
    const ref = record.$ref;
    if (typeof ref === "string") {
      const target = this.target(ref, pointer, depth);
      const siblings = Object.entries(record).filter(([key]) => key !== "$ref");
      if (siblings.length === 0) return target;
      const resolvedSiblings: Record<string, unknown> = {};
      for (const [key, sibling] of siblings)
        setOwn(resolvedSiblings, key, this.visit(sibling, `${pointer}/${escapeToken(key)}`, depth + 1));
      if (isPlainObject(target) && typeof target.$ref === "string") return { ...target, ...resolvedSiblings };
      if (STRUCTURE_HOMES.test(ref.slice(1)) && isPlainObject(target)) {
        // A Reference Object to a parameter, body or response: OpenAPI ignores keywords beside it
        // (3.1 lets a summary or description override), so only annotations are kept.
        const annotations = Object.entries(resolvedSiblings).filter(([key]) => ANNOTATIONS.has(key));
        return { ...target, ...Object.fromEntries(annotations) };
      }
      // 3.1 allows keywords beside $ref; annotations can be merged, anything else must also hold.
      if (siblings.every(([key]) => ANNOTATIONS.has(key)) && isPlainObject(target)) {
        return { ...target, ...resolvedSiblings };
      }
      return { allOf: [target], ...resolvedSiblings };
    }
    const copy: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(record))
      setOwn(copy, key, this.visit(member, `${pointer}/${escapeToken(key)}`, depth + 1));
    return copy;
  }

  /** What a `$ref` found at `at` stands for: the inlined target, or a reference to its definition. */
  private target(ref: string, at: string, depth: number): unknown {
    const targetPointer = this.localPointer(ref, at);
    if (targetPointer === undefined) return {};
    const loop = this.pureReferenceLoop(targetPointer);
    if (loop) {
      // A → B → C → A with nothing but references: no value is ever described, and a validator
      // following it would never stop. Only the operations that use it are refused.
      throw new TerrariumError(
        "REF_CIRCULAR",
        `$ref "${ref}" starts a loop of references that never reaches a schema: ${loop.map((pointer) => `#${pointer}`).join(" → ")}`,
        { where: { file: this.options.file, pointer: at } },
      );
    }
    if (this.recursive().has(targetPointer)) {
      if (!this.definitions.has(targetPointer)) {
        // Registered before resolving the body, so references back into it stop here.
        const definition = this.define(targetPointer);
        definition.schema = this.visit(getAtPointer(this.root, targetPointer), targetPointer, depth + 1);
      }
      return this.referenceTo(targetPointer);
    }
    if (this.inlined.has(targetPointer)) return this.inlined.get(targetPointer);
    const resolved = this.visit(getAtPointer(this.root, targetPointer), targetPointer, depth + 1);
    // A large shared schema is kept once, as a definition, rather than copied into every place that
    // uses it: inlining a component used everywhere multiplies (Microsoft Graph's tool schemas would
    // expand to gigabytes; Stripe's results to hundreds of megabytes).
    if (
      SCHEMA_HOMES.test(targetPointer) &&
      expandedSize(resolved, MAX_INLINED_NODES, this.sizes) > MAX_INLINED_NODES
    ) {
      this.define(targetPointer).schema = resolved;
      const reference = this.referenceTo(targetPointer);
      this.inlined.set(targetPointer, reference);
      return reference;
    }
    this.inlined.set(targetPointer, resolved);
    return resolved;
  }

  /**
   * The pointers of a loop made only of references (each schema on it is a `$ref` and annotations) that
   * `pointer` enters, ending where the loop closes; undefined when following references reaches a schema.
   */
  private pureReferenceLoop(pointer: string): string[] | undefined {
    const known = this.referenceLoops.get(pointer);
    if (known !== undefined) return known === null ? undefined : known;
    // Linear in the chain: a Map for "seen", and every pointer on a chain that reaches a schema remembered,
    // so a chain of n references costs n steps, not n² (or n³ over all its members).
    const chain: string[] = [];
    const seen = new Map<string, number>();
    let current: string | undefined = pointer;
    let loop: string[] | undefined;
    let loopStart = 0;
    while (current !== undefined) {
      if (this.referenceLoops.get(current) === null) break; // reaches a schema from here on
      const at = seen.get(current);
      if (at !== undefined) {
        loop = [...chain.slice(at), current];
        loopStart = at;
        break;
      }
      seen.set(current, chain.length);
      chain.push(current);
      const node = getAtPointer(this.root, current);
      if (!isPlainObject(node) || typeof node.$ref !== "string" || !node.$ref.startsWith("#")) break;
      if (!Object.keys(node).every((key) => key === "$ref" || ANNOTATIONS.has(key))) break;
      try {
        current = decodeURIComponent(node.$ref.slice(1));
      } catch {
        current = undefined;
      }
    }
    if (loop) {
      // Pointers before the loop enter it where this one does; members of the loop see it from themselves.
      for (const member of chain.slice(0, loopStart)) this.referenceLoops.set(member, loop);
      this.referenceLoops.set(pointer, loop);
    } else for (const member of chain) this.referenceLoops.set(member, null);
    return loop;
  }

  private define(pointer: string): { name: string; schema?: unknown } {
    const definition: { name: string; schema?: unknown } = { name: this.definitionName(pointer) };
    this.definitions.set(pointer, definition);
    this.definitionsByName.set(definition.name, definition);
    return definition;
  }

  private referenceTo(pointer: string): { $ref: string } {
    return { $ref: `${DEFS_PREFIX}${escapeToken(this.definitionName(pointer))}` };
  }

  /** The JSON Pointer a local reference names, or undefined (after a warning) when it names nothing here. */
  private localPointer(ref: string, at: string): string | undefined {
    const problem = (code: string, message: string): undefined => {
      if (!this.options.report) {
        throw new TerrariumError("REF_UNRESOLVED", message, {
          where: { file: this.options.file, pointer: at },
        });
      }
      this.options.report.warn({
        code,
        message: `${message}; the schema there accepts any value`,
        file: this.options.file,
        pointer: at,
      });
      return undefined;
    };
    if (!ref.startsWith("#")) {
      return problem(
        "REF_EXTERNAL",
        `$ref "${ref}" points outside this document; only local references ("#/...") are followed`,
      );
    }
    let pointer: string;
    try {
      pointer = decodeURIComponent(ref.slice(1));
    } catch {
      return problem("REF_UNRESOLVED", `$ref "${ref}" is not a valid URI fragment`);
    }
    if (getAtPointer(this.root, pointer) === undefined) {
      return problem("REF_UNRESOLVED", `$ref "${ref}" points to nothing in this document`);
    }
    return pointer;
  }

  private definitionName(pointer: string): string {
    const known = this.definitionNames.get(pointer);
    if (known) return known;
    const last = pointer
      .slice(pointer.lastIndexOf("/") + 1)
      .replace(/~1/g, "/")
      .replace(/~0/g, "~");
    const base = last.replace(/[^A-Za-z0-9_.-]/g, "_") || "definition";
    let name = base;
    for (let suffix = 2; this.takenNames.has(name); suffix++) name = `${base}_${suffix}`;
    this.takenNames.add(name);
    this.definitionNames.set(pointer, name);
    return name;
  }

  private definitionByName(name: string): unknown {
    return this.definitionsByName.get(name)?.schema;
  }

  /** Names of the definitions `schema` refers to, directly or through other definitions. */
  private definitionsUsedBy(schema: unknown): Set<string> {
    const used = new Set<string>();
    const pending = [...this.referencesUnder(schema)];
    while (pending.length > 0) {
      const name = pending.pop() as string;
      if (used.has(name)) continue;
      used.add(name);
      pending.push(...this.referencesUnder(this.definitionByName(name)));
    }
    return used;
  }

  /**
   * The definition names referenced inside `node` (not following them), remembered per object: tool
   * schemas share their inlined parts, so each part is walked once per document, not once per tool.
   */
  private referencesUnder(node: unknown): ReadonlySet<string> {
    if (node === null || typeof node !== "object") return NO_NAMES;
    const known = this.referenceCache.get(node);
    if (known) return known;
    this.referenceCache.set(node, NO_NAMES); // a cycle through plain objects cannot happen, but never loop
    let found: Set<string> | undefined;
    const add = (names: ReadonlySet<string>) => {
      if (names.size === 0) return;
      found ??= new Set();
      for (const name of names) found.add(name);
    };
    if (Array.isArray(node)) for (const item of node) add(this.referencesUnder(item));
    else {
      for (const [key, value] of Object.entries(node)) {
        if (key === "$ref" && typeof value === "string" && value.startsWith(DEFS_PREFIX))
          add(new Set([unescapeName(value)]));
        else add(this.referencesUnder(value));
      }
    }
    const result = found ?? NO_NAMES;
    this.referenceCache.set(node, result);
    return result;
  }

  /**
   * The targets that become definitions: a depth-first walk over the reference graph (a target's edges are
   * the local references inside it), started from every referenced target in document order; each back
   * edge's target is marked. Every cycle contains a back edge, so the marks break all cycles. Iterative,
   * so a long chain of references cannot overflow the stack.
   */
  private recursive(): Set<string> {
    if (this.recursiveTargets) return this.recursiveTargets;
    const marked = new Set<string>();
    const edges = new Map<string, string[]>();
    const edgesOf = (pointer: string): string[] => {
      let found = edges.get(pointer);
      if (!found) {
        found = localRefsIn(getAtPointer(this.root, pointer)).filter(
          (target) => getAtPointer(this.root, target) !== undefined,
        );
        edges.set(pointer, found);
      }
      return found;
    };
    const state = new Map<string, "open" | "done">();
    for (const start of localRefsIn(this.root)) {
      if (state.has(start) || getAtPointer(this.root, start) === undefined) continue;
      const stack: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
      state.set(start, "open");
      while (stack.length > 0) {
        const frame = stack[stack.length - 1] as { node: string; next: number };
        const out = edgesOf(frame.node);
        if (frame.next >= out.length) {
          state.set(frame.node, "done");
          stack.pop();
          continue;
        }
        const child = out[frame.next++] as string;
        const seen = state.get(child);
        if (seen === "open") marked.add(child);
        else if (seen === undefined) {
          state.set(child, "open");
          stack.push({ node: child, next: 0 });
        }
      }
    }
    this.recursiveTargets = marked;
    return marked;
  }
}

/** A copy of `node` with each `#/$defs/<name>` reference replaced by `toRef(name)`. */
export function rewriteDefinitionRefs(node: unknown, toRef: (name: string) => string): unknown {
  if (Array.isArray(node)) return node.map((item) => rewriteDefinitionRefs(item, toRef));
  if (!isPlainObject(node)) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "$ref" && typeof value === "string" && value.startsWith(DEFS_PREFIX))
      setOwn(out, key, toRef(unescapeName(value)));
    else setOwn(out, key, rewriteDefinitionRefs(value, toRef));
  }
  return out;
}

/**
 * Prepares a tool schema to sit inside a larger schema (a structured-output answer, a union of tools):
 * its `$defs` are taken out, renamed with `prefix`, and its references rewritten to match, so the caller
 * attaches `definitions` at the larger schema's root where "#/$defs/..." will find them.
 */
export function embedSchema(
  schema: JsonSchema,
  prefix: string,
): { schema: JsonSchema; definitions: Record<string, unknown> } {
  if (!isPlainObject(schema) || !isPlainObject(schema.$defs)) return { schema, definitions: {} };
  const { $defs, ...rest } = schema;
  const toRef = (name: string) => `${DEFS_PREFIX}${escapeToken(prefix + name)}`;
  const definitions: Record<string, unknown> = {};
  for (const [name, body] of Object.entries($defs))
    setOwn(definitions, prefix + name, rewriteDefinitionRefs(body, toRef));
  return { schema: rewriteDefinitionRefs(rest, toRef) as JsonSchema, definitions };
}

/** The definition name in a `#/$defs/<name>` reference. */
function unescapeName(ref: string): string {
  return ref.slice(DEFS_PREFIX.length).replace(/~1/g, "/").replace(/~0/g, "~");
}

/** The pointers of the local `$ref`s inside `node`, in document order, each once. */
function localRefsIn(node: unknown): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  const pending: unknown[] = [node];
  while (pending.length > 0) {
    const current = pending.pop();
    if (current === null || typeof current !== "object") continue;
    const values = Array.isArray(current) ? current : Object.values(current);
    if (!Array.isArray(current)) {
      const ref = (current as Record<string, unknown>).$ref;
      if (typeof ref === "string" && ref.startsWith("#")) {
        let pointer: string | undefined;
        try {
          pointer = decodeURIComponent(ref.slice(1));
        } catch {
          pointer = undefined;
        }
        if (pointer !== undefined && !seen.has(pointer)) {
          seen.add(pointer);
          found.push(pointer);
        }
      }
    }
    for (let index = values.length - 1; index >= 0; index--) pending.push(values[index]);
  }
  return found;
}

/**
 * Returns a copy of `node` (found at `basePointer` in `root`) with every local `$ref` resolved: inlined,
 * or for recursive schemas kept as `$ref`s into `$defs` attached at the top. A `$ref` that points outside
 * the document or to nothing is an error naming the file and the place.
 */
export function resolveLocalRefs(
  root: unknown,
  node: unknown,
  options: { file?: string; basePointer?: string } = {},
): unknown {
  const resolver = new RefResolver(root, { file: options.file });
  const resolved = resolver.resolve(node, options.basePointer ?? "");
  return isPlainObject(resolved) ? resolver.rooted(resolved as JsonObjectSchema) : resolved;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
