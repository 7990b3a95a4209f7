import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_PATTERN_BUDGET,
  linearPatternProblem,
  linearRegExpEngine,
  translateToLinear,
  withPatternBudget,
} from "../../src/catalog/linear-regex.js";
import { SchemaNormaliser } from "../../src/catalog/normalise.js";
import { createRandom } from "../../src/core/random.js";
import { fromPattern } from "../../src/sim/synthesize.js";
import { AJV_OPTIONS, createAjv, SchemaCompiler } from "../../src/validate/ajv.js";
import { corpusAvailable, githubSpecPath, sampleDirectorySpecs } from "../corpus/corpus.js";
import { CORPUS_SAMPLE_SEED, CORPUS_SAMPLE_SIZE } from "../corpus/sample.js";

/**
 * Schema patterns run on re2js (linear time) instead of V8's backtracking engine, with ECMAScript's
 * meaning: every verdict here is compared with a native `RegExp` with the `u` flag, as Ajv compiled it.
 */

function linear(pattern: string) {
  const result = translateToLinear(pattern);
  if (!result.ok) throw new Error(`${pattern}: ${result.reason}`);
  return result.regex;
}

/** Compares the linear verdict with V8's on each input (inputs chosen so V8 does not backtrack badly). */
function expectSameVerdicts(pattern: string, inputs: string[]): void {
  const native = new RegExp(pattern, "u");
  const regex = linear(pattern);
  for (const input of inputs)
    expect(regex.test(input), `${JSON.stringify(pattern)} on ${JSON.stringify(input)}`).toBe(
      native.test(input),
    );
}

const COMMON = [
  "",
  "a",
  "A",
  "0",
  "abc",
  "Abc1",
  "alpha-beta",
  "-a",
  "a-",
  "a.",
  "user@example.com",
  "https://example.com/x",
  "arn:aws:iam::123456789012:role/x",
  "2025-01-01",
  "192.0.2.1",
  "aws:x",
  " a",
  "a ",
  "a\n",
  "\n",
  "é",
  "😀",
  "a\u2028b",
  "\uD800",
  "ab\r\ncd",
  "x".repeat(70),
];

/** Strings around what a pattern accepts: built from it, then spoilt at each end and in the middle. */
function samplesFor(pattern: string, seed: number): string[] {
  const random = createRandom(seed);
  const samples = new Set(COMMON);
  for (let k = 0; k < 4; k++) {
    const built = fromPattern(pattern, random);
    if (built === undefined) continue;
    for (const variant of [
      built,
      `${built}!`,
      `!${built}`,
      built.slice(1),
      built.slice(0, -1),
      built.toUpperCase(),
      `${built}\n`,
      built.replace(/[a-z]/, "-"),
    ])
      samples.add(variant);
  }
  return [...samples];
}

