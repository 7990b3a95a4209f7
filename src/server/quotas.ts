import { TerrariumError } from "../core/errors.js";
import type { Store } from "../sessions/types.js";
import { HttpProblem } from "./http.js";

/**
 * What one bearer token may hold at once, so that no tenant can starve the others. The caps apply to
 * tokens only: an open server (no `--token`) has one anonymous tenant, whom the server-wide limits
 * already bound. The MCP caps (live sessions per token and in all, idle time) are `McpHttpOptions`.
 */
export interface TokenQuotas {
  /** Stored sessions one token may hold (created, forked, imported, replayed, MCP's engine sessions). */
  sessions: number;
  /** Replays one token may run at once (a replay re-runs a whole history). */
  replays: number;
}

export const DEFAULT_TOKEN_QUOTAS: Readonly<TokenQuotas> = Object.freeze({ sessions: 10_000, replays: 2 });

/** The flag that sets each cap, named in refusals so an operator or a tenant knows what to change. */
const FLAGS: Record<keyof TokenQuotas, string> = {
  sessions: "--max-sessions-per-token",
  replays: "--max-replays-per-token",
};

/** Quotas with defaults filled in; a cap that is not a positive integer is refused with its flag's name. */
export function tokenQuotas(given: Partial<TokenQuotas> = {}): TokenQuotas {
  const quotas = { ...DEFAULT_TOKEN_QUOTAS };
  for (const key of Object.keys(FLAGS) as Array<keyof TokenQuotas>) {
    const value = given[key];
    if (value !== undefined) quotas[key] = positiveCap(FLAGS[key], value);
  }
  return quotas;
}

/** A cap from configuration: a whole number of at least 1, or a `CONFIG_INVALID` naming its flag. */
export function positiveCap(flag: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)
    throw new TerrariumError(
      "CONFIG_INVALID",
      `${flag} must be a whole number of at least 1, got ${JSON.stringify(value) ?? String(value)}`,
    );
  return value;
}

/**
 * A refusal because a token reached a cap: the message names what is full, the limit, the flag that sets
 * it and how to free room. `retryAfter` (seconds) when waiting alone can help.
 */
export function quotaExceeded(
  what: string,
  flag: string,
  limit: number,
  remedy: string,
  retryAfter?: number,
): TerrariumError {
  return new TerrariumError(
    "QUOTA_EXCEEDED",
    `this token already has ${limit} ${what}, its limit (${flag} ${limit}); ${remedy}`,
    { details: { limit, ...(retryAfter !== undefined ? { retryAfter } : {}) } },
  );
}

/** A quota refusal as a 429 in the shape of the route's API (terrarium's `{error}` or Gecko's `{detail}`). */
export function quotaProblem(error: TerrariumError, shape: "terrarium" | "gecko"): HttpProblem {
  const retryAfter = error.details?.retryAfter;
  const headers: Record<string, string> =
    typeof retryAfter === "number" ? { "retry-after": String(Math.max(1, Math.ceil(retryAfter))) } : {};
  const body =
    shape === "gecko"
      ? { detail: error.message }
      : { error: { code: "QUOTA_EXCEEDED", message: error.message } };
  return new HttpProblem(429, body, headers);
}

/** How long a refused replay should wait before trying again (replays are short; seconds). */
const REPLAY_RETRY_AFTER = 2;

/**
 * Per-token accounting for the HTTP routes. Stored sessions are counted in the store, so replicas sharing
 * one database agree; creations this process has admitted but not finished count too, so a burst of
 * concurrent creations by one token on one replica cannot pass the check together. Across replicas the
 * check and the creation are not atomic: a token racing several replicas can overshoot its cap by the
 * creations in flight at that moment, which is bounded and harmless. Replays are counted per process (a
 * replay runs where it was asked), so with N replicas a token can run N times its cap at most.
 */
export class QuotaGuard {
  readonly quotas: TokenQuotas;
  private readonly creating = new Map<string, number>();
  private readonly replaying = new Map<string, number>();

  constructor(
    private readonly store: Store,
    quotas: Partial<TokenQuotas> = {},
  ) {
    this.quotas = tokenQuotas(quotas);
  }

  /**
   * Runs `create` (which stores new sessions for `owner`) if the owner has room for `count` more; throws
   * `QUOTA_EXCEEDED` otherwise. No owner (an open server): no cap.
   */
  async createSessions<T>(owner: string | undefined, create: () => Promise<T>, count = 1): Promise<T> {
    if (owner === undefined) return create();
    // Reserved before the store is asked, so concurrent requests of this process see each other.
    const reserved = bump(this.creating, owner, count);
    try {
      const stored = await this.store.countSessions(owner);
      if (stored + reserved > this.quotas.sessions)
        throw quotaExceeded(
          "sessions",
          FLAGS.sessions,
          this.quotas.sessions,
          "delete sessions it no longer needs (DELETE /sessions/{id}) and try again",
        );
      return await create();
    } finally {
      bump(this.creating, owner, -count);
    }
  }

  /** Runs a replay for `owner` if fewer than its cap are running; throws `QUOTA_EXCEEDED` otherwise. */
  async replay<T>(owner: string | undefined, run: () => Promise<T>): Promise<T> {
    if (owner === undefined) return run();
    if ((this.replaying.get(owner) ?? 0) >= this.quotas.replays)
      throw quotaExceeded(
        "replays running",
        FLAGS.replays,
        this.quotas.replays,
        "wait for one to finish and try again",
        REPLAY_RETRY_AFTER,
      );
    bump(this.replaying, owner, 1);
    try {
      return await run();
    } finally {
      bump(this.replaying, owner, -1);
    }
  }
}

/** Adds `delta` to a per-owner counter (dropping owners at zero, so idle tokens cost nothing); the new value. */
function bump(counts: Map<string, number>, owner: string, delta: number): number {
  const value = (counts.get(owner) ?? 0) + delta;
  if (value <= 0) counts.delete(owner);
  else counts.set(owner, value);
  return value;
}

/** Runs `run`, turning a quota refusal into the route's 429 (other errors pass unchanged). */
export async function answeringQuota<T>(shape: "terrarium" | "gecko", run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof TerrariumError && error.code === "QUOTA_EXCEEDED") throw quotaProblem(error, shape);
    throw error;
  }
}
