/**
 * A server for `bench/rl.ts`, in a process of its own so that the clients and the server each get a core:
 *
 *   node --import tsx bench/rl-child.ts '{"sources":["bank"]}'
 *     `startServer` (memory store) with OpenEnv at /openenv/ws
 *   node --import tsx bench/rl-child.ts '{"echo":"<file>"}'
 *     a bare WebSocket server (the ws package) at /openenv/ws that parses each message as JSON and answers
 *     with the JSON text of the reply in <file> (a real answer of the server measured, so the sizes match)
 *
 * Prints `{"port": n}` on stdout once listening, and exits when its stdin closes (the parent went away).
 */

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { WebSocketServer } from "ws";
import { startServer } from "../src/server/start.js";
import { runChild, serveUntilStdinEnds } from "./child-server.js";

const options = JSON.parse(process.argv[2] ?? "{}") as { echo?: string; sources?: string[] };

async function main(): Promise<void> {
  let close: () => Promise<unknown>;
  let port: number;
  if (options.echo) {
    const reply = JSON.parse(readFileSync(options.echo, "utf8")) as unknown;
    const server = createServer((_request, response) => response.writeHead(404).end());
    const wss = new WebSocketServer({ server, path: "/openenv/ws" });
    wss.on("connection", (ws) => {
      ws.on("message", (raw) => {
        // What any JSON-over-WebSocket server does at least: read the message, write an answer.
        JSON.parse(raw.toString());
        ws.send(JSON.stringify(reply));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
    close = async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise((resolve) => wss.close(resolve));
      await new Promise((resolve) => server.close(resolve));
    };
  } else {
    const server = await startServer({ sources: options.sources ?? ["bank"], port: 0 });
    port = Number(new URL(server.url).port);
    close = () => server.close({ drainTimeoutMs: 0 });
  }
  serveUntilStdinEnds(port, close);
}

runChild(main);
