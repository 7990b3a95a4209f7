import { describe, expect, it } from "vitest";
import { Catalog, type JsonObjectSchema } from "../../src/catalog/index.js";
import { CallValidator, SchemaCompiler } from "../../src/validate/index.js";

const validator = new CallValidator();

function check(properties: Record<string, unknown>, args: unknown, extra: JsonObjectSchema = {}) {
  const catalog = Catalog.fromDocument({
    name: "tool",
    parameters: { type: "object", properties, ...extra },
  });
  return validator.validate(catalog, { name: "tool", arguments: args }).errors;
}

describe("one violation per broken rule, with path, rule and an actionable message", () => {
  it.each([
    [
      "integer vs number",
      { n: { type: "integer" } },
      { n: 1.5 },
      "/n",
      "type",
      '"n" must be an integer, got a number 1.5',
    ],
    [
      "number accepts integers",
      { n: { type: "number" } },
      { n: "1" },
      "/n",
      "type",
      '"n" must be a number, got a string "1"',
    ],
    [
      "boolean",
      { b: { type: "boolean" } },
      { b: "true" },
      "/b",
      "type",
      '"b" must be a boolean (true or false), got a string "true"',
    ],
    [
      "nullable",
      { s: { type: ["string", "null"], maxLength: 3 } },
      { s: 5 },
      "/s",
      "type",
      '"s" must be a string of at most 3 characters, or null, got an integer 5',
    ],
    ["minimum", { n: { type: "integer", minimum: 1 } }, { n: 0 }, "/n", "minimum", '"n" must be ≥ 1, got 0'],
    [
      "maximum",
      { n: { type: "number", maximum: 9.5 } },
      { n: 10 },
      "/n",
      "maximum",
      '"n" must be ≤ 9.5, got 10',
    ],
    [
      "exclusiveMinimum",
      { n: { type: "number", exclusiveMinimum: 0 } },
      { n: 0 },
      "/n",
      "exclusiveMinimum",
      '"n" must be > 0, got 0',
    ],
    [
      "exclusiveMaximum",
      { n: { type: "number", exclusiveMaximum: 1 } },
      { n: 1 },
      "/n",
      "exclusiveMaximum",
      '"n" must be < 1, got 1',
    ],
    [
      "multipleOf",
      { n: { type: "integer", multipleOf: 5 } },
      { n: 12 },
      "/n",
      "multipleOf",
      '"n" must be a multiple of 5, got 12',
    ],
    [
      "enum",
      { u: { enum: ["a", "b", 3] } },
      { u: "c" },
      "/u",
      "enum",
      '"u" must be one of "a", "b" or 3, got "c"',
    ],
    ["const", { v: { const: "v1" } }, { v: "v2" }, "/v", "const", '"v" must be exactly "v1", got "v2"'],
    [
      "minLength",
      { s: { type: "string", minLength: 3 } },
      { s: "ab" },
      "/s",
      "minLength",
      '"s" must be at least 3 characters long, got 2: "ab"',
    ],
    [
      "maxLength counts characters",
      { s: { type: "string", maxLength: 2 } },
      { s: "日本語" },
      "/s",
      "maxLength",
      '"s" must be at most 2 characters long, got 3: "日本語"',
    ],
    [
      "pattern",
      { s: { type: "string", pattern: "^[A-Z]{2}$" } },
      { s: "usa" },
      "/s",
      "pattern",
      '"s" must match the pattern ^[A-Z]{2}$, got "usa"',
    ],
    [
      "date",
      { d: { type: "string", format: "date" } },
      { d: "2024-02-30" },
      "/d",
      "format",
      '"d" must be a date (YYYY-MM-DD), got "2024-02-30"',
    ],
    [
      "date-time",
      { d: { type: "string", format: "date-time" } },
      { d: "2024-01-01 10:00" },
      "/d",
      "format",
      '"d" must be a date-time with time zone (RFC 3339, like 2024-05-01T09:30:00Z), got "2024-01-01 10:00"',
    ],
    [
      "email",
      { e: { type: "string", format: "email" } },
      { e: "a@" },
      "/e",
      "format",
      '"e" must be an email address, got "a@"',
    ],
    [
      "uri",
      { u: { type: "string", format: "uri" } },
      { u: "example.com/x" },
      "/u",
      "format",
      '"u" must be an absolute URI (with a scheme, like https://…), got "example.com/x"',
    ],
    [
      "uuid",
      { u: { type: "string", format: "uuid" } },
      { u: "1234" },
      "/u",
      "format",
      '"u" must be a UUID (8-4-4-4-12 hex digits), got "1234"',
    ],
    [
      "minItems",
      { a: { type: "array", minItems: 2 } },
      { a: [1] },
      "/a",
      "minItems",
      '"a" must have at least 2 items, got 1',
    ],
    [
      "maxItems",
      { a: { type: "array", maxItems: 1 } },
      { a: [1, 2] },
      "/a",
      "maxItems",
      '"a" must have at most 1 item, got 2',
    ],
    [
      "uniqueItems",
      { a: { type: "array", uniqueItems: true } },
      { a: [{ x: 1 }, 2, { x: 1 }] },
      "/a",
      "uniqueItems",
      '"a" must not contain duplicates, but items 0 and 2 are equal',
    ],
  ])("%s", (_title, properties, args, path, rule, message) => {
    expect(check(properties, args)).toEqual([{ path, rule, message }]);
  });

  it("reports required and unknown arguments at the argument's own path", () => {
    expect(check({ a: { type: "string" } }, { b: 1 }, { required: ["a"] })).toEqual([
      { path: "/a", rule: "required", message: 'missing required argument "a"' },
      { path: "/b", rule: "unknown_argument", message: 'unknown argument "b"; accepted: a' },
    ]);
  });

  it("escapes argument names in paths", () => {
    expect(check({}, { "a/b~c": 1 })).toEqual([
      { path: "/a~1b~0c", rule: "unknown_argument", message: 'unknown argument "a/b~c"; it accepts none' },
    ]);
  });

  it("reports every violation, not only the first, down nested objects and arrays", () => {
    const properties = {
      order: {
        type: "object",
        properties: {
          items: {
            type: "array",
            items: {
              type: "object",
              properties: { sku: { type: "string" }, qty: { type: "integer", minimum: 1 } },
              required: ["sku", "qty"],
              additionalProperties: false,
            },
          },
        },
        required: ["items"],
      },
    };
    const args = {
      order: {
        items: [
          { sku: "A", qty: 0 },
          { qty: "2", note: "x" },
        ],
      },
    };
    expect(check(properties, args)).toEqual([
      { path: "/order/items/0/qty", rule: "minimum", message: '"order.items[0].qty" must be ≥ 1, got 0' },
      {
        path: "/order/items/1/sku",
        rule: "required",
        message: '"order.items[1]" is missing its required field "sku"',
      },
      {
        path: "/order/items/1/note",
        rule: "unknown_argument",
        message: '"order.items[1]" has no field "note"; accepted: sku, qty',
      },
      {
        path: "/order/items/1/qty",
        rule: "type",
        message: '"order.items[1].qty" must be an integer ≥ 1, got a string "2"',
      },
    ]);
  });

  it("folds oneOf alternatives into one violation naming the shapes and what the closest one lacks", () => {
    const properties = {
      target: {
        oneOf: [
          { type: "string", format: "email" },
          { type: "object", properties: { user_id: { type: "integer" } }, required: ["user_id"] },
        ],
      },
    };
    expect(check(properties, { target: { user_id: "7" } })).toEqual([
      {
        path: "/target",
        rule: "oneOf",
        message:
          '"target" must be an email address; or an object with "user_id"; got an object; the closest allowed shape fails because "target.user_id" must be an integer, got a string "7"',
      },
    ]);
    expect(check(properties, { target: 12 })).toEqual([
      {
        path: "/target",
        rule: "oneOf",
        message: '"target" must be an email address; or an object with "user_id"; got an integer',
      },
    ]);
  });

  it("says when a value matches more than one oneOf alternative", () => {
    const properties = { n: { oneOf: [{ type: "integer" }, { type: "number", minimum: 0 }] } };
    expect(check(properties, { n: 3 })).toEqual([
      {
        path: "/n",
        rule: "oneOf",
        message: '"n" matches 2 of the allowed shapes (#1, #2), but must match exactly one',
      },
    ]);
  });

  it("handles anyOf (the usual Optional[...] shape) and allOf", () => {
    const properties = {
      limit: { anyOf: [{ type: "integer", minimum: 1 }, { type: "null" }] },
      range: {
        allOf: [
          { type: "object", required: ["from"] },
          { type: "object", required: ["to"] },
        ],
      },
    };
    expect(check(properties, { limit: null, range: { from: 1, to: 2 } })).toEqual([]);
    expect(check(properties, { limit: 0, range: {} })).toEqual([
      {
        path: "/limit",
        rule: "anyOf",
        message:
          '"limit" must be an integer ≥ 1; or null; got an integer; the closest allowed shape fails because "limit" must be ≥ 1, got 0',
      },
      { path: "/range/from", rule: "required", message: '"range" is missing its required field "from"' },
      { path: "/range/to", rule: "required", message: '"range" is missing its required field "to"' },
    ]);
  });

  it("closes composed top-level objects with unevaluatedProperties", () => {
    const catalog = Catalog.fromDocument({
      name: "t",
      parameters: { type: "object", allOf: [{ properties: { a: { type: "string" } } }] },
    });
    expect(catalog.get("t")?.inputSchema.unevaluatedProperties).toBe(false);
    expect(validator.validate(catalog, { name: "t", arguments: { a: "x", b: 1 } }).errors).toEqual([
      { path: "/b", rule: "unknown_argument", message: 'unknown argument "b"; it accepts none' },
    ]);
  });

  it("treats unknown formats as annotations and validates int32 as a format", () => {
    expect(
      check(
        { x: { type: "string", format: "phone-number" }, n: { type: "integer", format: "int32" } },
        { x: "?", n: 2 ** 40 },
      ),
    ).toEqual([{ path: "/n", rule: "format", message: '"n" must be a 32-bit integer, got 1099511627776' }]);
  });
});

