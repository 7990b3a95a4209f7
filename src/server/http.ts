import { createHash } from "node:crypto";
import type { Context } from "hono";
import { TerrariumError } from "../core/errors.js";
import type { SessionRecord } from "../sessions/types.js";
import type { Engine } from "../sim/engine.js";
import { parseJsonText } from "./json-body.js";

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

/** The body as JSON (checked for depth and numbers JSON cannot hold), or undefined when empty and optional. */
export async function jsonValue(c: AppContext, optional = false): Promise<unknown> {
  const problem = c.get("bodyError");
  if (problem) throw new TerrariumError("INVALID_INPUT", problem);
  const text = c.get("body") ?? "";
  if (text.trim() === "") {
    if (optional) return undefined;
    throw new TerrariumError("INVALID_INPUT", "the request needs a JSON body");
  }
  const type = c.req.header("content-type") ?? "";
  if (type && !/json/i.test(type)) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `the body must be JSON (Content-Type: application/json), not ${type}`,
    );
  }
  return parseJsonText(text, c.get("maxDepth"));
}

/** The body as a JSON object ({} when empty and optional). */
export async function jsonBody(c: AppContext, optional = false): Promise<Record<string, unknown>> {
  const value = await jsonValue(c, optional);
  if (value === undefined) return {};
  if (!isObject(value)) throw new TerrariumError("INVALID_INPUT", "the body must be a JSON object");
  return value;
}

/** The session, if it exists and belongs to the caller (others' sessions look like missing ones). */
export async function ownSession(
  engine: Engine,
  c: AppContext,
  id: string | undefined,
): Promise<SessionRecord | undefined> {
  if (!id) return undefined;
  const record = await engine.store.getSession(id);
  return record && record.owner === c.get("owner") ? record : undefined;
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

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex").slice(0, 32);
}

/** Reads and drops up to `limit` bytes of a body nobody will use. */
export async function drain(body: ReadableStream<Uint8Array> | null, limit: number): Promise<void> {
  if (!body) return;
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
  body: ReadableStream<Uint8Array>,
  max: number,
  drainLimit: number,
): Promise<string | "too-large" | "not-utf8"> {
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
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    return "not-utf8";
  }
}

/** A JSON response whose body may be any JSON value (Hono's helper wants objects). */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body ?? null), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}
