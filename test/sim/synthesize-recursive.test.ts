import { describe, expect, it } from "vitest";
import type { JsonSchema } from "../../src/catalog/tool.js";
import { createRandom } from "../../src/core/index.js";
import { synthesize } from "../../src/sim/synthesize.js";
import { SchemaCompiler } from "../../src/validate/index.js";

const compiler = new SchemaCompiler();
const SEEDS = 50;

/** Synthesizes for 50 seeds, checks every value with Ajv, and returns the values. */
function synthesizeAll(schema: JsonSchema): unknown[] {
  const validate = compiler.compile(schema);
  const values: unknown[] = [];
  const failures: string[] = [];
  for (let seed = 0; seed < SEEDS; seed++) {
    const value = synthesize(schema, { random: createRandom(seed), idSeed: `recursive|${seed}` });
    if (!validate(value))
      failures.push(
        `${seed}: ${JSON.stringify(value).slice(0, 160)} ${JSON.stringify(validate.errors?.[0])}`,
      );
    values.push(value);
  }
  expect(failures).toEqual([]);
  return values;
}

/** How deep a value nests through the given property names (1 for a node without them). */
function depthThrough(value: unknown, keys: string[]): number {
  if (value === null || typeof value !== "object") return 0;
  let deepest = 0;
  const record = value as Record<string, unknown>;
  for (const key of keys) {
    const child = record[key];
    const children = Array.isArray(child) ? child : [child];
    for (const item of children) deepest = Math.max(deepest, depthThrough(item, keys));
  }
  return 1 + deepest;
}

