import { validate as validateOpenApi } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import {
  Catalog,
  embedSchema,
  exportOpenApi,
  LoadReport,
  loadCatalog,
  toolsFromDocument,
} from "../../src/catalog/index.js";
import { canonicalJson } from "../../src/core/index.js";
import { emulatedToolSchema } from "../../src/models/tool-calls.js";
import { CallValidator, SchemaCompiler } from "../../src/validate/index.js";
import { toolFixture } from "../helpers/paths.js";

/** A small API with the recursive shapes real specs have: a tree, comments with replies, a filter language. */
const RECURSIVE_API = {
  openapi: "3.0.3",
  info: { title: "Recursive", version: "1" },
  paths: {
    "/comments": {
      post: {
        operationId: "post_comment",
        requestBody: {
          required: true,
          content: { "application/json": { schema: { $ref: "#/components/schemas/Comment" } } },
        },
        responses: {
          "200": {
            description: "ok",
            content: { "application/json": { schema: { $ref: "#/components/schemas/Comment" } } },
          },
        },
      },
    },
    "/search": {
      post: {
        operationId: "search",
        parameters: [{ name: "limit", in: "query", schema: { type: "integer" } }],
        requestBody: {
          content: { "application/json": { schema: { $ref: "#/components/schemas/Filter" } } },
        },
        responses: { "200": { description: "ok" } },
      },
    },
  },
  components: {
    schemas: {
      Comment: {
        type: "object",
        required: ["text"],
        properties: {
          text: { type: "string" },
          author: { $ref: "#/components/schemas/User" },
          replies: { type: "array", items: { $ref: "#/components/schemas/Comment" } },
        },
      },
      User: { type: "object", properties: { name: { type: "string" } } },
      Filter: {
        type: "object",
        properties: {
          and: { type: "array", items: { $ref: "#/components/schemas/Filter" } },
          not: { $ref: "#/components/schemas/Condition" },
          field: { type: "string" },
        },
      },
      Condition: {
        type: "object",
        nullable: true,
        properties: { negate: { $ref: "#/components/schemas/Filter" } },
      },
    },
  },
};

function load(document: unknown): Catalog {
  const report = new LoadReport();
  return new Catalog(
    toolsFromDocument(structuredClone(document), { file: "recursive.json", report }),
    report,
  );
}

