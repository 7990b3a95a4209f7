import { describe, expect, it, vi } from "vitest";
import { Catalog, LoadReport, toolsFromDocument } from "../../src/catalog/index.js";
import { getAtPointer } from "../../src/core/json-pointer.js";
import { createApp } from "../../src/server/index.js";
import { Engine } from "../../src/sim/engine.js";
import { refsIn, webOfSchemas } from "./web-of-schemas.js";

// Counts how often the server builds its document, calling the real builder.
const built = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../src/server/openapi.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../src/server/openapi.js")>();
  return {
    ...actual,
    routesToOpenApi: (...args: Parameters<typeof actual.routesToOpenApi>) => {
      built.count++;
      return actual.routesToOpenApi(...args);
    },
  };
});

/** GET /openapi.json's text for a server over `operations` tools that all reach 12 large definitions. */
async function served(operations: number) {
  const catalog = new Catalog(
    toolsFromDocument(webOfSchemas(operations, 12), { file: "web.json", report: new LoadReport() }),
  );
  const app = createApp(new Engine({ catalog }));
  const before = built.count;
  const first = await app.request("/openapi.json");
  const second = await app.request("/openapi.json");
  const docs = await app.request("/docs");
  return {
    catalog,
    first: { status: first.status, text: await first.text() },
    second: await second.text(),
    docs: docs.status,
    builds: built.count - before,
  };
}

describe("the server's /openapi.json on a large API description", () => {
  it("is built once per app, and keeps each shared definition once whatever the number of tools", async () => {
    const small = await served(6);
    const large = await served(60);
    expect(large.first.status).toBe(200);
    expect(large.docs).toBe(200);
    // /openapi.json twice and /docs: one document.
    expect(large.builds).toBe(1);
    expect(large.second).toBe(large.first.text);
    const document = JSON.parse(large.first.text);
    const schemas = Object.keys(document.components.schemas);
    for (const name of large.catalog.names) expect(schemas).toContain(`tool.${name}.arguments`);
    // The definitions the tools share are there once each, and every reference finds its target.
    const shared = new Set(
      large.catalog.tools.flatMap((tool) =>
        Object.keys((tool.inputSchema as { $defs?: object }).$defs ?? {}),
      ),
    );
    expect(shared.size).toBeGreaterThan(5);
    expect(schemas.filter((name) => name.startsWith("Thing")).sort()).toEqual([...shared].sort());
    for (const ref of refsIn(document)) expect(getAtPointer(document, ref.slice(1)), ref).toBeDefined();
    // Ten times the tools: the definitions stay one copy, so each tool adds its own routes and schemas,
    // far less than the definitions it reaches (which each tool carried when it stood alone).
    const perTool = (large.first.text.length - small.first.text.length) / 54;
    const standalone = JSON.stringify(large.catalog.tools).length / 60;
    expect(perTool * 3).toBeLessThan(standalone);
  });
});
