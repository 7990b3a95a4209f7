/**
 * Schema patterns checked in linear time. JSON Schema patterns are ECMAScript regular expressions, and
 * V8's engine backtracks: `^(a+)+$` against thirty `a`s and a `!` runs for seconds and blocks the event
 * loop. Every pattern taken from a schema is therefore translated into RE2 syntax and run by re2js (a
 * pure-JavaScript RE2 port: no backtracking, time linear in the input), with ECMAScript's meaning kept:
 *
 * - Character classes become explicit code-point ranges. `\s`, `\w`, `\d`, `.` and `\p{…}` are measured
 *   on the running JavaScript engine itself, so the Unicode version and every property name are exactly
 *   those a native `RegExp` with the `u` flag would use.
 * - `^` and `$` are the start and end of the input (`\A`, `\z`); `.` excludes `\n`, `\r`, U+2028, U+2029.
 * - Groups do not capture (a test needs no captures); lazy quantifiers become greedy (same verdict).
 * - Lookbehinds run on re2js's linear-time lookbehinds. Lookaheads that open an anchored pattern
 *   (`^(?!aws:).+`) become separate checks of their own; a pattern whose only lookarounds are lookaheads
 *   is run backwards on the reversed input, where they are lookbehinds.
 * - Repetitions above RE2's limit of 1000 are shortened where that cannot change a verdict (a first or
 *   last item of an unanchored pattern only needs its minimum), turned into a length check
 *   (`^arn:.{16,2044}$`), or split into several repetitions of at most 1000.
 *
 * What has no linear-time equivalent (backreferences, other lookaheads, programs too large) is refused
 * with a reason; the catalog drops such a pattern at load time with a warning (`PATTERN_NOT_LINEAR`).
 *
 * Matching stays linear in the input but also grows with the size of the compiled program, so every test
 * is charged `program size × input length` against a budget; see {@link withPatternBudget}.
 */
import { RE2JS } from "re2js";

/** A compiled pattern: the part of `RegExp` that Ajv uses. */
export interface LinearRegExp {
  test(input: string): boolean;
  /** The ECMAScript pattern it was made from (Ajv keys its cache by `toString()`). */
  readonly source: string;
  toString(): string;
}

export type LinearTranslation = { ok: true; regex: LinearRegExp } | { ok: false; reason: string };

/** Patterns longer than this are refused before any parsing. */
export const MAX_LINEAR_PATTERN_LENGTH = 10_000;
/** The largest compiled program (re2js instructions, summed over a pattern's parts) accepted. */
export const MAX_PROGRAM_SIZE = 10_000;
/**
 * Work units (program size × input length) one validation may spend on patterns. re2js's slowest path
 * (its NFA, when a crafted pattern defeats the DFA's cache) takes about 40 ns a unit: at most ~0.2 s.
 */
export const DEFAULT_PATTERN_BUDGET = 5_000_000;

const MAX_CP = 0x10ffff;
/** RE2's largest repetition count. */
const RE2_MAX_REPEAT = 1000;
/** Total copies a split repetition may expand to. */
const MAX_SPLIT_REPEAT = 5000;

class Untranslatable extends Error {}
const fail = (reason: string): never => {
  throw new Untranslatable(reason);
};

// ---------------------------------------------------------------------------------------------------
// Code-point sets

type Range = [number, number];

