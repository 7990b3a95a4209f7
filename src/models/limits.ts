/**
 * Per-provider admission: at most `concurrency` calls in flight and at most `rpm` calls started in any
 * 60-second window. Waiters are served in arrival order.
 */
export class ProviderGate {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly starts: number[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly rpm: number,
    private readonly now: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = defaultSleep,
  ) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    await this.acquireSlot();
    try {
      await this.waitForRate();
      return await task();
    } finally {
      this.release();
    }
  }

  get active(): number {
    return this.inFlight;
  }

  private acquireSlot(): Promise<void> {
    if (this.inFlight < this.concurrency) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }

  private async waitForRate(): Promise<void> {
    if (this.rpm <= 0) return;
    for (;;) {
      const now = this.now();
      while (this.starts.length > 0 && (this.starts[0] as number) <= now - 60_000) this.starts.shift();
      if (this.starts.length < this.rpm) {
        this.starts.push(now);
        return;
      }
      await this.sleep((this.starts[0] as number) + 60_000 - now);
    }
  }
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
