import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { startServer } from "../../src/server/index.js";
import type { ShutdownProgress } from "../../src/server/shutdown.js";
import { toolFixture } from "../helpers/paths.js";

/**
 * A connection the server accepted before shutdown began is kept until its request comes, and the request
 * is answered 503 SHUTTING_DOWN instead of the connection being closed under it (http.Server#close closes
 * such "idle" connections at once). One that never sends anything is closed after a short grace, and the
 * shutdown still finishes.
 */
const PETS = toolFixture("petstore.openapi.yaml");

function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Everything the server sends until it closes the connection (or the error that ended it). */
function received(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.once("close", () => resolve(text));
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
  });
}

describe("connections accepted before shutdown", () => {
  it("a request sent after shutdown began on an accepted connection is answered 503 SHUTTING_DOWN", async () => {
    const server = await startServer({ sources: [PETS], port: 0 });
    const socket = await open(server.url);
    const answer = received(socket);
    const steps: ShutdownProgress[] = [];
    let listening = true;
    const closing = server.close({
      drainTimeoutMs: 30_000,
      progress: (step) => {
        steps.push(step);
        if (step.stage === "listening-stopped") listening = false;
      },
    });
    // Only once the listener is closed does the client send its request.
    while (listening) await new Promise((resolve) => setTimeout(resolve, 5));
    socket.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 503 /);
    expect(text.toLowerCase()).toContain("connection: close");
    expect(text).toContain('"SHUTTING_DOWN"');
    expect(await closing).toEqual({ inFlight: 0, abandoned: 0 });
    expect(steps[0]).toMatchObject({ stage: "listening-stopped", inFlight: 0, arriving: 1 });
    expect(steps[1]).toMatchObject({ stage: "drained", answered: 0, refused: 1, cutOff: 0, closedIdle: 0 });
  });

  it("a connection that never sends a request is closed after the grace, and shutdown finishes", async () => {
    const server = await startServer({ sources: [PETS], port: 0 });
    const socket = await open(server.url);
    const answer = received(socket);
    const steps: ShutdownProgress[] = [];
    const started = Date.now();
    expect(await server.close({ drainTimeoutMs: 30_000, progress: (step) => steps.push(step) })).toEqual({
      inFlight: 0,
      abandoned: 0,
    });
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(await answer).toBe("");
    expect(steps[1]).toMatchObject({ stage: "drained", refused: 0, closedIdle: 1 });
  });
});
