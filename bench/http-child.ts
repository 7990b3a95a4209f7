/**
 * A server for `bench/http.ts`, in a process of its own so that the clients and the server each get a
 * core: either a plain node:http JSON echo (the baseline) or `startServer` with the options given. Prints
 * `{"port": n}` on stdout once listening, and exits when its stdin closes (the parent went away).
 */
import { createServer } from "node:http";
import { startServer } from "../src/server/start.js";
import { runChild, serveUntilStdinEnds } from "./child-server.js";

const options = JSON.parse(process.argv[2] ?? "{}") as {
  echo?: boolean;
  sources?: string[];
  db?: string;
  /** Every request through Hono: the server's fast path off (src/server/fast-path.ts), to compare. */
  hono?: boolean;
};

async function main(): Promise<void> {
  let close: () => Promise<unknown>;
  let port: number;
  if (options.echo) {
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
