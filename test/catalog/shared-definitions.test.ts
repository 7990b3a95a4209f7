import { describe, expect, it } from "vitest";
import {
  Catalog,
  exportOpenApi,
  LoadReport,
  PROMPT_SCHEMA_CHARS,
  schemaForPrompt,
  toolsFromDocument,
} from "../../src/catalog/index.js";
import { canonicalJson } from "../../src/core/index.js";
import { getAtPointer } from "../../src/core/json-pointer.js";
import { listToolsPage } from "../../src/mcp/index.js";
import { refsIn, textHeavyBase, webOfSchemas } from "./web-of-schemas.js";

describe("shared definitions are written once per document", () => {
  const document = webOfSchemas(120, 40);
  const catalog = new Catalog(toolsFromDocument(document, { file: "web.json", report: new LoadReport() }));

  /** The definitions the tools carry between them, each name once. */
  const definitionNames = () =>
    [
      ...new Set(
        catalog.tools.flatMap((tool) => [
          ...Object.keys((tool.inputSchema as { $defs?: object }).$defs ?? {}),
          ...Object.keys((tool.outputSchema as { $defs?: object } | undefined)?.$defs ?? {}),
        ]),
      ),
    ].sort();

  it("the listing (tools list --json, GET /tools) keeps each definition once, under its own $defs", () => {
    expect(catalog.size).toBe(120);
    const listing = catalog.toJSON();
    const text = JSON.stringify(listing);
    // Each tool standing alone repeats every definition it reaches: what the listing used to be.
    const standalone = JSON.stringify({ tools: catalog.tools }).length;
    expect(text.length * 5).toBeLessThan(standalone);
    expect(Object.keys(listing.$defs ?? {}).sort()).toEqual(definitionNames());
    for (const tool of listing.tools)
      expect((tool.inputSchema as Record<string, unknown>).$defs).toBeUndefined();
    // Every reference is a pointer into the listing itself.
    const refs = refsIn(listing);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(getAtPointer(listing, ref.slice(1)), ref).toBeDefined();
    // Built once: a second listing is the same object.
    expect(catalog.toJSON()).toBe(listing);
    // The tools themselves still stand alone (the validator and prompts read them).
    const first = catalog.get("update_thing_0")?.inputSchema as { $defs?: object } | undefined;
    expect(Object.keys(first?.$defs ?? {}).length).toBe(definitionNames().length);
  });

  it("a saved listing is a tool file: read back, every tool has its schemas and their definitions", () => {
    // Fewer tools: a listing's tools are read one by one, each with the definitions it reaches.
    const small = new Catalog(
      toolsFromDocument(webOfSchemas(12, 40), { file: "web.json", report: new LoadReport() }),
    );
    const report = new LoadReport();
    const back = new Catalog(
      toolsFromDocument(JSON.parse(JSON.stringify(small.toJSON())), { file: "listing.json", report }),
    );
    expect(report.toJSON().warnings).toEqual([]);
    expect(back.names).toEqual(small.names);
    for (const tool of small.tools) {
      const read = back.get(tool.name);
      expect(canonicalJson(read?.inputSchema)).toBe(canonicalJson(tool.inputSchema));
      expect(canonicalJson(read?.outputSchema)).toBe(canonicalJson(tool.outputSchema));
    }
  });

  it("the OpenAPI export keeps each definition once in components/schemas and reads back to the same tools", () => {
    const exported = JSON.parse(JSON.stringify(exportOpenApi(catalog)));
    expect(JSON.stringify(exported).length * 5).toBeLessThan(JSON.stringify({ tools: catalog.tools }).length);
    expect(Object.keys(exported.components.schemas).sort()).toEqual(definitionNames());
    const back = new Catalog(toolsFromDocument(exported, { file: "exported.json" }));
    expect(back.size).toBe(catalog.size);
    for (const tool of catalog.tools) expect(canonicalJson(back.get(tool.name))).toBe(canonicalJson(tool));
  });

  it("MCP tools/list pages by size; each tool's schema stands alone with the definitions it reaches", () => {
    const maxChars = 200_000;
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = listToolsPage(catalog.tools, cursor, maxChars);
      pages++;
      const chars = JSON.stringify(page.tools).length;
      expect(page.tools.length === 1 || chars <= maxChars).toBe(true);
      for (const tool of page.tools) {
        seen.push(tool.name);
        for (const ref of refsIn(tool.inputSchema))
          expect(getAtPointer(tool.inputSchema, ref.slice(1)), ref).toBeDefined();
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(pages).toBeGreaterThan(1);
    expect(seen).toEqual(catalog.names);
    expect(() => listToolsPage(catalog.tools, "nope")).toThrow(/cursor "nope" is not one this server gave/);
  });
});

describe("a shared schema of few objects and much text", () => {
  it("is kept once as a definition, so the listing and the export grow with the document, not tools × text", () => {
    const document = textHeavyBase(200, 20);
    const documentChars = JSON.stringify(document).length;
    const catalog = new Catalog(toolsFromDocument(document, { file: "text.json", report: new LoadReport() }));
    expect(catalog.size).toBe(200);
    // Inlined, the 50 KB mapping would be in each of the 400 schemas: 20 MB for a 60 KB document.
    const listing = JSON.stringify(catalog.toJSON());
    expect(listing.length).toBeLessThan(3 * documentChars);
    expect(Object.keys(catalog.toJSON().$defs ?? {})).toEqual(["base"]);
    const exported = JSON.stringify(exportOpenApi(catalog));
    expect(exported.length).toBeLessThan(3 * documentChars);
    const back = new Catalog(toolsFromDocument(JSON.parse(exported), { file: "exported.json" }));
    for (const tool of catalog.tools) expect(canonicalJson(back.get(tool.name))).toBe(canonicalJson(tool));
  });
});

describe("a tool schema in a prompt", () => {
  it("is the schema itself when small, and its shared definitions only as deep as fits when large", () => {
    const small = { type: "object", properties: { id: { type: "string" } } };
    expect(schemaForPrompt(small)).toBe(small);
    const catalog = new Catalog(
      toolsFromDocument(webOfSchemas(3, 40), { file: "web.json", report: new LoadReport() }),
    );
    const schema = catalog.get("update_thing_0")?.inputSchema;
    expect(JSON.stringify(schema).length).toBeGreaterThan(5 * PROMPT_SCHEMA_CHARS);
    const shown = schemaForPrompt(schema);
    const text = JSON.stringify(shown);
    expect(text.length).toBeLessThanOrEqual(PROMPT_SCHEMA_CHARS);
    expect(text).not.toContain('"$defs"');
    expect(text).not.toContain('"$ref"');
    // The arguments themselves are shown; what is cut is named.
    expect(text).toContain('"field_0"');
    expect(text).toMatch(/Thing\d+: a shared definition, not shown here/);
  });
});

describe("a loop made only of references", () => {
  it("costs the operations that use it, not the file", () => {
    const document = {
      openapi: "3.1.0",
      info: { title: "loop", version: "1" },
      paths: {
        "/good": {
          post: {
            operationId: "good",
            requestBody: {
              content: { "application/json": { schema: { $ref: "#/components/schemas/Fine" } } },
            },
            responses: { "200": { description: "ok" } },
          },
        },
        "/bad": {
          post: {
            operationId: "bad",
            requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/A" } } } },
            responses: { "200": { description: "ok" } },
          },
        },
      },
      components: {
        schemas: {
          Fine: { type: "object", properties: { name: { type: "string" } } },
          A: { $ref: "#/components/schemas/B" },
          B: { $ref: "#/components/schemas/C", description: "annotations do not make a schema" },
          C: { $ref: "#/components/schemas/A" },
        },
      },
    };
    const report = new LoadReport();
    const catalog = new Catalog(toolsFromDocument(document, { file: "loop.json", report }));
    expect(catalog.names).toEqual(["good"]);
    expect(report.skipped).toEqual([
      expect.objectContaining({
        code: "REF_CIRCULAR",
        file: "loop.json",
        pointer: "/paths/~1bad/post/requestBody/content/application~1json/schema",
        message:
          '$ref "#/components/schemas/A" starts a loop of references that never reaches a schema: #/components/schemas/A → #/components/schemas/B → #/components/schemas/C → #/components/schemas/A',
      }),
    ]);
  });
});
