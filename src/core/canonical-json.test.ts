import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, hashJson, jsonEqual } from "./canonical-json.js";

/** Rebuilds every object in `value` with its keys inserted in the order `order` gives. */
function reorderKeys(value: unknown, order: (keys: string[]) => string[]): unknown {
  if (Array.isArray(value)) return value.map((item) => reorderKeys(item, order));
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const key of order(Object.keys(record))) {
      Object.defineProperty(out, key, {
        value: reorderKeys(record[key], order),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** JSON has no -0 (JSON.stringify(-0) is "0"), so the round-trip property compares with -0 read as 0. */
function withoutNegativeZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(withoutNegativeZero);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      Object.defineProperty(out, key, {
        value: withoutNegativeZero(member),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

describe("canonicalJson: scalars", () => {
  it.each([
    [null, "null"],
    [true, "true"],
    [false, "false"],
    [0, "0"],
    [-0, "0"],
    [42, "42"],
    [-3.5, "-3.5"],
    [1e21, "1e+21"],
    [1e-7, "1e-7"],
    ["", '""'],
    ["hello", '"hello"'],
    ['quote " and \\ backslash', '"quote \\" and \\\\ backslash"'],
    ["line\nbreak\ttab", '"line\\nbreak\\ttab"'],
    ["\u0001", '"\\u0001"'],
    ["é ✓ 😀", '"é ✓ 😀"'],
  ])("canonicalJson(%j) is %s", (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it("writes a bigint as its digits", () => {
    expect(canonicalJson(10n)).toBe("10");
    expect(canonicalJson({ big: -12345678901234567890n })).toBe('{"big":-12345678901234567890}');
  });
});

describe("canonicalJson: objects and arrays", () => {
  it("sorts keys and uses no whitespace", () => {
    expect(canonicalJson({ b: 1, a: 2, c: 3 })).toBe('{"a":2,"b":1,"c":3}');
  });

  it("sorts keys by UTF-16 code unit", () => {
    expect(canonicalJson({ b: 1, a: 2, B: 3, é: 4, "10": 5, "9": 6, "": 7 })).toBe(
      '{"":7,"10":5,"9":6,"B":3,"a":2,"b":1,"é":4}',
    );
  });

  it("sorts keys at every depth of nested objects and arrays", () => {
    const value = {
      z: [3, { y: true, x: null }, []],
      a: { d: { c: "deep", b: [{ n: 2, m: 1 }] } },
      m: {},
    };
    expect(canonicalJson(value)).toBe(
      '{"a":{"d":{"b":[{"m":1,"n":2}],"c":"deep"}},"m":{},"z":[3,{"x":null,"y":true},[]]}',
    );
  });

  it("writes empty containers", () => {
    expect(canonicalJson({})).toBe("{}");
    expect(canonicalJson([])).toBe("[]");
    expect(canonicalJson([[], {}, [[]]])).toBe("[[],{},[[]]]");
  });

  it("keeps array order", () => {
    expect(canonicalJson([3, 1, 2, "b", "a"])).toBe('[3,1,2,"b","a"]');
  });

  it("escapes keys", () => {
    expect(canonicalJson({ 'a"b': 1, "c\nd": 2 })).toBe('{"a\\"b":1,"c\\nd":2}');
  });

  it("drops undefined, function and symbol members of objects", () => {
    const value = { a: undefined, b: 1, c: () => 1, d: Symbol("s"), e: null };
    expect(canonicalJson(value)).toBe('{"b":1,"e":null}');
    expect(canonicalJson({ only: undefined })).toBe("{}");
  });

  it("writes undefined array items as null", () => {
    expect(canonicalJson([undefined, 1, undefined])).toBe("[null,1,null]");
  });

  it("ignores symbol keys and non-enumerable properties", () => {
    const value: Record<string | symbol, unknown> = { a: 1 };
    value[Symbol("hidden")] = 2;
    Object.defineProperty(value, "secret", { value: 3, enumerable: false });
    expect(canonicalJson(value)).toBe('{"a":1}');
  });

  it("ignores inherited properties", () => {
    const value = Object.create({ inherited: 1 }) as Record<string, unknown>;
    value.own = 2;
    expect(canonicalJson(value)).toBe('{"own":2}');
  });

  it("treats an own __proto__ key (as JSON.parse makes) as an ordinary key", () => {
    const value = JSON.parse('{"b":1,"__proto__":{"x":1}}') as unknown;
    expect(canonicalJson(value)).toBe('{"__proto__":{"x":1},"b":1}');
  });

  it("writes the same shared (non-cyclic) object each time it occurs", () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
  });

  it("gives the same text as JSON.stringify for a sorted plain document", () => {
    const value = { a: [1, "two", { b: false }], c: null, d: { e: 1.5 } };
    expect(canonicalJson(value)).toBe(JSON.stringify(value));
  });
});

describe("canonicalJson: toJSON", () => {
  it("honours toJSON on Dates", () => {
    expect(canonicalJson(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"');
    expect(canonicalJson({ when: new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 6)) })).toBe(
      '{"when":"2025-01-02T03:04:05.006Z"}',
    );
  });

  it("honours a custom toJSON and canonicalises its result", () => {
    const value = {
      toJSON() {
        return { z: 1, a: [2, { d: 4, c: 3 }] };
      },
    };
    expect(canonicalJson(value)).toBe('{"a":[2,{"c":3,"d":4}],"z":1}');
    expect(canonicalJson({ outer: value })).toBe('{"outer":{"a":[2,{"c":3,"d":4}],"z":1}}');
  });

  it("calls toJSON with the object as this", () => {
    class Money {
      constructor(
        readonly amount: number,
        readonly currency: string,
      ) {}
      toJSON() {
        return `${this.amount} ${this.currency}`;
      }
    }
    expect(canonicalJson([new Money(5, "EUR")])).toBe('["5 EUR"]');
  });

  it("honours toJSON on a TerrariumError-like object", () => {
    const value = { toJSON: () => ({ message: "m", code: "X" }), ignored: true };
    expect(canonicalJson(value)).toBe('{"code":"X","message":"m"}');
  });
});

describe("canonicalJson: values with no JSON form", () => {
  it.each([
    [Number.NaN, "canonicalJson: NaN has no JSON form"],
    [Number.POSITIVE_INFINITY, "canonicalJson: Infinity has no JSON form"],
    [Number.NEGATIVE_INFINITY, "canonicalJson: -Infinity has no JSON form"],
  ])("throws a TypeError for %s", (value, message) => {
    expect(() => canonicalJson(value)).toThrow(new TypeError(message));
    expect(() => canonicalJson({ a: [value] })).toThrow(new TypeError(message));
  });

  it("throws a TypeError for undefined, functions and symbols at the top level", () => {
    expect(() => canonicalJson(undefined)).toThrow(
      new TypeError("canonicalJson: a undefined has no JSON form"),
    );
    expect(() => canonicalJson(() => 1)).toThrow(new TypeError("canonicalJson: a function has no JSON form"));
    expect(() => canonicalJson(Symbol("s"))).toThrow(
      new TypeError("canonicalJson: a symbol has no JSON form"),
    );
  });

  it("throws a TypeError for a self-referencing object", () => {
    const value: Record<string, unknown> = { a: 1 };
    value.self = value;
    expect(() => canonicalJson(value)).toThrow(new TypeError("canonicalJson: the value contains a cycle"));
  });

  it("throws a TypeError for an indirect cycle through arrays", () => {
    const list: unknown[] = [];
    const value = { nested: { list } };
    list.push(1, value);
    expect(() => canonicalJson(value)).toThrow(TypeError);
    expect(() => canonicalJson(list)).toThrow("canonicalJson: the value contains a cycle");
  });

  it("throws a TypeError when toJSON returns the object itself", () => {
    const value: Record<string, unknown> = {};
    value.toJSON = () => value;
    expect(() => canonicalJson(value)).toThrow(new TypeError("canonicalJson: the value contains a cycle"));
  });

  it("is reusable after a throw", () => {
    const value: Record<string, unknown> = {};
    value.self = value;
    expect(() => canonicalJson(value)).toThrow(TypeError);
    expect(canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
  });
});

describe("canonicalJson: properties", () => {
  it("is independent of key insertion order", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer(), (value, salt) => {
        const reversed = reorderKeys(value, (keys) => [...keys].reverse());
        const rotated = reorderKeys(value, (keys) => {
          if (keys.length === 0) return keys;
          const k = Math.abs(salt) % keys.length;
          return [...keys.slice(k), ...keys.slice(0, k)];
        });
        const text = canonicalJson(value);
        expect(canonicalJson(reversed)).toBe(text);
        expect(canonicalJson(rotated)).toBe(text);
      }),
    );
  });

  it("is independent of key order for explicitly shuffled objects", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })).chain((record) =>
          fc.shuffledSubarray(Object.keys(record), { minLength: Object.keys(record).length }).map((keys) => ({
            record,
            keys,
          })),
        ),
        ({ record, keys }) => {
          const shuffled: Record<string, unknown> = {};
          for (const key of keys) {
            Object.defineProperty(shuffled, key, { value: record[key], enumerable: true });
          }
          expect(canonicalJson(shuffled)).toBe(canonicalJson(record));
        },
      ),
    );
  });

  it("round-trips JSON values through JSON.parse", () => {
    expect(JSON.parse(canonicalJson({ a: [-0] }))).toStrictEqual({ a: [0] });
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toStrictEqual(withoutNegativeZero(value));
      }),
    );
  });

  it("is a fixed point: canonicalising parsed canonical text gives the same text", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
      }),
    );
  });

  it("agrees with JSON.stringify up to formatting, on JSON values", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toStrictEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });
});

