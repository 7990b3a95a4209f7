import dns from "node:dns";
import fs from "node:fs";
import net from "node:net";
import { afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { convertSwagger2, isSwagger2Document } from "../../src/catalog/formats/swagger2.js";
import { TerrariumError } from "../../src/core/errors.js";
import { toolFixture } from "../helpers/paths.js";

type Json = Record<string, any>;

const FIXTURE = toolFixture("slackish.swagger.json");
const readFixture = (): Json => JSON.parse(fs.readFileSync(FIXTURE, "utf8"));

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

/** A minimal valid Swagger 2.0 document with the given extra top-level members. */
const swagger = (extra: Json = {}): Json => ({
  swagger: "2.0",
  info: { title: "t", version: "1" },
  paths: {},
  ...extra,
});

async function conversionError(document: unknown, file?: string): Promise<TerrariumError> {
  const error = await convertSwagger2(document, { file }).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(TerrariumError);
  return error as TerrariumError;
}

/** Every console method the converter (or anything under it) could print with. */
let consoleSpies: MockInstance[] = [];
beforeEach(() => {
  consoleSpies = (["warn", "log", "error", "info", "debug"] as const).map((method) =>
    vi.spyOn(console, method).mockImplementation(() => {}),
  );
});
afterEach(() => {
  for (const spy of consoleSpies) expect(spy).not.toHaveBeenCalled();
  vi.restoreAllMocks();
});

describe("isSwagger2Document", () => {
  it('accepts "2.0", the number 2 (unquoted YAML) and "2.0.0"', () => {
    expect(isSwagger2Document({ swagger: "2.0" })).toBe(true);
    expect(isSwagger2Document({ swagger: 2 })).toBe(true);
    expect(isSwagger2Document({ swagger: "2.0.0" })).toBe(true);
  });

  it("refuses everything else", () => {
    for (const document of [
      { swagger: "1.2" },
      { swagger: "3.0" },
      { openapi: "3.0.3" },
      { swagger: ["2.0"] },
      [{ swagger: "2.0" }],
      null,
      "2.0",
    ]) {
      expect(isSwagger2Document(document)).toBe(false);
    }
  });
});

describe("convertSwagger2 on a Slack-style document", () => {
  const input = deepFreeze(readFixture());
  let document: Json;
  let warnings: Array<{ pointer: string; message: string }>;
  let paths: Json;
  let schemas: Json;
  beforeAll(async () => {
    const warn = vi.spyOn(console, "warn");
    ({ document, warnings } = await convertSwagger2(input, { file: FIXTURE }));
    expect(warn).not.toHaveBeenCalled();
    warn.mockRestore();
    paths = document.paths;
    schemas = document.components.schemas;
  });

  it("produces OpenAPI 3.0.x without the Swagger 2.0 members", () => {
    expect(document.openapi).toMatch(/^3\.0\.\d+$/);
    for (const key of ["swagger", "host", "basePath", "schemes", "consumes", "produces", "definitions"]) {
      expect(document).not.toHaveProperty(key);
    }
    expect(document.info).toEqual(input.info);
  });

  it("builds one server per scheme from host and basePath", () => {
    expect(document.servers).toEqual([
      { url: "https://slack.example.com/api" },
      { url: "http://slack.example.com/api" },
    ]);
  });

  it("moves definitions to components.schemas and rewrites every $ref to them", () => {
    expect(Object.keys(schemas)).toEqual(Object.keys(input.definitions));
    const text = JSON.stringify(document);
    expect(text).not.toContain("#/definitions/");
    expect(schemas.ChatPostMessageResponse.properties.message).toEqual({
      $ref: "#/components/schemas/Message",
    });
    expect(schemas.Reminder.allOf[0]).toEqual({ $ref: "#/components/schemas/ReminderInput" });
  });

  it("turns formData fields into one form-urlencoded object body", () => {
    const body = paths["/chat.postMessage"].post.requestBody;
    expect(Object.keys(body.content)).toEqual(["application/x-www-form-urlencoded"]);
    expect(body.required).toBe(true);
    expect(body.content["application/x-www-form-urlencoded"].schema).toEqual({
      type: "object",
      properties: {
        token: { type: "string", description: "Authentication token." },
        channel: {
          type: "string",
          description: "Channel, private group, or IM channel to send the message to.",
        },
        text: { type: "string", description: "The formatted text of the message." },
        thread_ts: { type: "string", nullable: true, description: "Parent message to reply to." },
        unfurl_links: { type: "boolean", default: false },
      },
      required: ["token", "channel"],
    });
    expect(paths["/chat.postMessage"].post).not.toHaveProperty("parameters");
  });

  it("makes a multipart body when the operation consumes multipart/form-data, with a file as binary", () => {
    const body = paths["/files.upload"].post.requestBody;
    expect(Object.keys(body.content)).toEqual(["multipart/form-data"]);
    const schema = body.content["multipart/form-data"].schema;
    expect(schema.properties.file).toEqual({
      type: "string",
      format: "binary",
      description: "File contents.",
    });
    expect(schema.required).toEqual(["token", "file"]);
  });

  it("makes a JSON body from a body parameter, keeping the $ref", () => {
    const operation = paths["/reminders.add"].post;
    expect(operation.requestBody).toEqual({
      required: true,
      content: { "application/json": { schema: { $ref: "#/components/schemas/ReminderInput" } } },
    });
    expect(operation).not.toHaveProperty("parameters");
  });

  it("moves query and path parameter types into schemas", () => {
    expect(paths["/files/{file_id}"].parameters).toEqual([
      { name: "file_id", in: "path", required: true, schema: { type: "string", pattern: "^F[A-Z0-9]+$" } },
    ]);
    expect(paths["/files/{file_id}"].get.parameters).toEqual([
      {
        name: "count",
        in: "query",
        schema: { type: "integer", format: "int32", minimum: 1, maximum: 1000, default: 100 },
      },
      {
        name: "sort",
        in: "query",
        schema: { type: "string", enum: ["timestamp", "score"], default: "timestamp" },
      },
    ]);
  });

  it("turns collectionFormat csv into style form without explode", () => {
    const [types] = paths["/conversations.list"].get.parameters;
    expect(types).toEqual({
      name: "types",
      in: "query",
      style: "form",
      explode: false,
      schema: {
        type: "array",
        items: { type: "string", enum: ["public_channel", "private_channel", "mpim", "im"] },
      },
    });
  });

  it("turns x-nullable into nullable everywhere, including beside a $ref and on a parameter", () => {
    expect(JSON.stringify(document)).not.toContain("x-nullable");
    expect(schemas.Message.properties.thread_ts).toEqual({ type: "string", nullable: true });
    expect(schemas.Message.properties.reply_to).toEqual({
      $ref: "#/components/schemas/Message",
      nullable: true,
      description: "The message this one answers.",
    });
    expect(paths["/conversations.list"].get.parameters[2]).toEqual({
      name: "cursor",
      in: "query",
      schema: { type: "string", nullable: true },
    });
  });

  it("puts response schemas under the produced media types", () => {
    const responses = paths["/chat.postMessage"].post.responses;
    expect(responses["200"]).toEqual({
      description: "The posted message.",
      content: { "application/json": { schema: { $ref: "#/components/schemas/ChatPostMessageResponse" } } },
    });
    expect(responses["429"].headers).toEqual({
      "Retry-After": { description: "Seconds to wait.", schema: { type: "integer" } },
    });
  });

  it("converts securityDefinitions to securitySchemes", () => {
    expect((document.components as Json).securitySchemes).toEqual({
      slackAuth: {
        type: "oauth2",
        flows: {
          authorizationCode: {
            authorizationUrl: "https://slack.example.com/oauth/authorize",
            tokenUrl: "https://slack.example.com/api/oauth.access",
            scopes: input.securityDefinitions.slackAuth.scopes,
          },
        },
      },
      botToken: { type: "apiKey", name: "Authorization", in: "header" },
    });
    expect(document.security).toEqual(input.security);
  });

  it("leaves no converter bookkeeping in the document and only its unlocated repair count as a warning", () => {
    expect(JSON.stringify(document)).not.toMatch(/x-s2o|x-terrarium-swagger2openapi/);
    expect(warnings).toEqual([
      { pointer: "", message: expect.stringMatching(/^swagger2openapi counted \d+ repair/) },
    ]);
  });

  it("does not change the input (it is frozen, and still equal to the file)", () => {
    expect(input).toEqual(readFixture());
  });
});

describe("convertSwagger2 warnings", () => {
  it("reports what the converter could not carry over, where it is in the converted document", async () => {
    const { document, warnings } = await convertSwagger2(
      swagger({
        paths: {
          "/things": {
            get: {
              parameters: [
                {
                  name: "X-Ids",
                  in: "header",
                  type: "array",
                  items: { type: "string" },
                  collectionFormat: "tsv",
                },
              ],
              responses: { 200: { description: "ok", schema: { $ref: "#/definitions/Missing" } } },
            },
          },
        },
      }),
    );
    expect(warnings).toEqual([
      { pointer: "/paths/~1things/get/parameters/0", message: "collectionFormat:tsv is no longer supported" },
      {
        pointer: "/paths/~1things/get/responses/200/content/*~1*/schema",
        message: "Could not resolve reference #/definitions/Missing",
      },
    ]);
    const get = (document.paths as Json)["/things"].get;
    // The dangling reference is rewritten anyway; the OpenAPI reader reports it as unresolved.
    expect(get.responses["200"].content["*/*"].schema).toEqual({ $ref: "#/components/schemas/Missing" });
    expect(get.parameters[0]["x-collectionFormat"]).toBe("tsv");
  });

  it('reads "swagger": "2.0.0" as 2.0 and says so', async () => {
    const { document, warnings } = await convertSwagger2(swagger({ swagger: "2.0.0" }));
    expect(document.openapi).toMatch(/^3\.0\./);
    expect(warnings).toEqual([{ pointer: "", message: 'read the document\'s "swagger": "2.0.0" as "2.0"' }]);
  });

  it("says when it repaired something without a place", async () => {
    const { document, warnings } = await convertSwagger2(
      swagger({
        info: { title: "t", version: 3 },
        paths: { "/a/{id}": { get: { parameters: [{ name: "id", in: "path" }] } } },
      }),
    );
    expect((document.info as Json).version).toBe("3");
    const parameter = (document.paths as Json)["/a/{id}"].get.parameters[0];
    expect(parameter).toEqual({ name: "id", in: "path", required: true, schema: { type: "string" } });
    expect(warnings).toEqual([
      { pointer: "", message: expect.stringMatching(/^swagger2openapi counted 3 repair/) },
    ]);
  });
});

describe("convertSwagger2 with external references", () => {
  it("fetches and reads nothing, keeps the $refs as they are and warns about each", async () => {
    const connect = vi.spyOn(net.Socket.prototype, "connect");
    const lookup = vi.spyOn(dns, "lookup");
    const readFile = vi.spyOn(fs, "readFile");
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    const { document, warnings } = await convertSwagger2(
      swagger({
        paths: {
          "/teams": {
            get: {
              responses: {
                200: {
                  description: "ok",
                  schema: { $ref: "https://specs.invalid/common.json#/definitions/Team" },
                },
              },
            },
          },
        },
        definitions: { Team: { $ref: "./shared.yaml#/Team" } },
      }),
    );
    expect(connect).not.toHaveBeenCalled();
    expect(lookup).not.toHaveBeenCalled();
    expect(readFile).not.toHaveBeenCalled();
    expect(fetchSpy).not.toHaveBeenCalled();
    expect((document.paths as Json)["/teams"].get.responses["200"].content["*/*"].schema).toEqual({
      $ref: "https://specs.invalid/common.json#/definitions/Team",
    });
    expect(((document.components as Json).schemas as Json).Team).toEqual({ $ref: "./shared.yaml#/Team" });
    expect(warnings).toEqual([
      {
        pointer: "/paths/~1teams/get/responses/200/content/*~1*/schema/$ref",
        message:
          'external $ref "https://specs.invalid/common.json#/definitions/Team" left as it is: other files and URLs are not read',
      },
      {
        pointer: "/components/schemas/Team/$ref",
        message: 'external $ref "./shared.yaml#/Team" left as it is: other files and URLs are not read',
      },
    ]);
  });
});

describe("convertSwagger2 errors", () => {
  it("refuses a document whose paths is a string, naming the place", async () => {
    const error = await conversionError(swagger({ paths: "/chat.postMessage" }), "api.json");
    expect(error.code).toBe("INVALID_OPENAPI");
    expect(error.message).toBe('Swagger 2.0 conversion failed: "paths" must be an object, not string');
    expect(error.where).toEqual({ file: "api.json", pointer: "/paths" });
  });

  it("refuses malformed operations and parameters before the converter trips over them", async () => {
    const cases: Array<[Json, string]> = [
      [swagger({ paths: { "/a": { get: "nope" } } }), "/paths/~1a/get"],
      [swagger({ paths: { "/a": { parameters: [null], get: {} } } }), "/paths/~1a/parameters/0"],
      [swagger({ paths: { "/a": { post: { parameters: {} } } } }), "/paths/~1a/post/parameters"],
      [swagger({ paths: { "/a": { get: { responses: { 200: 5 } } } } }), "/paths/~1a/get/responses/200"],
      [swagger({ definitions: [] }), "/definitions"],
      [swagger({ info: "Slack" }), "/info"],
    ];
    for (const [document, pointer] of cases) {
      const error = await conversionError(document);
      expect(error.code).toBe("INVALID_OPENAPI");
      expect(error.where).toEqual({ file: undefined, pointer });
    }
  });

  it("turns the converter's refusal into INVALID_OPENAPI at the document", async () => {
    const error = await conversionError(
      swagger({ securityDefinitions: { "a b": { type: "basic" }, a_b: { type: "basic" } } }),
      "api.json",
    );
    expect(error.code).toBe("INVALID_OPENAPI");
    expect(error.message).toBe("Swagger 2.0 conversion failed: Duplicate sanitised securityScheme name a_b");
    expect(error.where).toEqual({ file: "api.json", pointer: "" });
  });

  it("turns a converter crash into INVALID_OPENAPI without the converter printing it", async () => {
    // swagger2openapi prints errors thrown inside it with console.warn; the afterEach checks nothing printed.
    const error = await conversionError(
      swagger({ securityDefinitions: { o: { type: "oauth2", flow: "implicit", authorizationUrl: 5 } } }),
    );
    expect(error.code).toBe("INVALID_OPENAPI");
    expect(error.message).toMatch(/^Swagger 2\.0 conversion failed: .*split/);
    expect(error.where).toEqual({ file: undefined, pointer: "" });
  });

  it("stays quiet when the converter refuses first and then crashes on", async () => {
    // It rejects on the duplicate name but goes on converting, then throws on the oauth2 URL and prints that
    // error after the rejection has been delivered.
    const error = await conversionError(
      swagger({
        securityDefinitions: {
          "a b": { type: "basic" },
          a_b: { type: "basic" },
          o: { type: "oauth2", flow: "implicit", authorizationUrl: 5 },
        },
      }),
    );
    expect(error.message).toBe("Swagger 2.0 conversion failed: Duplicate sanitised securityScheme name a_b");
  });

  it("refuses what is not Swagger 2.0", async () => {
    expect((await conversionError({ openapi: "3.0.3", paths: {} })).where.pointer).toBe("/swagger");
    expect((await conversionError("swagger: 2.0")).message).toMatch(/must be an object/);
  });
});

describe("convertSwagger2 under load", () => {
  it("keeps concurrent conversions apart and puts console.warn back afterwards", async () => {
    const warnBefore = console.warn;
    const documents = [
      readFixture(),
      swagger({ securityDefinitions: { o: { type: "oauth2", flow: "implicit", authorizationUrl: 5 } } }),
      swagger({ definitions: { Only: { type: "string" } } }),
      readFixture(),
    ];
    const results = await Promise.allSettled(documents.map((document) => convertSwagger2(document)));
    expect(results.map((result) => result.status)).toEqual([
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    const [first, , only, last] = results.map((result) =>
      result.status === "fulfilled" ? result.value : undefined,
    );
    expect(last).toEqual(first);
    expect(Object.keys((only?.document.components as Json | undefined)?.schemas ?? {})).toEqual(["Only"]);
    expect(console.warn).toBe(warnBefore);
  });

  it("converts 1,000 operations and 500 definitions well under a second", async () => {
    const document = bigSwagger(1000, 500);
    await convertSwagger2(swagger()); // load the converter first: the figure is the conversion alone
    const started = performance.now();
    const { document: converted } = await convertSwagger2(document);
    const elapsed = performance.now() - started;
    expect(Object.keys(converted.paths as Json)).toHaveLength(500);
    expect(Object.keys((converted.components as Json).schemas)).toHaveLength(500);
    // Around 100-250 ms here; the bound leaves room for a slow, busy machine.
    expect(elapsed, `${elapsed.toFixed(0)} ms`).toBeLessThan(2000);
  });
});

/** `operations` operations (a GET and a POST per path) over `definitions` object schemas that refer to each other. */
function bigSwagger(operations: number, definitions: number): Json {
  const defs: Json = {};
  for (let index = 0; index < definitions; index++) {
    defs[`Model${index}`] = {
      type: "object",
      required: ["id"],
      properties: {
        id: { type: "string" },
        count: { type: "integer", format: "int32", "x-nullable": true },
        next: { $ref: `#/definitions/Model${(index + 1) % definitions}` },
        tags: { type: "array", items: { type: "string" } },
      },
    };
  }
  const paths: Json = {};
  for (let index = 0; index < operations; index += 2) {
    const model = (offset: number) => ({ $ref: `#/definitions/Model${(index + offset) % definitions}` });
    paths[`/things${index}/{id}`] = {
      get: {
        operationId: `getThing${index}`,
        parameters: [
          { name: "id", in: "path", type: "string", required: true },
          { name: "limit", in: "query", type: "integer", default: 10 },
        ],
        responses: { 200: { description: "ok", schema: model(0) } },
      },
      post: {
        operationId: `postThing${index}`,
        parameters: [
          { name: "id", in: "path", type: "string", required: true },
          { name: "body", in: "body", schema: model(1) },
        ],
        responses: { 201: { description: "made", schema: model(0) } },
      },
    };
  }
  return swagger({ host: "api.example.com", schemes: ["https"], paths, definitions: defs });
}
