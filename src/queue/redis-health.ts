import type { Redis } from "ioredis";

/**
 * Follows the Redis connections of one queue so that an outage is two log lines, not a stack per retry:
 * one when a connection fails to reconnect ("unreachable"), one when every connection that went down is
 * ready again ("reachable again after …"). Every watched client has an `error` listener, so ioredis never
 * prints its `Unhandled error event`; the clients themselves keep retrying (see `retryDelay`).
 */
export class RedisHealth {
  private readonly watched = new Set<Redis>();
  private readonly down = new Set<Redis>();
  private readonly closing = new WeakSet<Redis>();
  /** When the first watched connection dropped, while any is still down. */
  private lostAt: number | undefined;
  /** Whether the outage line was printed for the current outage. */
  private reported = false;
  private reconnectCount = 0;
  private readonly outageWaiters = new Set<() => void>();

  constructor(
    /** The Redis URL without its password. */
    private readonly where: string,
    private readonly log: (line: string) => void,
  ) {}

  /** Whether every watched connection is up (a client still connecting for the first time counts as up). */
  get reachable(): boolean {
    return this.down.size === 0;
  }

  /** Connections that came back after dropping, since this queue was opened. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /** Whether every watched connection has a ready socket now. */
  get connected(): boolean {
    for (const client of this.watched) if (client.status !== "ready") return false;
    return this.watched.size > 0;
  }

  /** Resolves once Redis is found unreachable (at once during an outage); `cancel` forgets the wait. */
  whenUnreachable(): { promise: Promise<void>; cancel: () => void } {
    let notify: () => void = () => {};
    const promise = new Promise<void>((resolve) => {
      notify = resolve;
    });
    if (this.reported) notify();
    else this.outageWaiters.add(notify);
    return { promise, cancel: () => this.outageWaiters.delete(notify) };
  }

  watch(client: Redis): Redis {
    this.watched.add(client);
    let everReady = false;
    client.on("error", (error: Error & { code?: string }) => {
      if (this.closing.has(client)) return;
      this.markDown(client);
      if (!this.reported) {
        this.reported = true;
        this.log(`redis at ${this.where} unreachable (${reasonOf(error)}); retrying`);
        for (const notify of this.outageWaiters) notify();
        this.outageWaiters.clear();
      }
    });
    client.on("close", () => {
      if (!this.closing.has(client) && everReady) this.markDown(client);
    });
    client.on("ready", () => {
      if (everReady) this.reconnectCount++;
      everReady = true;
      if (!this.down.delete(client) || this.down.size > 0) return;
      const seconds = ((Date.now() - (this.lostAt ?? Date.now())) / 1000).toFixed(1);
      if (this.reported) this.log(`redis at ${this.where} reachable again after ${seconds} s`);
      this.lostAt = undefined;
      this.reported = false;
    });
    client.on("end", () => this.forget(client));
    return client;
  }

  /** Stops following a client we are about to close (its closing is no outage). */
  release(client: Redis): void {
    this.closing.add(client);
    this.forget(client);
  }

  private forget(client: Redis): void {
    this.watched.delete(client);
    if (this.down.delete(client) && this.down.size === 0) {
      this.lostAt = undefined;
      this.reported = false;
    }
  }

  private markDown(client: Redis): void {
    if (!this.watched.has(client)) return;
    if (this.down.size === 0) this.lostAt = Date.now();
    this.down.add(client);
  }
}

/** Milliseconds before reconnection attempt `times`: quick at first, then every 2 s for as long as it takes. */
export function retryDelay(times: number): number {
  return Math.min(100 * times, 2000);
}

/** The short reason of a connection error (a code such as ECONNREFUSED, else the message's first line). */
export function reasonOf(error: Error & { code?: string }): string {
  if (typeof error.code === "string" && /^[A-Z][A-Z0-9_]*$/.test(error.code)) return error.code;
  return (error.message ?? String(error)).split("\n")[0]?.slice(0, 200) ?? "error";
}

/** A URL for messages: the password, if any, replaced with `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(a URL that does not parse)";
  }
}
