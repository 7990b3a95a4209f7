import { describe, expect, it } from "vitest";
import { translatePattern } from "../../src/catalog/regex-dialect.js";

const r = String.raw;

/** The `ok: true` answer, or a test failure that shows the reason. */
function translated(input: string) {
  const result = translatePattern(input);
  if (!result.ok)
    throw new Error(`expected a translation of ${JSON.stringify(input)}, got: ${result.reason}`);
  return result;
}

/** Patterns JavaScript already compiles with `u`; they come back as they are. */
const UNCHANGED: Array<{ input: string; match: string[]; noMatch: string[] }> = [
  // Real patterns from public API specs.
  { input: r`^[\w\-\.]+$`, match: ["a-b.c", "A_1"], noMatch: ["a b", ""] },
  { input: r`^[\p{L}\p{N}_\- ]+$`, match: ["Żółw 7_-"], noMatch: ["a!"] },
  { input: r`^\+?[1-9]\d{1,14}$`, match: ["+14155552671", "4915"], noMatch: ["+0123", "1"] },
  { input: r`^[A-Za-z0-9_\-\.]{1,64}$`, match: ["user.name-1"], noMatch: ["", "a b"] },
  // Valid JavaScript keeps its JavaScript meaning: here Unicode Alphabetic, not Java's ASCII letters.
  { input: r`^\p{Alpha}+$`, match: ["été"], noMatch: ["a1"] },
];

interface Case {
  input: string;
  output: string;
  /** Text one of the notes contains. */
  note: string;
  /** Strings the source dialect matches (a search, not a full match) and strings it does not. */
  match: string[];
  noMatch: string[];
}

