import { randomBytes } from "node:crypto";
import { isAbsolute, resolve } from "node:path";
import { type ErrorCode, TerrariumError } from "../../core/errors.js";
import { createRandom } from "../../core/random.js";
import { BUILTIN_ENVIRONMENTS } from "../../envs/index.js";
import type { HistoryEntry } from "../../sessions/types.js";
import type { AgentToolCallRecord, TokenCount } from "../conversation.js";

/** The reply text kept from one agent answer (longer text is cut). */
export const MAX_REPLY_BYTES = 100_000;
/** The largest response body read from an agent or a terrarium server. */
export const MAX_BODY_BYTES = 5 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_TOOL_STEPS = 12;

/** The code of every failure of the agent under test (the caller records it and ends the run). */
export const AGENT_ERROR: ErrorCode = "AGENT_ERROR";

export function agentError(message: string, cause?: unknown): TerrariumError {
  return new TerrariumError(AGENT_ERROR, message, cause === undefined ? {} : { cause });
}

/** The text cut to MAX_REPLY_BYTES of UTF-8 (never inside a character). */
export function capText(text: string, maxBytes = MAX_REPLY_BYTES): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  let kept = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8");
  if (kept.endsWith("\uFFFD")) kept = kept.slice(0, -1);
  return kept;
}

/** The start of a body, on one line, for error messages. */
export function snippet(text: string, length = 300): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > length ? `${flat.slice(0, length)}…` : flat || "(empty body)";
}

/** A number for the model's `seed` from the run's seed string. */
export function numericSeed(seed: string): number {
  return createRandom(seed)
    .derive("agent")
    .int(0, 2 ** 31 - 1);
}

/** A fresh session id for one run: the run id (made safe for headers and paths) and a random tail. */
export function runSessionId(runId: string): string {
  const base = runId.replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 80) || "run";
  return `${base}-${randomBytes(4).toString("hex")}`;
}

export function addUsage(total: TokenCount, more: { inputTokens?: number; outputTokens?: number }): void {
  total.inputTokens += Number.isFinite(more.inputTokens) ? (more.inputTokens as number) : 0;
  total.outputTokens += Number.isFinite(more.outputTokens) ? (more.outputTokens as number) : 0;
}

/** Engine (or terrarium server) history entries as the tool calls of a reply. */
export function recordsFromHistory(entries: readonly HistoryEntry[]): AgentToolCallRecord[] {
  return entries.map((entry) => ({
    tool: entry.request.name,
    arguments: entry.request.arguments,
    status: entry.result.status,
    result: entry.result.status === "invalid" ? { errors: entry.result.errors } : entry.result.observation,
  }));
}

/**
 * `--agent-tools` sources with file paths resolved against `cwd`; built-in environment names and
 * `scheme:` sources (mcp+stdio:, mcp+http:) stay as they are.
 */
export function resolveSources(sources: readonly string[], cwd: string | undefined): string[] {
  return sources.map((source) => {
    if (Object.hasOwn(BUILTIN_ENVIRONMENTS, source)) return source;
    if (/^[a-z][a-z0-9+.-]+:/i.test(source)) return source;
    return isAbsolute(source) ? source : resolve(cwd ?? process.cwd(), source);
  });
}

/** A signal that fires on the caller's abort or after `timeoutMs`. */
export function requestSignal(timeoutMs: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

export interface HttpResult {
  status: number;
  text: string;
}

/**
 * One HTTP exchange with the agent (or the terrarium server serving its tools): the body read up to
 * MAX_BODY_BYTES, failures (unreachable, timeout, too large) as AGENT_ERROR naming `label` and the URL.
 */
export async function httpExchange(
  label: string,
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: string },
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<HttpResult> {
  const where = `${label} (${init.method} ${url})`;
  if (options.signal?.aborted) throw agentError(`${where}: the run was cancelled`);
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method,
      ...(init.headers ? { headers: init.headers } : {}),
      ...(init.body !== undefined ? { body: init.body } : {}),
      signal: requestSignal(options.timeoutMs, options.signal),
      redirect: "follow",
    });
  } catch (error) {
    throw agentError(`${where}: ${describeFetchFailure(error, options)}`, error);
  }
  const declared = Number(response.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
    await response.body?.cancel().catch(() => undefined);
    throw agentError(
      `${where}: the response body (${declared} bytes) is over the ${MAX_BODY_BYTES}-byte limit`,
    );
  }
  let text: string;
  try {
    text = await readLimited(response);
  } catch (error) {
    if (error instanceof TerrariumError) throw agentError(`${where}: ${error.message}`);
    throw agentError(`${where}: ${describeFetchFailure(error, options)}`, error);
  }
  return { status: response.status, text };
}

/** `httpExchange` that also wants a 2xx answer with a JSON body. */
export async function httpJson(
  label: string,
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: string },
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<{ status: number; json: unknown; text: string }> {
  const { status, text } = await httpExchange(label, url, init, options);
  const where = `${label} (${init.method} ${url})`;
  if (status < 200 || status > 299) throw agentError(`${where} answered HTTP ${status}: ${snippet(text)}`);
  if (text.trim() === "") return { status, json: undefined, text };
  try {
    return { status, json: JSON.parse(text), text };
  } catch {
    throw agentError(`${where} answered HTTP ${status} with a body that is not JSON: ${snippet(text)}`);
  }
}

async function readLimited(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new TerrariumError(AGENT_ERROR, `the response body is over the ${MAX_BODY_BYTES}-byte limit`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function describeFetchFailure(error: unknown, options: { timeoutMs: number; signal?: AbortSignal }): string {
  if (options.signal?.aborted) return "the run was cancelled";
  const name = (error as Error)?.name;
  if (name === "TimeoutError" || name === "AbortError") return `no answer within ${options.timeoutMs} ms`;
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const reason = cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
  return `the request failed (${reason})`;
}
