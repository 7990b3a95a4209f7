import { Readable } from "node:stream";
import type { Context } from "hono";
import { parseJsonText } from "../core/checked-json.js";
import { TerrariumError } from "../core/errors.js";
import type { SessionRecord } from "../sessions/types.js";
import type { Engine } from "../sim/engine.js";

/** What the middlewares leave for the routes. */
export type Env = {
  Variables: {
    /** Hash of the caller's bearer token (undefined on an open server). */
    owner: string | undefined;
    /** The request body as text (read once, under the size limit). */
    body: string | undefined;
    /** Why the body could not be read as text (not UTF-8); routes that read the body report it. */
    bodyError: string | undefined;
    maxDepth: number;
    /** This request's id: the client's `x-request-id` when sane, else a new one; every answer carries it. */
    requestId: string;
  };
};
export type AppContext = Context<Env>;

/** An answer decided deep in a handler: this status and body, as they are. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

/** A request's body as the middlewares read it, and what a route needs to parse it. */
export interface BodyText {
  /** The body as text (undefined: none, or not readable as text). */
  text: string | undefined;
  /** Why the body could not be read as text (not UTF-8). */
  error: string | undefined;
  /** The request's Content-Type ("" when absent). */
  contentType: string;
  maxDepth: number;
}

/** The body as JSON (checked for depth and numbers JSON cannot hold), or undefined when empty and optional. */
export async function jsonValue(c: AppContext, optional = false): Promise<unknown> {
  return parseBodyText(bodyTextOf(c), optional);
}

/** What the middlewares read of this request's body. */
export function bodyTextOf(c: AppContext): BodyText {
  return {
    text: c.get("body"),
    error: c.get("bodyError"),
    contentType: c.req.header("content-type") ?? "",
    maxDepth: c.get("maxDepth"),
  };
}

/** `jsonValue` on a body already read (the Hono routes and the server's fast path share it). */
export function parseBodyText(body: BodyText, optional = false): unknown {
  if (body.error) throw new TerrariumError("INVALID_INPUT", body.error);
  const text = body.text ?? "";
  if (text.trim() === "") {
    if (optional) return undefined;
    throw new TerrariumError("INVALID_INPUT", "the request needs a JSON body");
  }
  const type = body.contentType;
  if (type && !/json/i.test(type)) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `the body must be JSON (Content-Type: application/json), not ${type}`,
    );
  }
  return parseJsonText(text, body.maxDepth);
}

/** `parseBodyText` of a body that must be a JSON object ({} when empty and optional). */
export function parseBodyObject(body: BodyText, optional = false): Record<string, unknown> {
  const value = parseBodyText(body, optional);
  if (value === undefined) return {};
  if (!isObject(value)) throw new TerrariumError("INVALID_INPUT", "the body must be a JSON object");
  return value;
}

/** The body as a JSON object ({} when empty and optional). */
export async function jsonBody(c: AppContext, optional = false): Promise<Record<string, unknown>> {
  return parseBodyObject(bodyTextOf(c), optional);
}

/** The session, if it exists and belongs to the caller (others' sessions look like missing ones). */
export async function ownSession(
  engine: Engine,
  c: AppContext,
  id: string | undefined,
): Promise<SessionRecord | undefined> {
  return ownSessionOf(engine, c.get("owner"), id);
}

