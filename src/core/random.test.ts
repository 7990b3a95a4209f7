import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRandom, type Random, unseededRandom } from "./random.js";

function take(random: Random, count: number): number[] {
  return Array.from({ length: count }, () => random.next());
}

describe("createRandom", () => {
  it("produces the sfc32 reference sequence for seed 0 (the default)", () => {
    // Checked against an independent sfc32 implementation seeded from SHA-256("0") with 12 warm-up rounds.
    const expected = [
      0.9815135514363647, 0.08173322211951017, 0.6438001098576933, 0.7343631377443671, 0.05788789642974734,
    ];
    expect(take(createRandom(0), 5)).toEqual(expected);
    expect(take(createRandom(), 5)).toEqual(expected);
    expect(take(createRandom("0"), 5)).toEqual(expected);
  });

  it("produces a fixed sequence for a string seed", () => {
    const random = createRandom("seed");
    expect([random.next(), random.next(), random.next(), random.int(1, 6), random.int(-10, 10)]).toEqual([
      0.00489217764697969, 0.6924950380343944, 0.7806081308517605, 1, -9,
    ]);
    expect(random.pick(["a", "b", "c"])).toBe("b");
  });

  it("records its seed as a string", () => {
    expect(createRandom().seed).toBe("0");
    expect(createRandom(42).seed).toBe("42");
    expect(createRandom("run-7").seed).toBe("run-7");
  });

  it("treats a number seed and its decimal string alike", () => {
    expect(take(createRandom(42), 10)).toEqual(take(createRandom("42"), 10));
  });

  it("gives different sequences for similar seeds", () => {
    const a = take(createRandom("seed-1"), 5);
    const b = take(createRandom("seed-2"), 5);
    expect(a).not.toEqual(b);
    for (let i = 0; i < 5; i++) expect(a[i]).not.toBe(b[i]);
  });

  it("gives identical sequences for the same seed", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer()), fc.nat(50), (seed, count) => {
        expect(take(createRandom(seed), count)).toEqual(take(createRandom(seed), count));
      }),
    );
  });

  it("gives identical int sequences for the same seed and ranges", () => {
    fc.assert(
      fc.property(fc.string(), fc.array(fc.tuple(fc.integer(), fc.nat(1000))), (seed, ranges) => {
        const a = createRandom(seed);
        const b = createRandom(seed);
        for (const [min, width] of ranges) expect(a.int(min, min + width)).toBe(b.int(min, min + width));
      }),
    );
  });
});

describe("Random.next", () => {
  it("stays in [0, 1)", () => {
    fc.assert(
      fc.property(fc.string(), (seed) => {
        for (const value of take(createRandom(seed), 100)) {
          expect(value).toBeGreaterThanOrEqual(0);
          expect(value).toBeLessThan(1);
        }
      }),
      { numRuns: 50 },
    );
  });

  it("is roughly uniform", () => {
    const histogram = new Array<number>(10).fill(0);
    const random = createRandom("uniformity");
    for (let i = 0; i < 10_000; i++) {
      const bucket = Math.floor(random.next() * 10);
      histogram[bucket] = (histogram[bucket] ?? 0) + 1;
    }
    expect(histogram.reduce((sum, n) => sum + n, 0)).toBe(10_000);
    for (const count of histogram) {
      expect(count).toBeGreaterThan(850);
      expect(count).toBeLessThan(1150);
    }
  });
});

describe("Random.int", () => {
  it("stays in [min, max] and returns integers", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (seed, min, width) => {
          const random = createRandom(seed);
          const max = min + width;
          for (let i = 0; i < 20; i++) {
            const value = random.int(min, max);
            expect(Number.isInteger(value)).toBe(true);
            expect(value).toBeGreaterThanOrEqual(min);
            expect(value).toBeLessThanOrEqual(max);
          }
        },
      ),
    );
  });

  it("returns min when min equals max", () => {
    const random = createRandom("single");
    expect([random.int(5, 5), random.int(-3, -3), random.int(0, 0)]).toEqual([5, -3, 0]);
  });

  it("reaches both ends of a small range", () => {
    const random = createRandom("ends");
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) seen.add(random.int(1, 3));
    expect([...seen].sort()).toEqual([1, 2, 3]);
  });

  it.each([
    [1, 0, "Random.int: invalid range [1, 0]"],
    [0.5, 2, "Random.int: invalid range [0.5, 2]"],
    [0, 2.5, "Random.int: invalid range [0, 2.5]"],
    [Number.NaN, 2, "Random.int: invalid range [NaN, 2]"],
    [0, Number.POSITIVE_INFINITY, "Random.int: invalid range [0, Infinity]"],
  ])("throws a RangeError for int(%s, %s)", (min, max, message) => {
    expect(() => createRandom().int(min, max)).toThrow(new RangeError(message));
  });

  it("does not consume the sequence when it throws", () => {
    const a = createRandom("throws");
    const b = createRandom("throws");
    expect(() => a.int(3, 1)).toThrow(RangeError);
    expect(a.next()).toBe(b.next());
  });
});

