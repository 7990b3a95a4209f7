import { describe, expect, it } from "vitest";
import {
  type JsonSchema,
  LoadReport,
  repairSchema,
  type SchemaDialect,
  type SchemaDirection,
  SchemaNormaliser,
  toolsFromDocument,
} from "../../src/catalog/index.js";
import { SchemaCompiler } from "../../src/validate/index.js";

interface Case {
  name: string;
  dialect?: SchemaDialect;
  direction?: SchemaDirection;
  input: unknown;
  canonical: JsonSchema;
  warnings: Array<[code: string, pointer: string, message: string]>;
  /** Values the canonical schema must accept and refuse (what the author meant). */
  accepts?: unknown[];
  refuses?: unknown[];
}

/** Each sloppy-but-common way of writing a schema: the input, the canonical schema and the warning. */
const CASES: Case[] = [
  {
    name: "nullable without type (OpenAI's spec): this schema, or null",
    input: { nullable: true, allOf: [{ type: "string" }] },
    canonical: { anyOf: [{ allOf: [{ type: "string" }] }, { type: "null" }] },
    warnings: [
      ["NULLABLE_WITHOUT_TYPE", "/nullable", '"nullable" without "type"; read as "this schema, or null"'],
    ],
    accepts: ["a", null],
    refuses: [1],
  },
  {
    name: "nullable without type on an enum: null joins the enum",
    input: { enum: ["a", "b"], nullable: true },
    canonical: { enum: ["a", "b", null] },
    warnings: [
      ["NULLABLE_WITHOUT_TYPE", "/nullable", '"nullable" without "type"; read as adding null to the enum'],
    ],
    accepts: ["a", null],
    refuses: ["c"],
  },
  {
    name: "nullable without type and no constraint: already allows null, no warning",
    input: { nullable: true, description: "anything" },
    canonical: { description: "anything" },
    warnings: [],
  },
  {
    name: "nullable in a 3.1 document: read as 3.0 meant it",
    dialect: "openapi-3.1",
    input: { type: "string", nullable: true },
    canonical: { type: ["string", "null"] },
    warnings: [["NULLABLE_NOT_31", "/nullable", '"nullable" is OpenAPI 3.0; read as also allowing null']],
    accepts: [null, "x"],
  },
  {
    name: "a type list mixed with nullable",
    input: { type: ["string", "integer"], nullable: true },
    canonical: { type: ["string", "integer", "null"] },
    warnings: [
      ["NULLABLE_WITH_TYPE_LIST", "/nullable", '"nullable" beside a type list; read as adding "null" to it'],
    ],
  },
  {
    name: "a type list that already has null, with nullable",
    input: { type: ["string", "null"], nullable: true },
    canonical: { type: ["string", "null"] },
    warnings: [
      [
        "NULLABLE_WITH_TYPE_LIST",
        "/nullable",
        '"nullable" beside a type list that already has "null"; dropped',
      ],
    ],
  },
  {
    name: "x-nullable (Swagger 2.0 habit) is read as nullable",
    input: { type: "integer", "x-nullable": true },
    canonical: { type: ["integer", "null"] },
    warnings: [],
  },
  {
    name: "example becomes examples, silently (it is the 3.0 keyword)",
    input: { type: "string", example: "hi" },
    canonical: { type: "string", examples: ["hi"] },
    warnings: [],
  },
  {
    name: "examples written as a map of named examples",
    input: { type: "string", examples: { first: { value: "a" }, second: { value: "b" } } },
    canonical: { type: "string", examples: ["a", "b"] },
    warnings: [
      [
        "EXAMPLES_NOT_LIST",
        "/examples",
        '"examples" in a schema must be a list; its values were kept as the list',
      ],
    ],
  },
  {
    name: "required: true on a property (draft 3) moves to the parent's list",
    input: {
      type: "object",
      properties: { id: { type: "string", required: true }, note: { type: "string", required: false } },
    },
    canonical: {
      type: "object",
      properties: { id: { type: "string" }, note: { type: "string" } },
      required: ["id"],
    },
    warnings: [
      [
        "REQUIRED_ON_PROPERTY",
        "/properties/id/required",
        '"required: true" belongs in the parent\'s "required" list; moved there',
      ],
      [
        "REQUIRED_ON_PROPERTY",
        "/properties/note/required",
        '"required: false" belongs in the parent\'s "required" list; dropped',
      ],
    ],
    accepts: [{ id: "x" }],
    refuses: [{ note: "x" }],
  },
  {
    name: "required: [] is dropped silently; a required string becomes a list",
    input: { type: "object", required: "id", properties: { id: {}, x: { type: "object", required: [] } } },
    canonical: { type: "object", required: ["id"], properties: { id: {}, x: { type: "object" } } },
    warnings: [["REQUIRED_NOT_LIST", "/required", '"required" must be a list of names; read "id" as ["id"]']],
  },
  {
    name: "a closed object requiring a property it does not declare (a renamed property) could never pass",
    input: {
      type: "object",
      required: ["members", "oldName"],
      properties: { members: {} },
      additionalProperties: false,
    },
    canonical: {
      type: "object",
      required: ["members"],
      properties: { members: {} },
      additionalProperties: false,
    },
    warnings: [
      [
        "REQUIRED_UNDECLARED",
        "/required",
        '"oldName" is required but not a declared property of a closed object, so no value could pass; dropped from "required"',
      ],
    ],
    accepts: [{ members: 1 }],
  },
  {
    name: "readOnly properties are not required in requests",
    direction: "request",
    input: {
      type: "object",
      required: ["id", "name"],
      properties: { id: { type: "string", readOnly: true }, name: { type: "string" } },
    },
    canonical: {
      type: "object",
      required: ["name"],
      properties: { id: { type: "string", readOnly: true }, name: { type: "string" } },
    },
    warnings: [],
    accepts: [{ name: "a" }],
  },
  {
    name: "writeOnly properties are not required in responses",
    direction: "response",
    input: {
      type: "object",
      required: ["password"],
      properties: { password: { type: "string", writeOnly: true } },
    },
    canonical: { type: "object", properties: { password: { type: "string", writeOnly: true } } },
    warnings: [],
  },
  {
    name: "boolean schemas stay boolean",
    input: { type: "object", properties: { anything: true, never: false }, additionalProperties: false },
    canonical: { type: "object", properties: { anything: true, never: false }, additionalProperties: false },
    warnings: [],
    accepts: [{ anything: [1] }],
    refuses: [{ never: 1 }],
  },
  {
    name: "a format the validator does not know is kept as a description, once per document",
    input: {
      type: "object",
      properties: { a: { type: "string", format: "phone" }, b: { type: "string", format: "phone" } },
    },
    canonical: {
      type: "object",
      properties: { a: { type: "string", format: "phone" }, b: { type: "string", format: "phone" } },
    },
    warnings: [
      [
        "FORMAT_UNKNOWN",
        "/properties/a/format",
        'format "phone" is not known to the validator; it is kept as a description and not checked',
      ],
    ],
    accepts: [{ a: "anything at all" }],
  },
  {
    name: "exclusiveMinimum in the 3.0 form inside a 3.1 document",
    dialect: "openapi-3.1",
    input: { type: "number", minimum: 0, exclusiveMinimum: true },
    canonical: { type: "number", exclusiveMinimum: 0 },
    warnings: [
      [
        "EXCLUSIVE_BOUND_BOOLEAN",
        "/exclusiveMinimum",
        'boolean "exclusiveMinimum" is the OpenAPI 3.0 form; read as "exclusiveMinimum: 0"',
      ],
    ],
    accepts: [0.5],
    refuses: [0],
  },
  {
    name: "exclusiveMaximum in the 3.1 form inside a 3.0 document is already 2020-12: kept",
    input: { type: "number", exclusiveMaximum: 10 },
    canonical: { type: "number", exclusiveMaximum: 10 },
    warnings: [],
    refuses: [10],
  },
  {
    name: "exclusiveMinimum: true without a minimum means nothing",
    input: { type: "number", exclusiveMinimum: true },
    canonical: { type: "number" },
    warnings: [
      [
        "KEYWORD_DROPPED",
        "/exclusiveMinimum",
        '"exclusiveMinimum: true" without "minimum" means nothing; dropped',
      ],
    ],
  },
  {
    name: "allOf with additionalProperties: false in a member (the classic reason valid data fails)",
    input: {
      allOf: [
        { type: "object", properties: { id: { type: "string" } }, additionalProperties: false },
        { type: "object", properties: { name: { type: "string" } } },
      ],
    },
    canonical: {
      allOf: [
        { type: "object", properties: { id: { type: "string" } } },
        { type: "object", properties: { name: { type: "string" } } },
      ],
      unevaluatedProperties: false,
    },
    warnings: [
      [
        "ALLOF_CLOSED_MEMBER",
        "/allOf",
        'an allOf member has "additionalProperties: false" but other members add properties, so no value could pass; read as "unevaluatedProperties: false" on the allOf',
      ],
    ],
    accepts: [{ id: "1", name: "n" }],
    refuses: [{ id: "1", other: true }],
  },
  {
    name: "type names from other languages",
    input: {
      type: "object",
      properties: { n: { type: "int" }, f: { type: "file" }, x: { type: "any" }, q: { type: "Whatever" } },
    },
    canonical: {
      type: "object",
      properties: { n: { type: "integer" }, f: { type: "string", format: "binary" }, x: {}, q: {} },
    },
    warnings: [
      ["TYPE_RENAMED", "/properties/n/type", 'type "int" read as "integer"'],
      ["TYPE_RENAMED", "/properties/f/type", 'type "file" read as "string"'],
      ["TYPE_UNKNOWN", "/properties/q/type", 'type "Whatever" is not a JSON Schema type; ignored'],
    ],
  },
  {
    name: "numbers written as strings, and impossible counts",
    input: { type: "string", maxLength: "64", minLength: -1 },
    canonical: { type: "string", maxLength: 64 },
    warnings: [
      ["KEYWORD_DROPPED", "/minLength", '"minLength" cannot be -1; dropped'],
      ["KEYWORD_COERCED", "/maxLength", '"maxLength" should be a number; read "64" as 64'],
    ],
  },
  {
    name: "a Python pattern is translated",
    input: { type: "string", pattern: "^\\d{4}\\Z" },
    canonical: { type: "string", pattern: "^\\d{4}$" },
    warnings: [
      [
        "PATTERN_TRANSLATED",
        "/pattern",
        'pattern "^\\\\d{4}\\\\Z" translated to "^\\\\d{4}$" (Python "\\Z" -> "$" (end of input))',
      ],
    ],
    accepts: ["2024"],
    refuses: ["2024\n"],
  },
  {
    name: "an untranslatable pattern is dropped, never the tool",
    input: { type: "string", pattern: "^\\p{InGreek}+$" },
    canonical: { type: "string" },
    warnings: [["PATTERN_DROPPED", "/pattern", "dropped, so it is not checked"]],
  },
  {
    name: "draft-07 dependencies split into dependentRequired and dependentSchemas",
    input: { type: "object", dependencies: { a: ["b"], c: { required: ["d"] } } },
    canonical: {
      type: "object",
      dependentRequired: { a: ["b"] },
      dependentSchemas: { c: { required: ["d"] } },
    },
    warnings: [],
    refuses: [{ a: 1 }, { c: 1 }],
  },
  {
    name: "a subschema that is not a schema",
    input: { type: "object", properties: { a: "string" } },
    canonical: { type: "object", properties: { a: {} } },
    warnings: [
      [
        "SCHEMA_INVALID",
        "/properties/a",
        'a schema must be an object or a boolean, not "string"; it accepts any value now',
      ],
    ],
  },
  {
    name: "$id and another draft's $schema are dropped (references are already resolved)",
    input: { $schema: "http://json-schema.org/draft-07/schema#", $id: "https://x/y", type: "string" },
    canonical: { type: "string" },
    warnings: [],
  },
];

