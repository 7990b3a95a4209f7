import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";

/** The Redis of the scale-out tests (`scripts/services.sh`), or undefined when the tests are to be skipped. */
export const REDIS_URL = process.env.TERRARIUM_TEST_REDIS;

if (!REDIS_URL) {
  if (process.env.TERRARIUM_REQUIRE_SERVICES === "1")
    throw new Error(
      "TERRARIUM_REQUIRE_SERVICES=1 but TERRARIUM_TEST_REDIS is not set (scripts/services.sh prints it)",
    );
  console.warn(
    "skipping the Redis job queue tests: set TERRARIUM_TEST_REDIS=redis://127.0.0.1:6379 (scripts/services.sh starts Redis)",
  );
}

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
