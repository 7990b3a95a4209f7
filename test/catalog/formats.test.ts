import { describe, expect, it } from "vitest";
import {
  Catalog,
  LoadReport,
  loadCatalog,
  loadToolFile,
  type Tool,
  toolsFromDocument,
} from "../../src/catalog/index.js";
import { toolFixture } from "../helpers/paths.js";

const byName = (tools: Tool[]) => Object.fromEntries(tools.map((tool) => [tool.name, tool]));

const petstoreTools = byName(await loadToolFile(toolFixture("petstore.openapi.yaml")));
const ordersTools = byName(await loadToolFile(toolFixture("orders.openapi.json")));

describe("OpenAPI 3.0 (YAML)", () => {
  const tools = petstoreTools;

  it("makes one tool per operation, named by operationId", () => {
    expect(Object.keys(tools)).toEqual(["listPets", "createPet", "showPetById", "deletePet", "updatePet"]);
  });

  it("merges query parameters (refs resolved, nullable converted) into one closed argument object", () => {
    expect(tools.listPets).toEqual({
      name: "listPets",
      title: "List pets",
      description: "Returns the pets in the store, optionally filtered by tag.",
      inputSchema: {
        type: "object",
        properties: {
          limit: {
            type: "integer",
            minimum: 1,
            maximum: 100,
            default: 20,
            description: "How many pets to return",
          },
          tag: { type: ["string", "null"], description: "Only pets with this tag" },
        },
        additionalProperties: false,
      },
      outputSchema: {
        type: "array",
        items: {
          allOf: [
            {
              type: "object",
              required: ["name"],
              properties: {
                name: { type: "string", minLength: 1, examples: ["Rex"] },
                tag: { type: ["string", "null"] },
              },
            },
            { type: "object", required: ["id"], properties: { id: { type: "integer", format: "int64" } } },
          ],
        },
      },
      effect: "read",
      effectSource: "inferred",
      origin: {
        format: "openapi",
        file: toolFixture("petstore.openapi.yaml"),
        pointer: "/paths/~1pets/get",
        http: {
          method: "GET",
          path: "/pets",
          parameters: [
            { name: "limit", in: "query" },
            { name: "tag", in: "query" },
          ],
          body: "none",
          servers: ["https://petstore.example.com/v1"],
        },
      },
    });
  });

  it("uses a 2xx response when there is no 200, and the body as the arguments for POST", () => {
    expect(tools.createPet?.inputSchema).toEqual({
      type: "object",
      required: ["name"],
      properties: {
        name: { type: "string", minLength: 1, examples: ["Rex"] },
        tag: { type: ["string", "null"] },
      },
      additionalProperties: false,
    });
    expect(tools.createPet?.outputSchema).toEqual(tools.showPetById?.outputSchema);
    expect(tools.createPet?.effect).toBe("write");
  });

  it("applies path-level parameters, converts boolean exclusiveMinimum, and skips Authorization headers", () => {
    expect(tools.deletePet?.inputSchema).toEqual({
      type: "object",
      properties: {
        petId: { type: "integer", format: "int64", exclusiveMinimum: 0 },
        "X-Request-Id": { type: "string", format: "uuid" },
      },
      required: ["petId"],
      additionalProperties: false,
    });
    expect(tools.deletePet?.outputSchema).toBeUndefined();
    expect(tools.deletePet?.origin.http?.parameters).toEqual([
      { name: "petId", in: "path" },
      { name: "X-Request-Id", in: "header" },
    ]);
  });

  it("merges an object body with path parameters", () => {
    expect(tools.updatePet?.inputSchema.required).toEqual(["petId", "name"]);
    expect(Object.keys(tools.updatePet?.inputSchema.properties as object)).toEqual(["petId", "name", "tag"]);
    expect(tools.updatePet?.origin.http?.body).toBe("merged");
    expect(tools.updatePet?.effect).toBe("write");
  });
});

describe("OpenAPI 3.1 (JSON)", () => {
  const tools = ordersTools;

  it("resolves refs anywhere in the document and merges $ref siblings", () => {
    expect(tools.search_orders?.inputSchema.properties).toEqual({
      status: { type: "string", enum: ["pending", "shipped", "delivered"] },
      from: { type: "string", format: "date" },
      to: { type: ["string", "null"], format: "date" },
    });
    expect(tools.search_orders?.outputSchema).toEqual({
      type: "array",
      items: {
        type: "object",
        properties: {
          id: { type: "string" },
          status: {
            type: "string",
            enum: ["pending", "shipped", "delivered"],
            description: "Where the order is",
          },
        },
      },
    });
  });

  it("infers a POST search as a read and a POST add as a write", () => {
    expect(tools.search_orders?.effect).toBe("read");
    expect(tools.add_items?.effect).toBe("write");
  });

  it("puts a non-object body beside the parameters as the `body` argument", () => {
    expect(tools.add_items?.inputSchema).toEqual({
      type: "object",
      properties: {
        order_id: { type: "string" },
        body: { type: "array", minItems: 1, items: { type: "string" } },
      },
      required: ["order_id", "body"],
      additionalProperties: false,
    });
    expect(tools.add_items?.origin.http).toMatchObject({ body: "argument", bodyArgument: "body" });
  });
});

