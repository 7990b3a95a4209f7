import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TerrariumError } from "./errors.js";
import {
  dottedToPointer,
  escapeToken,
  formatPointer,
  getAtPointer,
  hasPointer,
  joinPointer,
  parsePointer,
  pointerToDotted,
  unescapeToken,
} from "./json-pointer.js";

/** The example document of RFC 6901, section 5. */
const rfcDocument = {
  foo: ["bar", "baz"],
  "": 0,
  "a/b": 1,
  "c%d": 2,
  "e^f": 3,
  "g|h": 4,
  "i\\j": 5,
  'k"l': 6,
  " ": 7,
  "m~n": 8,
};

/** Strings rich in the characters that need escaping. */
const tokenArbitrary = fc.oneof(
  fc.string({ unit: fc.constantFrom("~", "/", "0", "1", "a", ".") }),
  fc.string({ unit: "binary" }),
  fc.string(),
);

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error("expected the action to throw");
}

describe("escapeToken / unescapeToken", () => {
  it.each([
    ["plain", "plain"],
    ["", ""],
    ["a/b", "a~1b"],
    ["m~n", "m~0n"],
    ["~1", "~01"],
    ["/~", "~1~0"],
    ["~/~/", "~0~1~0~1"],
    ["~~", "~0~0"],
    ["//", "~1~1"],
  ])("escapeToken(%j) is %j and unescapes back", (token, escaped) => {
    expect(escapeToken(token)).toBe(escaped);
    expect(unescapeToken(escaped)).toBe(token);
  });

  it("escapes numbers as their decimal text", () => {
    expect(escapeToken(0)).toBe("0");
    expect(escapeToken(42)).toBe("42");
  });

  it("unescapes ~1 before ~0, so ~01 is the literal ~1", () => {
    expect(unescapeToken("~01")).toBe("~1");
    expect(unescapeToken("~10")).toBe("/0");
    expect(unescapeToken("~0~1")).toBe("~/");
  });

  it("round-trips arbitrary tokens", () => {
    fc.assert(
      fc.property(tokenArbitrary, (token) => {
        const escaped = escapeToken(token);
        expect(escaped).not.toContain("/");
        expect(unescapeToken(escaped)).toBe(token);
      }),
    );
  });
});

describe("formatPointer", () => {
  it.each<[Array<string | number>, string]>([
    [[], ""],
    [[""], "/"],
    [["", ""], "//"],
    [["foo"], "/foo"],
    [["foo", 0], "/foo/0"],
    [["a/b", "m~n"], "/a~1b/m~0n"],
    [["paths", "/pets/{id}", "get"], "/paths/~1pets~1{id}/get"],
    [[" "], "/ "],
  ])("formatPointer(%j) is %j", (tokens, expected) => {
    expect(formatPointer(tokens)).toBe(expected);
  });
});

describe("parsePointer", () => {
  it.each<[string, string[]]>([
    ["", []],
    ["/", [""]],
    ["//", ["", ""]],
    ["/foo", ["foo"]],
    ["/foo/0", ["foo", "0"]],
    ["/a~1b", ["a/b"]],
    ["/m~0n", ["m~n"]],
    ["/~01", ["~1"]],
    ["/a/", ["a", ""]],
    ["/paths/~1pets~1{id}/get", ["paths", "/pets/{id}", "get"]],
  ])("parsePointer(%j) is %j", (pointer, expected) => {
    expect(parsePointer(pointer)).toEqual(expected);
  });

  it.each(["foo", "foo/bar", "#/foo", " /foo", "~1"])(
    "rejects %j with a TerrariumError of code INVALID_POINTER",
    (pointer) => {
      const error = thrown(() => parsePointer(pointer));
      expect(error).toBeInstanceOf(TerrariumError);
      expect((error as TerrariumError).code).toBe("INVALID_POINTER");
      expect((error as TerrariumError).message).toBe(
        `JSON Pointer "${pointer}" must be empty or start with "/"`,
      );
      expect((error as TerrariumError).describe()).toBe(
        `JSON Pointer "${pointer}" must be empty or start with "/" [INVALID_POINTER]`,
      );
    },
  );

  it("round-trips formatPointer for arbitrary string tokens", () => {
    fc.assert(
      fc.property(fc.array(tokenArbitrary), (tokens) => {
        expect(parsePointer(formatPointer(tokens))).toEqual(tokens);
      }),
    );
  });

  it("round-trips parsePointer for arbitrary pointers built from escaped tokens", () => {
    fc.assert(
      fc.property(fc.array(tokenArbitrary), (tokens) => {
        const pointer = tokens.map((token) => `/${escapeToken(token)}`).join("");
        expect(formatPointer(parsePointer(pointer))).toBe(pointer);
      }),
    );
  });

  it("formats numeric tokens as strings that parse back as strings", () => {
    expect(parsePointer(formatPointer(["items", 3, "id"]))).toEqual(["items", "3", "id"]);
  });
});