describe("ECMAScript semantics on RE2", () => {
  it.each([
    ["\\s", ["\u00a0", "\v", "\ufeff", "\u2028", "\u3000", "a", "\u200b"]],
    ["^\\S+$", ["a\u00a0b", "ab", "a\u1680"]],
    ["^\\w+$", ["abc_1", "é", "ſ", "K"]],
    ["^\\d$", ["1", "١", "a"]],
    ["^.$", ["\n", "\r", "\u2028", "\u2029", "a", "😀", "\uD800", "\uDE00"]],
    ["^a$", ["a", "a\n", "\na", "ab"]],
    ["a$", ["ba", "a\n"]],
    ["^[^]$", ["\n", "😀", ""]],
    ["^[]$|b", ["", "b", "a"]],
    ["\\bfoo\\b", ["foo", "a foo.", "foobar", "éfooé", "_foo"]],
    ["\\Bfoo", ["afoo", "foo"]],
    ["^[\\b]$", ["\b", "b"]],
    ["^\\u{1F600}$", ["😀", "\uD83D"]],
    ["^\\uD83D\\uDE00$", ["😀", "\uD83D"]],
    ["^\\uD83D$", ["\uD83D", "😀"]],
    ["^[\\uD800-\\uDFFF]$", ["\uD800", "\uDFFF", "😀"]],
    ["^\\p{L}+$", ["héllo", "日本", "a1", "Σ"]],
    ["^\\p{Lu}$", ["A", "a", "Σ"]],
    ["^\\p{Script=Greek}+$", ["αβ", "ab"]],
    ["^\\p{sc=Grek}$", ["α", "a"]],
    ["^\\p{Script_Extensions=Latin}$", ["a", "α", "\u0363"]],
    ["^\\p{Letter}$", ["a", "1"]],
    ["^\\P{L}$", ["1", "a"]],
    ["^[\\p{N}\\-]+$", ["12-3", "a"]],
    ["^\\p{Emoji_Presentation}$", ["😀", "a"]],
    ["^\\p{ASCII}*$", ["abc", "é"]],
    ["^(?<year>\\d{4})-(?<month>\\d{2})$", ["2025-01", "25-01"]],
    ["^a+?b*?$", ["aab", "b"]],
    ["^\\/path\\.x$", ["/path.x", "/pathax"]],
    ["^\\x41\\cJ\\0$", ["A\n\0", "A\n"]],
    ["^[\\-a]$", ["-", "a", "b"]],
    ["^(?:a|)$", ["", "a", "b"]],
    ["^$", ["", "\n"]],
    ["", ["", "a"]],
  ] as Array<[string, string[]]>)("%s", (pattern, inputs) => {
    expectSameVerdicts(pattern, inputs);
  });

  it("runs lookbehinds, and lookaheads at an anchored start or in a pattern read backwards", () => {
    for (const [pattern, inputs] of [
      ["^[0-9a-z.-]*(?<!\\.)$", ["abc", "abc.", ".", ""]],
      ["(?<=\\$)\\d+", ["$12", "12"]],
      ["^(?!aws:).+$", ["aws:x", "awsx", "x"]],
      ["^(?=.*[A-Z])(?=.*\\d)[A-Za-z\\d]{8,}$", ["Passw0rdX", "password1", "PASSWORD", "Pa1"]],
      ["(?=^.{3,63}$)(?!^(\\d+\\.)+\\d+$)^[a-z0-9.]+$", ["my.bucket", "1.2.3.4", "ab", "x.1"]],
      ["(?!aws:)[a-z:]+", ["aws:", "aws:x", "xaws:"]],
      ["^((?!-)[a-z0-9-]{1,63}\\.)+[a-z]{2,6}$", ["a.com", "-a.com", "a-.com", "a.b.c"]],
      ["foo(?=bar)", ["foobar", "foobaz"]],
      ["(?!.*[.]git$)[\\w\\-.]*", ["x.git", "x"]],
      ["^(?!\\s)[^\\n]*$", [" a", "a ", "a"]],
    ] as Array<[string, string[]]>)
      expectSameVerdicts(pattern, inputs);
  });

  it("checks repetitions beyond RE2's 1000 exactly: shortened at an open end, as a length, or split", () => {
    const cases: Array<[string, string[]]> = [
      ["^.{0,262144}$", ["", "a".repeat(262_144), "a".repeat(262_145), `${"a".repeat(10)}\n`]],
      ["^[a-zA-Z0-9]{0,4096}$", ["a".repeat(4096), "a".repeat(4097), "a-b"]],
      ["^arn:.{16,2044}$", [`arn:${"x".repeat(16)}`, `arn:${"x".repeat(15)}`, `arn:${"x".repeat(2045)}`]],
      ["^😀{2,1500}$", ["😀😀", "😀".repeat(1500), "😀".repeat(1501), "😀"]],
      ["\\S{1,8192}", ["   ", " a "]],
      ["^.{1,2097152}", ["", "a", "\n"]],
      ["x{1001,1003}y", [`${"x".repeat(1001)}y`, `${"x".repeat(1000)}y`, `z${"x".repeat(1003)}y`]],
      ["^(?:ab){1000,1002}$", ["ab".repeat(1000), "ab".repeat(1003), "ab".repeat(999)]],
      [
        "(^.{1,1020}.jpg$)|(^.{1,1019}.jpeg$)",
        ["a.jpg", ".jpg", `${"a".repeat(1020)}.jpg`, `${"a".repeat(1021)}.jpg`],
      ],
      ["^[^\\u0000\\u2028\\r\\n]{3,4357}$", ["abc", "ab", "a\rbc", "a".repeat(4358)]],
    ];
    for (const [pattern, inputs] of cases) expectSameVerdicts(pattern, inputs);
  });

  it("gives native verdicts for random long repetitions at their boundaries", () => {
    let seed = 99;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const pick = <T>(list: T[]): T => list[Math.floor(next() * list.length)] as T;
    let compared = 0;
    for (let k = 0; k < 60; k++) {
      const n = pick([0, 1, 999, 1000, 1001, 1500]);
      const m = n + pick([0, 1, 1000, 1200, 3000]);
      const atom = pick(["a", ".", "[ab]", "(?:ab)", "😀", "\\w", "(?:a|bc)"]);
      const pattern = `${next() < 0.5 ? "^" : ""}${pick(["", "x", "x?", "(?:y|zz)"])}${atom}{${n},${m}}${pick(["", "x", "b*", "(?=a)"])}${next() < 0.5 ? "$" : ""}`;
      if (linearPatternProblem(pattern) !== undefined) continue;
      const inputs = Array.from({ length: 6 }, () => {
        const length = Math.max(0, pick([n, m, n - 1, m + 1, 3]) + pick([0, 1]));
        const unit = pick(["a", "ab", "😀", "x"]);
        return pick(["", "x", "zz"]) + unit.repeat(length) + pick(["", "x", "a", "\n"]);
      });
      // Semantics only: the budget (tested below) may refuse the longest of these.
      withPatternBudget(() => expectSameVerdicts(pattern, inputs), Number.POSITIVE_INFINITY);
      compared++;
    }
    expect(compared).toBeGreaterThan(45);
  });

  it("refuses, with a reason, what needs backtracking or cannot fit a linear program", () => {
    expect(linearPatternProblem("^(a)\\1$")).toMatch(/backreferences/);
    expect(linearPatternProblem("^(?<x>a)\\k<x>$")).toMatch(/backreferences/);
    expect(linearPatternProblem("^((?!-)[a-z-]{1,63}(?<!-)\\.)+[a-z]+$")).toMatch(
      /lookaheads mixed with lookbehinds/,
    );
    expect(linearPatternProblem("^(?:ab){0,6000}c")).toMatch(/too large/);
    expect(linearPatternProblem("jdbc:redshift://((?!-)[A-Za-z0-9-]{1,63}(?<!-)\\.)+redshift\\.com")).toMatch(
      /lookaheads mixed with lookbehinds/,
    );
    expect(linearPatternProblem("^(?=(a+))\\1b")).toMatch(/backreferences/);
    expect(linearPatternProblem("(")).toMatch(/not a valid regular expression/);
    expect(linearPatternProblem("a".repeat(10_001))).toMatch(/longer than 10,000/);
    expect(linearPatternProblem("^(a+)+$")).toBeUndefined();
  });

  it("gives native verdicts on random patterns and strings (surrogates, anchors, lookarounds, classes)", () => {
    let seed = 20_231;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const pick = <T>(list: T[]): T => list[Math.floor(next() * list.length)] as T;
    const atoms = ["a", "b", "-", ".", "\\d", "\\w", "\\s", "\\S", "[ab]", "[^a]", "[^]", "\\n", "é", "😀"];
    atoms.push("\\uD800", "[\\uD800-\\uDFFF]", "\\p{L}", "\\P{L}", "\\x41", "[\\b]");
    const build = (depth: number): string => {
      const r = next();
      if (depth <= 0 || r < 0.35) return pick(atoms);
      if (r < 0.5) return build(depth - 1) + build(depth - 1);
      if (r < 0.6) return `(?:${build(depth - 1)}|${build(depth - 1)})`;
      if (r < 0.7) return `(${build(depth - 1)})${pick(["*", "+", "?", "{2}", "{1,3}", "*?"])}`;
      if (r < 0.8) return pick(["^", "$", "\\b", "\\B"]) + build(depth - 1);
      if (r < 0.9) return `(?${pick(["=", "!"])}${build(depth - 1)})${build(depth - 1)}`;
      return `${build(depth - 1)}(?${pick(["<=", "<!"])}${build(depth - 1)})`;
    };
    const chars = ["a", "b", "-", "\n", "\r", "é", "😀", "\uD800", "\uDE00", " ", "1", "A", "_", "\u2028"];
    let compared = 0;
    for (let k = 0; k < 1500; k++) {
      const pattern = (next() < 0.3 ? "^" : "") + build(4) + (next() < 0.3 ? "$" : "");
      if (linearPatternProblem(pattern) !== undefined) continue;
      const inputs = Array.from({ length: 8 }, () =>
        Array.from({ length: Math.floor(next() * 7) }, () => pick(chars)).join(""),
      );
      expectSameVerdicts(pattern, inputs);
      compared++;
    }
    expect(compared).toBeGreaterThan(1200);
  });
});

