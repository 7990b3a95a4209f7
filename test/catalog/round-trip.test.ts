import { readdirSync } from "node:fs";
import { join } from "node:path";
import { validate as validateOpenApi } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { Catalog, exportOpenApi, loadToolFile, toolsFromDocument } from "../../src/catalog/index.js";
import { canonicalJson } from "../../src/core/index.js";
import { BFCL_DIR } from "../helpers/bfcl.js";
import { toolFixture } from "../helpers/paths.js";

/** canonical -> OpenAPI 3.1 (as JSON text) -> canonical must give back exactly the same tools. */
function roundTrip(catalog: Catalog): { document: Record<string, unknown>; back: Catalog } {
  const document = JSON.parse(JSON.stringify(exportOpenApi(catalog))) as Record<string, unknown>;
  return { document, back: new Catalog(toolsFromDocument(document, { file: "exported.openapi.json" })) };
}

const FIXTURES = [
  "petstore.openapi.yaml",
  "orders.openapi.json",
  "openai-tools.json",
  "functions.json",
  "anthropic-tools.json",
  "mcp-tools.json",
  "bfcl-tools.json",
];

describe("round trip through OpenAPI 3.1", () => {
  for (const fixture of FIXTURES) {
    it(`is lossless for ${fixture}`, async () => {
      const catalog = new Catalog(await loadToolFile(toolFixture(fixture)));
      const { document, back } = roundTrip(catalog);
      expect(back.size).toBe(catalog.size);
      for (const tool of catalog.tools) expect(canonicalJson(back.get(tool.name))).toBe(canonicalJson(tool));
      // What we export is a valid OpenAPI 3.1 document by the official schema.
      const verdict = await validateOpenApi(structuredClone(document) as never);
      expect(verdict.valid ? [] : verdict.errors).toEqual([]);
    });
  }

  it("is lossless for every BFCL tool (single-turn questions and multi-turn docs)", async () => {
    const tools = [
      ...(
        await Promise.all(
          ["simple", "multiple", "parallel"].map((category) =>
            loadToolFile(join(BFCL_DIR, `BFCL_v3_${category}.json`)),
          ),
        )
      ).flat(),
      ...(
        await Promise.all(
          readdirSync(join(BFCL_DIR, "multi_turn_func_doc")).map((file) =>
            loadToolFile(join(BFCL_DIR, "multi_turn_func_doc", file)),
          ),
        )
      ).flat(),
    ];
    expect(tools.length).toBe(1157 + 129);
    // Tool names repeat across BFCL questions, so go through the catalog in name-unique batches.
    const batches: Catalog[] = [];
    for (const tool of tools) {
      const batch =
        batches.find((candidate) => !candidate.has(tool.name)) ?? batches[batches.push(new Catalog()) - 1];
      batch?.add(tool);
    }
    let checked = 0;
    for (const catalog of batches) {
      const { back } = roundTrip(catalog);
      for (const tool of catalog.tools) {
        expect(canonicalJson(back.get(tool.name))).toBe(canonicalJson(tool));
        checked++;
      }
    }
    expect(checked).toBe(tools.length);
  });

  it("writes Gecko's shape: one POST per tool, the arguments as body, a oneOf success/error 200", async () => {
    const catalog = new Catalog(await loadToolFile(toolFixture("mcp-tools.json")));
    const document = exportOpenApi(catalog, { title: "Workspace" });
    expect(document.openapi).toBe("3.1.0");
    expect(document.info).toEqual({
      title: "Workspace",
      version: "1.0.0",
      "x-terrarium": { schemaVersion: 1 },
    });
    const paths = document.paths as Record<string, { post: Record<string, unknown> }>;
    expect(Object.keys(paths)).toEqual(["/read_file", "/run_query", "/noop"]);
    const operation = paths["/read_file"]?.post as Record<string, any>;
    expect(operation.operationId).toBe("read_file");
    expect(operation.summary).toBe("Read a file");
    expect(operation.requestBody.content["application/json"].schema).toEqual(
      catalog.get("read_file")?.inputSchema,
    );
    const oneOf = operation.responses["200"].content["application/json"].schema.oneOf;
    expect(oneOf[0]).toEqual(catalog.get("read_file")?.outputSchema);
    expect(oneOf[1].required).toEqual(["error"]);
    expect(operation["x-terrarium-effect"]).toBe("read");
  });

  it("reads a hand-written Gecko-style document (no terrarium extensions) with the success branch kept whole", () => {
    const tools = toolsFromDocument({
      openapi: "3.1.0",
      info: { title: "gecko", version: "1" },
      paths: {
        "/calculate_area": {
          post: {
            operationId: "calculate_area",
            description: "Area of a rectangle.",
            requestBody: {
              content: {
                "application/json": { schema: { type: "object", properties: { w: { type: "number" } } } },
              },
            },
            responses: {
              "200": {
                description: "ok",
                content: {
                  "application/json": {
                    schema: {
                      oneOf: [
                        { type: "object", properties: { area: { type: "number" } } },
                        { type: "object", properties: { error: { type: "string" } } },
                      ],
                    },
                  },
                },
              },
            },
          },
        },
      },
    });
    expect(tools[0]).toMatchObject({ name: "calculate_area", effect: "read", origin: { format: "openapi" } });
    expect(tools[0]?.outputSchema).toMatchObject({ oneOf: [{ type: "object" }, { type: "object" }] });
  });
});
