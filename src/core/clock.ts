/**
 * Time is injected so that anything that stamps a time (environments, sessions, caches) can run
 * repeatably: tests and seeded runs use a manual clock, everything else the system clock.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that starts at `start` and advances by `stepMs` on every reading (0 = frozen). */
export class ManualClock implements Clock {
  private current: number;

  constructor(
    start: number | string | Date = "2025-01-01T00:00:00.000Z",
    private readonly stepMs = 0,
  ) {
    this.current = toMillis(start);
  }

  now(): number {
    const reading = this.current;
    this.current += this.stepMs;
    return reading;
  }

  /** A clock at the same reading with the same step, advancing on its own from now on. */
  clone(): ManualClock {
    return new ManualClock(this.current, this.stepMs);
  }

  advance(ms: number): void {
    this.current += ms;
  }

  set(time: number | string | Date): void {
    this.current = toMillis(time);
  }
}

function toMillis(time: number | string | Date): number {
  const millis = typeof time === "number" ? time : new Date(time).getTime();
  if (!Number.isFinite(millis)) throw new RangeError(`ManualClock: "${String(time)}" is not a date`);
  return millis;
}

export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}