describe("calls", () => {
  const catalog = Catalog.fromDocument([
    { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
    { name: "get_forecast", parameters: { type: "object", properties: {} } },
    { name: "send_email", parameters: { type: "object", properties: {} } },
  ]);

  it("names the closest tools when the tool does not exist", () => {
    expect(validator.validate(catalog, { name: "get_wheather", arguments: {} })).toEqual({
      name: "get_wheather",
      valid: false,
      errors: [
        {
          path: "",
          rule: "unknown_tool",
          message: 'there is no tool named "get_wheather"; the closest tool is "get_weather"',
        },
      ],
    });
    expect(validator.validate(catalog, { name: "weather", arguments: {} }).errors[0]?.message).toBe(
      'there is no tool named "weather"; the closest tool is "get_weather"',
    );
    expect(validator.validate(catalog, { name: "zzz", arguments: {} }).errors[0]?.message).toBe(
      'there is no tool named "zzz"',
    );
  });

  it("accepts arguments as a JSON string (OpenAI tool calls) and missing arguments as {}", () => {
    expect(validator.validate(catalog, { name: "get_weather", arguments: '{"city":"Oslo"}' }).valid).toBe(
      true,
    );
    expect(validator.validate(catalog, { name: "get_forecast" }).valid).toBe(true);
    expect(
      validator.validate(catalog, { function: { name: "get_weather", arguments: '{"city": 1}' } }).errors[0]
        ?.rule,
    ).toBe("type");
  });

  it("rejects arguments that are not an object", () => {
    expect(validator.validate(catalog, { name: "get_weather", arguments: "{not json" }).errors).toEqual([
      {
        path: "",
        rule: "arguments",
        message: "the arguments must be a JSON object, got a string that is not valid JSON",
      },
    ]);
    expect(validator.validate(catalog, { name: "get_weather", arguments: [1] }).errors).toEqual([
      { path: "", rule: "arguments", message: "the arguments must be a JSON object, got an array" },
    ]);
    expect(validator.validate(catalog, { arguments: {} }).errors[0]?.rule).toBe("name");
  });

  it("compiles each schema once and shares equal schemas across tools", () => {
    const compiler = new SchemaCompiler();
    const shared = new CallValidator(compiler);
    const schema = { type: "object", properties: { q: { type: "string" } } };
    const a = Catalog.fromDocument({ name: "a", parameters: schema });
    const b = Catalog.fromDocument([
      { name: "a", parameters: schema },
      { name: "b", parameters: schema },
    ]);
    shared.prepare(a);
    shared.prepare(b);
    for (let i = 0; i < 3; i++) shared.validate(a, { name: "a", arguments: { q: "x" } });
    expect(compiler.size).toBe(1);
  });
});
