import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_MAX_JSON_DEPTH } from "../core/checked-json.js";
import { idOfText, type RpcErrorReply, readMessageText, tooLargeReply } from "./messages.js";

/** Largest message (one line, in bytes) read over stdio unless configured: the HTTP body limit. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_000_000;

export interface LineTransportOptions {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** Largest line in bytes (newline not counted); a longer one is answered with an error and skipped. */
  maxMessageBytes?: number;
  /** Deepest nesting of arrays and objects in a message. */
  maxDepth?: number;
  /** Told about each message refused (one line, for people). */
  onRefused?: (reason: string) => void;
}

/**
 * MCP over stdio, one JSON-RPC message per line, with the checks of the HTTP door: a line longer than the
 * limit is answered with an error and skipped without being held in memory; text JSON cannot hold
 * faithfully, or that is not a JSON-RPC message, is answered with -32700 / -32600 (the SDK's own stdio
 * transport answers nothing, and ends on a 10 MB line). Requests already taken are answered before the
 * transport closes at the end of its input.
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** Resolves once the transport is closed (input ended and every request answered, or closed). */
  readonly closed: Promise<void>;

  private readonly input: NodeJS.ReadableStream;
  private readonly output: NodeJS.WritableStream;
  private readonly maxBytes: number;
  private readonly maxDepth: number;
  private readonly onRefused: ((reason: string) => void) | undefined;
  private parts: Buffer[] = [];
  private size = 0;
  /** Inside a line that was too large: the rest of it is dropped up to its newline. */
  private skipping = false;
  /** Requests handed on and not yet answered, by id (a careless client may reuse one). */
  private readonly unanswered = new Map<RequestId, number>();
  private inputEnded = false;
  private isClosed = false;
  private congested = false;
  /** Writes not yet flushed: the transport closes after them. */
  private readonly writing = new Set<Promise<void>>();
  private markClosed: () => void = () => {};
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });

  constructor(options: LineTransportOptions) {
    this.input = options.input;
    this.output = options.output;
    this.maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
    this.onRefused = options.onRefused;
    this.closed = new Promise((resolve) => {
      this.markClosed = resolve;
    });
  }

  async start(): Promise<void> {
    this.input.on("data", this.onData);
    this.input.on("end", this.onEnd);
    this.input.on("error", this.onStreamError);
    this.output.on("error", this.onStreamError);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.isClosed) return;
    await this.write(message);
    if (!("method" in message) && "id" in message && message.id !== undefined) this.answered(message.id);
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.input.off("data", this.onData);
    this.input.off("end", this.onEnd);
    this.input.off("error", this.onStreamError);
    this.output.off("error", this.onStreamError);
    // Input still open (the reader went away first): stop reading, so it does not keep the process alive.
    if (!this.inputEnded) this.input.pause();
    this.parts = [];
    this.markClosed();
    this.onclose?.();
  }

  private readonly onData = (chunk: Buffer | string) => {
    const data = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    let start = 0;
    while (!this.isClosed) {
      const newline = data.indexOf(0x0a, start);
      this.take(data.subarray(start, newline < 0 ? data.length : newline));
      if (newline < 0) return;
      this.endLine();
      start = newline + 1;
    }
  };

  private readonly onEnd = () => {
    this.inputEnded = true;
    // A last line without a newline is still a message.
    if (this.size > 0 || this.skipping) this.endLine();
    this.closeWhenAnswered();
  };

  private readonly onStreamError = (error: Error) => {
    this.onerror?.(error);
    // A broken pipe: nobody is left to answer.
    void this.close();
  };

  /** A piece of the current line. Past the limit, the line is answered at once and the rest dropped. */
  private take(piece: Buffer): void {
    if (this.skipping || piece.length === 0) return;
    if (this.size + piece.length > this.maxBytes) {
      const head = Buffer.concat([...this.parts, piece.subarray(0, this.maxBytes - this.size)]);
      this.parts = [];
      this.size = 0;
      this.skipping = true;
      this.refuse(
        tooLargeReply(idOfText(head.toString("utf8")), this.maxBytes),
        `it is larger than ${this.maxBytes} bytes`,
      );
      return;
    }
    this.parts.push(piece);
    this.size += piece.length;
  }

  private endLine(): void {
    if (this.skipping) {
      this.skipping = false;
      return;
    }
    const line = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts);
    this.parts = [];
    this.size = 0;
    let text: string;
    try {
      text = this.decoder.decode(line);
    } catch {
      this.refuse(
        { jsonrpc: "2.0", id: null, error: { code: -32700, message: "the message is not UTF-8 text" } },
        "it is not UTF-8 text",
      );
      return;
    }
    if (text.trim() === "") return;
    const read = readMessageText(text, this.maxDepth);
    if (!read.ok) {
      // Notifications and responses are never answered, not even with an error.
      if (read.silent) this.onRefused?.(read.reason);
      else this.refuse(read.reply, read.reason);
      return;
    }
    const message = read.message;
    if ("method" in message && "id" in message)
      this.unanswered.set(message.id, (this.unanswered.get(message.id) ?? 0) + 1);
    this.onmessage?.(message);
  }

  private refuse(reply: RpcErrorReply, reason: string): void {
    this.onRefused?.(reason);
    this.write(reply as unknown as JSONRPCMessage).catch((error: Error) => this.onerror?.(error));
  }

  private answered(id: RequestId): void {
    const count = this.unanswered.get(id);
    if (count === undefined) return;
    if (count <= 1) this.unanswered.delete(id);
    else this.unanswered.set(id, count - 1);
    this.closeWhenAnswered();
  }

  private closeWhenAnswered(): void {
    if (!this.inputEnded || this.unanswered.size > 0) return;
    void Promise.allSettled([...this.writing]).then(() => this.close());
  }

  /** One line out. While the reader lags, no more input is taken (answers cannot pile up unread). */
  private write(message: JSONRPCMessage): Promise<void> {
    const written = new Promise<void>((resolve, reject) => {
      const flushed = this.output.write(`${JSON.stringify(message)}\n`, (error) =>
        error ? reject(error) : resolve(),
      );
      if (!flushed && !this.congested) {
        this.congested = true;
        this.input.pause();
        this.output.once("drain", () => {
          this.congested = false;
          if (!this.isClosed) this.input.resume();
        });
      }
    });
    this.writing.add(written);
    const forget = () => this.writing.delete(written);
    written.then(forget, forget);
    return written;
  }
}