describe("joinPointer", () => {
  it("appends escaped tokens", () => {
    expect(joinPointer("", "a")).toBe("/a");
    expect(joinPointer("/a", "b/c", 0)).toBe("/a/b~1c/0");
    expect(joinPointer("/a", "~")).toBe("/a/~0");
    expect(joinPointer("/a")).toBe("/a");
    expect(joinPointer("", "")).toBe("/");
  });

  it("agrees with formatPointer on the concatenated tokens", () => {
    fc.assert(
      fc.property(fc.array(tokenArbitrary), fc.array(tokenArbitrary), (head, tail) => {
        expect(joinPointer(formatPointer(head), ...tail)).toBe(formatPointer([...head, ...tail]));
      }),
    );
  });
});

describe("getAtPointer", () => {
  it.each<[string, unknown]>([
    ["", rfcDocument],
    ["/foo", ["bar", "baz"]],
    ["/foo/0", "bar"],
    ["/foo/1", "baz"],
    ["/", 0],
    ["/a~1b", 1],
    ["/c%d", 2],
    ["/e^f", 3],
    ["/g|h", 4],
    ["/i\\j", 5],
    ['/k"l', 6],
    ["/ ", 7],
    ["/m~0n", 8],
  ])("reads %j from the RFC 6901 example document", (pointer, expected) => {
    expect(getAtPointer(rfcDocument, pointer)).toEqual(expected);
  });

  it("returns the same object, not a copy", () => {
    expect(getAtPointer(rfcDocument, "/foo")).toBe(rfcDocument.foo);
    expect(getAtPointer(rfcDocument, "")).toBe(rfcDocument);
  });

  it("accepts already-parsed tokens", () => {
    const document = { "a/b": { "~": [10, 20] } };
    expect(getAtPointer(document, ["a/b", "~", "1"])).toBe(20);
    expect(getAtPointer(document, [])).toBe(document);
    expect(getAtPointer(document, ["a~1b"])).toBeUndefined();
  });

  it("walks nested arrays and objects", () => {
    const document = {
      users: [
        { name: "ada", tags: ["x", "y"] },
        { name: "bob", tags: [] },
      ],
    };
    expect(getAtPointer(document, "/users/0/name")).toBe("ada");
    expect(getAtPointer(document, "/users/0/tags/1")).toBe("y");
    expect(getAtPointer(document, "/users/1/tags")).toEqual([]);
    expect(getAtPointer([[1, [2, 3]]], "/0/1/0")).toBe(2);
  });

  it("returns stored falsy values as they are", () => {
    const document = { zero: 0, empty: "", no: false, nothing: null, list: [0, null] };
    expect(getAtPointer(document, "/zero")).toBe(0);
    expect(getAtPointer(document, "/empty")).toBe("");
    expect(getAtPointer(document, "/no")).toBe(false);
    expect(getAtPointer(document, "/nothing")).toBeNull();
    expect(getAtPointer(document, "/list/1")).toBeNull();
  });

  it.each([
    ["/missing"],
    ["/foo/2"],
    ["/foo/-"],
    ["/foo/01"],
    ["/foo/-1"],
    ["/foo/1.0"],
    ["/foo/ 1"],
    ["/foo/1e0"],
    ["/foo/length"],
    ["/foo/0/0"],
    ["/foo/0/length"],
    ["/a~1b/x"],
    ["/missing/deeper"],
    ["/a/b"],
  ])("returns undefined for the missing path %j", (pointer) => {
    expect(getAtPointer(rfcDocument, pointer)).toBeUndefined();
  });

  it("does not read inherited properties", () => {
    expect(getAtPointer({}, "/toString")).toBeUndefined();
    expect(getAtPointer({}, "/constructor")).toBeUndefined();
    expect(getAtPointer({ a: {} }, "/a/__proto__")).toBeUndefined();
    expect(getAtPointer(Object.create({ inherited: 1 }), "/inherited")).toBeUndefined();
  });

  it("returns undefined below a primitive or null", () => {
    expect(getAtPointer({ s: "text" }, "/s/length")).toBeUndefined();
    expect(getAtPointer({ s: "text" }, "/s/0")).toBeUndefined();
    expect(getAtPointer({ n: null }, "/n/x")).toBeUndefined();
    expect(getAtPointer(5, "/0")).toBeUndefined();
    expect(getAtPointer(undefined, "/a")).toBeUndefined();
    expect(getAtPointer(null, "")).toBeNull();
  });

  it("throws INVALID_POINTER for a malformed pointer string", () => {
    const error = thrown(() => getAtPointer(rfcDocument, "foo"));
    expect(error).toBeInstanceOf(TerrariumError);
    expect((error as TerrariumError).code).toBe("INVALID_POINTER");
  });

  it("finds every value at the pointer built from its path", () => {
    fc.assert(
      fc.property(fc.dictionary(tokenArbitrary, fc.jsonValue({ maxDepth: 1 })), (record) => {
        for (const [key, value] of Object.entries(record)) {
          expect(getAtPointer({ outer: [record] }, formatPointer(["outer", 0, key]))).toStrictEqual(value);
        }
      }),
    );
  });
});

