import { afterEach, describe, expect, it } from "vitest";
import { MemoryResponseCache } from "../../src/models/cache.js";
import { parseConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import { convertToOpenApi } from "../../src/task/converter.js";
import { type ScriptedLlmServer, startScriptedLlmServer } from "../helpers/scripted-llm-server.js";

/** An operation the converter refuses (a $ref) is repaired and never cached: a rerun asks for it again. */

let server: ScriptedLlmServer;
afterEach(async () => {
  await server?.close();
});

const operation = (sku: unknown) => ({
  operationId: "stock",
  summary: "Stock of a SKU",
  description: "Units in stock.",
  requestBody: {
    required: true,
    content: { "application/json": { schema: { type: "object", properties: { sku }, required: ["sku"] } } },
  },
  responses: {
    "200": {
      description: "Result or error",
      content: {
        "application/json": {
          schema: {
            oneOf: [
              {
                type: "object",
                properties: { total: { type: "integer", description: "Units." } },
                required: ["total"],
              },
              {
                type: "object",
                properties: { error: { type: "string", description: "What went wrong." } },
                required: ["error"],
              },
            ],
          },
        },
      },
    },
  },
});

describe("tools convert and the response cache", () => {
  it("replays only the accepted repair, never the refused first answer", async () => {
    const withRef = JSON.stringify({ operations: [operation({ $ref: "#/components/schemas/Sku" })] });
    const good = JSON.stringify({ operations: [operation({ type: "string", description: "The SKU." })] });
    // Run 1: a $ref (refused), then a usable repair. Run 2: the model errs the same way first.
    server = await startScriptedLlmServer([
      { reply: { content: withRef } },
      { reply: { content: good } },
      { reply: { content: withRef } },
    ]);
    const cache = new MemoryResponseCache();
    const convert = async () => {
      const models = new Models({
        config: parseConfig({
          providers: { local: { type: "openai-compatible", baseURL: server.baseURL } },
          roles: { default: "local:conv" },
          retry: { retries: 0 },
        }),
        env: {},
        cache,
      });
      const document = await convertToOpenApi([{ name: "stock", text: "def stock(sku: str) -> int" }], {
        models,
      });
      return { document, ledger: models.ledger.totals };
    };
    const first = await convert();
    expect(first.ledger).toMatchObject({ calls: 2, cachedCalls: 0, rejectedCalls: 1 });
    expect(server.requests[1]?.body.messages.at(-1).content).toMatch(
      /^These operations are not usable:\n- .*\$ref/,
    );
    const second = await convert();
    // The refused first answer was asked for again (a real call); the repair came from the cache.
    expect(server.requests).toHaveLength(3);
    expect(second.ledger).toMatchObject({ calls: 2, cachedCalls: 1, rejectedCalls: 1 });
    expect(second.document).toEqual(first.document);
    expect((second.document.paths as Record<string, unknown>)["/stock"]).toBeDefined();
  });
});