function normalise(ranges: Range[]): Range[] {
  const sorted = ranges.filter(([lo, hi]) => lo <= hi).sort((a, b) => a[0] - b[0]);
  const out: Range[] = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

function complement(ranges: Range[]): Range[] {
  const out: Range[] = [];
  let from = 0;
  for (const [lo, hi] of normalise(ranges)) {
    if (lo > from) out.push([from, lo - 1]);
    from = hi + 1;
  }
  if (from <= MAX_CP) out.push([from, MAX_CP]);
  return out;
}

const measured = new Map<string, Range[]>();
/** Number of distinct sets measured; bounded because the names a native engine accepts are finite. */
const MAX_MEASURED = 128;

/**
 * The code points the native single-character pattern `atom` (e.g. `\p{L}`, `\s`, `.`) matches, asked of
 * the engine itself. Only ever called with an atom already known to be one class; the native regex used
 * here runs on one code point at a time (or on uniform blocks of them), so it cannot backtrack.
 */
function measure(atom: string): Range[] {
  const cached = measured.get(atom);
  if (cached !== undefined) return cached;
  if (measured.size >= MAX_MEASURED) fail("too many distinct Unicode properties");
  const one = new RegExp(`^${atom}$`, "u");
  const all = new RegExp(`^(?:${atom})*$`, "u");
  const some = new RegExp(atom, "u");
  const ranges: Range[] = [];
  const add = (cp: number) => {
    const last = ranges[ranges.length - 1];
    if (last !== undefined && last[1] === cp - 1) last[1] = cp;
    else ranges.push([cp, cp]);
  };
  const BLOCK = 256;
  for (let base = 0; base <= MAX_CP; base += BLOCK) {
    const end = Math.min(base + BLOCK - 1, MAX_CP);
    // Surrogates one by one: next to each other a lead and a trail would form a pair.
    if (base >= 0xd800 && end <= 0xdfff) {
      for (let cp = base; cp <= end; cp++) if (one.test(String.fromCodePoint(cp))) add(cp);
      continue;
    }
    let block = "";
    for (let cp = base; cp <= end; cp++) block += String.fromCodePoint(cp);
    if (!some.test(block)) continue;
    if (all.test(block)) {
      const last = ranges[ranges.length - 1];
      if (last !== undefined && last[1] === base - 1) last[1] = end;
      else ranges.push([base, end]);
      continue;
    }
    for (let cp = base; cp <= end; cp++) if (one.test(String.fromCodePoint(cp))) add(cp);
  }
  measured.set(atom, ranges);
  return ranges;
}

// ---------------------------------------------------------------------------------------------------
// Syntax tree of an ECMAScript pattern (u flag)

type Node =
  | { type: "seq"; items: Node[] }
  | { type: "alt"; alts: Node[] }
  | { type: "set"; ranges: Range[] }
  | { type: "assert"; kind: "start" | "end" | "word" | "nonword" }
  | { type: "look"; behind: boolean; negative: boolean; body: Node }
  | { type: "repeat"; body: Node; min: number; max: number };

const seq = (items: Node[]): Node => ({ type: "seq", items });
const single = (cp: number): Node => ({ type: "set", ranges: [[cp, cp]] });

const CONTROL: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13 };
const SYNTAX = "^$\\.*+?()[]{}|/";

/** A recursive-descent reader of the `u`-flag grammar; the pattern is known to compile natively. */
class Parser {
  private pos = 0;
  private readonly cps: number[];
  private depth = 0;

  constructor(source: string) {
    this.cps = Array.from(source, (c) => c.codePointAt(0) ?? 0);
  }

  parse(): Node {
    const node = this.disjunction();
    if (this.pos < this.cps.length) fail(`unexpected ")" at offset ${this.pos}`);
    return node;
  }

  private peek(offset = 0): string {
    const cp = this.cps[this.pos + offset];
    return cp === undefined ? "" : String.fromCodePoint(cp);
  }

  private eat(text: string): boolean {
    for (let k = 0; k < text.length; k++) if (this.peek(k) !== text[k]) return false;
    this.pos += text.length;
    return true;
  }

  private disjunction(): Node {
    if (++this.depth > 200) fail("groups nested more than 200 deep");
    const alts = [this.alternative()];
    while (this.eat("|")) alts.push(this.alternative());
    this.depth--;
    return alts.length === 1 ? (alts[0] as Node) : { type: "alt", alts };
  }

  private alternative(): Node {
    const items: Node[] = [];
    while (this.pos < this.cps.length && this.peek() !== "|" && this.peek() !== ")") {
      const term = this.term();
      if (term !== undefined) items.push(term);
    }
    return items.length === 1 ? (items[0] as Node) : seq(items);
  }