describe("Random.pick", () => {
  it("returns an element of the array", () => {
    fc.assert(
      fc.property(fc.string(), fc.array(fc.anything(), { minLength: 1 }), (seed, items) => {
        const picked = createRandom(seed).pick(items);
        const index = createRandom(seed).int(0, items.length - 1);
        expect(Object.is(picked, items[index])).toBe(true);
      }),
    );
  });

  it("returns the only element of a one-element array", () => {
    expect(createRandom("x").pick(["only"])).toBe("only");
  });

  it("picks the element at int(0, length - 1)", () => {
    const items = ["a", "b", "c", "d", "e", "f", "g"];
    const a = createRandom("pick");
    const b = createRandom("pick");
    for (let i = 0; i < 20; i++) expect(a.pick(items)).toBe(items[b.int(0, items.length - 1)]);
  });

  it("throws a RangeError for an empty array", () => {
    expect(() => createRandom().pick([])).toThrow(new RangeError("Random.pick: empty array"));
  });
});

describe("Random.derive", () => {
  it("names the derived seed after the parent seed and the label", () => {
    expect(createRandom("seed").derive("child").seed).toBe("seed/child");
    expect(createRandom(3).derive("a").derive("b").seed).toBe("3/a/b");
  });

  it("produces a fixed sequence for a seed and label", () => {
    // Checked against an independent sfc32 seeded from SHA-256('derive\0["seed","child"]').
    expect(take(createRandom("seed").derive("child"), 2)).toEqual([0.8260516577865928, 0.1245403231587261]);
  });

  it("is deterministic for the same seed and label", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (seed, label) => {
        expect(take(createRandom(seed).derive(label), 10)).toEqual(
          take(createRandom(seed).derive(label), 10),
        );
      }),
    );
  });

  it("does not depend on how much of the parent has been consumed", () => {
    const fresh = createRandom("parent");
    const used = createRandom("parent");
    take(used, 37);
    used.int(0, 100);
    expect(take(used.derive("x"), 10)).toEqual(take(fresh.derive("x"), 10));
  });

  it("does not advance the parent", () => {
    const parent = createRandom("parent");
    const twin = createRandom("parent");
    const child = parent.derive("child");
    take(child, 10);
    expect(take(parent, 10)).toEqual(take(twin, 10));
  });

  it("gives a sequence independent of the parent and of sibling labels", () => {
    const parent = createRandom("parent");
    const left = take(parent.derive("left"), 10);
    const right = take(parent.derive("right"), 10);
    const own = take(createRandom("parent"), 10);
    expect(left).not.toEqual(right);
    expect(left).not.toEqual(own);
    expect(right).not.toEqual(own);
    for (let i = 0; i < 10; i++) {
      expect(left[i]).not.toBe(right[i]);
      expect(left[i]).not.toBe(own[i]);
    }
  });

  it("gives different sequences for different labels", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (seed, a, b) => {
        fc.pre(a !== b);
        const parent = createRandom(seed);
        expect(take(parent.derive(a), 4)).not.toEqual(take(parent.derive(b), 4));
      }),
    );
  });

  it("never equals a source seeded with the joined seed", () => {
    expect(take(createRandom("a").derive("b"), 5)).not.toEqual(take(createRandom("a/b"), 5));
    expect(take(createRandom("a").derive("b/c"), 5)).not.toEqual(
      take(createRandom("a").derive("b").derive("c"), 5),
    );
  });
});

describe("unseededRandom", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("seeds from Date.now() and Math.random()", () => {
    vi.spyOn(Date, "now").mockReturnValue(1700000000000);
    vi.spyOn(Math, "random").mockReturnValue(0.25);
    const random = unseededRandom();
    expect(random.seed).toBe("1700000000000-0.25");
    expect(take(random, 5)).toEqual(take(createRandom("1700000000000-0.25"), 5));
  });

  it("gives different sources on different calls", () => {
    const a = unseededRandom();
    const b = unseededRandom();
    expect(a.seed).not.toBe(b.seed);
    expect(take(a, 5)).not.toEqual(take(b, 5));
  });
});
