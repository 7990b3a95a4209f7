import { describe, expect, it } from "vitest";
import { formatLocation, isTerrariumError, TerrariumError, toTerrariumError } from "./errors.js";

describe("TerrariumError", () => {
  it("carries code, message, name, where and details", () => {
    const error = new TerrariumError("INVALID_TOOL", "tool has no name", {
      where: { file: "tools.json", pointer: "/tools/0" },
      details: { index: 0 },
    });
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(TerrariumError);
    expect(error.name).toBe("TerrariumError");
    expect(error.code).toBe("INVALID_TOOL");
    expect(error.message).toBe("tool has no name");
    expect(error.where).toEqual({ file: "tools.json", pointer: "/tools/0" });
    expect(error.details).toEqual({ index: 0 });
    expect(error.cause).toBeUndefined();
    expect("cause" in error).toBe(false);
  });

  it("defaults where to {} and details to undefined", () => {
    const error = new TerrariumError("INTERNAL", "boom");
    expect(error.where).toEqual({});
    expect(error.details).toBeUndefined();
    expect(error.cause).toBeUndefined();
  });

  it("keeps the cause when one is given", () => {
    const cause = new SyntaxError("Unexpected token");
    const error = new TerrariumError("PARSE_ERROR", "bad JSON", { cause });
    expect(error.cause).toBe(cause);
  });

  it("keeps falsy causes other than undefined", () => {
    expect(new TerrariumError("INTERNAL", "m", { cause: null }).cause).toBeNull();
    expect(new TerrariumError("INTERNAL", "m", { cause: 0 }).cause).toBe(0);
  });

  it("toJSON gives code, message, where and details", () => {
    const error = new TerrariumError("UNKNOWN_TOOL", "no tool named x", {
      where: { file: "a.yaml" },
      details: { name: "x" },
      cause: new Error("inner"),
    });
    expect(error.toJSON()).toEqual({
      code: "UNKNOWN_TOOL",
      message: "no tool named x",
      where: { file: "a.yaml" },
      details: { name: "x" },
    });
    expect(JSON.stringify(error)).toBe(
      '{"code":"UNKNOWN_TOOL","message":"no tool named x","where":{"file":"a.yaml"},"details":{"name":"x"}}',
    );
  });

  it("toJSON of a bare error has an empty where and drops details when stringified", () => {
    const error = new TerrariumError("INTERNAL", "boom");
    expect(error.toJSON()).toEqual({ code: "INTERNAL", message: "boom", where: {}, details: undefined });
    expect(JSON.stringify(error)).toBe('{"code":"INTERNAL","message":"boom","where":{}}');
  });
});

describe("TerrariumError.describe", () => {
  it("has no location prefix when where is empty", () => {
    expect(new TerrariumError("INTERNAL", "something broke").describe()).toBe("something broke [INTERNAL]");
  });

  it("prefixes the file", () => {
    const error = new TerrariumError("FILE_UNREADABLE", "cannot read", { where: { file: "spec.yaml" } });
    expect(error.describe()).toBe("spec.yaml: cannot read [FILE_UNREADABLE]");
  });

  it("prefixes file and pointer", () => {
    const error = new TerrariumError("REF_UNRESOLVED", "no such $ref", {
      where: { file: "openapi.json", pointer: "/paths/~1pets/get" },
    });
    expect(error.describe()).toBe("openapi.json#/paths/~1pets/get: no such $ref [REF_UNRESOLVED]");
  });

  it("prefixes file and line", () => {
    const error = new TerrariumError("PARSE_ERROR", "bad JSON", { where: { file: "data.jsonl", line: 7 } });
    expect(error.describe()).toBe("data.jsonl:7: bad JSON [PARSE_ERROR]");
  });

  it("prefixes file, line and pointer", () => {
    const error = new TerrariumError("INVALID_INPUT", "expected a string", {
      where: { file: "data.jsonl", line: 3, pointer: "/args/name" },
    });
    expect(error.describe()).toBe("data.jsonl:3#/args/name: expected a string [INVALID_INPUT]");
  });

  it("says 'line N' when there is a line but no file", () => {
    const error = new TerrariumError("PARSE_ERROR", "bad JSON", { where: { line: 12 } });
    expect(error.describe()).toBe("line 12: bad JSON [PARSE_ERROR]");
  });

  it("prints only the pointer when there is neither file nor line", () => {
    const error = new TerrariumError("INVALID_POINTER", "bad", { where: { pointer: "/a/0" } });
    expect(error.describe()).toBe("#/a/0: bad [INVALID_POINTER]");
  });

  it("leaves out the root pointer", () => {
    const withFile = new TerrariumError("INVALID_OPENAPI", "not an object", {
      where: { file: "x.json", pointer: "" },
    });
    expect(withFile.describe()).toBe("x.json: not an object [INVALID_OPENAPI]");
    const bare = new TerrariumError("INVALID_OPENAPI", "not an object", { where: { pointer: "" } });
    expect(bare.describe()).toBe("not an object [INVALID_OPENAPI]");
  });
});

