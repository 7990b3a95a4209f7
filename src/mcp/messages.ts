import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_MAX_JSON_DEPTH, parseJsonText } from "../core/checked-json.js";
import { formatPointer } from "../core/json-pointer.js";

/**
 * The checks every MCP door (stdio, streamable HTTP) applies to a message before the MCP SDK sees it, so
 * both answer a hostile message the same way:
 * - text JSON cannot hold (syntax, numbers beyond a double, integers beyond 2^53, nesting): -32700;
 * - JSON that is not a JSON-RPC 2.0 message: -32600;
 * - a request whose params are not an object, or do not fit its method: -32602 with the violations;
 * - a message larger than the limit: -32000 (`TOO_LARGE`).
 * The SDK's own answers for these are a zod issue dump (-32603) or -32700 for everything.
 */

export type RpcId = RequestId | null;

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export interface RpcErrorReply {
  jsonrpc: "2.0";
  id: RpcId;
  error: RpcError;
}

/** One thing wrong with a message's params, in the shape of terrarium's tool-call violations. */
export interface RpcViolation {
  path: string;
  rule: string;
  message: string;
}

/** The JSON-RPC code terrarium answers an oversized message with (a server error, not the client's JSON). */
export const MESSAGE_TOO_LARGE = -32000;

export function rpcErrorReply(id: RpcId, error: RpcError): RpcErrorReply {
  return { jsonrpc: "2.0", id, error };
}

export function tooLargeReply(id: RpcId, maxBytes: number): RpcErrorReply {
  return rpcErrorReply(id, {
    code: MESSAGE_TOO_LARGE,
    message: `the message is larger than the limit of ${maxBytes} bytes; it was not read`,
    data: { code: "TOO_LARGE", maxBytes },
  });
}

export type ReadMessage =
  | { ok: true; message: JSONRPCMessage }
  /**
   * `silent`: the message was a notification or a response, which JSON-RPC never answers, so a stream
   * transport must not (two peers would otherwise answer each other's errors forever); HTTP still
   * answers the POST that carried it, with `reply`.
   */
  | { ok: false; reply: RpcErrorReply; silent: boolean; reason: string };

/**
 * One message's text: parsed with the same checks as an HTTP body, then checked as one JSON-RPC message.
 * The message given back is the SDK's parse of it (what its own transports would deliver).
 */
export function readMessageText(text: string, maxDepth = DEFAULT_MAX_JSON_DEPTH): ReadMessage {
  let value: unknown;
  try {
    value = parseJsonText(text, maxDepth, "the message");
  } catch (error) {
    const message = (error as Error).message;
    return {
      ok: false,
      reply: rpcErrorReply(idOfRefused(text), { code: ErrorCode.ParseError, message }),
      silent: false,
      reason: message,
    };
  }
  return checkMessage(value);
}

/**
 * An HTTP body for `/mcp`: one message or a batch of them (the SDK's HTTP transport takes batches), with
 * the checks of `readMessageText`. The value given back is the parsed body, for the SDK to read again.
 */
export function readBodyText(
  text: string,
  maxDepth = DEFAULT_MAX_JSON_DEPTH,
): { ok: true; value: unknown } | { ok: false; reply: RpcErrorReply } {
  let value: unknown;
  try {
    value = parseJsonText(text, maxDepth);
  } catch (error) {
    return {
      ok: false,
      reply: rpcErrorReply(idOfRefused(text), {
        code: ErrorCode.ParseError,
        message: (error as Error).message,
      }),
    };
  }
  const messages = Array.isArray(value) ? value : [value];
  if (messages.length === 0)
    return {
      ok: false,
      reply: rpcErrorReply(null, {
        code: ErrorCode.InvalidRequest,
        message: "invalid JSON-RPC message: an empty batch",
      }),
    };
  for (const message of messages) {
    const checked = checkMessage(message);
    if (!checked.ok) return { ok: false, reply: checked.reply };
  }
  return { ok: true, value };
}

/**
 * The id to answer refused text with. Text that is not JSON gets null (JSON-RPC's rule for parse errors);
 * JSON refused for a number terrarium cannot keep, or for its depth, still names its request, and that
 * request is answered so its caller is not left waiting.
 */
function idOfRefused(text: string): RpcId {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) && isRequestId(value.id) ? value.id : null;
  } catch {
    return null;
  }
}

