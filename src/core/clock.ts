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

/*
 * A step formats and reads the same instants several times (the engine's time for the call, a tool's
 * `now()`, the history entry's time read back at the next call): the last answer of each is kept, and
 * asked again costs a comparison (`toISOString` and `Date.parse` each cost far more than that).
 */
let formattedMs = Number.NaN;
let formatted = "";
let parsedText: string | undefined;
let parsedMs = Number.NaN;

/** `new Date(ms).toISOString()`. */
export function isoTime(ms: number): string {
  if (ms === formattedMs) return formatted;
  const text = new Date(ms).toISOString();
  formattedMs = ms;
  formatted = text;
  // The text of a whole millisecond reads back as it: the next parse of it (the call's clock) is known.
  if (Number.isInteger(ms)) {
    parsedText = text;
    parsedMs = ms === 0 ? 0 : ms; // never -0: Date.parse reads +0
  }
  return text;
}

/** `Date.parse(text)`. */
export function parseTime(text: string): number {
  if (text === parsedText) return parsedMs;
  const ms = Date.parse(text);
  parsedText = text;
  parsedMs = ms;
  return ms;
}
