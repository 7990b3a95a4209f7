import { afterEach, describe, expect, it, vi } from "vitest";
import { type Clock, isoNow, ManualClock, systemClock } from "./clock.js";

const NEW_YEAR_2025 = Date.UTC(2025, 0, 1); // 1735689600000

describe("ManualClock", () => {
  it("starts at 2025-01-01T00:00:00.000Z by default and is frozen", () => {
    const clock = new ManualClock();
    expect(NEW_YEAR_2025).toBe(1735689600000);
    expect(clock.now()).toBe(1735689600000);
    expect(clock.now()).toBe(1735689600000);
    expect(clock.now()).toBe(1735689600000);
  });

  it("accepts a number, an ISO string or a Date as start", () => {
    expect(new ManualClock(0).now()).toBe(0);
    expect(new ManualClock(-1000).now()).toBe(-1000);
    expect(new ManualClock(1234567890123).now()).toBe(1234567890123);
    expect(new ManualClock("2024-02-29T12:34:56.789Z").now()).toBe(Date.UTC(2024, 1, 29, 12, 34, 56, 789));
    expect(new ManualClock("1970-01-01T00:00:01+01:00").now()).toBe(-3599000);
    expect(new ManualClock(new Date(Date.UTC(2030, 5, 15))).now()).toBe(Date.UTC(2030, 5, 15));
  });

  it("does not keep a reference to the Date it started from", () => {
    const start = new Date(1000);
    const clock = new ManualClock(start);
    start.setTime(5000);
    expect(clock.now()).toBe(1000);
  });

  it("advances by stepMs on every reading, returning the time before the step", () => {
    const clock = new ManualClock(1000, 250);
    expect([clock.now(), clock.now(), clock.now(), clock.now()]).toEqual([1000, 1250, 1500, 1750]);
  });

  it("supports a negative step", () => {
    const clock = new ManualClock(1000, -100);
    expect([clock.now(), clock.now(), clock.now()]).toEqual([1000, 900, 800]);
  });

  it("advance moves the clock forward (or back) without reading it", () => {
    const clock = new ManualClock(0);
    clock.advance(60_000);
    expect(clock.now()).toBe(60_000);
    clock.advance(-15_000);
    expect(clock.now()).toBe(45_000);
    clock.advance(0);
    expect(clock.now()).toBe(45_000);
  });

  it("advance combines with stepping", () => {
    const clock = new ManualClock(0, 10);
    expect(clock.now()).toBe(0);
    clock.advance(100);
    expect(clock.now()).toBe(110);
    expect(clock.now()).toBe(120);
  });

  it("set jumps to a number, an ISO string or a Date, and stepping continues from there", () => {
    const clock = new ManualClock(0, 5);
    expect(clock.now()).toBe(0);
    clock.set(500);
    expect(clock.now()).toBe(500);
    expect(clock.now()).toBe(505);
    clock.set("2025-06-01T00:00:00.000Z");
    expect(clock.now()).toBe(Date.UTC(2025, 5, 1));
    clock.set(new Date(42));
    expect(clock.now()).toBe(42);
    expect(clock.now()).toBe(47);
  });

  it("set can move the clock backwards", () => {
    const clock = new ManualClock("2025-01-02T00:00:00.000Z");
    clock.set("2025-01-01T00:00:00.000Z");
    expect(clock.now()).toBe(NEW_YEAR_2025);
  });

  it.each([
    ["not a date", 'ManualClock: "not a date" is not a date'],
    ["", 'ManualClock: "" is not a date'],
    ["2025-13-45", 'ManualClock: "2025-13-45" is not a date'],
  ])("throws a RangeError for the invalid start %j", (start, message) => {
    expect(() => new ManualClock(start)).toThrow(new RangeError(message));
  });

  it("throws a RangeError for NaN and for an invalid Date", () => {
    expect(() => new ManualClock(Number.NaN)).toThrow(new RangeError('ManualClock: "NaN" is not a date'));
    expect(() => new ManualClock(new Date(Number.NaN))).toThrow(
      new RangeError('ManualClock: "Invalid Date" is not a date'),
    );
  });

  it("is a Clock", () => {
    const clock: Clock = new ManualClock(7);
    expect(clock.now()).toBe(7);
  });
});

describe("isoNow", () => {
  it("formats the clock's reading as an ISO 8601 UTC string", () => {
    expect(isoNow(new ManualClock())).toBe("2025-01-01T00:00:00.000Z");
    expect(isoNow(new ManualClock(0))).toBe("1970-01-01T00:00:00.000Z");
    expect(isoNow(new ManualClock("2024-02-29T23:59:59.999+02:00"))).toBe("2024-02-29T21:59:59.999Z");
  });

  it("reads the clock once per call, so a stepping clock advances", () => {
    const clock = new ManualClock("2025-01-01T00:00:00.000Z", 1500);
    expect(isoNow(clock)).toBe("2025-01-01T00:00:00.000Z");
    expect(isoNow(clock)).toBe("2025-01-01T00:00:01.500Z");
    expect(clock.now()).toBe(NEW_YEAR_2025 + 3000);
  });

  it("works with any Clock implementation", () => {
    expect(isoNow({ now: () => 86_400_000 })).toBe("1970-01-02T00:00:00.000Z");
  });

  it("throws a RangeError for a reading with no date form", () => {
    expect(() => isoNow({ now: () => Number.NaN })).toThrow(RangeError);
  });
});

describe("systemClock", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("reads Date.now()", () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2031-07-04T10:20:30.456Z"));
    expect(systemClock.now()).toBe(Date.UTC(2031, 6, 4, 10, 20, 30, 456));
    expect(isoNow(systemClock)).toBe("2031-07-04T10:20:30.456Z");
    vi.advanceTimersByTime(1000);
    expect(isoNow(systemClock)).toBe("2031-07-04T10:20:31.456Z");
  });

  it("follows the real time when timers are not faked", () => {
    const before = Date.now();
    const reading = systemClock.now();
    const after = Date.now();
    expect(reading).toBeGreaterThanOrEqual(before);
    expect(reading).toBeLessThanOrEqual(after);
  });
});

describe("ManualClock.set validation", () => {
  it("refuses a time that is not a date, leaving the clock as it was", () => {
    const clock = new ManualClock(1000);
    expect(() => clock.set("not a date")).toThrow(new RangeError('ManualClock: "not a date" is not a date'));
    expect(clock.now()).toBe(1000);
  });
});