  private term(): Node | undefined {
    const c = this.peek();
    if (c === "^") {
      this.pos++;
      return { type: "assert", kind: "start" };
    }
    if (c === "$") {
      this.pos++;
      return { type: "assert", kind: "end" };
    }
    if (this.eat("\\b")) return { type: "assert", kind: "word" };
    if (this.eat("\\B")) return { type: "assert", kind: "nonword" };
    for (const [open, behind, negative] of [
      ["(?=", false, false],
      ["(?!", false, true],
      ["(?<=", true, false],
      ["(?<!", true, true],
    ] as const) {
      if (this.eat(open)) {
        const body = this.disjunction();
        this.close();
        // Under u a lookahead cannot be quantified, so nothing follows here.
        return { type: "look", behind, negative, body };
      }
    }
    const atom = this.atom();
    return this.quantifier(atom);
  }

  private close(): void {
    if (!this.eat(")")) fail(`unbalanced "(" at offset ${this.pos}`);
  }

  private atom(): Node {
    const c = this.peek();
    if (c === "(") {
      this.pos++;
      if (this.eat("?:")) {
        // non-capturing group
      } else if (this.peek() === "?" && this.peek(1) === "<") {
        this.pos += 2;
        while (this.pos < this.cps.length && this.peek() !== ">") this.pos++;
        this.pos++;
      } else if (this.peek() === "?") {
        fail("pattern modifiers have no RE2 equivalent here");
      }
      const body = this.disjunction();
      this.close();
      return body;
    }
    if (c === ".") {
      this.pos++;
      return { type: "set", ranges: measure(".") };
    }
    if (c === "[") return this.characterClass();
    if (c === "\\") return this.atomEscape();
    if ("*+?{".includes(c)) fail(`nothing to repeat at offset ${this.pos}`);
    this.pos++;
    return single(this.cps[this.pos - 1] ?? 0);
  }

  private quantifier(atom: Node): Node {
    let min: number;
    let max: number;
    const c = this.peek();
    if (c === "*") [min, max] = [0, Number.POSITIVE_INFINITY];
    else if (c === "+") [min, max] = [1, Number.POSITIVE_INFINITY];
    else if (c === "?") [min, max] = [0, 1];
    else if (c === "{") {
      const rest = String.fromCodePoint(...this.cps.slice(this.pos, this.pos + 40));
      const match = /^\{(\d+)(,(\d*))?\}/.exec(rest);
      if (match === null) return atom;
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === "" ? Number.POSITIVE_INFINITY : Number(match[3]);
      this.pos += match[0].length - 1;
    } else return atom;
    this.pos++;
    this.eat("?"); // lazy or greedy, the verdict is the same
    if (!Number.isSafeInteger(min) || (max !== Number.POSITIVE_INFINITY && !Number.isSafeInteger(max)))
      fail("a repetition count is too large");
    return { type: "repeat", body: atom, min, max };
  }

  private atomEscape(): Node {
    this.pos++; // backslash
    const c = this.peek();
    if (/[1-9]/.test(c) || (c === "k" && this.peek(1) === "<"))
      fail("backreferences need a backtracking engine");
    const set = this.classEscape();
    if (set !== undefined) return { type: "set", ranges: set };
    return single(this.characterEscape(false));
  }

  /** `\d \D \s \S \w \W \p{…} \P{…}` at the current position (after the backslash), or undefined. */
  private classEscape(): Range[] | undefined {
    const c = this.peek();
    if ("dDsSwW".includes(c) && c !== "") {
      this.pos++;
      return measure(`\\${c}`);
    }
    if ((c === "p" || c === "P") && this.peek(1) === "{") {
      const start = this.pos;
      while (this.pos < this.cps.length && this.peek() !== "}") this.pos++;
      this.pos++;
      const text = String.fromCodePoint(...this.cps.slice(start, this.pos));
      if (!/^[pP]\{[A-Za-z0-9_=]+\}$/.test(text)) fail(`malformed property escape "\\${text}"`);
      return measure(`\\${text}`);
    }
    return undefined;
  }