const TRANSLATED: Case[] = [
  // Real patterns from public API specs.
  { input: r`^[\w-.]+$`, output: r`^[\w\-.]+$`, note: r`"\-"`, match: ["a-b.c"], noMatch: ["a b"] },
  {
    input: r`^\d{4}-\d{2}-\d{2}\Z`,
    output: r`^\d{4}-\d{2}-\d{2}$`,
    note: r`Python "\Z" -> "$"`,
    match: ["2024-01-31"],
    noMatch: ["2024-01-31\n", "2024-1-31", "2024-01-31x"],
  },
  {
    input: r`(?i)^[a-z0-9]+$`,
    output: r`^[a-z0-9A-Z]+$`,
    note: r`"(?i)"`,
    match: ["AbC9", "abc"],
    noMatch: ["a-b", ""],
  },
  {
    input: r`^[A-Za-z0-9_\-\.\/]+\Z`,
    output: r`^[A-Za-z0-9_\-\.\/]+$`,
    note: r`"\Z"`,
    match: ["a/b"],
    noMatch: ["a b"],
  },

  // Anchors.
  {
    input: r`\Aabc\z`,
    output: r`^abc$`,
    note: r`"\A" -> "^"`,
    match: ["abc"],
    noMatch: ["xabc", "abcx", "abc\n"],
  },
  { input: r`\Gabc`, output: r`^abc`, note: r`"\G" -> "^"`, match: ["abcd"], noMatch: ["xabc"] },

  // Inline flags.
  { input: r`(?i)ab`, output: r`[aA][bB]`, note: "case pairs", match: ["xAb", "AB"], noMatch: ["ac"] },
  { input: r`(?i:ab)c`, output: r`(?:[aA][bB])c`, note: r`"(?i:"`, match: ["ABc"], noMatch: ["ABC"] },
  { input: r`(?i)a(?-i)b`, output: r`[aA]b`, note: r`"(?-i)"`, match: ["Ab"], noMatch: ["AB"] },
  {
    input: r`(?i)^[^a-f]$`,
    output: r`^[^a-fA-F]$`,
    note: r`"a-z" -> "a-zA-Z"`,
    match: ["g"],
    noMatch: ["F", "a"],
  },
  {
    input: r`(?i)\x{41}`,
    output: r`[\u{41}a]`,
    note: r`"\x{41}" -> "\u{41}"`,
    match: ["a", "A"],
    noMatch: ["b"],
  },
  {
    input: r`(?s)^a.b$`,
    output: r`^a[\s\S]b$`,
    note: r`"." -> "[\s\S]"`,
    match: ["a\nb", "axb"],
    noMatch: ["ab", "a\n\nb"],
  },
  {
    input: r`(?m)^b$`,
    output: r`(?<=^|\n)b(?=$|\n)`,
    note: r`"^" -> "(?<=^|\n)"`,
    match: ["a\nb\nc", "b"],
    noMatch: ["ab\nc", "a\nbc"],
  },
  {
    input: r`(?im)^ok$`,
    output: r`(?<=^|\n)[oO][kK](?=$|\n)`,
    note: r`"$" -> "(?=$|\n)"`,
    match: ["x\nOK", "ok\ny"],
    noMatch: ["xok", "OKx"],
  },
  {
    input: "(?x) ^ \\d+  # the year\n - \\d+ $",
    output: r`^\d+-\d+$`,
    note: "comments removed",
    match: ["12-3"],
    noMatch: ["12 - 3", "12-3 # the year"],
  },
  { input: r`(?x)[ a]+\ b`, output: "[ a]+ b", note: r`"\ " -> " "`, match: ["a a b"], noMatch: ["ab"] },
  { input: r`(?x)a(?#note)b`, output: "ab", note: r`"(?#...)"`, match: ["ab"], noMatch: ["a b"] },

  // Python named groups.
  {
    input: r`(?P<year>\d{4})-(?P=year)`,
    output: r`(?<year>\d{4})-\k<year>`,
    note: r`Python "(?P<name>...)" -> "(?<name>...)"`,
    match: ["2020-2020"],
    noMatch: ["2020-2021"],
  },
  {
    input: r`^(?'n'a)\k{n}$`,
    output: r`^(?<n>a)\k<n>$`,
    note: r`"(?'name'...)"`,
    match: ["aa"],
    noMatch: ["ab"],
  },
  {
    input: r`^(a)\g{-1}\g{1}0$`,
    output: r`^(a)\1(?:\1)0$`,
    note: r`"\g{-1}"`,
    match: ["aaa0"],
    noMatch: ["aa0", "aa"],
  },

  // Possessive quantifiers and atomic groups, emulated exactly.
  {
    input: r`^a*+a$`,
    output: r`^(?=(a*))\1a$`,
    note: r`possessive "*+"`,
    match: [],
    noMatch: ["a", "aa", ""],
  },
  {
    input: r`^\d++-\w?+$`,
    output: r`^(?=(\d+))\1-(?=(\w?))\2$`,
    note: r`possessive "?+"`,
    match: ["12-", "12-x"],
    noMatch: ["12-xy", "-x"],
  },
  {
    input: r`^(\d)++(x)\2$`,
    output: r`^(?=((\d)+))\1(x)\3$`,
    note: "backreference",
    match: ["12xx"],
    noMatch: ["12xy"],
  },
  {
    input: r`^(?>a|ab)c$`,
    output: r`^(?=(a|ab))\1c$`,
    note: r`atomic group "(?>...)"`,
    match: ["ac"],
    noMatch: ["abc"],
  },
  {
    input: r`^(x)(?>y)(z)\2$`,
    output: r`^(x)(?=(y))\2(z)\3$`,
    note: "atomic",
    match: ["xyzz"],
    noMatch: ["xyzy"],
  },
  {
    input: r`^(?:ab|a){2}+b$`,
    output: r`^(?=((?:ab|a){2}))\1b$`,
    note: r`possessive "{2}+"`,
    // Possessive: after "a" then "ab" the count is never retried as "a", "a".
    match: ["ababb", "aabb"],
    noMatch: ["aab", "abab"],
  },
  { input: r`^(?>a)*b`, output: r`^(?:(?=(a))\1)*b`, note: "atomic", match: ["aab", "b"], noMatch: ["cb"] },

  // \Q...\E quoting.
  { input: r`^\Qa.b*c\E$`, output: r`^a\.b\*c$`, note: r`"\Q...\E"`, match: ["a.b*c"], noMatch: ["axbbc"] },
  { input: r`^[\Q]-\E]+$`, output: r`^[\]\-]+$`, note: "escaped literal", match: ["]-]"], noMatch: ["a"] },

  // POSIX classes.
  {
    input: r`^[[:alpha:]]+$`,
    output: r`^[a-zA-Z]+$`,
    note: r`"[:alpha:]"`,
    match: ["abcXYZ"],
    noMatch: ["ab1", "é"],
  },
  {
    input: r`^[[:digit:][:upper:]_]+$`,
    output: r`^[0-9A-Z_]+$`,
    note: r`"[:digit:]"`,
    match: ["A_1"],
    noMatch: ["a"],
  },
  {
    input: r`^[[:alnum:]]+$`,
    output: r`^[a-zA-Z0-9]+$`,
    note: r`"[:alnum:]"`,
    match: ["a1Z"],
    noMatch: ["a_1"],
  },
  {
    input: r`^[[:space:]]+$`,
    output: r`^[ \t\n\v\f\r]+$`,
    note: r`"[:space:]"`,
    match: [" \t\r\n"],
    noMatch: ["\u00a0", "a"],
  },
  {
    input: r`^[[:punct:]]+$`,
    output: "^[!-/:-@\\[-`{-~]+$",
    note: "punct",
    match: ["!?[]~_"],
    noMatch: ["a", " "],
  },
  { input: r`^[[:xdigit:]]+$`, output: r`^[0-9A-Fa-f]+$`, note: "xdigit", match: ["c0FFee"], noMatch: ["g"] },
  {
    input: r`^[[:lower:][:word:]-]+$`,
    output: r`^[a-z\w-]+$`,
    note: "word",
    match: ["a_B-1"],
    noMatch: ["a b"],
  },
  {
    input: r`^[[:^digit:]]+$`,
    output: r`^[\x00-/:-\u{10FFFF}]+$`,
    note: r`"[:^digit:]"`,
    match: ["ab", "é😀"],
    noMatch: ["a1"],
  },
  {
    input: r`(?i)^[[:upper:]]+$`,
    output: r`^[A-Za-z]+$`,
    note: "other case",
    match: ["aB"],
    noMatch: ["a1"],
  },

  // PCRE and Java shorthands.
  {
    input: r`^\h+$`,
    output: r`^[\t \xA0\u{1680}\u{180E}\u{2000}-\u{200A}\u{202F}\u{205F}\u{3000}]+$`,
    note: r`"\h"`,
    match: [" \t\u00a0\u3000"],
    noMatch: ["\n", "a"],
  },
  {
    input: r`^\H+$`,
    output: r`^[^\t \xA0\u{1680}\u{180E}\u{2000}-\u{200A}\u{202F}\u{205F}\u{3000}]+$`,
    note: r`"\H"`,
    match: ["ab\n"],
    noMatch: ["a b"],
  },
  {
    input: r`^\V+$`,
    output: r`^[^\n-\r\x85\u{2028}\u{2029}]+$`,
    note: r`"\V"`,
    match: ["a b"],
    noMatch: ["a\nb", "a\rb"],
  },
  { input: r`^\N+$`, output: r`^[^\n]+$`, note: r`"\N"`, match: ["a\rb"], noMatch: ["a\nb"] },
  { input: r`^\e\[\d+m$`, output: r`^\x1B\[\d+m$`, note: r`"\e"`, match: ["\x1b[31m"], noMatch: ["[31m"] },

  // Java and PCRE Unicode properties.
  {
    input: r`^\p{Alpha}+\Z`,
    output: r`^[a-zA-Z]+$`,
    note: r`Java ASCII class "\p{Alpha}"`,
    match: ["abc"],
    noMatch: ["été"],
  },
  {
    input: r`^\p{Upper}\p{Lower}+\p{Space}?\Z`,
    output: r`^[A-Z][a-z]+[ \t\n\v\f\r]?$`,
    note: r`"\p{Space}"`,
    match: ["Hello", "Hello\t"],
    noMatch: ["hello", "Été"],
  },
  {
    input: r`^[\p{Digit}\p{Punct}]+$`,
    output: "^[0-9!-/:-@\\[-`{-~]+$",
    note: r`"\p{Punct}"`,
    match: ["1.5%"],
    noMatch: ["a"],
  },
  {
    input: r`^\p{Alnum}+$`,
    output: r`^[a-zA-Z0-9]+$`,
    note: r`"\p{Alnum}"`,
    match: ["a1"],
    noMatch: ["a_1"],
  },
  {
    input: r`^\p{XDigit}+$`,
    output: r`^[0-9A-Fa-f]+$`,
    note: r`"\p{XDigit}"`,
    match: ["DEAD01"],
    noMatch: ["x"],
  },
  {
    input: r`^\p{javaLowerCase}+$`,
    output: r`^\p{Lowercase}+$`,
    note: r`"\p{javaLowerCase}" -> "\p{Lowercase}"`,
    match: ["straße"],
    noMatch: ["Abc"],
  },
  {
    input: r`^\p{IsLatin}+$`,
    output: r`^\p{Script=Latin}+$`,
    note: r`"\p{IsLatin}" -> "\p{Script=Latin}"`,
    match: ["Żółw"],
    noMatch: ["Ωμέγα", "a1"],
  },
  {
    input: r`^\p{IsAlphabetic}+$`,
    output: r`^\p{Alphabetic}+$`,
    note: r`"\p{Alphabetic}"`,
    match: ["Ωμέγα"],
    noMatch: ["a1"],
  },
  {
    input: r`^\p{IsL}+$`,
    output: r`^\p{L}+$`,
    note: r`"\p{IsL}" -> "\p{L}"`,
    match: ["日本"],
    noMatch: ["1"],
  },
  { input: r`^\pL\PL$`, output: r`^\p{L}\P{L}$`, note: r`"\pL" -> "\p{L}"`, match: ["a1"], noMatch: ["ab"] },
  {
    input: r`^\p{L&}+$`,
    output: r`^\p{LC}+$`,
    note: r`"\p{L&}" -> "\p{LC}"`,
    match: ["aB"],
    noMatch: ["a1"],
  },
  {
    input: r`^\p{Greek}+$`,
    output: r`^\p{Script=Greek}+$`,
    note: r`"\p{Script=Greek}"`,
    match: ["Ωμέγα"],
    noMatch: ["abc"],
  },
  { input: r`^[\p{^Lu}]+$`, output: r`^[\P{Lu}]+$`, note: r`"\P{Lu}"`, match: ["abc"], noMatch: ["aBc"] },

  // Escapes that are legal without `u` but errors with it.
  {
    input: r`^\_\'\"\:\@\ \#\%\<\>$`,
    output: `^_'":@ #%<>$`,
    note: r`needless escape "\_" -> "_"`,
    match: [`_'":@ #%<>`],
    noMatch: ["_"],
  },
  { input: r`^\-?\d+$`, output: r`^-?\d+$`, note: r`"\-"`, match: ["-12", "7"], noMatch: ["+1"] },
  { input: r`^[\_a-z]+$`, output: r`^[_a-z]+$`, note: r`"\_"`, match: ["a_b"], noMatch: ["A"] },
  { input: r`^{abc}$`, output: r`^\{abc\}$`, note: r`lone "{"`, match: ["{abc}"], noMatch: ["abc"] },
  { input: r`^a]$`, output: r`^a\]$`, note: r`lone "]"`, match: ["a]"], noMatch: ["a"] },
  { input: r`^[]a]+$`, output: r`^[\]a]+$`, note: r`"]" first`, match: ["]a"], noMatch: ["b"] },
  {
    input: r`^a{,3}$`,
    output: r`^a{0,3}$`,
    note: r`"{,3}" -> "{0,3}"`,
    match: ["", "aaa"],
    noMatch: ["aaaa"],
  },

  // Octal and hex forms.
  {
    input: r`^\101\012$`,
    output: r`^\u{41}\u{A}$`,
    note: r`octal "\101" -> "\u{41}"`,
    match: ["A\n"],
    noMatch: ["A"],
  },
  { input: r`^\0\_$`, output: r`^\0_$`, note: r`"\_"`, match: ["\0_"], noMatch: ["0_"] },
  {
    input: r`^\x{41}\x{1F600}$`,
    output: r`^\u{41}\u{1F600}$`,
    note: r`"\x{1F600}" -> "\u{1F600}"`,
    match: ["A😀"],
    noMatch: ["A"],
  },
  { input: r`^[\101-\132]+$`, output: r`^[\u{41}-\u{5A}]+$`, note: "octal", match: ["AZ"], noMatch: ["a"] },
  { input: r`^\o{101}$`, output: r`^\u{41}$`, note: r`"\o{101}"`, match: ["A"], noMatch: ["a"] },
];

