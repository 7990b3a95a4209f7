import { TerrariumError } from "../core/errors.js";
import { LocalJobQueue } from "./local.js";
import { RedisJobQueue, type RedisJobQueueOptions } from "./redis.js";
import type { JobQueue } from "./types.js";

/** True when `--queue` names Redis (`redis://` or `rediss://`). */
export function isRedisUrl(value: string): boolean {
  return /^rediss?:\/\//i.test(value);
}

/**
 * The queue `--queue` names: a Redis URL gives `RedisJobQueue` (checked to answer), nothing or `local`
 * the in-process queue.
 */
export async function openJobQueue(
  spec: string | undefined,
  options: RedisJobQueueOptions & { concurrency?: number } = {},
): Promise<JobQueue> {
  if (spec === undefined || spec === "local")
    return new LocalJobQueue(options.concurrency !== undefined ? { concurrency: options.concurrency } : {});
  if (isRedisUrl(spec)) return RedisJobQueue.connect(spec, options);
  throw new TerrariumError("INVALID_INPUT", `--queue takes redis://host:port[/db] or local, got "${spec}"`);
}
