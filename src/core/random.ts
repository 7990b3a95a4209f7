import * as crypto from "node:crypto";

/**
 * A seeded random source (sfc32: small, fast, passes PractRand to 2^36 bytes). The same seed gives the
 * same sequence on every machine, which is what makes a seeded run repeatable.
 */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max] (both inclusive). */
  int(min: number, max: number): number;
  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T;
  /** A new independent source derived from this one and a label (stable regardless of call order). */
  derive(label: string): Random;
  /** The seed this source was made from. */
  readonly seed: string;
}

export function createRandom(seed: string | number = 0): Random {
  return new Sfc32Random(String(seed));
}

/** Non-reproducible source for code paths where no seed was asked for. */
export function unseededRandom(): Random {
  return createRandom(`${Date.now()}-${Math.random()}`);
}

/** SHA-256 of a short text: the one-shot `crypto.hash` where Node has it (20.12+), else a Hash object. */
const sha256: (text: string) => Buffer =
  typeof (crypto as { hash?: unknown }).hash === "function"
    ? (text) => crypto.hash("sha256", text, "buffer")
    : (text) => crypto.createHash("sha256").update(text).digest();

class Sfc32Random implements Random {
  private a = 0;
  private b = 0;
  private c = 0;
  private d = 0;
  /**
   * Whether the state has been hashed from `material` yet. It is made on the first draw: a source that
   * is only derived from, or never drawn from (most of a call's sources), costs no hash.
   */
  private seeded = false;

  /**
   * @param seed the seed as shown to people
   * @param material what the state is hashed from; derived sources use a separate domain so that
   *   `derive("b")` of seed "a" never equals a source seeded "a/b".
   */
  constructor(
    readonly seed: string,
    private readonly material: string = seed,
  ) {}

  private seedState(): void {
    const digest = sha256(this.material);
    this.a = digest.readUInt32LE(0);
    this.b = digest.readUInt32LE(4);
    this.c = digest.readUInt32LE(8);
    this.d = digest.readUInt32LE(12);
    this.seeded = true;
    // Warm up so that similar seeds diverge.
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  private nextUint32(): number {
    if (!this.seeded) this.seedState();
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  next(): number {
    return this.nextUint32() / 4294967296;
  }

  int(min: number, max: number): number {
    if (!Number.isInteger(min) || !Number.isInteger(max) || max < min) {
      throw new RangeError(`Random.int: invalid range [${min}, ${max}]`);
    }
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("Random.pick: empty array");
    return items[this.int(0, items.length - 1)] as T;
  }

  derive(label: string): Random {
    return new Sfc32Random(`${this.seed}/${label}`, `derive\u0000${JSON.stringify([this.material, label])}`);
  }
}