describe("function-style formats", () => {
  it("reads OpenAI chat tools, Responses-API tools and tools without parameters", async () => {
    const tools = byName(await loadToolFile(toolFixture("openai-tools.json")));
    expect(tools.get_weather?.inputSchema).toEqual({
      type: "object",
      properties: {
        city: { type: "string" },
        unit: { type: ["string", "null"], enum: ["celsius", "fahrenheit", null] },
      },
      required: ["city", "unit"],
      additionalProperties: false,
    });
    expect(tools.get_weather?.origin).toEqual({
      format: "openai",
      file: toolFixture("openai-tools.json"),
      pointer: "/0",
    });
    expect(tools.book_table?.inputSchema).toEqual({
      type: "object",
      properties: {
        restaurant_id: { type: "string" },
        party: { type: "object", properties: { adults: { type: "integer", minimum: 1 } } },
        time: { type: "string", format: "date-time" },
      },
      required: ["restaurant_id", "party"],
      additionalProperties: false,
    });
    expect(tools.book_table?.effect).toBe("write");
    expect(tools.ping?.inputSchema).toEqual({ type: "object", properties: {}, additionalProperties: false });
  });

  it("reads bare draft-07 function definitions into 2020-12 (definitions inlined, tuple items as prefixItems)", async () => {
    const tools = byName(await loadToolFile(toolFixture("functions.json")));
    expect(tools.search_flights?.inputSchema).toEqual({
      type: "object",
      properties: {
        origin: { type: "string", pattern: "^[A-Z]{3}$" },
        destination: { type: "string", pattern: "^[A-Z]{3}$" },
        passengers: { type: "integer", minimum: 1, maximum: 9, default: 1 },
        window: {
          type: "array",
          prefixItems: [
            { type: "string", format: "date" },
            { type: "string", format: "date" },
          ],
          items: false,
        },
      },
      required: ["origin", "destination"],
      additionalProperties: false,
    });
    expect(tools.search_flights?.origin.format).toBe("function");
    // An explicit additionalProperties is the author's choice and is kept.
    expect(tools.cancel_booking?.inputSchema.additionalProperties).toBe(true);
    expect(tools.cancel_booking?.effect).toBe("write");
  });

  it("reads Anthropic tools", async () => {
    const [tool] = await loadToolFile(toolFixture("anthropic-tools.json"));
    expect(tool?.origin.format).toBe("anthropic");
    expect(tool?.effect).toBe("write");
    expect(tool?.inputSchema.required).toEqual(["to", "subject"]);
    expect(tool?.inputSchema.additionalProperties).toBe(false);
  });

  it("reads an MCP tools/list result with titles, output schemas and annotations as declared effects", async () => {
    const tools = byName(await loadToolFile(toolFixture("mcp-tools.json")));
    expect(tools.read_file).toMatchObject({
      title: "Read a file",
      effect: "read",
      effectSource: "declared",
      outputSchema: { type: "object", properties: { content: { type: "string" } }, required: ["content"] },
      origin: { format: "mcp", pointer: "/result/tools/0" },
    });
    expect(tools.run_query).toMatchObject({ effect: "write", effectSource: "declared" });
    expect(tools.noop).toMatchObject({ description: "", effect: "unknown", effectSource: "inferred" });
  });

  it("reads BFCL docs: Python and Java type names, array-level enums, response schemas", async () => {
    const tools = byName(await loadToolFile(toolFixture("bfcl-tools.json")));
    expect(tools["geo.distance"]?.inputSchema).toEqual({
      type: "object",
      properties: {
        coord1: { type: "array", items: { type: "number" }, description: "(lat, lon)" },
        coord2: { type: "array", items: { type: "number" } },
        unit: { type: "string", enum: ["km", "miles"], default: "km" },
      },
      required: ["coord1", "coord2"],
      additionalProperties: false,
    });
    expect(tools["ml.train"]?.inputSchema.properties).toEqual({
      data: {},
      options: { type: "object", description: "Options" },
      epochs: { type: "integer" },
      tags: { type: "array", items: { type: "string", enum: ["fast", "accurate"] } },
      initial: { type: "string" },
    });
    expect(tools["ml.train"]?.outputSchema).toEqual({
      type: "object",
      properties: { accuracy: { type: "number" } },
    });
    expect(tools["ml.train"]?.origin).toMatchObject({ format: "bfcl", pointer: "/1" });
  });

  it("reads a BFCL question line (tools under `function`) and mixed formats in one list", () => {
    const tools = toolsFromDocument([
      { type: "function", function: { name: "a", parameters: { type: "object", properties: {} } } },
      { name: "b", input_schema: { type: "object" } },
      { name: "c", inputSchema: { type: "object" } },
      { name: "d", parameters: { type: "dict", properties: { x: { type: "float" } } } },
    ]);
    expect(tools.map((tool) => `${tool.name}:${tool.origin.format}`)).toEqual([
      "a:openai",
      "b:anthropic",
      "c:mcp",
      "d:bfcl",
    ]);
    const question = toolsFromDocument({
      id: "simple_1",
      question: [],
      function: [{ name: "e", parameters: { type: "dict" } }],
    });
    expect(question[0]?.origin).toEqual({ format: "bfcl", pointer: "/function/0" });
  });
});