describe("formatLocation", () => {
  it.each([
    [{}, ""],
    [{ file: "a.json" }, "a.json"],
    [{ pointer: "/x" }, "#/x"],
    [{ pointer: "" }, ""],
    [{ line: 1 }, "line 1"],
    [{ line: 0 }, "line 0"],
    [{ file: "a.json", pointer: "/x/1" }, "a.json#/x/1"],
    [{ file: "a.json", pointer: "" }, "a.json"],
    [{ file: "a.jsonl", line: 4 }, "a.jsonl:4"],
    [{ file: "a.jsonl", line: 4, pointer: "/b" }, "a.jsonl:4#/b"],
    [{ line: 4, pointer: "/b" }, "line 4#/b"],
    [{ file: "", line: 2 }, "line 2"],
    [{ file: "dir/sub file.json", pointer: "/a~0b" }, "dir/sub file.json#/a~0b"],
  ])("formatLocation(%j) is %j", (where, expected) => {
    expect(formatLocation(where)).toBe(expected);
  });
});

describe("TerrariumError.locatedIn", () => {
  it("fills in missing fields from the outer location", () => {
    const inner = new TerrariumError("INVALID_TOOL", "bad tool", { where: { pointer: "/tools/2" } });
    const located = inner.locatedIn({ file: "tools.json" });
    expect(located.where).toEqual({ file: "tools.json", pointer: "/tools/2" });
    expect(located.describe()).toBe("tools.json#/tools/2: bad tool [INVALID_TOOL]");
  });

  it("lets fields already set win over the outer location", () => {
    const inner = new TerrariumError("REF_UNRESOLVED", "missing", {
      where: { file: "inner.json", pointer: "/a" },
    });
    const located = inner.locatedIn({ file: "outer.json", pointer: "/b", line: 9 });
    expect(located.where).toEqual({ file: "inner.json", pointer: "/a", line: 9 });
  });

  it("keeps an inner empty-string pointer over an outer one", () => {
    const inner = new TerrariumError("INVALID_OPENAPI", "root", { where: { pointer: "" } });
    expect(inner.locatedIn({ pointer: "/x" }).where).toEqual({ pointer: "" });
  });

  it("applies outer locations successively, innermost first", () => {
    const located = new TerrariumError("PARSE_ERROR", "bad", { where: { pointer: "/q" } })
      .locatedIn({ line: 5 })
      .locatedIn({ file: "f.jsonl", line: 99 });
    expect(located.where).toEqual({ file: "f.jsonl", line: 5, pointer: "/q" });
    expect(located.describe()).toBe("f.jsonl:5#/q: bad [PARSE_ERROR]");
  });

  it("returns a new error with the same code, message, details and cause, leaving the original alone", () => {
    const cause = new Error("root cause");
    const original = new TerrariumError("SCHEMA_COMPILE", "cannot compile", {
      where: { pointer: "/s" },
      details: { keyword: "type" },
      cause,
    });
    const located = original.locatedIn({ file: "schema.json" });
    expect(located).not.toBe(original);
    expect(located).toBeInstanceOf(TerrariumError);
    expect(located.code).toBe("SCHEMA_COMPILE");
    expect(located.message).toBe("cannot compile");
    expect(located.details).toEqual({ keyword: "type" });
    expect(located.cause).toBe(cause);
    expect(original.where).toEqual({ pointer: "/s" });
  });

  it("does not add a cause when the original had none", () => {
    const located = new TerrariumError("INTERNAL", "m").locatedIn({ file: "f" });
    expect(located.cause).toBeUndefined();
    expect("cause" in located).toBe(false);
  });
});