describe("patterns from real API specs", () => {
  // A cross-section of the corpus: Unicode properties, lookarounds, long repetitions, escapes.
  const REALISTIC = JSON.parse(
    readFileSync(new URL("./linear-regex-patterns.json", import.meta.url), "utf8"),
  ) as string[];

  it("keep the verdicts of a native RegExp", () => {
    for (const [k, pattern] of REALISTIC.entries()) {
      expect(linearPatternProblem(pattern), pattern).toBeUndefined();
      expectSameVerdicts(pattern, samplesFor(pattern, k));
    }
  });

  it.skipIf(!corpusAvailable())("keep the verdicts of a native RegExp across the corpus sample", () => {
    const patterns = new Set<string>();
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (node !== null && typeof node === "object") {
        for (const [key, value] of Object.entries(node)) {
          if (key === "pattern" && typeof value === "string") patterns.add(value);
          if (key === "patternProperties" && value !== null && typeof value === "object")
            for (const name of Object.keys(value)) patterns.add(name);
          collect(value);
        }
      }
    };
    for (const file of [...sampleDirectorySpecs(CORPUS_SAMPLE_SIZE, CORPUS_SAMPLE_SEED), githubSpecPath()])
      collect(JSON.parse(readFileSync(file, "utf8")));
    let checked = 0;
    const refused: string[] = [];
    for (const pattern of patterns) {
      try {
        new RegExp(pattern, "u");
      } catch {
        continue; // the dialect translator's business
      }
      const problem = linearPatternProblem(pattern);
      if (problem !== undefined) {
        refused.push(`${pattern}: ${problem}`);
        continue;
      }
      expectSameVerdicts(pattern, samplesFor(pattern, checked));
      checked++;
    }
    expect(checked).toBeGreaterThan(100);
    // Only what truly needs backtracking is refused: a few percent at most.
    expect(refused.length).toBeLessThan(checked / 50 + 1);
  });
});