describe("catalog", () => {
  it("loads several sources into one catalog and finds the closest names", async () => {
    const catalog = await loadCatalog([toolFixture("openai-tools.json"), toolFixture("mcp-tools.json")]);
    expect(catalog.names).toEqual(["get_weather", "book_table", "ping", "read_file", "run_query", "noop"]);
    expect(catalog.closest("get_wether")).toEqual(["get_weather"]);
    expect(catalog.closest("readFile")).toEqual(["read_file"]);
    expect(catalog.closest("completely_different_thing")).toEqual([]);
  });

  it("lets effects be overridden", async () => {
    const catalog = await loadCatalog([toolFixture("mcp-tools.json")], { effects: { noop: "read" } });
    expect(catalog.get("noop")).toMatchObject({ effect: "read", effectSource: "declared" });
    expect(() => catalog.withEffects({ nope: "read" })).toThrow(/cannot set the effect of "nope"/);
  });

  it("serialises with a schemaVersion", async () => {
    const catalog = new Catalog(await loadToolFile(toolFixture("anthropic-tools.json")));
    expect(catalog.toJSON()).toEqual({ schemaVersion: 1, tools: catalog.tools });
  });
});

describe("Swagger 2.0", () => {
  it("is converted by swagger2openapi and then read like OpenAPI 3: form bodies, files, servers", async () => {
    const report = new LoadReport();
    const tools = byName(await loadToolFile(toolFixture("slackish.swagger.json"), { report }));
    expect(Object.keys(tools)).toEqual([
      "chat_postMessage",
      "files_upload",
      "files_info",
      "conversations_list",
      "reminders_add",
    ]);
    expect(tools.chat_postMessage?.origin.http).toMatchObject({
      method: "POST",
      body: "merged",
      contentType: "application/x-www-form-urlencoded",
      servers: ["https://slack.example.com/api", "http://slack.example.com/api"],
    });
    expect(tools.files_upload?.inputSchema).toMatchObject({
      properties: { file: { type: "string", format: "binary" } },
      required: ["token", "file"],
    });
    expect(tools.files_info?.inputSchema.properties).toMatchObject({
      count: { type: "integer", minimum: 1, maximum: 1000, default: 100 },
    });
    // x-nullable became a type that allows null.
    expect(tools.conversations_list?.inputSchema.properties).toMatchObject({
      cursor: { type: ["string", "null"] },
    });
    expect(report.skipped).toEqual([]);
    expect(report.warnings.map((warning) => warning.code)).toContain("SWAGGER_REPAIRED");
  });

  it("a document that is only Swagger needs the loader: toolsFromDocument says so", () => {
    expect(() => toolsFromDocument({ swagger: "2.0", info: {}, paths: {} })).toThrow(
      /must be converted to OpenAPI 3 first/,
    );
  });
});

describe("references to reusable parts of operations", () => {
  it("keep only annotations beside a $ref to a parameter (OpenAPI ignores the rest), as Xero's spec needs", () => {
    const report = new LoadReport();
    const [tool] = toolsFromDocument(
      {
        openapi: "3.0.0",
        info: { title: "x", version: "1" },
        paths: {
          "/accounts": {
            parameters: [
              { $ref: "#/components/parameters/tenant", type: "string", description: "Which tenant." },
            ],
            get: { operationId: "list_accounts", responses: { "200": { description: "ok" } } },
          },
        },
        components: {
          parameters: {
            tenant: { name: "tenant", in: "header", required: true, schema: { type: "string" } },
          },
        },
      },
      { report },
    );
    expect(report.skipped).toEqual([]);
    expect(tool?.inputSchema).toEqual({
      type: "object",
      properties: { tenant: { type: "string", description: "Which tenant." } },
      required: ["tenant"],
      additionalProperties: false,
    });
  });
});