describe("recursive schemas", () => {
  it("keep a self-reference as $defs + $ref: the canonical schema written out", async () => {
    const catalog = await loadCatalog([toolFixture("bad/circular.yaml")]);
    expect(catalog.report.skipped).toEqual([]);
    const node = {
      type: "object",
      properties: { children: { type: "array", items: { $ref: "#/$defs/Node" } } },
    };
    expect(catalog.get("make_tree")?.inputSchema).toEqual({
      ...node,
      additionalProperties: false,
      $defs: { Node: node },
    });
  });

  it("inline what is not recursive and name each recursive definition once, also through mutual recursion", () => {
    const catalog = load(RECURSIVE_API);
    const post = catalog.get("post_comment");
    const comment = {
      type: "object",
      required: ["text"],
      properties: {
        text: { type: "string" },
        author: { type: "object", properties: { name: { type: "string" } } },
        replies: { type: "array", items: { $ref: "#/$defs/Comment" } },
      },
    };
    expect(post?.inputSchema).toEqual({
      ...comment,
      additionalProperties: false,
      $defs: { Comment: comment },
    });
    expect(post?.outputSchema).toEqual({ ...comment, $defs: { Comment: comment } });

    // Filter -> Condition -> Filter: the walk meets Filter again first, so Filter is the definition and
    // Condition (nullable, 3.0) is inlined inside it.
    const search = catalog.get("search");
    const filterDef = (search?.inputSchema.$defs as Record<string, Record<string, unknown>> | undefined)
      ?.Filter;
    expect(Object.keys(search?.inputSchema.$defs as object)).toEqual(["Filter"]);
    expect(filterDef?.properties).toEqual({
      and: { type: "array", items: { $ref: "#/$defs/Filter" } },
      not: { type: ["object", "null"], properties: { negate: { $ref: "#/$defs/Filter" } } },
      field: { type: "string" },
    });
    // The recursive body is an object schema, so its properties sit beside the query parameter.
    expect(search?.inputSchema.properties).toMatchObject({ limit: { type: "integer" } });
  });

  it("validate through the recursion and name the path and the definition in messages", () => {
    const catalog = load(RECURSIVE_API);
    const validator = new CallValidator();
    const deep = { text: "a", replies: [{ text: "b", replies: [{ text: "c", replies: [] }] }] };
    expect(validator.validate(catalog, { name: "post_comment", arguments: deep }).valid).toBe(true);
    const bad = validator.validate(catalog, {
      name: "post_comment",
      arguments: { text: "a", replies: [{ text: "b", replies: [{ replies: "none" }] }] },
    });
    expect(bad.valid).toBe(false);
    expect(bad.errors.map((error) => error.message)).toEqual([
      '"replies[0].replies[0]" is missing its required field "text"',
      '"replies[0].replies[0].replies" must be an array whose items are each a "Comment" value, got a string "none"',
    ]);
  });

  it("round-trip through OpenAPI 3.1 losslessly, with the definitions in components/schemas", async () => {
    const catalog = load(RECURSIVE_API);
    const document = JSON.parse(JSON.stringify(exportOpenApi(catalog))) as Record<string, any>;
    expect(Object.keys(document.components.schemas)).toEqual(["Comment", "Filter"]);
    expect(JSON.stringify(document.paths)).not.toContain("#/$defs/");
    const back = new Catalog(toolsFromDocument(document, { file: "exported.json" }));
    for (const tool of catalog.tools) expect(canonicalJson(back.get(tool.name))).toBe(canonicalJson(tool));
    const verdict = await validateOpenApi(structuredClone(document) as never);
    expect(verdict.valid ? [] : verdict.errors).toEqual([]);
  });

  it("two different definitions with one name are both exported (one renamed) and still validate the same", () => {
    const other = structuredClone(RECURSIVE_API) as typeof RECURSIVE_API & Record<string, any>;
    other.paths = {
      "/c2": { post: { ...other.paths["/comments"].post, operationId: "post_comment_v2" } },
    } as never;
    (other.components.schemas.Comment.properties as Record<string, unknown>).score = { type: "number" };
    const catalog = new Catalog([...load(RECURSIVE_API).tools, ...load(other).tools]);
    const document = JSON.parse(JSON.stringify(exportOpenApi(catalog))) as Record<string, any>;
    expect(Object.keys(document.components.schemas).sort()).toEqual(["Comment", "Comment_2", "Filter"]);
    const back = new Catalog(toolsFromDocument(document));
    const compiler = new SchemaCompiler();
    const value = { text: "a", replies: [{ text: "b", score: "high" }] };
    for (const name of ["post_comment", "post_comment_v2"]) {
      const before = compiler.compile(catalog.get(name)?.inputSchema ?? {})(value);
      const after = compiler.compile(back.get(name)?.inputSchema ?? {})(value);
      expect(after).toBe(before);
    }
  });

  it("embed in a larger schema (structured answers, emulated tool calls) with their definitions at its root", () => {
    const catalog = load(RECURSIVE_API);
    const tool = catalog.get("post_comment");
    const embedded = embedSchema(tool?.inputSchema ?? {}, "t0_");
    expect(Object.keys(embedded.definitions)).toEqual(["t0_Comment"]);
    expect(JSON.stringify(embedded.schema)).toContain('"$ref":"#/$defs/t0_Comment"');

    const schema = emulatedToolSchema(
      catalog.tools.map((t) => ({ name: t.name, description: "", inputSchema: t.inputSchema })),
    );
    expect(Object.keys(schema.$defs as object).sort()).toEqual(["t0_Comment", "t1_Filter"]);
    const validate = new SchemaCompiler().compile(schema);
    const answer = (args: unknown) => ({
      content: "",
      tool_calls: [{ name: "post_comment", arguments: args }],
    });
    expect(validate(answer({ text: "a", replies: [{ text: "b", replies: [] }] }))).toBe(true);
    expect(validate(answer({ text: "a", replies: [{ replies: [] }] }))).toBe(false);
  });

  it("in function-style tools: $defs cycles and a reference to the root itself", () => {
    const report = new LoadReport();
    const tools = toolsFromDocument(
      [
        {
          name: "make_menu",
          inputSchema: {
            type: "object",
            properties: { root: { $ref: "#/$defs/Item" } },
            $defs: {
              Item: {
                type: "object",
                properties: {
                  label: { type: "string" },
                  sub: { type: "array", items: { $ref: "#/$defs/Item" } },
                },
              },
            },
          },
        },
        {
          name: "nest",
          parameters: { type: "object", properties: { inner: { $ref: "#" }, leaf: { type: "boolean" } } },
        },
      ],
      { report },
    );
    const catalog = new Catalog(tools, report);
    expect(report.skipped).toEqual([]);
    expect(catalog.get("make_menu")?.inputSchema.$defs).toEqual({
      Item: {
        type: "object",
        properties: { label: { type: "string" }, sub: { type: "array", items: { $ref: "#/$defs/Item" } } },
      },
    });
    const validator = new CallValidator();
    expect(
      validator.validate(catalog, { name: "nest", arguments: { inner: { inner: { leaf: true } } } }).valid,
    ).toBe(true);
    expect(
      validator.validate(catalog, { name: "nest", arguments: { inner: { inner: { leaf: 1 } } } }).valid,
    ).toBe(false);
  });

  it("survive a long chain of references without overflowing the stack", () => {
    const schemas: Record<string, unknown> = {};
    for (let index = 0; index < 5_000; index++)
      schemas[`S${index}`] = { $ref: `#/components/schemas/S${index + 1}` };
    schemas.S5000 = { type: "object", properties: { next: { $ref: "#/components/schemas/S0" } } };
    const document = {
      openapi: "3.1.0",
      info: { title: "chain", version: "1" },
      paths: {
        "/a": {
          post: {
            operationId: "a",
            requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/S0" } } } },
          },
        },
      },
      components: { schemas },
    };
    const report = new LoadReport();
    const tools = toolsFromDocument(document, { report });
    // Either it loads, or the operation is skipped with a clear reason: never a crash.
    expect(tools.length + report.skipped.length).toBe(1);
    if (report.skipped[0]) expect(report.skipped[0].code).toBe("SCHEMA_TOO_DEEP");
  });

  it("keep a large shared component as one definition instead of copying it into every place", () => {
    const big: Record<string, unknown> = {};
    for (let index = 0; index < 120; index++) big[`field${index}`] = { type: "string", enum: ["a", "b"] };
    const document = {
      openapi: "3.1.0",
      info: { title: "big", version: "1" },
      paths: {
        "/a": {
          post: {
            operationId: "a",
            requestBody: {
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    properties: {
                      x: { $ref: "#/components/schemas/Big" },
                      y: { $ref: "#/components/schemas/Big" },
                    },
                  },
                },
              },
            },
          },
        },
        "/b": {
          post: {
            operationId: "b",
            requestBody: {
              content: { "application/json": { schema: { $ref: "#/components/schemas/Small" } } },
            },
          },
        },
      },
      components: {
        schemas: {
          Big: { type: "object", properties: big },
          Small: { type: "object", properties: { s: { type: "string" } } },
        },
      },
    };
    const catalog = load(document);
    const a = catalog.get("a")?.inputSchema;
    expect(a?.properties).toEqual({ x: { $ref: "#/$defs/Big" }, y: { $ref: "#/$defs/Big" } });
    expect(Object.keys((a?.$defs as Record<string, unknown>) ?? {})).toEqual(["Big"]);
    // Small schemas are still inlined, so most tools stand alone without definitions.
    expect(catalog.get("b")?.inputSchema).toEqual({
      type: "object",
      properties: { s: { type: "string" } },
      additionalProperties: false,
    });
    const validator = new CallValidator();
    expect(
      validator.validate(catalog, { name: "a", arguments: { x: { field3: "a" }, y: { field7: "b" } } }).valid,
    ).toBe(true);
    expect(
      validator.validate(catalog, { name: "a", arguments: { x: { field3: "c" } } }).errors[0]?.path,
    ).toBe("/x/field3");
  });

  it("a hostile, very deeply nested operation is skipped and the others still load", () => {
    let deep: Record<string, unknown> = { type: "string" };
    for (let level = 0; level < 3_000; level++) deep = { type: "object", properties: { a: deep } };
    const body = (schema: unknown) => ({ requestBody: { content: { "application/json": { schema } } } });
    const document = {
      openapi: "3.1.0",
      info: { title: "deep", version: "1" },
      paths: {
        "/deep": { post: { operationId: "deep", ...body(deep) } },
        "/fine": {
          post: { operationId: "fine", ...body({ type: "object", properties: { b: { type: "string" } } }) },
        },
      },
    };
    const report = new LoadReport();
    const tools = toolsFromDocument(document, { report });
    expect(tools.map((tool) => tool.name)).toEqual(["fine"]);
    expect(report.skipped).toEqual([
      expect.objectContaining({
        code: "SCHEMA_TOO_DEEP",
        pointer: expect.stringMatching(/^\/paths\/~1deep/),
      }),
    ]);
  });
});
