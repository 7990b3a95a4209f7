import { WebSocket } from "ws";

/**
 * A test client of /openenv/ws that reads answers in order (messages that come before they are asked for
 * wait in a queue).
 */
export class OpenEnvWsClient {
  private readonly queue: unknown[] = [];
  private waiting: Array<(value: unknown) => void> = [];
  readonly closed: Promise<number>;
  constructor(readonly ws: WebSocket) {
    ws.on("message", (raw) => {
      const value = JSON.parse(raw.toString());
      const next = this.waiting.shift();
      if (next) next(value);
      else this.queue.push(value);
    });
    this.closed = new Promise((resolve) => ws.once("close", (code) => resolve(code)));
  }
  static connect(url: string, headers: Record<string, string> = {}): Promise<OpenEnvWsClient> {
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/openenv/ws`, { headers });
    const client = new OpenEnvWsClient(ws);
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(client));
      ws.once("error", reject);
    });
  }
  next(): Promise<any> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift());
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  /** Sends without waiting (pipelining); read the answers with `next`. */
  send(message: unknown): void {
    this.ws.send(typeof message === "string" ? message : JSON.stringify(message));
  }
  ask(message: unknown): Promise<any> {
    this.ws.send(typeof message === "string" ? message : JSON.stringify(message));
    return this.next();
  }
}