  /** A character escape (after the backslash) as a code point. */
  private characterEscape(inClass: boolean): number {
    const c = this.peek();
    this.pos++;
    if (c in CONTROL) return CONTROL[c] as number;
    if (c === "0") return 0;
    if (c === "b" && inClass) return 8;
    if (c === "-" && inClass) return 0x2d;
    if (c === "c") {
      const letter = this.peek();
      this.pos++;
      return (letter.codePointAt(0) ?? 0) % 32;
    }
    if (c === "x") {
      const hex = String.fromCodePoint(...this.cps.slice(this.pos, this.pos + 2));
      this.pos += 2;
      return Number.parseInt(hex, 16);
    }
    if (c === "u") {
      const lead = this.unicodeEscape();
      // Under u an escaped surrogate pair is one code point.
      if (lead >= 0xd800 && lead <= 0xdbff && this.peek() === "\\" && this.peek(1) === "u") {
        const save = this.pos;
        this.pos += 2;
        const trail = this.unicodeEscape();
        if (trail >= 0xdc00 && trail <= 0xdfff) return (lead - 0xd800) * 0x400 + (trail - 0xdc00) + 0x10000;
        this.pos = save;
      }
      return lead;
    }
    if (SYNTAX.includes(c) && c !== "") return c.codePointAt(0) ?? 0;
    return fail(`unknown escape "\\${c}"`);
  }

  private unicodeEscape(): number {
    if (this.eat("{")) {
      const start = this.pos;
      while (this.pos < this.cps.length && this.peek() !== "}") this.pos++;
      const hex = String.fromCodePoint(...this.cps.slice(start, this.pos));
      this.pos++;
      return Number.parseInt(hex, 16);
    }
    const hex = String.fromCodePoint(...this.cps.slice(this.pos, this.pos + 4));
    this.pos += 4;
    return Number.parseInt(hex, 16);
  }

  private characterClass(): Node {
    this.pos++; // [
    const negated = this.eat("^");
    const ranges: Range[] = [];
    while (this.peek() !== "]") {
      if (this.pos >= this.cps.length) fail("unterminated character class");
      const lo = this.classAtom();
      if (this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== "") {
        this.pos++;
        const hi = this.classAtom();
        if (typeof lo !== "number" || typeof hi !== "number") fail("a class escape cannot bound a range");
        ranges.push([lo as number, hi as number]);
      } else if (typeof lo === "number") ranges.push([lo, lo]);
      else ranges.push(...lo);
    }
    this.pos++; // ]
    return { type: "set", ranges: negated ? complement(ranges) : normalise(ranges) };
  }

  private classAtom(): number | Range[] {
    if (this.peek() === "\\") {
      this.pos++;
      const set = this.classEscape();
      if (set !== undefined) return set;
      return this.characterEscape(true);
    }
    this.pos++;
    return this.cps[this.pos - 1] ?? 0;
  }
}

// ---------------------------------------------------------------------------------------------------
// Analysis and rewriting

function walk(node: Node, visit: (node: Node) => void): void {
  visit(node);
  if (node.type === "seq") for (const item of node.items) walk(item, visit);
  else if (node.type === "alt") for (const alt of node.alts) walk(alt, visit);
  else if (node.type === "look" || node.type === "repeat") walk(node.body, visit);
}

function has(node: Node, test: (node: Node) => boolean): boolean {
  let found = false;
  walk(node, (n) => {
    if (test(n)) found = true;
  });
  return found;
}

const isLookahead = (n: Node) => n.type === "look" && !n.behind;
const isLookbehind = (n: Node) => n.type === "look" && n.behind;

/** Minimum and maximum length in code points of what `node` matches. */
function lengths(node: Node): [number, number] {
  switch (node.type) {
    case "set":
      return [1, 1];
    case "assert":
    case "look":
      return [0, 0];
    case "seq":
      return node.items.reduce<[number, number]>(
        (acc, item) => {
          const [lo, hi] = lengths(item);
          return [acc[0] + lo, acc[1] + hi];
        },
        [0, 0],
      );
    case "alt": {
      const all = node.alts.map(lengths);
      return [Math.min(...all.map((l) => l[0])), Math.max(...all.map((l) => l[1]))];
    }
    case "repeat": {
      if (node.max === 0) return [0, 0];
      const [lo, hi] = lengths(node.body);
      return [lo * node.min, hi === 0 ? 0 : hi * node.max];
    }
  }
}

