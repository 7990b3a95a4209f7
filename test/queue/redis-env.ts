import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { need } from "../helpers/requirements.js";

/**
 * The Redis of the scale-out tests (`scripts/services.sh`), or undefined when the tests are to be skipped
 * (one line says so; with TERRARIUM_REQUIRE_SERVICES set, importing this fails the file instead).
 */
export const REDIS_URL = need("redis", "Redis job queue tests");

/** A key prefix no other test uses. */
export function uniquePrefix(): string {
  return `terrarium-test-${randomUUID().slice(0, 8)}`;
}

/** Deletes every key under a prefix. */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