/** Patterns with no JavaScript equivalent, and the reason given. */
const REFUSED: Array<{ input: string; reason: RegExp }> = [
  { input: r`^\p{InGreek}+$`, reason: /Unicode blocks like "\\p\{InGreek\}"/ },
  { input: r`\p{block=Greek}`, reason: /Unicode blocks/ },
  { input: "(abc", reason: /unbalanced "\(": the group at offset 0 is never closed/ },
  { input: "abc)", reason: /unbalanced "\)" at offset 3/ },
  { input: "[abc", reason: /unterminated character class/ },
  {
    input: "(?<1a>x)\\_",
    reason: /^not a valid JavaScript regex after translation: Invalid capture group name$/,
  },
  { input: r`(?i)(a)\1`, reason: /backreference in case-insensitive mode/ },
  { input: r`(?<=a++)b`, reason: /possessive quantifier inside a lookbehind/ },
  { input: r`(?<!(?>a))b`, reason: /atomic group inside a lookbehind/ },
  { input: r`a(?R)?b`, reason: /recursion/ },
  { input: r`(a)(?(1)b|c)`, reason: /conditional groups/ },
  { input: r`a\Kb`, reason: /"\\K"/ },
  { input: r`[a-z&&[^aeiou]]`, reason: /class intersection/ },
  { input: r`\p{NoSuchThing}`, reason: /unknown Unicode property "\\p\{NoSuchThing\}"/ },
  { input: r`(?U)a+`, reason: /inline flag "U"/ },
  { input: r`[[:foo:]]`, reason: /unknown POSIX class/ },
  { input: r`\y`, reason: /"\\y" is not an escape/ },
  { input: r`[\Z]`, reason: /cannot appear inside a character class/ },
  { input: "abc\\", reason: /lone backslash/ },
  { input: "*a", reason: /nothing to repeat/ },
  { input: r`^[z-a]\_$`, reason: /range "z-a" is out of order/ },
  { input: r`(a)\2\_`, reason: /backreference "\\2" has no group/ },
];