describe("hashJson", () => {
  it("is the SHA-256 hex of the canonical JSON", () => {
    expect(hashJson({})).toBe("44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    expect(hashJson(null)).toBe("74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b");
    expect(hashJson({ b: [true, null, "x"], a: 1 })).toBe(
      "eca8cfb31ab74533e1eb2f4c74d2d55dfe3c79ac704787e54be8647ea7777eb1",
    );
  });

  it("is stable across key order", () => {
    expect(hashJson({ a: 1, b: { c: 2, d: 3 } })).toBe(hashJson({ b: { d: 3, c: 2 }, a: 1 }));
  });

  it("differs for different values", () => {
    expect(hashJson({ a: 1 })).not.toBe(hashJson({ a: 2 }));
    expect(hashJson([1, 2])).not.toBe(hashJson([2, 1]));
    expect(hashJson("1")).not.toBe(hashJson(1));
  });

  it("matches hashing canonicalJson directly, for arbitrary JSON values", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const expected = createHash("sha256").update(canonicalJson(value)).digest("hex");
        const hash = hashJson(value);
        expect(hash).toBe(expected);
        expect(hash).toMatch(/^[0-9a-f]{64}$/);
      }),
    );
  });

  it("throws the same TypeError as canonicalJson for values with no JSON form", () => {
    expect(() => hashJson({ n: Number.NaN })).toThrow(new TypeError("canonicalJson: NaN has no JSON form"));
  });
});

describe("jsonEqual", () => {
  it("ignores key order", () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 2, d: 3 }] }, { b: [1, { d: 3, c: 2 }], a: 1 })).toBe(true);
  });

  it("treats undefined members as absent", () => {
    expect(jsonEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
  });

  it("distinguishes different values", () => {
    expect(jsonEqual({ a: 1 }, { a: "1" })).toBe(false);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: null }, {})).toBe(false);
    expect(jsonEqual([undefined], [])).toBe(false);
  });

  it("treats 0 and -0 as equal", () => {
    expect(jsonEqual(0, -0)).toBe(true);
  });
});

describe("canonicalJson: sparse arrays", () => {
  it("writes holes as null, as JSON.stringify does", () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point of this test
    expect(canonicalJson([1, , 3])).toBe("[1,null,3]");
    expect(canonicalJson(new Array(2))).toBe("[null,null]");
  });
});
