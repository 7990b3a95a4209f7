import { type Clock, systemClock } from "../../core/clock.js";
import type { IdGenerator } from "../../core/ids.js";
import type { Random } from "../../core/random.js";
import type { GuestHost } from "./engine.js";
import type { SourceTapes, SourceUse } from "./protocol.js";

/**
 * The instance's clock, random source and id generator, lent to one sandboxed call with values drawn
 * ahead ("tapes"), so that a tool's ctx.now(), ctx.id() or Math.random() rarely waits for a round trip to
 * the host's thread (tens to hundreds of microseconds each, more while the host is busy). The guest takes
 * values from its tapes in order and asks the host only when a tape runs out; afterwards the worker
 * reports how much of each tape was used, and the sources end exactly where they would have had every
 * value been asked for (what keeps seeded runs identical, whatever was drawn ahead):
 * - random numbers and ids drawn but not used are kept for the instance's next call (`spare*`): nothing
 *   else draws from these sources (forks derive new ones without drawing), so the sequence is unchanged;
 * - a clock that can be cloned (ManualClock, the engine's per-call clock) is read ahead on a clone, and the
 *   real clock is then read once per reading used; the system clock is read by the worker itself; any
 *   other clock is asked for each reading.
 * Ids are drawn without a prefix and prefixed by the worker, as IdGenerator.next does (`prefix_id`).
 */

/** Most values of one kind drawn ahead for a call. */
export const MAX_AHEAD = 64;

const spareRandom = new WeakMap<Random, number[]>();
const spareIds = new WeakMap<IdGenerator, string[]>();

export interface CallSources {
  clock: Clock;
  random: Random;
  ids: IdGenerator;
}

/** How many values of each kind to draw ahead (what the tool's last call used). */
export type SourceForecast = SourceUse;

interface Cloneable extends Clock {
  clone(): Clock;
}

function cloneable(clock: Clock): clock is Cloneable {
  return typeof (clock as Partial<Cloneable>).clone === "function";
}

export class SourceLease implements GuestHost {
  /** What the call took in all, once the worker has reported it. */
  used: SourceUse | undefined;
  private tapes: SourceTapes | undefined;
  /** Clock readings on the tape that the real clock has not made yet. */
  private owedReadings = 0;

  constructor(
    private readonly sources: CallSources,
    private readonly forecast: SourceForecast,
  ) {}

  /**
   * Draws the tapes; called when the call starts. Drawn once per call: a call that the pool first tries in
   * its own thread and then hands to a worker (pool.ts) gets the same values in both.
   */
  draw(): SourceTapes {
    if (this.tapes) return this.tapes;
    const { clock, random, ids } = this.sources;
    const tapes: SourceTapes = { random: [], ids: [] };
    const wantRandom = Math.min(MAX_AHEAD, this.forecast.random);
    const randoms = spareRandom.get(random) ?? [];
    while (randoms.length < wantRandom) randoms.push(random.next());
    spareRandom.delete(random);
    tapes.random = randoms;
    const wantIds = Math.min(MAX_AHEAD, this.forecast.ids);
    const drawn = spareIds.get(ids) ?? [];
    while (drawn.length < wantIds) drawn.push(ids.next());
    spareIds.delete(ids);
    tapes.ids = drawn;
    if (clock === systemClock) {
      tapes.clock = "system";
    } else if (cloneable(clock)) {
      // An empty tape when none are forecast: it can still be drawn on next time (see pool.ts's TapeHost).
      const readings: number[] = [];
      const count = Math.min(MAX_AHEAD, this.forecast.clock);
      const ahead = count > 0 ? clock.clone() : clock;
      for (let i = count; i > 0; i--) readings.push(ahead.now());
      tapes.clock = readings;
      this.owedReadings = readings.length;
    }
    this.tapes = tapes;
    return tapes;
  }

  /**
   * Puts the sources where the call left them: unused random numbers and ids are kept for the next
   * call, the real clock makes the readings the call used from its tape. Without a report (the worker
   * was stopped) the tapes count as used.
   */
  settle(used: SourceUse | undefined): void {
    const tapes = this.tapes;
    if (!tapes) return;
    this.tapes = undefined;
    this.used = used;
    const { random, ids } = this.sources;
    const randoms = used ? tapes.random.slice(used.random) : [];
    if (randoms.length > 0) spareRandom.set(random, randoms);
    const drawn = used ? tapes.ids.slice(used.ids) : [];
    if (drawn.length > 0) spareIds.set(ids, drawn);
    this.catchUp(used ? Math.min(used.clock, this.owedReadings) : this.owedReadings);
  }

  // Answers to the guest's questions once a tape ran out (the guest has then used all of that tape).

  clock(): number {
    this.catchUp(this.owedReadings);
    return this.sources.clock.now();
  }

  now(): string {
    return new Date(this.clock()).toISOString();
  }

  random(): number {
    return this.sources.random.next();
  }

  id(prefix?: string): string {
    return this.sources.ids.next(prefix);
  }

  private catchUp(readings: number): void {
    for (let i = 0; i < readings; i++) this.sources.clock.now();
    this.owedReadings = 0;
  }
}
