/**
 * Translation of `pattern`s written for other regex dialects (PCRE, Python `re`, Java, .NET, POSIX) into
 * ECMAScript patterns that compile with the `u` flag, which is how Ajv compiles them.
 *
 * The rules it keeps:
 * - A pattern JavaScript already accepts comes back untouched, whatever its author meant.
 * - Inside a translated pattern, anything JavaScript also accepts keeps its JavaScript meaning (`$`, `.`,
 *   `\d`, `\w`, `\b`, `\v`), so how one part reads never depends on whether another part needed work. The one
 *   exception is Java's ASCII class names (`\p{Alpha}`, `\p{Lower}`, `\p{Upper}`), which JavaScript reads as
 *   Unicode properties: once a pattern is known to be foreign, Java's ASCII meaning is taken.
 * - A construct is rewritten only into an exact equivalent; one without an equivalent fails the whole
 *   pattern with a reason rather than being approximated.
 *
 * Choices where the dialects disagree:
 * - `\Z` becomes `$`, the end of the input, as in Python. PCRE, Java and .NET also let it match before one
 *   final newline; authors of schemas write `\Z` to shut out trailing text, and the stricter reading does that.
 * - `\G` becomes `^`: a validator runs one match from offset 0, and that is where `\G` holds.
 * - `\0` takes at most two more octal digits (PCRE, Python); `\ddd` with three octal digits is octal, other
 *   `\d` and `\dd` are backreferences.
 * - `{,n}` is the quantifier `{0,n}` (Python, PCRE2 10.43).
 * - Under `(?m)` lines end at `\n` only (Python, PCRE's default); Java also ends them at `\r`, U+0085,
 *   U+2028 and U+2029.
 * - `[` inside a class is a literal (PCRE, Python), not Java's nested union.
 * - Case-insensitive text uses simple one-to-one case mapping: `a` -> `[aA]`, `a-z` -> `a-zA-Z`.
 * - Possessive quantifiers and atomic groups are emulated exactly: `(?>X)` is `(?=(X))\N`, with every
 *   numbered backreference renumbered around the added groups.
 */

/** The outcome of {@link translatePattern}. */
export type PatternTranslation =
  /** `notes` lists, in short phrases, what was rewritten; empty when `changed` is false. */
  | { ok: true; pattern: string; changed: boolean; notes: string[] }
  /** `reason` says why the pattern has no JavaScript equivalent. */
  | { ok: false; reason: string };

const MAX_PATTERN_LENGTH = 10_000;
/** Code points a case-insensitive class may expand, so a huge range cannot stall loading. */
const CASE_EXPANSION_BUDGET = 0x30000;
const MAX_CODE_POINT = 0x10ffff;

/**
 * Turns a pattern from any common dialect into an equivalent ECMAScript pattern that compiles with the `u`
 * flag. Never throws: a pattern that cannot be expressed gives `{ ok: false, reason }`.
 */