/** `ownSession` for a caller known by its token's hash (undefined on an open server). */
export async function ownSessionOf(
  engine: Engine,
  owner: string | undefined,
  id: string | undefined,
): Promise<SessionRecord | undefined> {
  if (!id) return undefined;
  const record = await engine.store.getSession(id);
  return record && record.owner === owner ? record : undefined;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A value for an error message, never longer than a line. */
export function shortJson(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? "nothing" : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

/** An id or other caller-given text, cut short for messages. */
export function shortText(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * A request's body: the Node request itself when the app runs under node-server and nothing has read it yet
 * (read with events: no web-stream adapter, which cost a large share of a small call), else the web stream.
 * GET and HEAD have none.
 */
export function requestBody(c: Context): ReadableStream<Uint8Array> | Readable | null {
  const method = c.req.method;
  if (method === "GET" || method === "HEAD") return null;
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  if (incoming instanceof Readable && !incoming.readableDidRead && !incoming.destroyed) return incoming;
  return c.req.raw.body;
}

/** Reads and drops up to `limit` bytes of a body nobody will use. */
export async function drain(
  body: ReadableStream<Uint8Array> | Readable | null,
  limit: number,
): Promise<void> {
  if (!body) return;
  if (body instanceof Readable) {
    await readNode(body, -1, limit).catch(() => undefined);
    return;
  }
  const reader = body.getReader();
  let seen = 0;
  try {
    while (seen <= limit) {
      const { done, value } = await reader.read();
      if (done) return;
      seen += value.length;
    }
    await reader.cancel();
  } catch {
    // The client went away: nothing to answer.
  }
}

/** The body as text, or why not: larger than `max` bytes (the rest is drained, up to `drainLimit`), or not UTF-8. */
export async function readLimited(
  body: ReadableStream<Uint8Array> | Readable,
  max: number,
  drainLimit: number,
): Promise<string | "too-large" | "not-utf8"> {
  let bytes: Buffer;
  if (body instanceof Readable) {
    const read = await readNode(body, max, drainLimit);
    if (read === "too-large") return read;
    bytes = read;
  } else {
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > max) {
        reader.releaseLock();
        await drain(body, drainLimit);
        return "too-large";
      }
      chunks.push(value);
    }
    bytes = Buffer.concat(chunks);
  }
  try {
    return UTF8.decode(bytes);
  } catch {
    return "not-utf8";
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a Node stream to its end: its bytes, or "too-large" past `max` (-1: keep nothing), after which up to
 * `drainLimit` more bytes are read and dropped (so the client sees the answer) before the stream is
 * destroyed. A stream that fails or closes before its end rejects, as a web stream's reader does.
 */
function readNode(stream: Readable, max: number, drainLimit: number): Promise<Buffer | "too-large"> {
  return new Promise((resolve, reject) => new NodeBodyReader(stream, max, drainLimit, resolve, reject));
}

/**
 * readNode's listeners, as methods bound once per body (closures made per request cost allocations and,
 * under tsx, a name definition each).
 */
class NodeBodyReader {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private over: boolean;

  constructor(
    private readonly stream: Readable,
    private readonly max: number,
    private readonly drainLimit: number,
    private readonly resolve: (value: Buffer | "too-large") => void,
    private readonly reject: (error: Error) => void,
  ) {
    this.over = max < 0;
    this.onData = this.onData.bind(this);
    this.onEnd = this.onEnd.bind(this);
    this.onError = this.onError.bind(this);
    this.onClose = this.onClose.bind(this);
    stream.on("data", this.onData);
    stream.on("end", this.onEnd);
    stream.on("error", this.onError);
    stream.on("close", this.onClose);
  }

  private cleanup(): void {
    this.stream.off("data", this.onData);
    this.stream.off("end", this.onEnd);
    this.stream.off("error", this.onError);
    this.stream.off("close", this.onClose);
  }

  private onData(chunk: Buffer | string): void {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    this.size += buffer.length;
    if (!this.over && this.size > this.max) {
      this.over = true;
      this.chunks.length = 0;
    }
    if (!this.over) {
      this.chunks.push(buffer);
      return;
    }
    if (this.size - Math.max(this.max, 0) > this.drainLimit) {
      this.cleanup();
      this.stream.destroy();
      this.resolve("too-large");
    }
  }

  private onEnd(): void {
    this.cleanup();
    const { chunks } = this;
    // One chunk (a small body) is the body itself: no copy.
    this.resolve(
      this.over
        ? "too-large"
        : chunks.length === 1
          ? (chunks[0] as Buffer)
          : Buffer.concat(chunks, this.size),
    );
  }

  private onError(error: Error): void {
    this.cleanup();
    this.reject(error);
  }

  private onClose(): void {
    this.cleanup();
    this.reject(new Error("the client closed the request before its body ended"));
  }
}

/** A JSON response whose body may be any JSON value (Hono's helper wants objects). */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body ?? null), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}