describe("hasPointer", () => {
  const document = {
    a: { b: [10, undefined, null], "": "empty key", "x/y": { "~": 1 } },
    u: undefined,
    n: null,
  };

  it.each<[string, boolean]>([
    ["", true],
    ["/a", true],
    ["/a/b", true],
    ["/a/b/0", true],
    ["/a/b/1", true],
    ["/a/b/2", true],
    ["/a/b/3", false],
    ["/a/b/-", false],
    ["/a/b/00", false],
    ["/a/b/length", false],
    ["/a/", true],
    ["/a/x~1y", true],
    ["/a/x~1y/~0", true],
    ["/a/x~1y/~1", false],
    ["/a/x/y", false],
    ["/u", true],
    ["/u/x", false],
    ["/n", true],
    ["/n/x", false],
    ["/missing", false],
    ["/missing/deeper", false],
    ["/toString", false],
    ["/a/b/0/x", false],
  ])("hasPointer(document, %j) is %s", (pointer, expected) => {
    expect(hasPointer(document, pointer)).toBe(expected);
  });

  it("is true for the root of any document, even a primitive or undefined", () => {
    expect(hasPointer(undefined, "")).toBe(true);
    expect(hasPointer(3, "")).toBe(true);
  });

  it("is false below primitives", () => {
    expect(hasPointer("text", "/length")).toBe(false);
    expect(hasPointer(3, "/0")).toBe(false);
    expect(hasPointer(null, "/a")).toBe(false);
  });

  it("throws INVALID_POINTER for a malformed pointer", () => {
    const error = thrown(() => hasPointer(document, "a"));
    expect(error).toBeInstanceOf(TerrariumError);
    expect((error as TerrariumError).code).toBe("INVALID_POINTER");
  });

  it("agrees with getAtPointer when no value is undefined", () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 3 }),
        fc.array(fc.oneof(fc.string(), fc.nat(4)), { maxLength: 4 }),
        (value, path) => {
          const pointer = formatPointer(path);
          expect(hasPointer(value, pointer)).toBe(getAtPointer(value, pointer) !== undefined);
        },
      ),
    );
  });
});

describe("pointerToDotted / dottedToPointer", () => {
  it.each<[string, string]>([
    ["", ""],
    ["/a", "a"],
    ["/a/b/0", "a.b.0"],
    ["/a~1b/c", "a/b.c"],
    ["/m~0n", "m~n"],
    ["/", ""],
    ["/a/", "a."],
  ])("pointerToDotted(%j) is %j", (pointer, expected) => {
    expect(pointerToDotted(pointer)).toBe(expected);
  });

  it.each<[string, string]>([
    ["", ""],
    ["a", "/a"],
    ["a.b.0", "/a/b/0"],
    ["a/b.c", "/a~1b/c"],
    ["m~n", "/m~0n"],
    ["a..b", "/a//b"],
    [".", "//"],
    ["a.", "/a/"],
  ])("dottedToPointer(%j) is %j", (dotted, expected) => {
    expect(dottedToPointer(dotted)).toBe(expected);
  });

  it("round-trips dotted paths", () => {
    fc.assert(
      fc.property(fc.string(), (dotted) => {
        expect(pointerToDotted(dottedToPointer(dotted))).toBe(dotted);
      }),
    );
  });

  it("round-trips pointers whose tokens contain no dot and are not a lone empty token", () => {
    const token = fc.string({ unit: fc.constantFrom("a", "~", "/", "0", "x"), minLength: 1 });
    fc.assert(
      fc.property(fc.array(token), (tokens) => {
        const pointer = formatPointer(tokens);
        expect(dottedToPointer(pointerToDotted(pointer))).toBe(pointer);
      }),
    );
  });

  it("is lossy for tokens that contain a dot (paths split on '.' only)", () => {
    expect(pointerToDotted("/a.b")).toBe("a.b");
    expect(dottedToPointer(pointerToDotted("/a.b"))).toBe("/a/b");
  });

  it("throws INVALID_POINTER for a malformed pointer", () => {
    const error = thrown(() => pointerToDotted("a/b"));
    expect(error).toBeInstanceOf(TerrariumError);
    expect((error as TerrariumError).code).toBe("INVALID_POINTER");
  });
});

describe("parsePointer: malformed escapes", () => {
  it("rejects a ~ not followed by 0 or 1 (RFC 6901)", () => {
    for (const pointer of ["/m~n", "/a~", "/~2"]) {
      expect(() => parsePointer(pointer)).toThrow(expect.objectContaining({ code: "INVALID_POINTER" }));
    }
  });
});