describe("linear time", () => {
  it("answers classic catastrophic patterns at once", () => {
    const attacks: Array<[string, string]> = [
      ["^(a+)+$", `${"a".repeat(30)}!`],
      ["^(a|a)*$", `${"a".repeat(40)}!`],
      ["^(a|aa)+$", `${"a".repeat(60)}!`],
      ["(\\w+\\s?)+$", `${"word ".repeat(20)}!`],
      ["^(([a-z])+.)+[A-Z]([a-z])+$", "a".repeat(40)],
      [
        "^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$",
        `${"a".repeat(40)}!`,
      ],
      ["^(?=(a+)+$)b", `${"a".repeat(40)}!`],
      ["(?<=(a+)+)!x", `${"a".repeat(40)}!`],
    ];
    const started = performance.now();
    for (const [pattern, input] of attacks) expect(linear(pattern).test(input), pattern).toBe(false);
    // V8 needs seconds to minutes for each of these; the whole list takes milliseconds here.
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("charges program size × input length to a budget, and fails a test past it instead of running", () => {
    const regex = linear("^[a-z]{0,1000}x$");
    const huge = "a".repeat(1_000_000);
    const started = performance.now();
    expect(regex.test(huge)).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
    expect(regex.test("abcx")).toBe(true);
    withPatternBudget(() => {
      expect(regex.test("abcx")).toBe(true);
      expect(regex.test("abcx")).toBe(false); // the first test spent most of the budget
    }, 12_000); // one test costs about 2,000 instructions × 4 characters
    expect(DEFAULT_PATTERN_BUDGET).toBeGreaterThan(1_000_000);
    // An input longer than anything a `^…$` pattern can match is turned away before any work.
    withPatternBudget(() => {
      expect(regex.test(huge)).toBe(false);
      expect(linear("^(?:a|b)+$").test("ab".repeat(400_000))).toBe(false); // no length bound: over budget
    }, 1);
  });

  it("shares one budget across all the strings of one validation, and gives each validation a new one", () => {
    const validate = new SchemaCompiler().compile({
      type: "array",
      items: { type: "string", pattern: "^(?:[a-z]{0,500}-)*$" },
    });
    const item = `${"a".repeat(400)}-`.repeat(10); // about 4,000 characters against a ~1,000-instruction program
    const many = Array.from({ length: 20 }, () => item);
    expect(validate([item])).toBe(true);
    const started = performance.now();
    expect(validate(many)).toBe(false); // 20 × 4M units exceed the 5M budget: the later ones are refused
    expect(validate.errors?.some((error) => error.keyword === "pattern")).toBe(true);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(validate([item])).toBe(true);
  });
});

describe("Ajv and the catalog", () => {
  it("Ajv compiles every pattern with the linear engine, whatever options a caller passes", () => {
    for (const ajv of [createAjv(), createAjv({ ...AJV_OPTIONS, code: {} })]) {
      const validate = ajv.compile({
        type: "object",
        properties: { code: { type: "string", pattern: "^(a+)+$" } },
        patternProperties: { "^(b+)+$": { type: "integer" } },
        additionalProperties: false,
      });
      const started = performance.now();
      expect(validate({ code: `${"a".repeat(30)}!` })).toBe(false);
      expect(validate({ [`${"b".repeat(30)}!`]: 1 })).toBe(false);
      expect(validate({ code: "aaa", bbb: 1 })).toBe(true);
      expect(validate({ bbb: "x" })).toBe(false);
      expect(performance.now() - started).toBeLessThan(1_000);
    }
    expect(linearRegExpEngine("^(a)\\1$").test("ab")).toBe(true); // not checkable: not checked
  });

  it("the normaliser drops a pattern that needs backtracking with PATTERN_NOT_LINEAR, naming why", () => {
    const warnings: string[] = [];
    const schema = new SchemaNormaliser({
      dialect: "json-schema",
      warn: (code, message, pointer) => warnings.push(`${code} ${pointer}: ${message}`),
    }).normalise({
      type: "object",
      properties: {
        twice: { type: "string", pattern: "^(\\w)\\1$" },
        safe: { type: "string", pattern: "^(?!aws:).+$" },
        possessive: { type: "string", pattern: "^[a-z]++$" },
      },
      patternProperties: { "^(?=(x+))\\1$": { type: "string" }, "^x-": { type: "string" } },
    });
    expect(schema).toEqual({
      type: "object",
      properties: {
        twice: { type: "string" },
        safe: { type: "string", pattern: "^(?!aws:).+$" },
        possessive: { type: "string" },
      },
      patternProperties: { "^x-": { type: "string" } },
    });
    expect(warnings).toEqual([
      'PATTERN_NOT_LINEAR /properties/twice/pattern: pattern "^(\\\\w)\\\\1$" cannot be checked in linear time (backreferences need a backtracking engine); dropped, so it is not checked',
      expect.stringMatching(
        /^PATTERN_NOT_LINEAR \/properties\/possessive\/pattern: pattern "\^\[a-z\]\+\+\$" cannot be checked/,
      ),
      expect.stringMatching(/^PATTERN_NOT_LINEAR \/patternProperties\/\^\(\?=\(x\+\)\)\\1\$: /),
    ]);
  });

  it("a hostile patternProperties key and required name do not stall loading", () => {
    const warnings: string[] = [];
    const started = performance.now();
    const schema = new SchemaNormaliser({
      dialect: "json-schema",
      warn: (code) => warnings.push(code),
    }).normalise({
      type: "object",
      patternProperties: { "^(a+)+$": { type: "string" } },
      additionalProperties: false,
      required: [`${"a".repeat(30)}!`],
    });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(warnings).toContain("REQUIRED_UNDECLARED");
    expect(schema).not.toHaveProperty("required");
  });
});