describe("isTerrariumError", () => {
  it("recognises only TerrariumError instances", () => {
    expect(isTerrariumError(new TerrariumError("INTERNAL", "x"))).toBe(true);
    expect(isTerrariumError(new Error("x"))).toBe(false);
    expect(isTerrariumError({ name: "TerrariumError", code: "INTERNAL", message: "x" })).toBe(false);
    expect(isTerrariumError(null)).toBe(false);
    expect(isTerrariumError("TerrariumError")).toBe(false);
  });
});

describe("toTerrariumError", () => {
  it("returns a TerrariumError unchanged, even when another code is asked for", () => {
    const error = new TerrariumError("UNKNOWN_TOOL", "nope", { where: { file: "a" } });
    expect(toTerrariumError(error)).toBe(error);
    expect(toTerrariumError(error, "PARSE_ERROR")).toBe(error);
    expect(toTerrariumError(error, "PARSE_ERROR").code).toBe("UNKNOWN_TOOL");
  });

  it("wraps an Error with code INTERNAL by default, keeping its message and the error as cause", () => {
    const cause = new RangeError("out of range");
    const wrapped = toTerrariumError(cause);
    expect(wrapped).toBeInstanceOf(TerrariumError);
    expect(wrapped.code).toBe("INTERNAL");
    expect(wrapped.message).toBe("out of range");
    expect(wrapped.cause).toBe(cause);
    expect(wrapped.where).toEqual({});
    expect(wrapped.details).toBeUndefined();
    expect(wrapped.describe()).toBe("out of range [INTERNAL]");
  });

  it("uses the given code", () => {
    const wrapped = toTerrariumError(new SyntaxError("Unexpected end of JSON input"), "PARSE_ERROR");
    expect(wrapped.code).toBe("PARSE_ERROR");
    expect(wrapped.describe()).toBe("Unexpected end of JSON input [PARSE_ERROR]");
  });

  it("stringifies non-Error values and keeps them as cause", () => {
    expect(toTerrariumError("plain string").message).toBe("plain string");
    expect(toTerrariumError("plain string").cause).toBe("plain string");
    expect(toTerrariumError(42).message).toBe("42");
    expect(toTerrariumError(null).message).toBe("null");
    expect(toTerrariumError(undefined).message).toBe("undefined");
    expect(toTerrariumError({ a: 1 }).message).toBe("[object Object]");
  });

  it("does not record an undefined cause", () => {
    const wrapped = toTerrariumError(undefined);
    expect(wrapped.cause).toBeUndefined();
    expect("cause" in wrapped).toBe(false);
  });
});

describe("locatedIn with explicitly undefined fields", () => {
  it("keeps the outer location where the inner one is undefined", () => {
    const inner = new TerrariumError("INTERNAL", "m", { where: { file: undefined, pointer: "/a" } });
    expect(inner.locatedIn({ file: "f.json" }).describe()).toBe("f.json#/a: m [INTERNAL]");
  });
});
