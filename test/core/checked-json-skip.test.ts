import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { needsCheck, parseJsonText } from "../../src/core/checked-json.js";

/**
 * parseJsonText skips its walk for depth and numbers when the text is too short to nest past the limit
 * and holds nothing a number check could refuse (`needsCheck`). The same text padded with spaces (same
 * JSON, always walked) must get the same answer: the same value, or the same refusal.
 */
const outcome = (text: string, maxDepth: number) => {
  try {
    return { value: parseJsonText(text, maxDepth) };
  } catch (error) {
    return { error: (error as Error).message };
  }
};

/** Raw number tokens, the ones a check refuses among them. */
const numberToken = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.constantFrom(
    "1e99999",
    "-1e400",
    "9007199254740993",
    "123456789012345678901234567890",
    "1E5",
    "1.5e-3",
    "0.1",
  ),
  fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
);

/** JSON text (built by hand so that number tokens stay as written), nested up to `depth`. */
const jsonText = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    numberToken,
    fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
    fc.constantFrom("true", "null", '"1e5"'),
    fc.array(tie("value"), { maxLength: 3 }).map((items) => `[${items.join(",")}]`),
    fc
      .array(fc.tuple(fc.string({ maxLength: 4 }), tie("value")), { maxLength: 3 })
      .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`),
  ),
})).value;

describe("parseJsonText's shortcut", () => {
  it("answers every text as the full walk does (the same text padded past the shortcut)", () => {
    fc.assert(
      fc.property(jsonText, fc.integer({ min: 1, max: 6 }), (text, maxDepth) => {
        const container = `[${text}]`;
        const padded = `${container}${" ".repeat(2 * maxDepth + 1)}`;
        expect(needsCheck(padded, maxDepth)).toBe(true);
        expect(outcome(container, maxDepth)).toEqual(outcome(padded, maxDepth));
      }),
      { numRuns: 3000 },
    );
  });

  it("still refuses what it must in short texts: a number past a double, an inexact integer, too deep", () => {
    expect(() => parseJsonText('{"a":1e99999}', 256)).toThrow(/largest double/);
    expect(() => parseJsonText('{"a":9007199254740993}', 256)).toThrow(/cannot be held exactly/);
    expect(() => parseJsonText("[[[1]]]", 2)).toThrow(/deeper than the limit of 2/);
    expect(needsCheck('{"type":"step","data":{"tool_name":"increment","arguments":{"by":1}}}', 256)).toBe(
      false,
    );
  });
});