/** A parsed value checked as one JSON-RPC 2.0 message. */
export function checkMessage(value: unknown): ReadMessage {
  const responseLike =
    isObject(value) &&
    !Object.hasOwn(value, "method") &&
    (Object.hasOwn(value, "result") || Object.hasOwn(value, "error"));
  const invalid = (message: string, id: RpcId = null): ReadMessage => ({
    ok: false,
    reply: rpcErrorReply(id, {
      code: ErrorCode.InvalidRequest,
      message: `invalid JSON-RPC message: ${message}`,
    }),
    silent: responseLike,
    reason: message,
  });
  if (Array.isArray(value))
    return invalid("one message is one object, not an array (batches are not accepted)");
  if (!isObject(value)) return invalid(`one message is one object, not ${describe(value)}`);
  const hasId = Object.hasOwn(value, "id");
  if (hasId && !isRequestId(value.id)) return invalid('"id" must be a string or an integer');
  const id = hasId ? (value.id as RequestId) : null;
  if (value.jsonrpc !== "2.0") return invalid('"jsonrpc" must be "2.0"', id);
  if (Object.hasOwn(value, "method")) {
    if (typeof value.method !== "string" || value.method === "")
      return invalid('"method" must be a non-empty string', id);
    const unknown = Object.keys(value).filter((key) => !REQUEST_MEMBERS.has(key));
    if (unknown.length > 0) return invalid(`unknown member ${quote(unknown[0] as string)}`, id);
    if (Object.hasOwn(value, "params") && !isObject(value.params)) {
      const message = `the params of ${quote(value.method)} must be an object, not ${describe(value.params)}`;
      return {
        ok: false,
        reply: rpcErrorReply(id, {
          code: ErrorCode.InvalidParams,
          message,
          data: { violations: [{ path: "/params", rule: "type", message: "must be an object" }] },
        }),
        silent: !hasId,
        reason: message,
      };
    }
  }
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (!parsed.success)
    return invalid(
      Object.hasOwn(value, "method")
        ? "not a request or a notification"
        : 'a response needs an "id" and either "result" (an object) or "error" ({code, message})',
      id,
    );
  return { ok: true, message: parsed.data as JSONRPCMessage };
}

const REQUEST_MEMBERS = new Set(["jsonrpc", "id", "method", "params"]);

/** What is used of the SDK's zod schemas. */
interface RequestSchema {
  safeParse(value: unknown):
    | { success: true }
    | {
        success: false;
        error: { issues: ReadonlyArray<{ code: string; path: PropertyKey[]; message: string }> };
      };
}

/** The params schemas of the requests this server answers; other methods are the SDK's (-32601). */
const REQUEST_SCHEMAS = new Map<string, RequestSchema>([
  ["initialize", InitializeRequestSchema],
  ["ping", PingRequestSchema],
  ["tools/list", ListToolsRequestSchema],
  ["tools/call", CallToolRequestSchema],
]);

/** Most violations named in one answer. */
const MAX_VIOLATIONS = 10;

/**
 * A request's params against its method's schema: undefined when they fit, else a -32602 error whose
 * message and `data.violations` say what is wrong in words (the SDK would answer a zod issue dump).
 */
export function paramsError(method: string, params: unknown): RpcError | undefined {
  const schema = REQUEST_SCHEMAS.get(method);
  if (!schema) return undefined;
  const parsed = schema.safeParse(params === undefined ? { method } : { method, params });
  if (parsed.success) return undefined;
  const violations: RpcViolation[] = parsed.error.issues.slice(0, MAX_VIOLATIONS).map((issue) => ({
    path: shorten(
      formatPointer(issue.path.map((part) => (typeof part === "number" ? part : String(part)))),
      200,
    ),
    rule: issue.code,
    message: shorten(issue.message, 200),
  }));
  const more = parsed.error.issues.length - violations.length;
  const listed = violations.map((violation) => `${violation.path || "/"}: ${violation.message}`).join("; ");
  return {
    code: ErrorCode.InvalidParams,
    message: `invalid params for ${method}: ${listed}${more > 0 ? ` (and ${more} more)` : ""}`,
    data: { violations },
  };
}

/**
 * The top-level `"id"` of a JSON object's text, read from its beginning only (the rest may be cut off or
 * broken): the request an oversized or refused message was meant to be, so its caller is not left
 * waiting. Null when it cannot be told.
 */
export function idOfText(text: string): RpcId {
  let i = skipSpace(text, 0);
  if (text[i] !== "{") return null;
  let depth = 1;
  let expectKey = true;
  i++;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      const end = stringEnd(text, i);
      if (end < 0) return null;
      if (depth === 1 && expectKey) {
        const key = parseString(text.slice(i, end));
        let j = skipSpace(text, end);
        if (text[j] !== ":") return null;
        j = skipSpace(text, j + 1);
        if (key === "id") return idValueAt(text, j);
        expectKey = false;
        i = j;
        continue;
      }
      i = end;
      continue;
    }
    if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) return null;
    } else if (ch === "," && depth === 1) expectKey = true;
    i++;
  }
  return null;
}

function idValueAt(text: string, start: number): RpcId {
  if (text[start] === '"') {
    const end = stringEnd(text, start);
    return end < 0 ? null : (parseString(text.slice(start, end)) ?? null);
  }
  const integer = /^-?\d{1,16}(?![\d.eE])/.exec(text.slice(start, start + 20))?.[0];
  if (integer === undefined) return null;
  const value = Number(integer);
  return Number.isSafeInteger(value) ? value : null;
}

/** Index just after the string starting at `start` (a quote), or -1 when the text ends inside it. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const ch = text[i];
    if (ch === "\\") i++;
    else if (ch === '"') return i + 1;
  }
  return -1;
}

function parseString(raw: string): string | undefined {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

function skipSpace(text: string, start: number): number {
  let i = start;
  while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r"))
    i++;
  return i;
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === "string" || (typeof value === "number" && Number.isSafeInteger(value));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

function quote(text: string): string {
  return JSON.stringify(shorten(text, 80));
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
