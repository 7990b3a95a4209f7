import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { contentId, createIdGenerator } from "./ids.js";
import { createRandom } from "./random.js";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("createIdGenerator: next", () => {
  it("produces a fixed sequence of ids for a seed", () => {
    const ids = createIdGenerator(createRandom("ids"));
    expect([ids.next(), ids.next("ses"), ids.uuid(), ids.next("")]).toEqual([
      "t87tgky6b927",
      "ses_4dpvahsv6sjs",
      "5f5487ef-30a3-41a0-961c-0a3c2edbe0ec",
      "gd8m92z5ttz4",
    ]);
  });

  it("produces the same ids for the same seed", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.array(fc.option(fc.stringMatching(/^[a-z]{1,6}$/), { nil: undefined })),
        (seed, prefixes) => {
          const a = createIdGenerator(createRandom(seed));
          const b = createIdGenerator(createRandom(seed));
          for (const prefix of prefixes) expect(a.next(prefix)).toBe(b.next(prefix));
          expect(a.uuid()).toBe(b.uuid());
        },
      ),
    );
  });

  it("produces different ids for different seeds", () => {
    expect(createIdGenerator(createRandom("a")).next()).not.toBe(createIdGenerator(createRandom("b")).next());
  });

  it("uses one random draw per character, so shorter ids split the same stream", () => {
    const short = createIdGenerator(createRandom("ids"), 8);
    expect([short.next("tool"), short.next()]).toEqual(["tool_t87tgky6", "b9274dpv"]);
  });

  it("maps each draw of int(0, 31) to the lower-case Crockford alphabet", () => {
    const random = createRandom("alphabet");
    const expected = Array.from({ length: 12 }, () => ALPHABET[random.int(0, 31)]).join("");
    expect(createIdGenerator(createRandom("alphabet")).next()).toBe(expected);
  });

  it("makes ids of the requested length from the Crockford alphabet only", () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 40 }), (seed, length) => {
        const id = createIdGenerator(createRandom(seed), length).next();
        expect(id).toMatch(new RegExp(`^[0-9a-hjkmnp-tv-z]{${length}}$`));
        expect(id).not.toMatch(/[ilou]/);
      }),
    );
  });

  it("defaults to 12 characters and joins the prefix with an underscore", () => {
    const ids = createIdGenerator(createRandom("prefix"));
    expect(ids.next()).toMatch(/^[0-9a-hjkmnp-tv-z]{12}$/);
    expect(ids.next("ses")).toMatch(/^ses_[0-9a-hjkmnp-tv-z]{12}$/);
    expect(ids.next("a_b")).toMatch(/^a_b_[0-9a-hjkmnp-tv-z]{12}$/);
  });

  it("adds no prefix or underscore for an empty prefix", () => {
    const a = createIdGenerator(createRandom("empty"));
    const b = createIdGenerator(createRandom("empty"));
    expect(a.next("")).toBe(b.next());
    expect(a.next("")).not.toContain("_");
  });

  it("makes an empty id for length 0", () => {
    const ids = createIdGenerator(createRandom("zero"), 0);
    expect(ids.next()).toBe("");
    expect(ids.next("p")).toBe("p_");
  });

  it("does not repeat ids in a long run", () => {
    const ids = createIdGenerator(createRandom("unique"));
    const seen = new Set(Array.from({ length: 5000 }, () => ids.next()));
    expect(seen.size).toBe(5000);
  });

  it("uses every letter of the alphabet", () => {
    const ids = createIdGenerator(createRandom("coverage"), 100);
    const used = new Set(ids.next() + ids.next() + ids.next());
    expect([...used].sort().join("")).toBe(ALPHABET);
  });
});

describe("createIdGenerator: uuid", () => {
  it("has the version-4 shape", () => {
    fc.assert(
      fc.property(fc.string(), (seed) => {
        const ids = createIdGenerator(createRandom(seed));
        for (let i = 0; i < 5; i++) {
          const uuid = ids.uuid();
          expect(uuid).toMatch(UUID_V4);
          expect(uuid).toHaveLength(36);
          expect(uuid[14]).toBe("4");
          expect(["8", "9", "a", "b"]).toContain(uuid[19]);
        }
      }),
    );
  });

  it("sets the version nibble to 0100 and the variant bits to 10", () => {
    const ids = createIdGenerator(createRandom("bits"));
    for (let i = 0; i < 50; i++) {
      const bytes = Buffer.from(ids.uuid().replace(/-/g, ""), "hex");
      expect(bytes).toHaveLength(16);
      expect((bytes[6] as number) >> 4).toBe(0b0100);
      expect((bytes[8] as number) >> 6).toBe(0b10);
    }
  });

  it("uses all four variant characters", () => {
    const ids = createIdGenerator(createRandom("variants"));
    const variants = new Set(Array.from({ length: 200 }, () => ids.uuid()[19]));
    expect([...variants].sort()).toEqual(["8", "9", "a", "b"]);
  });

  it("is deterministic for a seed and differs between calls", () => {
    const a = createIdGenerator(createRandom("uuid"));
    const b = createIdGenerator(createRandom("uuid"));
    const first = a.uuid();
    const second = a.uuid();
    expect(first).not.toBe(second);
    expect([b.uuid(), b.uuid()]).toEqual([first, second]);
  });
});

describe("contentId", () => {
  it("is a fixed function of the text", () => {
    expect(contentId("hello")).toBe("cjdtzg3e68va");
    expect(contentId("")).toBe("3g42rwwmtvm8");
    expect(contentId("", "", 32)).toBe("3g42rwwmtvm8sfs47e144vkc4nsvrjrn");
  });

  it("maps the first SHA-256 bytes modulo 32 to the Crockford alphabet", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.integer({ min: 1, max: 32 }), (text, length) => {
        const digest = createHash("sha256").update(text).digest();
        const expected = Array.from(digest.subarray(0, length), (byte) => ALPHABET[byte % 32]).join("");
        expect(contentId(text, "", length)).toBe(expected);
      }),
    );
  });

  it("is stable across calls", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        expect(contentId(text)).toBe(contentId(text));
      }),
    );
  });

  it("joins a prefix with an underscore, and adds none for an empty prefix", () => {
    expect(contentId("hello", "doc")).toBe("doc_cjdtzg3e68va");
    expect(contentId("hello", "")).toBe("cjdtzg3e68va");
    expect(contentId("hello", "call_args")).toBe("call_args_cjdtzg3e68va");
  });

  it("truncates to the requested length, which is a prefix of the longer id", () => {
    expect(contentId("hello", "", 4)).toBe("cjdt");
    expect(() => contentId("hello", "", 0)).toThrow(
      new RangeError("contentId: length must be an integer from 1 to 32, got 0"),
    );
    expect(() => contentId("hello", "", 33)).toThrow(RangeError);
    expect(contentId("hello", "", 32).startsWith(contentId("hello"))).toBe(true);
  });

  it("differs for different texts", () => {
    expect(contentId("hello")).not.toBe(contentId("hello "));
    expect(contentId('{"a":1}')).not.toBe(contentId('{"a":2}'));
  });
});