/** The items of a sequence, with groups of one alternative opened up (they only group). */
function flatten(node: Node): Node[] {
  if (node.type !== "seq") return [node];
  return node.items.flatMap(flatten);
}

const big = (n: Node) =>
  n.type === "repeat" &&
  (n.min > RE2_MAX_REPEAT || (n.max > RE2_MAX_REPEAT && n.max !== Number.POSITIVE_INFINITY));

/** The sequence read backwards: lookaheads become lookbehinds, `^` and `$` swap. */
function reverse(node: Node): Node {
  switch (node.type) {
    case "seq":
      return seq(node.items.map(reverse).reverse());
    case "alt":
      return { type: "alt", alts: node.alts.map(reverse) };
    case "assert":
      if (node.kind === "start") return { type: "assert", kind: "end" };
      if (node.kind === "end") return { type: "assert", kind: "start" };
      return node;
    case "look":
      return { type: "look", behind: !node.behind, negative: node.negative, body: reverse(node.body) };
    case "repeat":
      return { ...node, body: reverse(node.body) };
    case "set":
      return node;
  }
}

// ---------------------------------------------------------------------------------------------------
// RE2 text

const hexCp = (cp: number) => `\\x{${cp.toString(16).toUpperCase()}}`;

function setText(ranges: Range[]): string {
  if (ranges.length === 0) return `[^\\x{0}-\\x{10FFFF}]`;
  const first = ranges[0] as Range;
  if (ranges.length === 1 && first[0] === first[1]) return hexCp(first[0]);
  const negate = first[0] === 0 && (ranges[ranges.length - 1] as Range)[1] === MAX_CP;
  const body = (negate ? complement(ranges) : ranges)
    .map(([lo, hi]) => (lo === hi ? hexCp(lo) : `${hexCp(lo)}-${hexCp(hi)}`))
    .join("");
  if (negate && body === "") return `[\\x{0}-\\x{10FFFF}]`;
  return negate ? `[^${body}]` : `[${body}]`;
}

function repeatText(body: string, min: number, max: number): string {
  if (min === 0 && max === Number.POSITIVE_INFINITY) return `${body}*`;
  if (min === 1 && max === Number.POSITIVE_INFINITY) return `${body}+`;
  if (min === 0 && max === 1) return `${body}?`;
  if (max === Number.POSITIVE_INFINITY) return `${body}{${min},}`;
  if (min === max) return `${body}{${min}}`;
  return `${body}{${min},${max}}`;
}

