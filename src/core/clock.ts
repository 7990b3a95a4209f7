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

/** The UTC day of the last formatted instant: its first millisecond and its text up to the "T". */
let dayStart = Number.NaN;
let dayText = "";
const DAY_MS = 86_400_000;
/** The last instant a Date can hold (its day's later milliseconds cannot be formatted: Date throws). */
const MAX_TIME = 8.64e15;

/** `new Date(ms).toISOString()`. */
export function isoTime(ms: number): string {
  if (ms === formattedMs) return formatted;
  let text: string;
  const t = ms - dayStart;
  if (t >= 0 && t < DAY_MS && Number.isInteger(ms) && ms <= MAX_TIME) {
    // Another instant of the same day: the time of day by arithmetic, the date part as Date wrote it.
    const hours = Math.floor(t / 3_600_000);
    const minutes = Math.floor(t / 60_000) % 60;
    const seconds = Math.floor(t / 1000) % 60;
    const millis = t % 1000;
    text = `${dayText}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`;
  } else {
    text = new Date(ms).toISOString();
    if (Number.isInteger(ms)) {
      dayStart = Math.floor(ms / DAY_MS) * DAY_MS;
      dayText = text.slice(0, text.indexOf("T") + 1);
    }
  }
  formattedMs = ms;
  formatted = text;
  // The text of a whole millisecond reads back as it: the next parse of it (the call's clock) is known.
  if (Number.isInteger(ms)) {
    parsedText = text;
    parsedMs = ms === 0 ? 0 : ms; // never -0: Date.parse reads +0
  }
  return text;
}

function pad2(value: number): string {
  return value < 10 ? `0${value}` : `${value}`;
}

/** `Date.parse(text)`. */
export function parseTime(text: string): number {
  if (text === parsedText) return parsedMs;
  const ms = Date.parse(text);
  parsedText = text;
  parsedMs = ms;
  return ms;
}
