import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Catalog, loadToolFile } from "../../src/catalog/index.js";
import { ManualClock } from "../../src/core/index.js";
import { Engine, ProxySimulator } from "../../src/sim/index.js";
import { toolFixture } from "../helpers/paths.js";

/** Hybrid mode against a real HTTP API on loopback: reads go to the real API, writes stay simulated. */
let api: Server;
let base = "";
const received: string[] = [];

beforeAll(async () => {
  api = createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    res.setHeader("content-type", "application/json");
    if (req.method === "GET" && req.url?.startsWith("/pets/42"))
      res.end(JSON.stringify({ id: 42, name: "Real Rex" }));
    else if (req.method === "GET" && req.url?.startsWith("/pets/")) {
      res.statusCode = 404;
      res.end(JSON.stringify({ message: "no such pet" }));
    } else if (req.method === "GET") res.end(JSON.stringify([{ id: 42, name: "Real Rex" }]));
    else {
      res.statusCode = 500;
      res.end(JSON.stringify({ message: "writes must never reach the real API in this test" }));
    }
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => api.close(() => resolve())));

describe("proxy simulator (hybrid)", () => {
  it("forwards reads with path and query parameters, folds real results into the state, and simulates writes", async () => {
    const catalog = new Catalog(await loadToolFile(toolFixture("petstore.openapi.yaml")));
    const engine = new Engine({
      catalog,
      simulators: [new ProxySimulator({ baseUrl: base })],
      policy: { read: "proxy", write: "schema" },
      seed: 1,
      clock: new ManualClock(),
    });
    const session = await engine.createSession();
    const shown = await engine.call(session.id, { name: "showPetById", arguments: { petId: 42 } });
    expect(shown).toMatchObject({
      status: "ok",
      simulator: "proxy",
      observation: { id: 42, name: "Real Rex" },
    });
    const listed = await engine.call(session.id, { name: "listPets", arguments: { limit: 5, tag: "dog" } });
    expect(listed.observation).toEqual([{ id: 42, name: "Real Rex" }]);
    const missing = await engine.call(session.id, { name: "showPetById", arguments: { petId: 7 } });
    expect(missing).toMatchObject({
      status: "tool_error",
      observation: { error: "the real API answered 404", body: { message: "no such pet" } },
    });
    const created = await engine.call(session.id, { name: "createPet", arguments: { name: "Tom" } });
    expect(created.simulator).toBe("schema");
    expect(received).toEqual(["GET /pets/42", "GET /pets?limit=5&tag=dog", "GET /pets/7"]);
    const state = (await engine.state(session.id)) as {
      runtime_state: { real_results: Array<{ tool: string; status: number }> };
    };
    expect(state.runtime_state.real_results.map((r) => [r.tool, r.status])).toEqual([
      ["showPetById", 200],
      ["listPets", 200],
    ]);
  });
});