describe("synthesis of recursive schemas", () => {
  it("builds trees whose nodes must have children, ending in empty child lists", () => {
    const schema = {
      type: "object",
      properties: { tree: { $ref: "#/$defs/Node", description: "the root node" } },
      required: ["tree"],
      $defs: {
        Node: {
          type: "object",
          properties: {
            name: { type: "string" },
            children: { type: "array", items: { $ref: "#/$defs/Node" } },
          },
          required: ["name", "children"],
          additionalProperties: false,
        },
      },
    };
    const values = synthesizeAll(schema);
    const depths = values.map((value) => depthThrough((value as { tree: unknown }).tree, ["children"]));
    expect(Math.max(...depths)).toBeGreaterThan(1);
    expect(Math.max(...depths)).toBeLessThanOrEqual(4);
  });

  it("builds a tree given as the root schema itself ($ref at the root)", () => {
    const schema = {
      $ref: "#/$defs/Node",
      $defs: {
        Node: {
          type: "object",
          properties: { label: { type: "string" }, kids: { type: "array", items: { $ref: "#/$defs/Node" } } },
          required: ["label", "kids"],
        },
      },
    };
    const depths = synthesizeAll(schema).map((value) => depthThrough(value, ["kids"]));
    expect(Math.max(...depths)).toBeGreaterThan(1);
  });

  it("ends a linked list whose next node is required but nullable with null", () => {
    const schema = {
      type: "object",
      properties: { list: { $ref: "#/$defs/Node" } },
      required: ["list"],
      $defs: {
        Node: {
          type: "object",
          properties: {
            value: { type: "integer" },
            next: { anyOf: [{ $ref: "#/$defs/Node" }, { type: "null" }] },
          },
          required: ["value", "next"],
        },
      },
    };
    const depths = synthesizeAll(schema).map((value) =>
      depthThrough((value as { list: unknown }).list, ["next"]),
    );
    expect(Math.max(...depths)).toBeGreaterThan(1);
    expect(Math.max(...depths)).toBeLessThanOrEqual(4);
  });

  it("ends a linked list written with oneOf and a nullable type list", () => {
    const schema = {
      $defs: {
        Cell: {
          type: ["object", "null"],
          properties: { head: { type: "string" }, tail: { $ref: "#/$defs/Cell" } },
          required: ["head", "tail"],
        },
        Wrapped: { oneOf: [{ $ref: "#/$defs/Cell" }, { type: "string", maxLength: 0 }] },
      },
      type: "object",
      properties: { cells: { $ref: "#/$defs/Cell" }, wrapped: { $ref: "#/$defs/Wrapped" } },
      required: ["cells", "wrapped"],
    };
    const depths = synthesizeAll(schema).map((value) =>
      depthThrough((value as { cells: unknown }).cells, ["tail"]),
    );
    expect(Math.max(...depths)).toBeGreaterThan(1);
  });

  it("handles mutually recursive filters and conditions", () => {
    const schema = {
      type: "object",
      properties: { where: { $ref: "#/$defs/Filter" }, limit: { type: "integer", minimum: 1, maximum: 50 } },
      required: ["where"],
      $defs: {
        Filter: {
          type: "object",
          properties: {
            and: { type: "array", items: { $ref: "#/$defs/Filter" } },
            or: { type: "array", items: { $ref: "#/$defs/Filter" }, minItems: 1 },
            not: { $ref: "#/$defs/Filter" },
            field: { $ref: "#/$defs/Condition" },
          },
          additionalProperties: false,
        },
        Condition: {
          type: "object",
          properties: {
            path: { type: "string", pattern: "^[a-z]+(\\.[a-z]+)*$" },
            op: { enum: ["eq", "ne", "lt", "gt", "in"] },
            value: { anyOf: [{ type: "string" }, { type: "number" }, { $ref: "#/$defs/Filter" }] },
          },
          required: ["path", "op", "value"],
        },
      },
    };
    const depths = synthesizeAll(schema).map((value) =>
      depthThrough((value as { where: unknown }).where, ["and", "or", "not", "field", "value"]),
    );
    expect(Math.max(...depths)).toBeGreaterThan(1);
    const again = (seed: number): unknown =>
      synthesize(schema, { random: createRandom(seed), idSeed: "same" });
    for (const seed of [4, 5, 6]) expect(again(seed)).toEqual(again(seed));
  });

  it("handles nested comments with replies, an optional parent and sibling keywords beside $ref", () => {
    const schema = {
      type: "object",
      properties: { thread: { type: "array", items: { $ref: "#/$defs/Comment" }, minItems: 1 } },
      required: ["thread"],
      $defs: {
        Comment: {
          type: "object",
          properties: {
            id: { type: "string", format: "uuid" },
            author: { type: "string", minLength: 1 },
            body: { type: "string", maxLength: 280 },
            replies: { type: "array", items: { $ref: "#/$defs/Comment", description: "a reply" } },
            parent: {
              anyOf: [{ $ref: "#/$defs/Comment" }, { type: "null" }],
              description: "what it answers",
            },
            score: { $ref: "#/$defs/Score", minimum: 0 },
          },
          required: ["id", "author", "body", "replies"],
        },
        Score: { type: "integer", maximum: 10 },
      },
    };
    const depths = synthesizeAll(schema).map((value) =>
      Math.max(
        ...(value as { thread: unknown[] }).thread.map((comment) => depthThrough(comment, ["replies"])),
      ),
    );
    expect(Math.max(...depths)).toBeGreaterThan(1);
  });

  it("forces another level for a required recursive property, choosing the branch that stops", () => {
    const schema = {
      $defs: {
        Expr: {
          oneOf: [
            {
              type: "object",
              properties: { literal: { type: "number" } },
              required: ["literal"],
              additionalProperties: false,
            },
            {
              type: "object",
              properties: {
                op: { enum: ["+", "-", "*"] },
                left: { $ref: "#/$defs/Expr" },
                right: { $ref: "#/$defs/Expr" },
              },
              required: ["op", "left", "right"],
              additionalProperties: false,
            },
          ],
        },
      },
      type: "object",
      properties: { expression: { $ref: "#/$defs/Expr" } },
      required: ["expression"],
    };
    const depths = synthesizeAll(schema).map((value) =>
      depthThrough((value as { expression: unknown }).expression, ["left", "right"]),
    );
    expect(Math.max(...depths)).toBeGreaterThan(1);
  });

  it("follows references with escaped and percent-encoded names, and allOf mixing references", () => {
    const schema = {
      $defs: {
        "a/b": { type: "object", properties: { slash: { type: "integer" } }, required: ["slash"] },
        "t~x": { type: "object", properties: { tilde: { const: true } }, required: ["tilde"] },
        "with space": {
          type: "object",
          properties: { spaced: { type: "string", format: "email" } },
          required: ["spaced"],
        },
      },
      allOf: [
        { $ref: "#/$defs/a~1b" },
        { $ref: "#/$defs/t~0x" },
        { $ref: "#/$defs/with%20space" },
        { properties: { own: { type: "boolean" } }, required: ["own"] },
      ],
      unevaluatedProperties: false,
    };
    for (const value of synthesizeAll(schema))
      expect(Object.keys(value as object).sort()).toEqual(["own", "slash", "spaced", "tilde"]);
  });

  it("stays small and valid when every node may have many recursive children", () => {
    const schema = {
      $defs: {
        Json: {
          anyOf: [
            { type: "string" },
            { type: "number" },
            { type: "boolean" },
            { type: "null" },
            { type: "array", items: { $ref: "#/$defs/Json" }, minItems: 2 },
            { type: "object", additionalProperties: { $ref: "#/$defs/Json" }, minProperties: 2 },
          ],
        },
      },
      type: "object",
      properties: Object.fromEntries(["a", "b", "c", "d", "e"].map((key) => [key, { $ref: "#/$defs/Json" }])),
      required: ["a", "b", "c", "d", "e"],
    };
    const values = synthesizeAll(schema);
    for (const value of values) expect(JSON.stringify(value).length).toBeLessThan(20_000);
  });

  it("terminates on a schema that admits no finite value", () => {
    const schema = {
      $defs: { Loop: { type: "object", properties: { next: { $ref: "#/$defs/Loop" } }, required: ["next"] } },
      $ref: "#/$defs/Loop",
    };
    const value = synthesize(schema, { random: createRandom(1), idSeed: "loop" });
    expect(JSON.stringify(value).length).toBeLessThan(10_000);
  });

  it("resolves references against an explicit root", () => {
    const root = {
      $defs: { Leaf: { type: "object", properties: { leaf: { const: 1 } }, required: ["leaf"] } },
    };
    const value = synthesize(
      { type: "array", items: { $ref: "#/$defs/Leaf" }, minItems: 1 },
      { random: createRandom(3), idSeed: "root", root },
    );
    expect((value as unknown[])[0]).toEqual({ leaf: 1 });
  });
});
