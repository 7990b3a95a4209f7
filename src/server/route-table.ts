import { RE2JS } from "re2js";
import type { JsonSchema } from "../catalog/tool.js";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Which API a route belongs to; it decides the shape of the route's error bodies. */
export type RouteGroup = "terrarium" | "gecko" | "mcp" | "docs" | "tools";

/** A parameter as OpenAPI writes it (path, query or header). */
export interface RouteParameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  description?: string;
  schema?: JsonSchema;
}

export interface RouteResponse {
  description: string;
  schema?: JsonSchema;
  /** `application/json` unless said otherwise. */
  contentType?: string;
}

/** What a route is, as /openapi.json and /docs describe it. */
export interface RouteSpec {
  method: HttpMethod;
  /** An OpenAPI path template: literal segments and `{name}` parameters. */
  path: string;
  group: RouteGroup;
  summary: string;
  description?: string;
  operationId?: string;
  parameters?: RouteParameter[];
  requestBody?: { required?: boolean; description?: string; schema: JsonSchema; contentType?: string };
  responses: Record<string, RouteResponse>;
  /** Vendor extensions copied into the operation (`x-…`). */
  extensions?: Record<string, unknown>;
}

export type RouteHandler<C> = (c: C, params: Record<string, string>) => Response | Promise<Response>;

export interface Route<C> extends RouteSpec {
  handle: RouteHandler<C>;
}

/** One segment of a compiled template: a literal, a whole-segment parameter, or a pattern (`{id}.json`). */
type Segment =
  | { kind: "literal"; value: string }
  | { kind: "param"; name: string }
  | { kind: "pattern"; regex: SegmentRegex; names: string[] };

interface Compiled<C> {
  route: Route<C>;
  segments: Segment[];
  tier: number;
}

/** A node of the segment trie: where each kind of next segment leads, and the routes ending here. */
interface Node<C> {
  literals: Map<string, Node<C>>;
  param?: Node<C>;
  /** By the pattern's regex source. */
  patterns: Map<string, { regex: SegmentRegex; node: Node<C> }>;
  /** Routes whose template ends here, by method. */
  routes: Map<HttpMethod, Compiled<C>>;
}

export type Match<C> =
  | { kind: "found"; route: Route<C>; params: Record<string, string> }
  | { kind: "method"; allowed: HttpMethod[]; group: RouteGroup }
  | { kind: "none" };

/**
 * The server's one list of routes: what it dispatches, what /openapi.json publishes and what /docs shows,
 * so the three cannot disagree. Templates are matched segment by segment against the percent-decoded
 * path, so tool names with characters that are special to routers (`*`, `:`, `{`, spaces) are literal.
 * When two routes could both answer a request, the more specific one at the first place they differ wins
 * (a literal segment, then a pattern such as `{id}.json`, then a bare parameter); a route that an earlier one of the same method fully
 * covers is not added. Lookups walk a trie of segments, so their cost does not grow with the catalog.
 */
export class RouteTable<C> {
  private readonly compiled: Compiled<C>[] = [];
  private readonly root: Node<C> = newNode();

  get routes(): Route<C>[] {
    return this.compiled.map((entry) => entry.route);
  }

  /**
   * Adds a route unless it would never answer: a route of the same method and the same shape is already
   * there, or one of an earlier tier (lower number: the server's own routes, then tools' real paths, then
   * their other forms) answers every path it would. Within a tier, a more specific route is added and wins
   * for its paths (OpenAPI's rule: `/pets/mine` before `/pets/{petId}`). Says whether it was added.
   */
  add(route: Route<C>, tier = 0): boolean {
    const segments = compileTemplate(route.path);
    if (coveredIn(this.root, segments, 0, route.method, tier, true)) return false;
    let node = this.root;
    for (const segment of segments) {
      if (segment.kind === "literal") {
        let next = node.literals.get(segment.value);
        if (!next) {
          next = newNode();
          node.literals.set(segment.value, next);
        }
        node = next;
      } else if (segment.kind === "param") {
        node.param ??= newNode();
        node = node.param;
      } else {
        let next = node.patterns.get(segment.regex.source);
        if (!next) {
          next = { regex: segment.regex, node: newNode() };
          node.patterns.set(segment.regex.source, next);
        }
        node = next.node;
      }
    }
    const compiled = { route, segments, tier };
    node.routes.set(route.method, compiled);
    this.compiled.push(compiled);
    return true;
  }

  match(method: string, pathname: string): Match<C> {
    const parts = splitPath(pathname);
    const wanted = (method === "HEAD" ? "GET" : method) as HttpMethod;
    const found = findFirst(this.root, parts, 0, wanted);
    if (found)
      return { kind: "found", route: found.route, params: matchSegments(found.segments, parts) ?? {} };
    const allowed = new Map<HttpMethod, RouteGroup>();
    collectAll(this.root, parts, 0, allowed);
    if (allowed.size > 0)
      return {
        kind: "method",
        allowed: HTTP_METHODS.filter((m) => allowed.has(m)),
        group: [...allowed.values()][0] as RouteGroup,
      };
    return { kind: "none" };
  }
}

function newNode<C>(): Node<C> {
  return { literals: new Map(), patterns: new Map(), routes: new Map() };
}