describe("schema normalisation", () => {
  const compiler = new SchemaCompiler();
  for (const testCase of CASES) {
    it(testCase.name, () => {
      const warnings: Array<[string, string, string]> = [];
      const normaliser = new SchemaNormaliser({
        dialect: testCase.dialect ?? "openapi-3.0",
        warn: (code, message, pointer) => warnings.push([code, pointer, message]),
      });
      const canonical = normaliser.normalise(testCase.input, "", testCase.direction ?? "any");
      expect(canonical).toEqual(testCase.canonical);
      expect(warnings.length).toBe(testCase.warnings.length);
      testCase.warnings.forEach(([code, pointer, message], index) => {
        expect(warnings[index]?.[0]).toBe(code);
        expect(warnings[index]?.[1]).toBe(pointer);
        expect(warnings[index]?.[2]).toContain(message);
      });
      const validate = compiler.compile(canonical);
      for (const value of testCase.accepts ?? []) expect(validate(value), JSON.stringify(value)).toBe(true);
      for (const value of testCase.refuses ?? []) expect(validate(value), JSON.stringify(value)).toBe(false);
    });
  }

  it("does not change its input", () => {
    const input = { type: "object", properties: { id: { type: "string", required: true, nullable: true } } };
    const copy = structuredClone(input);
    new SchemaNormaliser({ dialect: "openapi-3.0" }).normalise(input);
    expect(input).toEqual(copy);
  });

  it("repairSchema drops what the meta-schema refuses, with a warning, and keeps the rest", () => {
    const warnings: string[] = [];
    const repaired = repairSchema(
      { type: "object", properties: { a: { type: "string", const: 1, contentMediaType: 5 } } },
      (code, message, pointer) => warnings.push(`${code} ${pointer}: ${message}`),
      "/inputSchema",
    );
    expect(repaired).toEqual({ type: "object", properties: { a: { type: "string", const: 1 } } });
    expect(warnings).toEqual([
      'KEYWORD_DROPPED /inputSchema/properties/a/contentMediaType: "contentMediaType" is not valid JSON Schema here (must be string); dropped',
    ]);
  });

  it("in a document, warnings name the file, the tool and the place in its schema", () => {
    const report = new LoadReport();
    const [tool] = toolsFromDocument(
      {
        openapi: "3.0.0",
        info: { title: "t", version: "1" },
        paths: {
          "/users/{id}": {
            get: {
              operationId: "get_user",
              parameters: [{ name: "id", in: "path", schema: { type: "string", pattern: "(?i)^[a-z]+$" } }],
              responses: { "200": { description: "ok" } },
            },
          },
        },
      },
      { file: "users.yaml", report },
    );
    expect(tool?.inputSchema.properties).toEqual({ id: { type: "string", pattern: "^[a-zA-Z]+$" } });
    expect(report.warnings).toEqual([
      {
        code: "PATTERN_TRANSLATED",
        message: expect.stringContaining('pattern "(?i)^[a-z]+$" translated to "^[a-zA-Z]+$"'),
        file: "users.yaml",
        pointer: "/inputSchema/properties/id/pattern",
        tool: "get_user",
      },
    ]);
  });
});
