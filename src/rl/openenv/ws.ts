import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { hashToken } from "../../core/token-hash.js";
import { errorMessage, type OpenEnvMessageOut, type OpenEnvServer, type OpenEnvSession } from "./server.js";

export interface OpenEnvWebSocketOptions {
  /** Bearer tokens accepted on the upgrade request; with none, anyone may connect. */
  tokens?: string[];
  /** The path upgraded (default `/openenv/ws`); other paths' upgrades are left alone. */
  path?: string;
}

/**
 * Serves OpenEnv's WebSocket at `/openenv/ws` on a Node HTTP server: one slot (one episode at a time, each
 * its own engine session) per connection. The bearer token is checked on the upgrade request (401 without
 * one that is accepted); a full server accepts the connection, answers CAPACITY_REACHED and closes it, as
 * OpenEnv's does. Returns a function that detaches it and closes its connections.
 */
export function attachOpenEnvWebSocket(
  httpServer: Server,
  openenv: OpenEnvServer,
  options: OpenEnvWebSocketOptions = {},
): () => Promise<void> {
  const path = options.path ?? "/openenv/ws";
  const tokens = new Set((options.tokens ?? []).map(hashToken));
  // The protocol's own limit answers VALIDATION_ERROR; frames far beyond it are cut by ws (close 1009).
  const wss = new WebSocketServer({ noServer: true, maxPayload: openenv.maxMessageBytes * 2 });

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    let pathname: string;
    try {
      pathname = new URL(request.url ?? "/", "http://localhost").pathname;
    } catch {
      return;
    }
    if (pathname !== path) return;
    let owner: string | undefined;
    if (tokens.size > 0) {
      const header = request.headers.authorization ?? "";
      const token = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
      const hash = token ? hashToken(token) : undefined;
      if (!hash || !tokens.has(hash)) {
        const body = JSON.stringify({
          error: {
            code: "UNAUTHORIZED",
            message: token ? "the bearer token is not accepted" : "send Authorization: Bearer <token>",
          },
        });
        socket.end(
          `HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
        return;
      }
      owner = hash;
    }
    wss.handleUpgrade(request, socket, head, (ws) => connected(ws, owner));
  };

  // Answers wait for the end of the event-loop turn and go out together: a client woken once for several
  // answers costs the server far less than one woken per answer (each wake-up is a cross-core interrupt).
  // The connections and their answers' texts (undefined: close it), in the order they were answered.
  const outSockets: WebSocket[] = [];
  const outTexts: Array<string | undefined> = [];
  const flush = () => {
    for (let i = 0; i < outSockets.length; i++) {
      const ws = outSockets[i] as WebSocket;
      const text = outTexts[i];
      if (text === undefined) ws.close(1000, "closed");
      else if (ws.readyState === WebSocket.OPEN) ws.send(text);
    }
    outSockets.length = 0;
    outTexts.length = 0;
  };

  const connected = (ws: WebSocket, owner: string | undefined) => {
    let session: OpenEnvSession;
    try {
      session = openenv.open(owner, () => ws.close(1000, "idle"));
    } catch (error) {
      ws.send(JSON.stringify(errorMessage(error)), () => ws.close(1013, "capacity reached"));
      return;
    }
    // Made once per connection, not once per message.
    const answered = (answer: OpenEnvMessageOut | undefined) => {
      outSockets.push(ws);
      outTexts.push(answer === undefined ? undefined : JSON.stringify(answer));
      if (outSockets.length === 1) setImmediate(flush);
    };
    ws.on("message", (raw, isBinary) => {
      const text = isBinary ? Buffer.from(raw as Buffer).toString("utf8") : raw.toString();
      void session.handleText(text).then(answered);
    });
    ws.on("close", () => void session.close());
    ws.on("error", () => void session.close());
  };

  httpServer.on("upgrade", onUpgrade);
  return async () => {
    httpServer.off("upgrade", onUpgrade);
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
}