function emit(node: Node): string {
  switch (node.type) {
    case "set":
      return setText(node.ranges);
    case "assert":
      return { start: "\\A", end: "\\z", word: "\\b", nonword: "\\B" }[node.kind];
    case "seq":
      return node.items.map((item) => (item.type === "alt" ? `(?:${emit(item)})` : emit(item))).join("");
    case "alt":
      return node.alts.map(emit).join("|");
    case "look":
      if (!node.behind) return fail("lookaheads need a backtracking engine");
      return `(?<${node.negative ? "!" : "="}${emit(node.body)})`;
    case "repeat": {
      const inner = node.body.type === "set" ? emit(node.body) : `(?:${emit(node.body)})`;
      if (!big(node)) return repeatText(inner, node.min, node.max);
      // Split: X{n,m} is X{1000}…X{n mod 1000} followed by X{0,1000}… up to m (same language).
      const total = node.max === Number.POSITIVE_INFINITY ? node.min : node.max;
      if (total > MAX_SPLIT_REPEAT) fail(`a repetition of ${total} is too large to check in linear time`);
      const parts: string[] = [];
      for (let left = node.min; left > 0; left -= RE2_MAX_REPEAT)
        parts.push(repeatText(inner, Math.min(left, RE2_MAX_REPEAT), Math.min(left, RE2_MAX_REPEAT)));
      if (node.max === Number.POSITIVE_INFINITY) parts.push(`${inner}*`);
      else
        for (let left = node.max - node.min; left > 0; left -= RE2_MAX_REPEAT)
          parts.push(repeatText(inner, 0, Math.min(left, RE2_MAX_REPEAT)));
      return parts.map((part) => `(?:${part})`).join("");
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Matchers

type Matcher =
  | { kind: "re2"; program: ReturnType<typeof RE2JS.compile>; size: number; reversed: boolean }
  | { kind: "and" | "or"; parts: Matcher[] }
  | { kind: "not"; part: Matcher }
  | { kind: "length"; min: number; max: number };

function programSize(matcher: Matcher): number {
  switch (matcher.kind) {
    case "re2":
      return matcher.size;
    case "and":
    case "or":
      return matcher.parts.reduce((sum, part) => sum + programSize(part), 0);
    case "not":
      return programSize(matcher.part);
    case "length":
      return 1;
  }
}

function compileRe2(node: Node, reversed: boolean): Matcher {
  const text = emit(node);
  const flags = has(node, isLookbehind) ? RE2JS.LOOKBEHINDS : 0;
  let program: ReturnType<typeof RE2JS.compile>;
  try {
    program = RE2JS.compile(text, flags);
  } catch (error) {
    return fail(`RE2 refuses it (${error instanceof Error ? error.message : String(error)})`);
  }
  const size = program.programSize();
  if (size > MAX_PROGRAM_SIZE)
    fail(`its program (${size} instructions) is too large to check in linear time`);
  return { kind: "re2", program, size, reversed };
}

/** A matcher for `node`, tested anywhere in the input as `RegExp.prototype.test` does. */
function build(node: Node): Matcher {
  if (node.type === "alt" && needsSplit(node)) return { kind: "or", parts: node.alts.map(build) };
  const items = shortenEnds(flatten(node));
  const whole = seq(items);
  if (items.some(big)) {
    const lengthCheck = anchoredLength(items);
    if (lengthCheck !== undefined) return lengthCheck;
  }
  if (has(whole, isLookahead)) {
    const peeled = peelLookaheads(items);
    if (peeled !== undefined) return peeled;
    if (has(whole, isLookbehind)) fail("lookaheads mixed with lookbehinds need a backtracking engine");
    return compileRe2(reverse(whole), true);
  }
  return compileRe2(whole, false);
}

/** Whether the alternatives of a top-level alternation must be matched one by one. */
function needsSplit(node: Node & { type: "alt" }): boolean {
  return node.alts.some((alt) => has(alt, isLookahead) || has(alt, big));
}

/**
 * In an unanchored test, a repetition that starts the pattern (nothing before it, no `^`) or ends it
 * (nothing after, no `$`) only needs its minimum count: any longer match contains one of the minimum.
 */
function shortenEnds(items: Node[]): Node[] {
  const out = [...items];
  const shorten = (index: number) => {
    const item = out[index];
    if (item?.type === "repeat" && item.max > item.min) {
      if (item.min === 0) out.splice(index, 1);
      else out[index] = { ...item, max: item.min };
      return true;
    }
    return false;
  };
  while (out.length > 0 && shorten(out.length - 1)) {}
  while (out.length > 0 && shorten(0)) {}
  return out;
}

/**
 * `^ … C{n,m} … $` where everything else has a fixed length and the long repetition is of one character
 * class: the pattern with `C*` in its place, and the input's length checked apart.
 */
function anchoredLength(items: Node[]): Matcher | undefined {
  const first = items[0];
  const last = items[items.length - 1];
  if (first?.type !== "assert" || first.kind !== "start" || last?.type !== "assert" || last.kind !== "end")
    return undefined;
  const variable = items.filter((item) => {
    const [lo, hi] = lengths(item);
    return lo !== hi;
  });
  const repeat = variable[0];
  if (variable.length !== 1 || repeat?.type !== "repeat" || repeat.body.type !== "set") return undefined;
  if (items.some((item) => has(item, (n) => n.type === "look"))) return undefined;
  const fixed = items.reduce((sum, item) => (item === repeat ? sum : sum + lengths(item)[0]), 0);
  const open: Node = { type: "repeat", body: repeat.body, min: 0, max: Number.POSITIVE_INFINITY };
  const shape = compileRe2(seq(items.map((item) => (item === repeat ? open : item))), false);
  return {
    kind: "and",
    parts: [{ kind: "length", min: fixed + repeat.min, max: fixed + repeat.max }, shape],
  };
}

/**
 * `^(?=A)(?!B)C`: when the lookaheads open a pattern pinned to the start of the input, each is a check of
 * its own on the whole input (`^A` must match, `^B` must not), and so is the rest (`^C`).
 */
function peelLookaheads(items: Node[]): Matcher | undefined {
  let k = 0;
  let pinned = false;
  const looks: Array<Node & { type: "look" }> = [];
  for (; k < items.length; k++) {
    const item = items[k] as Node;
    if (item.type === "assert" && item.kind === "start") pinned = true;
    else if (item.type === "look" && !item.behind) {
      looks.push(item);
      if (!item.negative && startsAnchored(item.body)) pinned = true;
    } else break;
  }
  if (!pinned || looks.length === 0) return undefined;
  const start: Node = { type: "assert", kind: "start" };
  const parts: Matcher[] = looks.map((look) => {
    const check = build(seq([start, look.body]));
    return look.negative ? { kind: "not", part: check } : check;
  });
  parts.push(build(seq([start, ...items.slice(k)])));
  return { kind: "and", parts };
}

function startsAnchored(node: Node): boolean {
  if (node.type === "alt") return node.alts.every(startsAnchored);
  const first = flatten(node)[0];
  return first !== undefined && first.type === "assert" && first.kind === "start";
}

// ---------------------------------------------------------------------------------------------------
// Running

let budget: number | undefined;

/**
 * Runs `work` (one validation) with `units` of pattern work to spend: each test costs its program size
 * times the input length, the worst case of an RE2 run. Past the budget a pattern test fails (the value
 * is reported as not matching) instead of running, so one request cannot hold the event loop for long.
 * Outside such a scope every test has the whole budget to itself.
 */
export function withPatternBudget<T>(work: () => T, units = DEFAULT_PATTERN_BUDGET): T {
  const outer = budget;
  budget = units;
  try {
    return work();
  } finally {
    budget = outer;
  }
}

function charge(cost: number): boolean {
  if (budget === undefined) return cost <= DEFAULT_PATTERN_BUDGET;
  if (cost > budget) {
    budget = 0;
    return false;
  }
  budget -= cost;
  return true;
}

function codePointLength(input: string): number {
  let n = input.length;
  for (let k = 0; k + 1 < input.length; k++) {
    const unit = input.charCodeAt(k);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = input.charCodeAt(k + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n--;
        k++;
      }
    }
  }
  return n;
}

function reversedCodePoints(input: string): string {
  return Array.from(input).reverse().join("");
}

function run(matcher: Matcher, input: string, reversed: () => string): boolean {
  switch (matcher.kind) {
    case "re2":
      return matcher.program.test(matcher.reversed ? reversed() : input);
    case "and":
      return matcher.parts.every((part) => run(part, input, reversed));
    case "or":
      return matcher.parts.some((part) => run(part, input, reversed));
    case "not":
      return !run(matcher.part, input, reversed);
    case "length": {
      const n = codePointLength(input);
      return n >= matcher.min && n <= matcher.max;
    }
  }
}

/**
 * The lengths (in code points) an input can have when the pattern is anchored at both ends (`^…$`), or
 * undefined: a longer or shorter input cannot match, and is turned away before any work.
 */
function anchoredBounds(node: Node): [number, number] | undefined {
  if (node.type === "alt") {
    const all = node.alts.map(anchoredBounds);
    if (all.some((bounds) => bounds === undefined)) return undefined;
    const bounds = all as Array<[number, number]>;
    return [Math.min(...bounds.map((b) => b[0])), Math.max(...bounds.map((b) => b[1]))];
  }
  const items = flatten(node);
  const first = items[0];
  const last = items[items.length - 1];
  if (first?.type !== "assert" || first.kind !== "start" || last?.type !== "assert" || last.kind !== "end")
    return undefined;
  return lengths(node);
}

class LinearPattern implements LinearRegExp {
  private readonly size: number;

  constructor(
    readonly source: string,
    private readonly matcher: Matcher,
    private readonly bounds: [number, number] | undefined,
  ) {
    this.size = programSize(matcher);
  }

  test(input: string): boolean {
    const text = String(input);
    if (this.bounds !== undefined) {
      const [min, max] = this.bounds;
      // UTF-16 length is between one and two units a code point.
      if (text.length > 2 * max || text.length < min) return false;
      const n = codePointLength(text);
      if (n > max || n < min) return false;
    }
    if (!charge(this.size * Math.max(text.length, 1))) return false;
    let reversed: string | undefined;
    return run(this.matcher, text, () => {
      reversed ??= reversedCodePoints(text);
      return reversed;
    });
  }

  toString(): string {
    return `/${this.source}/u`;
  }
}

const compiled = new Map<string, LinearTranslation>();
const MAX_CACHED = 5000;

/**
 * The ECMAScript `pattern` (read with the `u` flag, as Ajv does) as a linear-time matcher, or why it has
 * none. Never throws. Results are cached by pattern.
 */
export function translateToLinear(pattern: string): LinearTranslation {
  const cached = compiled.get(pattern);
  if (cached !== undefined) return cached;
  const result = translateUncached(pattern);
  if (compiled.size >= MAX_CACHED) compiled.clear();
  compiled.set(pattern, result);
  return result;
}

function translateUncached(pattern: string): LinearTranslation {
  if (typeof pattern !== "string") return { ok: false, reason: "not a string" };
  if (pattern.length > MAX_LINEAR_PATTERN_LENGTH)
    return { ok: false, reason: "longer than 10,000 characters" };
  try {
    // Compiling (never running) the native pattern checks its syntax, so the parser may trust it.
    new RegExp(pattern, "u");
  } catch (error) {
    return { ok: false, reason: `not a valid regular expression (${(error as Error).message})` };
  }
  try {
    const tree = new Parser(pattern).parse();
    const matcher = build(tree);
    const size = programSize(matcher);
    if (size > MAX_PROGRAM_SIZE)
      fail(`its program (${size} instructions) is too large to check in linear time`);
    return { ok: true, regex: new LinearPattern(pattern, matcher, anchoredBounds(tree)) };
  } catch (error) {
    if (error instanceof Untranslatable) return { ok: false, reason: error.message };
    return { ok: false, reason: `translation failed: ${(error as Error).message}` };
  }
}

/** Why `pattern` cannot be checked in linear time, or undefined when it can. */
export function linearPatternProblem(pattern: string): string | undefined {
  const result = translateToLinear(pattern);
  return result.ok ? undefined : result.reason;
}

/** A matcher that accepts everything: what Ajv gets for a pattern it must not run. */
class UncheckedPattern implements LinearRegExp {
  constructor(readonly source: string) {}
  test(): boolean {
    return true;
  }
  toString(): string {
    return `/${this.source}/u (not checked)`;
  }
}

/**
 * Ajv's `code.regExp` engine: every schema pattern runs in linear time. A pattern that cannot (one the
 * catalog would have dropped with `PATTERN_NOT_LINEAR`, arriving through a path that skips the catalog)
 * is not checked rather than run on the backtracking engine.
 */
export function linearRegExpEngine(pattern: string, _flags?: string): LinearRegExp {
  const result = translateToLinear(pattern);
  return result.ok ? result.regex : new UncheckedPattern(pattern);
}
linearRegExpEngine.code = "linearRegExpEngine";

/** Whether `pattern` matches somewhere in `input`, in linear time; false when it cannot be checked. */
export function linearTest(pattern: string, input: string): boolean {
  const result = translateToLinear(pattern);
  return result.ok ? result.regex.test(input) : false;
}
