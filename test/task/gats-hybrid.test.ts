import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Catalog, loadToolFile } from "../../src/catalog/index.js";
import { ManualClock } from "../../src/core/index.js";
import { Models, parseConfig } from "../../src/models/index.js";
import { Engine, ProxySimulator } from "../../src/sim/index.js";
import { gats } from "../../src/task/index.js";
import { toolFixture } from "../helpers/paths.js";
import { type ScriptedLlmServer, startScriptedLlmServer } from "../helpers/scripted-llm-server.js";

/** Hybrid GATS: attempts run on simulated tools; only the chosen calls are replayed on the real API. */
let api: Server;
let base = "";
let llm: ScriptedLlmServer;
const real: string[] = [];

beforeAll(async () => {
  api = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on("end", () => {
      real.push(`${req.method} ${req.url} ${body}`);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ id: 501, name: JSON.parse(body || "{}").name ?? "?" }));
    });
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await llm?.close();
  await new Promise<void>((resolve) => api.close(() => resolve()));
});

describe("GATS in hybrid mode", () => {
  it("refines on simulated tools, then replays only the chosen calls on the real API and folds the results", async () => {
    let plannerTurns = 0;
    llm = await startScriptedLlmServer([], {
      respond: (body) => {
        const name = body?.response_format?.json_schema?.name;
        if (name === "checklist")
          return { reply: { content: JSON.stringify({ items: [{ description: "pet Tom created" }] }) } };
        if (name === "judgement") {
          const ok = !JSON.stringify(body.messages).includes("Tim");
          return {
            reply: {
              content: JSON.stringify({
                items: [
                  {
                    description: "x",
                    status: ok ? "success" : "failed",
                    reasoning: ok ? "created" : "wrong name",
                  },
                ],
              }),
            },
          };
        }
        if (body.messages.at(-1).role === "tool") return { reply: { content: "Created." } };
        plannerTurns++;
        // The first attempt names the pet wrongly; the retry gets it right.
        return {
          reply: {
            toolCalls: [{ name: "createPet", arguments: { name: plannerTurns === 1 ? "Tim" : "Tom" } }],
          },
        };
      },
    });
    const models = new Models({
      config: parseConfig({
        providers: { scripted: { type: "openai-compatible", baseURL: llm.baseURL, structuredOutputs: true } },
        roles: { default: "scripted:m" },
      }),
      cache: null,
    });
    const engine = new Engine({
      catalog: new Catalog(await loadToolFile(toolFixture("petstore.openapi.yaml"))),
      simulators: [new ProxySimulator({ baseUrl: base })],
      policy: "schema",
      seed: 1,
      clock: new ManualClock(),
    });
    const start = await engine.createSession();
    const result = await gats({
      engine,
      models,
      startSession: start.id,
      turns: ["Add a pet called Tom"],
      maxRetries: 2,
      realReplay: "proxy",
    });
    expect(result.turns[0]?.chosen).toBe(1);
    // The wrong attempt never reached the real API; the chosen one did, once.
    expect(real).toEqual(['POST /pets {"name":"Tom"}']);
    expect(result.turns[0]?.real?.outcomes).toEqual([
      { name: "createPet", status: "ok", observation: { id: 501, name: "Tom" } },
    ]);
    const folded = (await engine.state(result.turns[0]?.real?.session as string)) as {
      runtime_state: { real_results: Array<{ result: unknown }> };
    };
    expect(folded.runtime_state.real_results[0]?.result).toEqual({ id: 501, name: "Tom" });
  });
});
