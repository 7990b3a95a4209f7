import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/catalog.js";
import { createApp, startServer } from "../../src/server/index.js";
import { Drain } from "../../src/server/shutdown.js";
import { Engine } from "../../src/sim/engine.js";
import { cli } from "../helpers/cli.js";
import { toolFixture } from "../helpers/paths.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

/**
 * Graceful shutdown: a tool call whose model answers slowly is in flight when the server is told to stop;
 * the call still gets its 200, while new connections are refused; past the drain timeout, what is still
 * running is cut off. The same through `terrarium serve` and SIGTERM, which then exits 0.
 */
const ROOT = join(import.meta.dirname, "..", "..");
const PETS = toolFixture("petstore.openapi.yaml");
const ANSWER = { status: "ok", observation: { id: 1, name: "Slow Rex" }, changes: [] };

let llm: ScriptedLlmServer | undefined;
afterEach(async () => {
  await llm?.close();
  llm = undefined;
});

/** A model that takes `delayMs` to answer every call. */
async function slowModel(delayMs: number): Promise<{ config: string }> {
  llm = await startScriptedLlmServer([], {
    repeat: { delayMs, reply: { content: JSON.stringify(ANSWER) } },
  });
  return { config: writeScriptedConfig(mkdtempSync(join(tmpdir(), "terrarium-drain-")), llm.baseURL) };
}

/** Whether a new TCP connection to the URL's port is accepted. */
function accepts(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function newSession(url: string): Promise<string> {
  return ((await (await fetch(`${url}/sessions`, { method: "POST" })).json()) as { id: string }).id;
}

describe("graceful shutdown", () => {
  it("lets an in-flight call finish with 200 while refusing new connections", async () => {
    const { config } = await slowModel(1500);
    const server = await startServer({
      sources: [PETS],
      port: 0,
      model: "scripted:pet-model",
      config,
      simulator: "llm",
    });
    const id = await newSession(server.url);
    const slow = fetch(`${server.url}/pets/1`, { headers: { "x-session-id": id } });
    await until(() => llm?.requests.length === 1 && server.inFlight() === 1, "the call to reach the model");

    const closing = server.close({ drainTimeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await accepts(server.url)).toBe(false);
    expect(server.inFlight()).toBe(1);

    const response = await slow;
    expect(response.status).toBe(200);
    // Answered while draining: the client is told not to reuse the connection.
    expect(response.headers.get("connection")).toBe("close");
    expect(await response.json()).toEqual(ANSWER.observation);
    expect(await closing).toEqual({ inFlight: 1, abandoned: 0 });
    // The call was recorded before the store closed.
    expect(llm?.requests.length).toBe(1);
  });

  it("cuts off what is still running when the drain timeout passes", async () => {
    const { config } = await slowModel(5000);
    const server = await startServer({
      sources: [PETS],
      port: 0,
      model: "scripted:pet-model",
      config,
      simulator: "llm",
      drainTimeoutMs: 200,
    });
    const id = await newSession(server.url);
    const slow = fetch(`${server.url}/pets/1`, { headers: { "x-session-id": id } }).then(
      (response) => response.status,
      () => "cut off",
    );
    await until(() => server.inFlight() === 1 && llm?.requests.length === 1, "the call to reach the model");
    const started = Date.now();
    expect(await server.close()).toEqual({ inFlight: 1, abandoned: 1 });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await slow).toBe("cut off");
  });

  it("answers requests that arrive on open connections while draining with 503 SHUTTING_DOWN", async () => {
    const drain = new Drain();
    const app = createApp(new Engine({ catalog: new Catalog() }), { drain });
    expect((await app.request("/health")).status).toBe(200);
    drain.start();
    const refused = await app.request("/health");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("connection")).toBe("close");
    expect(await refused.json()).toMatchObject({ error: { code: "SHUTTING_DOWN" } });
    expect(drain.inFlight).toBe(0);
    expect(await drain.wait(1000)).toBe(true);
  });

  it("serve refuses a --drain-timeout that is not a number of seconds before anything starts", async () => {
    for (const value of ["soon", "Infinity"]) {
      const run = await cli(["serve", "bank", "--port", "0", "--drain-timeout", value]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("--drain-timeout must be a number of seconds, 0 or more");
    }
  });

  it("terrarium serve drains on SIGTERM, then exits 0", async () => {
    const { config } = await slowModel(2000);
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "src/cli/main.ts",
        "serve",
        PETS,
        "--port",
        "0",
        "--model",
        "scripted:pet-model",
        "--config",
        config,
        "--simulator",
        "llm",
        "--drain-timeout",
        "20",
      ],
      { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      await until(() => stderr.includes("  try: "), "serve to start", 30_000);
      const url = /terrarium serving \d+ tools at (\S+)/.exec(stderr)?.[1] as string;
      const id = await newSession(url);
      const slow = fetch(`${url}/pets/1`, { headers: { "x-session-id": id } });
      await until(() => llm?.requests.length === 1, "the call to reach the model");

      child.kill("SIGTERM");
      await until(() => stderr.includes("SIGTERM"), "serve to see the signal");
      expect(stderr).toMatch(
        /terrarium: SIGTERM: no new connections; 1 request\(s\) in flight, waiting up to 20s/,
      );
      expect(await accepts(url)).toBe(false);

      const response = await slow;
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(ANSWER.observation);
      expect(await exited).toBe(0);
      expect(stderr).toContain("terrarium: stopped\n");
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  }, 60_000);
});