describe("translatePattern", () => {
  describe("leaves a valid JavaScript pattern alone", () => {
    it.each(UNCHANGED)("$input", ({ input, match, noMatch }) => {
      expect(translatePattern(input)).toEqual({ ok: true, pattern: input, changed: false, notes: [] });
      const re = new RegExp(input, "u");
      for (const text of match) expect(re.test(text), JSON.stringify(text)).toBe(true);
      for (const text of noMatch) expect(re.test(text), JSON.stringify(text)).toBe(false);
    });
  });

  describe("translates other dialects into an equivalent pattern", () => {
    it.each(TRANSLATED)("$input", ({ input, output, note, match, noMatch }) => {
      const result = translated(input);
      expect(result.pattern).toBe(output);
      expect(result.changed).toBe(true);
      expect(result.notes.join("\n")).toContain(note);
      const re = new RegExp(result.pattern, "u");
      for (const text of match) expect(re.test(text), JSON.stringify(text)).toBe(true);
      for (const text of noMatch) expect(re.test(text), JSON.stringify(text)).toBe(false);
    });
  });

  describe("refuses what JavaScript cannot express", () => {
    it.each(REFUSED)("$input", ({ input, reason }) => {
      const result = translatePattern(input);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.reason).toMatch(reason);
    });
  });

  it("refuses patterns longer than 10,000 characters, and takes one of exactly 10,000", () => {
    expect(translatePattern("a".repeat(10_001))).toEqual({
      ok: false,
      reason: "longer than 10,000 characters",
    });
    const atLimit = `\\_${"a".repeat(9_998)}`;
    expect(translated(atLimit).pattern).toBe(`_${"a".repeat(9_998)}`);
  });

  it("notes each rewrite once, in the order met", () => {
    expect(translated(r`\A\_\_\Z`).notes).toEqual([
      r`"\A" -> "^"`,
      r`needless escape "\_" -> "_"`,
      r`Python "\Z" -> "$" (end of input)`,
    ]);
  });

  it("never throws, whatever it is given", () => {
    const inputs = [
      "\\",
      "(",
      ")",
      "[",
      "(?",
      "(?P",
      "(?P<",
      "\\p",
      "\\p{",
      "\\x{",
      "\\Q",
      "[[:",
      "(?i)[\\u{0}-\\u{10FFFF}]\\_",
    ];
    for (const input of inputs) expect(() => translatePattern(input)).not.toThrow();
    expect(translatePattern(42 as unknown as string)).toEqual({ ok: false, reason: "not a string" });
  });
});
