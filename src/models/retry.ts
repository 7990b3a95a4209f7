import { APICallError } from "@ai-sdk/provider";
import type { Random } from "../core/random.js";

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 3, baseDelayMs: 500, maxDelayMs: 20_000 };

/** Marks an attempt that ran out of time, so it can be retried like a 408. */
export class AttemptTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

/** The HTTP status of a provider error, when it has one. */
export function statusOf(error: unknown): number | undefined {
  if (APICallError.isInstance(error)) return error.statusCode;
  const status = (error as { statusCode?: unknown; status?: unknown } | null)?.statusCode;
  return typeof status === "number" ? status : undefined;
}

/** Rate limits, server errors, timeouts and dropped connections are worth another try; 4xx are not. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof AttemptTimeout) return true;
  const status = statusOf(error);
  if (status !== undefined) return status === 408 || status === 409 || status === 429 || status >= 500;
  if (APICallError.isInstance(error)) return error.isRetryable;
  // fetch() failures (connection refused or reset) carry no status.
  return (
    error instanceof TypeError &&
    /fetch failed|network|ECONN|socket/i.test(`${error.message} ${String(error.cause)}`)
  );
}

/** How long the server asked us to wait (`retry-after-ms`, `retry-after` in seconds or as a date). */
export function retryAfterMs(error: unknown, now: number = Date.now()): number | undefined {
  const headers = APICallError.isInstance(error) ? error.responseHeaders : undefined;
  if (!headers) return undefined;
  const lower = Object.fromEntries(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]));
  const ms = Number(lower["retry-after-ms"]);
  if (lower["retry-after-ms"] !== undefined && Number.isFinite(ms)) return Math.max(0, ms);
  const value = lower["retry-after"];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Exponential backoff with full jitter, or the server's Retry-After when it gave one (capped at the max). */
export function backoffDelay(error: unknown, attempt: number, policy: RetryPolicy, random: Random): number {
  const asked = retryAfterMs(error);
  if (asked !== undefined) return Math.min(asked, policy.maxDelayMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(random.next() * ceiling);
}