export function translatePattern(pattern: string): PatternTranslation {
  if (typeof pattern !== "string") return { ok: false, reason: "not a string" };
  if (pattern.length > MAX_PATTERN_LENGTH) return { ok: false, reason: "longer than 10,000 characters" };
  if (compileError(pattern) === undefined) return { ok: true, pattern, changed: false, notes: [] };
  let translated: { pattern: string; notes: string[] };
  try {
    translated = new Translator(pattern).run();
  } catch (error) {
    if (error instanceof Untranslatable) return { ok: false, reason: error.message };
    return {
      ok: false,
      reason: `translation failed: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  const error = compileError(translated.pattern);
  if (error !== undefined)
    return { ok: false, reason: `not a valid JavaScript regex after translation: ${error}` };
  return {
    ok: true,
    pattern: translated.pattern,
    changed: translated.pattern !== pattern,
    notes: translated.notes,
  };
}

/** The engine's complaint about `pattern` under the `u` flag, without the echo of the pattern itself. */
function compileError(pattern: string): string | undefined {
  try {
    new RegExp(pattern, "u");
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const colon = message.lastIndexOf(": ");
    return (colon >= 0 ? message.slice(colon + 2) : message).trim();
  }
}

class Untranslatable extends Error {}

function fail(reason: string): never {
  throw new Untranslatable(reason);
}

type Range = [number, number];

/** A class escape's meaning: the union of `ranges` and `escapes` (JavaScript class escapes), maybe negated. */
interface CharSet {
  ranges: Range[];
  escapes: string[];
  negated: boolean;
}

interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
  x: boolean;
}

/** Output is kept in parts so capture groups can be numbered, and backreferences resolved, at the end. */
type Part =
  | string
  | { kind: "open"; id: number; name?: string }
  | { kind: "ref"; id: number }
  | { kind: "source-ref"; n: number };

type CharToken = { kind: "char"; cp: number; text: string };
type Escape =
  | CharToken
  | { kind: "set"; set: CharSet }
  | { kind: "assert"; text: string }
  | { kind: "ref"; n: number }
  | { kind: "named-ref"; name: string }
  | { kind: "quote"; cps: number[] }
  | { kind: "none" };
type ClassToken = CharToken | { kind: "set"; set: CharSet } | { kind: "dash" };

interface Frame {
  kind: "group" | "capture" | "atomic" | "lookaround" | "lookbehind";
  /** Flags to restore when the group closes. */
  saved: Flags;
  /** Index in `parts` where the group starts: the atom a quantifier after it repeats. */
  start: number;
  offset: number;
  atomicId?: number;
}

const range = (lo: number, hi = lo): Range => [lo, hi];

/** POSIX bracket classes and the Java names for the same ASCII sets. */
const ASCII_CLASSES: Record<string, Range[]> = {
  alpha: [range(0x61, 0x7a), range(0x41, 0x5a)],
  digit: [range(0x30, 0x39)],
  alnum: [range(0x61, 0x7a), range(0x41, 0x5a), range(0x30, 0x39)],
  upper: [range(0x41, 0x5a)],
  lower: [range(0x61, 0x7a)],
  space: [range(0x20), range(0x09), range(0x0a), range(0x0b), range(0x0c), range(0x0d)],
  blank: [range(0x20), range(0x09)],
  punct: [range(0x21, 0x2f), range(0x3a, 0x40), range(0x5b, 0x60), range(0x7b, 0x7e)],
  xdigit: [range(0x30, 0x39), range(0x41, 0x46), range(0x61, 0x66)],
  cntrl: [range(0x00, 0x1f), range(0x7f)],
  graph: [range(0x21, 0x7e)],
  print: [range(0x20, 0x7e)],
  ascii: [range(0x00, 0x7f)],
};
const JAVA_ASCII_NAMES: Record<string, string> = {
  Lower: "lower",
  Upper: "upper",
  Alpha: "alpha",
  Digit: "digit",
  Alnum: "alnum",
  Punct: "punct",
  Graph: "graph",
  Print: "print",
  Blank: "blank",
  Cntrl: "cntrl",
  XDigit: "xdigit",
  Space: "space",
};

/** PCRE `\h` and `\v`-in-PCRE (JavaScript's `\v` is only U+000B, so only `\V` is taken from PCRE). */
const HORIZONTAL_SPACE: Range[] = [
  range(0x09),
  range(0x20),
  range(0xa0),
  range(0x1680),
  range(0x180e),
  range(0x2000, 0x200a),
  range(0x202f),
  range(0x205f),
  range(0x3000),
];
const VERTICAL_SPACE: Range[] = [range(0x0a, 0x0d), range(0x85), range(0x2028, 0x2029)];

const escapes = (...list: string[]): CharSet => ({ ranges: [], escapes: list, negated: false });

/** Java's `\p{javaXxx}` classes, named after `Character.isXxx`. */
const JAVA_METHOD_CLASSES: Record<string, CharSet> = {
  javaLowerCase: escapes("\\p{Lowercase}"),
  javaUpperCase: escapes("\\p{Uppercase}"),
  javaTitleCase: escapes("\\p{Lt}"),
  javaAlphabetic: escapes("\\p{Alphabetic}"),
  javaIdeographic: escapes("\\p{Ideographic}"),
  javaLetter: escapes("\\p{L}"),
  javaDigit: escapes("\\p{Nd}"),
  javaLetterOrDigit: escapes("\\p{L}", "\\p{Nd}"),
  javaSpaceChar: escapes("\\p{Z}"),
  javaMirrored: escapes("\\p{Bidi_Mirrored}"),
  javaDefined: escapes("\\P{Cn}"),
  javaISOControl: { ranges: [range(0x00, 0x1f), range(0x7f, 0x9f)], escapes: [], negated: false },
  // Character.isWhitespace: space separators except the no-break ones, plus \t-\r and \x1C-\x1F.
  javaWhitespace: {
    ranges: [range(0x09, 0x0d), range(0x1c, 0x20), range(0x1680), range(0x2000, 0x2006)].concat([
      range(0x2008, 0x200a),
      range(0x2028, 0x2029),
      range(0x205f),
      range(0x3000),
    ]),
    escapes: [],
    negated: false,
  },
};

/** PCRE's extra properties. */
const PCRE_CLASSES: Record<string, CharSet> = {
  Xan: escapes("\\p{L}", "\\p{N}"),
  Xwd: { ranges: [range(0x5f)], escapes: ["\\p{L}", "\\p{N}"], negated: false },
  Xsp: { ranges: [range(0x09, 0x0d)], escapes: ["\\p{Z}"], negated: false },
  Xps: { ranges: [range(0x09, 0x0d)], escapes: ["\\p{Z}"], negated: false },
};

/** Java's `\p{IsXxx}` binary properties whose JavaScript name differs; keys are lower case, no separators. */
const JAVA_BINARY_PROPERTIES: Record<string, string> = {
  alphabetic: "Alphabetic",
  ideographic: "Ideographic",
  letter: "L",
  lowercase: "Lowercase",
  uppercase: "Uppercase",
  titlecase: "Lt",
  punctuation: "P",
  control: "Cc",
  whitespace: "White_Space",
  digit: "Nd",
  hexdigit: "Hex_Digit",
  joincontrol: "Join_Control",
  noncharactercodepoint: "Noncharacter_Code_Point",
  assigned: "Assigned",
  emoji: "Emoji",
  emojipresentation: "Emoji_Presentation",
  emojimodifier: "Emoji_Modifier",
  emojimodifierbase: "Emoji_Modifier_Base",
  emojicomponent: "Emoji_Component",
  extendedpictographic: "Extended_Pictographic",
};

const PROPERTY_KEYS: Record<string, string> = {
  gc: "General_Category",
  generalcategory: "General_Category",
  sc: "Script",
  script: "Script",
  scx: "Script_Extensions",
  scriptextensions: "Script_Extensions",
};

/** Characters JavaScript lets (and needs) a backslash to escape outside a class under `u`. */
const SYNTAX = "^$\\.*+?()[]{}|/";
const SPACE = " \t\n\r\f\v";

const looseKey = (name: string) => name.toLowerCase().replace(/[\s_-]/g, "");
const titled = (name: string) =>
  name
    .split(/[\s_-]+/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase())
    .join("_");

const knownProperties = new Map<string, boolean>();
/** Whether JavaScript accepts `\p{name}`, asked of the engine itself so no Unicode tables are needed. */
function isJsProperty(name: string): boolean {
  if (!/^[A-Za-z0-9_=]+$/.test(name)) return false;
  let known = knownProperties.get(name);
  if (known === undefined) {
    known = compileError(`\\p{${name}}`) === undefined;
    knownProperties.set(name, known);
  }
  return known;
}

const hex = (cp: number) => cp.toString(16).toUpperCase();
/** How a character given by number in the source is written. */
const codePointEscape = (cp: number) => `\\u{${hex(cp)}}`;
const GRAPHIC = /[\p{L}\p{M}\p{N}\p{P}\p{S}]/u;
const CONTROL_NAMES: Record<number, string> = { 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r" };
const CONTROL_LETTERS: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13 };

/** A character as a literal, escaped only as much as its context needs. */
function literal(cp: number, inClass: boolean): string {
  const char = String.fromCodePoint(cp);
  if (cp >= 0x20 && cp < 0x7f) {
    const special = inClass ? "\\]-[^" : SYNTAX;
    return special.includes(char) ? `\\${char}` : char;
  }
  const named = CONTROL_NAMES[cp];
  if (named !== undefined) return named;
  if (cp <= 0xa0) return `\\x${hex(cp).padStart(2, "0")}`;
  return GRAPHIC.test(char) ? char : codePointEscape(cp);
}

function rangeText([lo, hi]: Range): string {
  if (lo === hi) return literal(lo, true);
  if (hi === lo + 1) return literal(lo, true) + literal(hi, true);
  return `${literal(lo, true)}-${literal(hi, true)}`;
}

/** Sorted, merged copy of `ranges`. */
function merge(ranges: Range[]): Range[] {
  const sorted = ranges.map(([lo, hi]): Range => [lo, hi]).sort((a, b) => a[0] - b[0]);
  const out: Range[] = [];
  for (const next of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && next[0] <= last[1] + 1) last[1] = Math.max(last[1], next[1]);
    else out.push(next);
  }
  return out;
}

function complement(ranges: Range[]): Range[] {
  const out: Range[] = [];
  let from = 0;
  for (const [lo, hi] of merge(ranges)) {
    if (lo > from) out.push([from, lo - 1]);
    from = hi + 1;
  }
  if (from <= MAX_CODE_POINT) out.push([from, MAX_CODE_POINT]);
  return out;
}

/** The other-case forms of a character that are single characters themselves. */
function caseVariants(cp: number): number[] {
  const char = String.fromCodePoint(cp);
  const out: number[] = [];
  for (const mapped of [char.toLowerCase(), char.toUpperCase()]) {
    const other = mapped.codePointAt(0);
    if (other === undefined || other === cp || String.fromCodePoint(other) !== mapped) continue;
    if (!out.includes(other)) out.push(other);
  }
  return out;
}

/** Toggles `\d` <-> `\D`, `\p{..}` <-> `\P{..}` and the like. */
function flipEscape(classEscape: string): string {
  const letter = classEscape.charAt(1);
  const flipped = letter === letter.toLowerCase() ? letter.toUpperCase() : letter.toLowerCase();
  return `\\${flipped}${classEscape.slice(2)}`;
}

/** One left-to-right pass over the source pattern, tracking groups, flags and the atom last written. */
class Translator {
  private pos = 0;
  private flags: Flags = { i: false, m: false, s: false, x: false };
  private readonly parts: Part[] = [];
  private readonly stack: Frame[] = [];
  /** The atom a following quantifier would repeat; `compound` when it is more than one JavaScript atom. */
  private lastAtom: { start: number; compound: boolean } | null = null;
  /** Capture ids of the source's own groups, in source numbering order. */
  private readonly sourceGroups: number[] = [];
  private nextId = 0;
  private caseBudget = CASE_EXPANSION_BUDGET;
  private readonly notes = new Set<string>();

  constructor(private readonly src: string) {}

  run(): { pattern: string; notes: string[] } {
    while (this.pos < this.src.length) this.step();
    const open = this.stack[this.stack.length - 1];
    if (open !== undefined) fail(`unbalanced "(": the group at offset ${open.offset} is never closed`);
    return { pattern: this.render(), notes: [...this.notes] };
  }

  private note(text: string): void {
    this.notes.add(text);
  }

  private step(): void {
    const src = this.src;
    const c = src[this.pos] ?? "";
    if (this.flags.x && SPACE.includes(c)) {
      this.pos++;
      this.note("extended mode: whitespace and comments removed");
      return;
    }
    if (this.flags.x && c === "#") {
      const end = src.indexOf("\n", this.pos);
      this.pos = end < 0 ? src.length : end + 1;
      this.note("extended mode: whitespace and comments removed");
      return;
    }
    switch (c) {
      case "\\":
        this.escapeOutsideClass();
        return;
      case "[":
        this.atom(this.readClass());
        return;
      case "(":
        this.openGroup();
        return;
      case ")":
        this.closeGroup();
        return;
      case "|":
        this.pos++;
        this.parts.push("|");
        this.lastAtom = null;
        return;
      case "^":
        this.pos++;
        if (this.flags.m) this.note('multiline mode: "^" -> "(?<=^|\\n)"');
        this.assertion(this.flags.m ? "(?<=^|\\n)" : "^");
        return;
      case "$":
        this.pos++;
        if (this.flags.m) this.note('multiline mode: "$" -> "(?=$|\\n)"');
        this.assertion(this.flags.m ? "(?=$|\\n)" : "$");
        return;
      case ".":
        this.pos++;
        if (this.flags.s) this.note('dot-all mode: "." -> "[\\s\\S]"');
        this.atom(this.flags.s ? "[\\s\\S]" : ".");
        return;
      case "*":
      case "+":
      case "?":
        this.quantify(c, 1);
        return;
      case "{": {
        const brace = /\{(\d*)(?:(,)(\d*))?\}/y;
        brace.lastIndex = this.pos;
        const match = brace.exec(src);
        const [whole = "", min = "", comma, max = ""] = match ?? [];
        if (min !== "") {
          this.quantify(whole, whole.length);
          return;
        }
        if (comma !== undefined && max !== "") {
          this.note(`"{,${max}}" -> "{0,${max}}"`);
          this.quantify(`{0,${max}}`, whole.length);
          return;
        }
        this.pos++;
        this.note('lone "{" -> "\\{"');
        this.atom("\\{");
        return;
      }
      case "}":
      case "]":
        this.pos++;
        this.note(`lone "${c}" -> "\\${c}"`);
        this.atom(`\\${c}`);
        return;
      default: {
        const cp = src.codePointAt(this.pos) ?? 0;
        const text = String.fromCodePoint(cp);
        this.pos += text.length;
        this.literalChar(cp, text);
      }
    }
  }

  private atom(part: Part, compound = false): void {
    this.lastAtom = { start: this.parts.length, compound };
    this.parts.push(part);
  }

  private assertion(text: string): void {
    this.parts.push(text);
    this.lastAtom = null;
  }

  /** A literal character, spelled as its case pair when case-insensitive. */
  private literalChar(cp: number, text: string): void {
    const others = this.flags.i ? caseVariants(cp) : [];
    if (others.length === 0) {
      this.atom(text);
      return;
    }
    this.note('case-insensitive mode: letters spelled as case pairs, e.g. "a" -> "[aA]"');
    this.atom(`[${text}${others.map((other) => literal(other, true)).join("")}]`);
  }

  private inLookbehind(): boolean {
    return this.stack.some((frame) => frame.kind === "lookbehind");
  }

  /** Applies quantifier `q` (already normalised; `length` source characters) to the last atom. */
  private quantify(q: string, length: number): void {
    const atom = this.lastAtom;
    if (atom === null) fail(`quantifier "${q}" at offset ${this.pos} has nothing to repeat`);
    this.pos += length;
    if (atom.compound) {
      this.parts.splice(atom.start, 0, "(?:");
      this.parts.push(")");
    }
    const mode = this.src[this.pos];
    if (mode === "+") {
      this.pos++;
      // (?=(X*))\N matches what X* first matches and never gives any of it back: exactly X*+.
      if (this.inLookbehind()) fail("a possessive quantifier inside a lookbehind cannot be emulated");
      const id = this.nextId++;
      this.parts.splice(atom.start, 0, "(?=", { kind: "open", id });
      this.parts.push(q, "))", { kind: "ref", id });
      this.note(`possessive "${q}+" emulated with a lookahead and a backreference`);
    } else if (mode === "?") {
      this.pos++;
      this.parts.push(`${q}?`);
    } else {
      this.parts.push(q);
    }
    this.lastAtom = null;
  }

  private captureId(): number {
    const id = this.nextId++;
    this.sourceGroups.push(id);
    return id;
  }

  private push(kind: Frame["kind"], offset: number, extra: Partial<Frame> = {}): void {
    this.stack.push({ kind, saved: { ...this.flags }, start: this.parts.length, offset, ...extra });
  }

  private openGroup(): void {
    const src = this.src;
    const at = this.pos;
    const sticky = (re: RegExp) => {
      re.lastIndex = at;
      return re.exec(src);
    };
    if (src[at + 1] === "*")
      fail(`PCRE verb "${src.slice(at, src.indexOf(")", at) + 1)}" has no JavaScript equivalent`);
    if (src[at + 1] !== "?") {
      this.push("capture", at);
      this.parts.push({ kind: "open", id: this.captureId() });
      this.pos++;
      return;
    }
    const plain = [
      ["(?:", "group"],
      ["(?=", "lookaround"],
      ["(?!", "lookaround"],
      ["(?<=", "lookbehind"],
      ["(?<!", "lookbehind"],
    ] as const;
    for (const [text, kind] of plain) {
      if (!src.startsWith(text, at)) continue;
      this.push(kind, at);
      this.parts.push(text);
      this.pos += text.length;
      return;
    }
    if (src.startsWith("(?>", at)) {
      if (this.inLookbehind()) fail("an atomic group inside a lookbehind cannot be emulated");
      const id = this.nextId++;
      this.push("atomic", at, { atomicId: id });
      this.parts.push("(?=", { kind: "open", id });
      this.pos += 3;
      this.note('atomic group "(?>...)" emulated with a lookahead and a backreference');
      return;
    }
    if (src.startsWith("(?#", at)) {
      const end = src.indexOf(")", at);
      if (end < 0) fail(`comment "(?#" at offset ${at} is never closed`);
      this.pos = end + 1;
      this.note('comment "(?#...)" removed');
      return;
    }
    if (src.startsWith("(?|", at)) fail('branch reset groups "(?|...)" have no JavaScript equivalent');
    if (src.startsWith("(?(", at)) fail('conditional groups "(?(...)...)" have no JavaScript equivalent');
    const named = sticky(/\(\?(?:(P?)<([^>=!]*)>|'([^']*)')/y);
    if (named !== null) {
      const name = named[2] ?? named[3] ?? "";
      if (named[1] === "P") this.note('Python "(?P<name>...)" -> "(?<name>...)"');
      if (named[3] !== undefined) this.note(`"(?'name'...)" -> "(?<name>...)"`);
      this.push("capture", at);
      this.parts.push({ kind: "open", id: this.captureId(), name });
      this.pos += named[0].length;
      return;
    }
    const pythonRef = sticky(/\(\?P=([^)]*)\)/y);
    if (pythonRef !== null) {
      this.note('Python "(?P=name)" -> "\\k<name>"');
      this.pos += pythonRef[0].length;
      this.backreference({ kind: "named-ref", name: pythonRef[1] ?? "" });
      return;
    }
    if (sticky(/\(\?(?:R|[+-]?\d|&|P>)/y) !== null)
      fail("recursion and subroutine calls have no JavaScript equivalent");
    const flagGroup = sticky(/\(\?([A-Za-z]*)(?:-([A-Za-z]*))?([:)])/y);
    if (flagGroup === null) fail(`unsupported group syntax "${src.slice(at, at + 4)}" at offset ${at}`);
    this.applyFlags(flagGroup[0], flagGroup[1] ?? "", flagGroup[2] ?? "", flagGroup[3] === ":", at);
  }

  /** `(?imsx-imsx)` changes the flags up to the end of the enclosing group; `(?i:...)` only inside itself. */
  private applyFlags(source: string, on: string, off: string, scoped: boolean, at: number): void {
    for (const letter of on + off) {
      if (!"imsx".includes(letter))
        fail(`inline flag "${letter}" in "${source}" has no JavaScript equivalent`);
    }
    if (/x.*x/.test(on)) fail(`"(?xx)" (spaces ignored in classes too) is not supported`);
    const next = { ...this.flags };
    for (const letter of on) next[letter as keyof Flags] = true;
    for (const letter of off) next[letter as keyof Flags] = false;
    this.pos += source.length;
    if (scoped) {
      this.note(`"${source}" -> "(?:", its flags written out`);
      this.push("group", at);
      this.parts.push("(?:");
    } else {
      this.note(`inline flags "${source}" removed, their effect written out`);
      this.lastAtom = null;
    }
    this.flags = next;
  }

  private closeGroup(): void {
    const frame = this.stack.pop();
    if (frame === undefined) fail(`unbalanced ")" at offset ${this.pos}`);
    this.pos++;
    this.flags = frame.saved;
    if (frame.kind === "atomic" && frame.atomicId !== undefined) {
      this.parts.push("))", { kind: "ref", id: frame.atomicId });
      this.lastAtom = { start: frame.start, compound: true };
      return;
    }
    this.parts.push(")");
    // JavaScript does not let an assertion be repeated.
    this.lastAtom =
      frame.kind === "lookaround" || frame.kind === "lookbehind"
        ? null
        : { start: frame.start, compound: false };
  }

  private backreference(ref: { kind: "ref"; n: number } | { kind: "named-ref"; name: string }): void {
    // JavaScript without the i flag compares a backreference case-sensitively; nothing can widen that.
    if (this.flags.i)
      fail("a backreference in case-insensitive mode has no JavaScript equivalent without the i flag");
    if (ref.kind === "ref") this.atom({ kind: "source-ref", n: ref.n });
    else this.atom(`\\k<${ref.name}>`);
  }

  private escapeOutsideClass(): void {
    const read = this.readEscape(false);
    switch (read.kind) {
      case "char":
        this.literalChar(read.cp, read.text);
        return;
      case "set":
        this.atom(this.setOutsideClass(read.set));
        return;
      case "assert":
        this.assertion(read.text);
        return;
      case "ref":
      case "named-ref":
        this.backreference(read);
        return;
      case "quote":
        for (const cp of read.cps) this.literalChar(cp, literal(cp, false));
        return;
      case "none":
        return;
    }
  }

  /** Reads the escape at `pos` (a backslash) and moves past it. */
  private readEscape(inClass: boolean): Escape {
    const src = this.src;
    const at = this.pos;
    const next = src.codePointAt(at + 1);
    if (next === undefined) fail("the pattern ends with a lone backslash");
    const d = String.fromCodePoint(next);
    this.pos = at + 1 + d.length;
    const sticky = (re: RegExp) => {
      re.lastIndex = this.pos;
      const match = re.exec(src);
      if (match !== null) this.pos = re.lastIndex;
      return match;
    };
    const char = (cp: number, text = src.slice(at, this.pos)): CharToken => ({ kind: "char", cp, text });
    const numbered = (cp: number, kind: string): CharToken => {
      const text = codePointEscape(cp);
      this.note(`${kind} "${src.slice(at, this.pos)}" -> "${text}"`);
      return char(cp, text);
    };
    const notInClass = () => {
      if (inClass) fail(`"\\${d}" cannot appear inside a character class`);
    };
    switch (d) {
      case "d":
      case "D":
      case "w":
      case "W":
      case "s":
      case "S":
        return { kind: "set", set: escapes(`\\${d}`) };
      case "n":
      case "r":
      case "t":
      case "f":
      case "v":
        return char(CONTROL_LETTERS[d] ?? 0);
      case "b":
        return inClass ? char(8) : { kind: "assert", text: "\\b" };
      case "B":
        notInClass();
        return { kind: "assert", text: "\\B" };
      case "A":
        notInClass();
        this.note('"\\A" -> "^"');
        return { kind: "assert", text: "^" };
      case "z":
        notInClass();
        this.note('"\\z" -> "$"');
        return { kind: "assert", text: "$" };
      case "Z":
        notInClass();
        this.note('Python "\\Z" -> "$" (end of input)');
        return { kind: "assert", text: "$" };
      case "G":
        notInClass();
        this.note('"\\G" -> "^" (a validator matches from offset 0)');
        return { kind: "assert", text: "^" };
      case "e":
        this.note('"\\e" -> "\\x1B"');
        return char(0x1b, "\\x1B");
      case "a":
        this.note('"\\a" -> "\\x07"');
        return char(0x07, "\\x07");
      case "0": {
        const digits = sticky(/[0-7]{1,2}/y)?.[0] ?? "";
        if (digits === "" && !/[0-9]/.test(src[this.pos] ?? "")) return char(0, "\\0");
        return numbered(Number.parseInt(`0${digits}`, 8), "octal");
      }
      case "1":
      case "2":
      case "3":
      case "4":
      case "5":
      case "6":
      case "7":
      case "8":
      case "9": {
        // Three octal digits are a character in PCRE and Python, and so is any number inside a class.
        this.pos = at + 1;
        const octal = sticky(inClass ? /[0-7]{1,3}/y : /[0-7]{3}/y);
        if (octal !== null) return numbered(Number.parseInt(octal[0], 8), "octal");
        if (inClass) fail(`"\\${d}" is not a valid escape inside a character class`);
        return { kind: "ref", n: Number(sticky(/\d{1,2}/y)?.[0]) };
      }
      case "x": {
        const braced = sticky(/\{([0-9a-fA-F]+)\}/y);
        if (braced !== null) return numbered(this.codePoint(braced[1], 16), "hex");
        if (sticky(/[0-9a-fA-F]{2}/y) !== null) return char(Number.parseInt(src.slice(at + 2, this.pos), 16));
        const short = sticky(/[0-9a-fA-F]/y);
        if (short !== null) return numbered(Number.parseInt(short[0], 16), "hex");
        return fail(`"\\x" at offset ${at} is not followed by hex digits`);
      }
      case "u": {
        const code = sticky(/[0-9a-fA-F]{4}|\{([0-9a-fA-F]+)\}/y);
        if (code === null) fail(`"\\u" at offset ${at} is not followed by hex digits`);
        return char(this.codePoint(code[1] ?? code[0], 16));
      }
      case "U": {
        const code = sticky(/[0-9a-fA-F]{8}/y);
        if (code === null) fail(`"\\U" at offset ${at} is not followed by eight hex digits`);
        return numbered(this.codePoint(code[0], 16), "Python");
      }
      case "o": {
        const code = sticky(/\{([0-7]+)\}/y);
        if (code === null) fail(`"\\o" at offset ${at} is not followed by "{octal digits}"`);
        return numbered(this.codePoint(code[1], 8), "octal");
      }
      case "c": {
        const letter = sticky(/[A-Za-z]/y);
        if (letter === null) fail(`"\\c" at offset ${at} is not followed by a letter`);
        return char((letter[0].codePointAt(0) ?? 0) % 32);
      }
      case "h":
      case "H":
        this.note(`"\\${d}" -> ${d === "h" ? "" : "not "}horizontal whitespace, spelled out`);
        return { kind: "set", set: { ranges: HORIZONTAL_SPACE, escapes: [], negated: d === "H" } };
      case "V":
        this.note('"\\V" -> not vertical whitespace, spelled out');
        return { kind: "set", set: { ranges: VERTICAL_SPACE, escapes: [], negated: true } };
      case "N": {
        if (src[this.pos] === "{") {
          const code = sticky(/\{U\+([0-9a-fA-F]+)\}/y);
          if (code === null) fail('named characters "\\N{name}" have no JavaScript equivalent');
          return numbered(this.codePoint(code[1], 16), "code point");
        }
        notInClass();
        this.note('"\\N" -> "[^\\n]"');
        return { kind: "set", set: { ranges: [range(0x0a)], escapes: [], negated: true } };
      }
      case "p":
      case "P": {
        let body: string;
        if (src[this.pos] === "{") {
          const close = src.indexOf("}", this.pos);
          if (close < 0) fail(`"\\${d}{" at offset ${at} is never closed`);
          body = src.slice(this.pos + 1, close);
          this.pos = close + 1;
        } else {
          const cp = src.codePointAt(this.pos);
          if (cp === undefined) fail(`"\\${d}" at the end of the pattern names no property`);
          body = String.fromCodePoint(cp);
          this.pos += body.length;
        }
        return { kind: "set", set: this.property(body, d === "P", src.slice(at, this.pos)) };
      }
      case "Q": {
        const end = src.indexOf("\\E", this.pos);
        const text = src.slice(this.pos, end < 0 ? src.length : end);
        this.pos = end < 0 ? src.length : end + 2;
        this.note('"\\Q...\\E" -> escaped literal');
        return { kind: "quote", cps: Array.from(text, (c) => c.codePointAt(0) ?? 0) };
      }
      case "E":
        return { kind: "none" };
      case "k": {
        notInClass();
        const name = sticky(/<([^>]+)>|'([^']+)'|\{([^}]+)\}/y);
        if (name === null) fail(`"\\k" at offset ${at} is not followed by a group name`);
        if (name[0].startsWith("<")) return { kind: "named-ref", name: name[1] ?? "" };
        this.note(`"\\k${name[0]}" -> "\\k<...>"`);
        return { kind: "named-ref", name: name[2] ?? name[3] ?? "" };
      }
      case "g": {
        notInClass();
        const number = sticky(/\{(-?\d+)\}|(-?\d+)/y);
        if (number !== null) {
          let n = Number(number[1] ?? number[2]);
          // \g{-1} counts back from the groups opened so far.
          if (n < 0) n = this.sourceGroups.length + 1 + n;
          if (n < 1) fail(`"${src.slice(at, this.pos)}" refers to a group before the first`);
          this.note(`"${src.slice(at, this.pos)}" -> numbered backreference`);
          return { kind: "ref", n };
        }
        const name = sticky(/\{([^}]+)\}/y);
        if (name !== null) {
          this.note(`"\\g{name}" -> "\\k<name>"`);
          return { kind: "named-ref", name: name[1] ?? "" };
        }
        return fail("subroutine calls have no JavaScript equivalent");
      }
      case "K":
        return fail('"\\K" (reset the match start) has no JavaScript equivalent');
      case "R":
      case "X":
      case "C":
        return fail(`"\\${d}" has no JavaScript equivalent`);
      default: {
        if (/[A-Za-z0-9]/.test(d)) fail(`"\\${d}" is not an escape in any common regex dialect`);
        // Escaping punctuation is harmless elsewhere, but under u JavaScript only allows it for syntax characters.
        if (SYNTAX.includes(d) || (inClass && d === "-")) return char(next);
        this.note(`needless escape "\\${d}" -> "${d}"`);
        return char(next, literal(next, inClass));
      }
    }
  }

  private codePoint(digits: string | undefined, radix: number): number {
    const cp = Number.parseInt(digits ?? "", radix);
    if (!(cp <= MAX_CODE_POINT)) fail(`code point "${digits}" is beyond U+10FFFF`);
    return cp;
  }

  /** `\p{body}` / `\P{body}` (`original` as written) in JavaScript terms. */
  private property(body: string, negatedAsWritten: boolean, original: string): CharSet {
    let negated = negatedAsWritten;
    let name = body.trim();
    if (name.startsWith("^")) {
      negated = !negated;
      name = name.slice(1);
    }
    const js = (jsName: string): CharSet => {
      const text = `\\${negated ? "P" : "p"}{${jsName}}`;
      if (text !== original) this.note(`"${original}" -> "${text}"`);
      return escapes(text);
    };
    const special = (set: CharSet, label: string): CharSet => {
      const [only] = set.escapes;
      if (set.ranges.length === 0 && set.escapes.length === 1 && only !== undefined) {
        this.note(`${label} "${original}" -> "${negated ? flipEscape(only) : only}"`);
      } else {
        this.note(`${label} "${original}" spelled out`);
      }
      return { ...set, negated: set.negated !== negated };
    };
    const ascii = ASCII_CLASSES[JAVA_ASCII_NAMES[name] ?? ""];
    if (ascii !== undefined)
      return special({ ranges: ascii, escapes: [], negated: false }, "Java ASCII class");
    const java = JAVA_METHOD_CLASSES[name];
    if (java !== undefined) return special(java, "Java");
    const pcre = PCRE_CLASSES[name];
    if (pcre !== undefined) return special(pcre, "PCRE");
    if (name === "L&") return js("LC");
    if (isJsProperty(name)) return js(name);
    const keyed = /^([A-Za-z_ -]+?)\s*[=:]\s*(.+)$/.exec(name);
    if (keyed !== null) {
      const key = looseKey(keyed[1] ?? "");
      if (key === "blk" || key === "block")
        fail(`Unicode blocks like "${original}" have no JavaScript equivalent`);
      const jsKey = PROPERTY_KEYS[key];
      const value = keyed[2] ?? "";
      for (const candidate of [value, titled(value)]) {
        if (jsKey !== undefined && isJsProperty(`${jsKey}=${candidate}`)) return js(`${jsKey}=${candidate}`);
      }
      fail(`unknown Unicode property "${original}"`);
    }
    if (/^In[A-Z_]/.test(name)) fail(`Unicode blocks like "${original}" have no JavaScript equivalent`);
    let bare = name;
    if (/^Is./.test(name)) {
      bare = name.slice(2);
      const binary = JAVA_BINARY_PROPERTIES[looseKey(bare)];
      if (binary !== undefined) return js(binary);
    }
    // Java's IsLatin / IsLu and PCRE's bare script names, matched loosely as both dialects do.
    for (const candidate of [bare, titled(bare)]) {
      if (isJsProperty(candidate)) return js(candidate);
      if (isJsProperty(`Script=${candidate}`)) return js(`Script=${candidate}`);
    }
    return fail(`unknown Unicode property "${original}"`);
  }

  private setOutsideClass(set: CharSet): string {
    const [only] = set.escapes;
    if (set.ranges.length === 0 && set.escapes.length === 1 && only !== undefined) {
      return set.negated ? flipEscape(only) : only;
    }
    const cover = [...set.ranges];
    const body = set.escapes.join("") + set.ranges.map(rangeText).join("") + this.caseExtras(cover);
    return `[${set.negated ? "^" : ""}${body}]`;
  }

  private setInsideClass(set: CharSet, cover: Range[]): string {
    const [only] = set.escapes;
    if (!set.negated) {
      cover.push(...set.ranges);
      return set.escapes.join("") + set.ranges.map(rangeText).join("");
    }
    if (set.escapes.length === 0) {
      const ranges = complement(set.ranges);
      cover.push(...ranges);
      return ranges.map(rangeText).join("");
    }
    if (set.ranges.length === 0 && set.escapes.length === 1 && only !== undefined) return flipEscape(only);
    // Without the v flag a class cannot hold the complement of a union.
    return fail("a negated class of several properties cannot appear inside a character class");
  }

  /** In case-insensitive mode, the other-case characters `cover` misses, as class text; else "". */
  private caseExtras(cover: Range[]): string {
    if (!this.flags.i) return "";
    const covered = merge(cover);
    const inside = (cp: number) => covered.some(([lo, hi]) => cp >= lo && cp <= hi);
    const extra: Range[] = [];
    for (const [lo, hi] of covered) {
      this.caseBudget -= hi - lo + 1;
      if (this.caseBudget < 0) fail("a case-insensitive character range is too large to spell out");
      for (let cp = lo; cp <= hi; cp++) {
        for (const other of caseVariants(cp)) if (!inside(other)) extra.push(range(other));
      }
    }
    if (extra.length > 0)
      this.note('case-insensitive mode: classes gain the other case, e.g. "a-z" -> "a-zA-Z"');
    return merge(extra).map(rangeText).join("");
  }

  /** Reads a bracket class at `pos` and returns it as JavaScript class text. */
  private readClass(): string {
    const src = this.src;
    const start = this.pos++;
    const negated = src[this.pos] === "^";
    if (negated) this.pos++;
    const first = this.pos;
    const tokens: ClassToken[] = [];
    for (;;) {
      const c = src[this.pos];
      if (c === undefined) fail(`unterminated character class "[" at offset ${start}`);
      if (c === "]") {
        this.pos++;
        if (this.pos - 1 > first) break;
        // A "]" first in a class is a literal in PCRE, Python, Java and POSIX.
        this.note('"]" first in a class -> "\\]"');
        tokens.push({ kind: "char", cp: 0x5d, text: "\\]" });
        continue;
      }
      if (c === "[") {
        const posix = /\[:(\^?)([A-Za-z]+):\]/y;
        posix.lastIndex = this.pos;
        const match = posix.exec(src);
        if (match !== null) {
          tokens.push({ kind: "set", set: this.posixClass(match[2] ?? "", match[1] === "^", match[0]) });
          this.pos = posix.lastIndex;
          continue;
        }
        if (/[.=]/.test(src[this.pos + 1] ?? "")) {
          fail("POSIX collating elements and equivalence classes have no JavaScript equivalent");
        }
      }
      if (c === "&" && src[this.pos + 1] === "&")
        fail('Java class intersection "&&" has no JavaScript equivalent');
      if (c === "-") {
        this.pos++;
        tokens.push({ kind: "dash" });
        continue;
      }
      if (c === "\\") {
        const read = this.readEscape(true);
        if (read.kind === "char") tokens.push(read);
        else if (read.kind === "set") tokens.push(read);
        else if (read.kind === "quote") {
          for (const cp of read.cps) tokens.push({ kind: "char", cp, text: literal(cp, true) });
        } else if (read.kind !== "none")
          fail(`unexpected escape inside a character class at offset ${this.pos}`);
        continue;
      }
      const cp = src.codePointAt(this.pos) ?? 0;
      const text = String.fromCodePoint(cp);
      this.pos += text.length;
      tokens.push({ kind: "char", cp, text });
    }
    return this.classText(tokens, negated);
  }

  private posixClass(name: string, negated: boolean, original: string): CharSet {
    this.note(`POSIX "${original}" spelled out`);
    if (name === "word") return { ranges: [], escapes: ["\\w"], negated };
    const ranges = ASCII_CLASSES[name];
    if (ranges === undefined) fail(`unknown POSIX class "${original}"`);
    return { ranges, escapes: [], negated };
  }

  private classText(tokens: ClassToken[], negated: boolean): string {
    const pieces: string[] = [];
    const cover: Range[] = [];
    const asChar = (token: ClassToken | undefined): ClassToken | undefined =>
      token?.kind === "dash" ? { kind: "char", cp: 0x2d, text: "\\-" } : token;
    for (let k = 0; k < tokens.length; k++) {
      const token = tokens[k];
      if (token === undefined) continue;
      const lo = asChar(token);
      const hi = asChar(tokens[k + 2]);
      if (tokens[k + 1]?.kind === "dash" && lo !== undefined && hi !== undefined) {
        if (lo.kind === "char" && hi.kind === "char") {
          if (lo.cp > hi.cp) fail(`character class range "${lo.text}-${hi.text}" is out of order`);
          pieces.push(`${lo.text}-${hi.text}`);
          cover.push(range(lo.cp, hi.cp));
          k += 2;
          continue;
        }
        // A class escape cannot end a range; PCRE reads the hyphen as a literal, JavaScript under u refuses it.
        this.note('"-" next to a class escape in a class -> "\\-"');
        pieces.push(this.classPiece(lo, cover), "\\-");
        cover.push(range(0x2d));
        k += 1;
        continue;
      }
      if (token.kind === "dash") {
        pieces.push(k === 0 || k === tokens.length - 1 ? "-" : "\\-");
        cover.push(range(0x2d));
        continue;
      }
      pieces.push(this.classPiece(token, cover));
    }
    let body = pieces.join("") + this.caseExtras(cover);
    if (!negated && body.startsWith("^")) body = `\\${body}`;
    return `[${negated ? "^" : ""}${body}]`;
  }

  private classPiece(token: ClassToken, cover: Range[]): string {
    if (token.kind === "set") return this.setInsideClass(token.set, cover);
    if (token.kind === "dash") return "\\-";
    cover.push(range(token.cp));
    return token.text;
  }

  /** Numbers every capture group, source and added, in order and writes the backreferences with them. */
  private render(): string {
    const numbers = new Map<number, number>();
    for (const part of this.parts) {
      if (typeof part !== "string" && part.kind === "open") numbers.set(part.id, numbers.size + 1);
    }
    const texts = this.parts.map((part) => {
      if (typeof part === "string") return part;
      if (part.kind === "open") return part.name === undefined ? "(" : `(?<${part.name}>`;
      const id = part.kind === "ref" ? part.id : this.sourceGroups[part.n - 1];
      const n = id === undefined ? undefined : numbers.get(id);
      if (n === undefined)
        fail(`backreference "\\${part.kind === "source-ref" ? part.n : "?"}" has no group`);
      return `\\${n}`;
    });
    // A digit straight after a backreference would be read as part of its number.
    return texts
      .map((text, k) => {
        const part = this.parts[k];
        const isRef = typeof part !== "string" && part?.kind !== "open";
        return isRef && /^\d/.test(texts[k + 1] ?? "") ? `(?:${text})` : text;
      })
      .join("");
  }
}
