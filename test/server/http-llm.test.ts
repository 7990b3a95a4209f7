import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startServer } from "../../src/server/index.js";
import { toolFixture } from "../helpers/paths.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

/** `serve` with a model: the llm simulator answers over HTTP, and Gecko's usage endpoint reports its calls. */
let llm: ScriptedLlmServer;
let server: Awaited<ReturnType<typeof startServer>>;
afterAll(async () => {
  await server?.close();
  await llm?.close();
});

describe("serve with the llm simulator", () => {
  it("answers tool calls with the model and reports usage per session", async () => {
    llm = await startScriptedLlmServer([
      {
        reply: {
          content: JSON.stringify({
            state: { pets: { "1": { name: "Rex" } }, runtime_state: { current_user: "model-chosen" } },
          }),
        },
      },
      {
        reply: {
          content: JSON.stringify({
            status: "ok",
            observation: { id: 77, name: "Tom" },
            changes: [{ op: "add", path: "/pets/77", value: { name: "Tom" } }],
          }),
        },
      },
    ]);
    const dir = mkdtempSync(join(tmpdir(), "terrarium-serve-"));
    const config = writeScriptedConfig(dir, llm.baseURL);
    server = await startServer({
      sources: [toolFixture("petstore.openapi.yaml")],
      port: 0,
      model: "scripted:pet-model",
      config,
      simulator: "llm",
    });
    const { session_id } = (await (await fetch(`${server.url}/session-id`)).json()) as { session_id: string };
    const headers = { "x-session-id": session_id, "content-type": "application/json" };
    // Gecko's bootstrap: the model fills in a starting state; what the client gave wins where both speak.
    const boot = await fetch(`${server.url}/set-session-state`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        state: { runtime_state: { current_user: "ada" } },
        bootstrap_mode: "force",
        task: "Adopt a pet",
      }),
    });
    expect(await boot.json()).toMatchObject({ status: "ok", bootstrapped: true });
    expect(await (await fetch(`${server.url}/get-session-state`, { headers })).json()).toEqual({
      pets: { "1": { name: "Rex" } },
      runtime_state: { current_user: "ada" },
    });
    await fetch(`${server.url}/set-session-state`, {
      method: "POST",
      headers,
      body: JSON.stringify({ state: {}, bootstrap_mode: "skip" }),
    });
    const created = await fetch(`${server.url}/pets`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "Tom" }),
    });
    expect(created.status).toBe(200);
    expect(await created.json()).toEqual({ id: 77, name: "Tom" });
    const state = await (await fetch(`${server.url}/get-session-state`, { headers })).json();
    expect(state).toEqual({ pets: { "77": { name: "Tom" } } });
    const usage = (await (await fetch(`${server.url}/get-session-llm-usage`, { headers })).json()) as {
      usage: Array<{ model: string; role: string }>;
    };
    expect(usage.usage).toHaveLength(2);
    expect(usage.usage[1]).toMatchObject({
      model: "scripted:pet-model",
      role: "simulator",
      inputTokens: 10,
      outputTokens: 5,
    });
  });
});
