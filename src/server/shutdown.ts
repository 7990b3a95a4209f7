/**
 * Graceful shutdown: the requests a server is answering, and waiting for them to finish. `startServer`
 * counts requests at the HTTP server (from the request until its response is written out, which is later
 * than the app's handler returning). Once draining starts, the app refuses requests that arrive on
 * connections still open with 503 (a load balancer retries them on another replica) and its answers carry
 * `Connection: close`, so no client reuses a connection of a server that is going away.
 */
export class Drain {
  private active = 0;
  private draining = false;
  private waiters: Array<() => void> = [];

  /** Requests being answered now. */
  get inFlight(): number {
    return this.active;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** A request arrived. */
  begin(): void {
    this.active++;
  }

  /** A request's response has been written out (or its connection was lost). */
  end(): void {
    this.active = Math.max(0, this.active - 1);
    if (this.active === 0) this.wake();
  }

  /** From now on, new requests are refused. */
  start(): void {
    this.draining = true;
  }

  /**
   * Resolves true once no request is in flight, or false when `timeoutMs` passes first (or `cutShort`
   * is called). Starts draining if it had not started.
   */
  wait(timeoutMs: number): Promise<boolean> {
    this.start();
    if (this.active === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(
        () => {
          this.waiters = this.waiters.filter((waiter) => waiter !== done);
          resolve(this.active === 0);
        },
        Math.max(0, timeoutMs),
      );
      const done = () => {
        clearTimeout(timer);
        resolve(this.active === 0);
      };
      this.waiters.push(done);
    });
  }

  /** Stops waiting now (a second signal): `wait` resolves with whether anything is still in flight. */
  cutShort(): void {
    this.wake();
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

/** What a shutdown did. */
export interface ShutdownReport {
  /** Requests in flight when shutdown began. */
  inFlight: number;
  /** Requests still unanswered when the drain timeout passed (their connections were closed). */
  abandoned: number;
}

/** serve's default `--drain-timeout`, in seconds. */
export const DEFAULT_DRAIN_TIMEOUT_SECONDS = 10;
