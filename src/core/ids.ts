import { createHash } from "node:crypto";
import type { Random } from "./random.js";

/** Generates identifiers from an injected random source, so seeded runs produce the same ids. */
export interface IdGenerator {
  /** A short id with an optional prefix: `ses_7k2m9q4x1c8v`. */
  next(prefix?: string): string;
  /** An RFC 4122 version-4-shaped UUID. */
  uuid(): string;
}

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lower case

export function createIdGenerator(random: Random, length = 12): IdGenerator {
  return {
    next(prefix) {
      let id = "";
      // `random.int(0, 31)` without its argument checks: the same draws, so the same ids.
      for (let i = 0; i < length; i++) id += ALPHABET[Math.floor(random.next() * 32)];
      return prefix ? `${prefix}_${id}` : id;
    },
    uuid() {
      const hex: string[] = [];
      for (let i = 0; i < 32; i++) hex.push(random.int(0, 15).toString(16));
      hex[12] = "4";
      hex[16] = (8 + random.int(0, 3)).toString(16);
      const s = hex.join("");
      return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
    },
  };
}

/** A stable id derived from content (for "deterministic identifiers derived from the arguments"). */
export function contentId(text: string, prefix = "", length = 12): string {
  if (!Number.isInteger(length) || length < 1 || length > 32) {
    throw new RangeError(`contentId: length must be an integer from 1 to 32, got ${length}`);
  }
  const digest = createHash("sha256").update(text).digest();
  let id = "";
  for (let i = 0; i < length; i++) id += ALPHABET[(digest[i] as number) % 32];
  return prefix ? `${prefix}_${id}` : id;
}
