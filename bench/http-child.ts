/**
 * A server for `bench/http.ts`, in a process of its own so that the clients and the server each get a
 * core: either a plain node:http JSON echo (the baseline) or `startServer` with the options given. Prints
 * `{"port": n}` on stdout once listening, and exits when its stdin closes (the parent went away).
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { startServer } from "../src/server/start.js";
import { runChild, serveUntilStdinEnds } from "./child-server.js";

const options = JSON.parse(process.argv[2] ?? "{}") as {
  echo?: boolean;
  /** node:http answering `POST /sessions/{id}/calls` with a fixed bank-sized reply: no engine, no store. */
  ceiling?: boolean;
  sources?: string[];
  db?: string;
  /** Every request through Hono: the server's fast path off (src/server/fast-path.ts), to compare. */
  hono?: boolean;
};

/** What a bank `transfer` answers (640 bytes of JSON), for the ceiling server. */
const BANK_REPLY = {
  status: "ok",
  observation: { transfer_id: "TRF-NPMNWP8B", from_balance: 2499, to_balance: 121.5 },
  changes: [
    { op: "replace", path: "/accounts/ACC-1001/balance", before: 2500, after: 2499 },
    { op: "replace", path: "/accounts/ACC-1002/balance", before: 120.5, after: 121.5 },
    {
      op: "add",
      path: "/transfers/TRF-NPMNWP8B",
      after: {
        id: "TRF-NPMNWP8B",
        from: "ACC-1001",
        to: "ACC-1002",
        amount: 1,
        memo: "",
        created_at: "2025-01-01T00:00:01.000Z",
      },
    },
    { op: "replace", path: "/stats/transfer_count", before: 0, after: 1 },
    { op: "replace", path: "/stats/total_moved", before: 0, after: 1 },
  ],
  errors: [],
  simulator: "code",
  step: 0,
  semantic: "skipped",
};

async function main(): Promise<void> {
  let close: () => Promise<unknown>;
  let port: number;
  if (options.ceiling) {
    // What node:http itself allows for the fast path's exchange: the body read and parsed, the route
    // matched, a reply of a bank transfer's size sent with the fast path's headers (a fresh request id).
    const reply = JSON.stringify(BANK_REPLY);
    const replyLength = Buffer.byteLength(reply);
    const route = /^\/sessions\/([A-Za-z0-9_-]{1,200})\/calls$/;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const found = request.method === "POST" && route.test(request.url ?? "");
        JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
        response.writeHead(found ? 200 : 404, [
          "content-type",
          "application/json",
          "x-request-id",
          randomUUID(),
          "Content-Length",
          String(found ? replyLength : 0),
        ]);
        response.end(found ? reply : "");
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
    close = () => new Promise((resolve) => server.close(resolve));
  } else if (options.echo) {
    // Parses the JSON body and answers it as JSON: what any JSON-over-HTTP server must do at least.
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString("utf8") || "null"));
        response.writeHead(200, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        });
        response.end(body);
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
    close = () => new Promise((resolve) => server.close(resolve));
  } else {
    if (options.hono) process.env.TERRARIUM_HTTP_FAST_PATH = "0";
    const server = await startServer({
      sources: options.sources ?? ["bank"],
      ...(options.db ? { db: options.db } : {}),
      port: 0,
      // Each server its own seed: session ids come from it, and replicas must not make the same ones.
      seed: `bench-${process.pid}`,
    });
    port = Number(new URL(server.url).port);
    close = () => server.close({ drainTimeoutMs: 0 });
  }
  serveUntilStdinEnds(port, close);
}

runChild(main);