/** The first route for `method` in literal-before-parameter order (the most specific one). */
function findFirst<C>(
  node: Node<C>,
  parts: string[],
  at: number,
  method: HttpMethod,
): Compiled<C> | undefined {
  if (at === parts.length) return node.routes.get(method);
  const part = parts[at] as string;
  const literal = node.literals.get(part);
  if (literal) {
    const found = findFirst(literal, parts, at + 1, method);
    if (found) return found;
  }
  // A pattern (`{id}.json`) says more about the segment than a bare parameter, so it is tried first.
  for (const { regex, node: next } of node.patterns.values()) {
    if (!regex.test(part)) continue;
    const found = findFirst(next, parts, at + 1, method);
    if (found) return found;
  }
  if (node.param && part !== "") return findFirst(node.param, parts, at + 1, method);
  return undefined;
}

/** Every method some route answers at this path (for a 405's Allow), with the route's group. */
function collectAll<C>(node: Node<C>, parts: string[], at: number, into: Map<HttpMethod, RouteGroup>): void {
  if (at === parts.length) {
    for (const [method, compiled] of node.routes)
      if (!into.has(method)) into.set(method, compiled.route.group);
    return;
  }
  const part = parts[at] as string;
  const literal = node.literals.get(part);
  if (literal) collectAll(literal, parts, at + 1, into);
  if (node.param && part !== "") collectAll(node.param, parts, at + 1, into);
  for (const { regex, node: next } of node.patterns.values())
    if (regex.test(part)) collectAll(next, parts, at + 1, into);
}

/**
 * Whether a route of `method` already in the trie takes every path `segments` would match: one of an
 * earlier tier that covers them (a parameter covers anything, a literal itself, a pattern the same
 * pattern), or one of the same shape (`exact`: no parameter stood for a literal or a pattern on the way).
 */
function coveredIn<C>(
  node: Node<C>,
  segments: Segment[],
  at: number,
  method: HttpMethod,
  tier: number,
  exact: boolean,
): boolean {
  if (at === segments.length) {
    const existing = node.routes.get(method);
    return existing !== undefined && (existing.tier < tier || (exact && existing.tier <= tier));
  }
  const segment = segments[at] as Segment;
  if (node.param && coveredIn(node.param, segments, at + 1, method, tier, exact && segment.kind === "param"))
    return true;
  if (segment.kind === "literal") {
    const literal = node.literals.get(segment.value);
    return literal !== undefined && coveredIn(literal, segments, at + 1, method, tier, exact);
  }
  if (segment.kind === "pattern") {
    const same = node.patterns.get(segment.regex.source);
    return same !== undefined && coveredIn(same.node, segments, at + 1, method, tier, exact);
  }
  return false;
}

/** The path's segments, percent-decoded one by one (a segment that does not decode is kept as sent). */
export function splitPath(pathname: string): string[] {
  const trimmed = pathname.length > 1 && pathname.endsWith("/") ? pathname.slice(0, -1) : pathname;
  return trimmed
    .split("/")
    .slice(1)
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return part;
      }
    });
}

/** Writes one literal path segment for a template: characters that would split or template it are escaped. */
export function encodeSegment(value: string): string {
  return value.replace(
    /[/?#%{}\s]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`,
  );
}

/** Template text -> segments; literal text inside a template is percent-decoded like request paths. */
function compileTemplate(template: string): Segment[] {
  return template
    .split("/")
    .slice(1)
    .map((raw): Segment => {
      const whole = /^\{([^{}]+)\}$/.exec(raw);
      if (whole) return { kind: "param", name: whole[1] as string };
      if (!/\{[^{}]+\}/.test(raw)) return { kind: "literal", value: decodeLiteral(raw) };
      const names: string[] = [];
      let source = "";
      let last = 0;
      for (const found of raw.matchAll(/\{([^{}]+)\}/g)) {
        source += escapeRegex(decodeLiteral(raw.slice(last, found.index)));
        source += "(.+?)";
        names.push(found[1] as string);
        last = (found.index as number) + found[0].length;
      }
      source += escapeRegex(decodeLiteral(raw.slice(last)));
      return { kind: "pattern", regex: segmentRegex(`^${source}$`), names };
    });
}

function decodeLiteral(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A segment pattern: `^literal(.+?)literal…$`, with what route lookups use of a RegExp. */
interface SegmentRegex {
  source: string;
  test(text: string): boolean;
  exec(text: string): Array<string | undefined> | null;
}

/**
 * Several parameters in one segment (`{a}{b}{c}.json`, from a tenant's spec) make V8 backtrack
 * polynomially (seconds for a few hundred characters); RE2 picks the same groups in linear time.
 */
function segmentRegex(source: string): SegmentRegex {
  const program = RE2JS.compile(source, RE2JS.DOTALL);
  return {
    source,
    test: (text) => program.test(text),
    exec: (text) => {
      const matcher = program.matcher(text);
      if (!matcher.matches()) return null;
      const groups: Array<string | undefined> = [];
      for (let k = 0; k <= matcher.groupCount(); k++) groups.push(matcher.group(k) ?? undefined);
      return groups;
    },
  };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function matchSegments(segments: Segment[], parts: string[]): Record<string, string> | undefined {
  const params: Record<string, string> = Object.create(null);
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] as Segment;
    const part = parts[i] as string;
    if (segment.kind === "literal") {
      if (segment.value !== part) return undefined;
    } else if (segment.kind === "param") {
      if (part === "") return undefined;
      params[segment.name] = part;
    } else {
      const found = segment.regex.exec(part);
      if (!found) return undefined;
      segment.names.forEach((name, k) => {
        params[name] = found[k + 1] as string;
      });
    }
  }
  return params;
}
