import { TerrariumError } from "../core/errors.js";
import { LocalJobQueue } from "./local.js";
import { RedisJobQueue, type RedisJobQueueOptions } from "./redis.js";
import type { JobQueue } from "./types.js";

/** The line a waiting submitter prints (see `SubmitOptions.onWaiting`). */
export function describeWaiting(
  info: { workers: number | undefined; idleMs: number },
  queue: string,
): string {
  if (info.workers === 0)
    return `waiting: no worker is connected to ${queue}; start some with \`terrarium worker --queue <the same URL>\``;
  const workers = info.workers === undefined ? "" : ` (${info.workers} workers connected)`;
  return `waiting: no result for ${Math.round(info.idleMs / 1000)} s${workers}`;
}

/** True when `--queue` names Redis (`redis://` or `rediss://`). */
export function isRedisUrl(value: string): boolean {
  return /^rediss?:\/\//i.test(value);
}

/**
 * Reads `--queue`'s Redis URL: `redis://[:password@]host:port[/db][?queue=<name>&prefix=<prefix>]`. The
 * two parameters select the BullMQ queue and the key prefix (both default to "terrarium"), so that several
 * independent queues can share one Redis; they are taken off the URL given to the client.
 */
export function parseQueueUrl(spec: string): { url: string; options: RedisJobQueueOptions } {
  let parsed: URL;
  try {
    parsed = new URL(spec);
  } catch {
    throw new TerrariumError("INVALID_INPUT", `--queue: not a URL: "${spec}"`);
  }
  const options: RedisJobQueueOptions = {};
  for (const [key, value] of [...parsed.searchParams]) {
    if (key === "queue") options.queue = value;
    else if (key === "prefix") options.prefix = value;
    else continue;
    if (!/^[A-Za-z0-9._-]+$/.test(value))
      throw new TerrariumError(
        "INVALID_INPUT",
        `--queue: ${key} may hold letters, digits, ".", "_" and "-" only`,
      );
    parsed.searchParams.delete(key);
  }
  return { url: parsed.toString(), options };
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
  return openRedisQueue(spec, options);
}

/** `--queue`'s Redis queue, refusing anything but a Redis URL. */
export async function openRedisQueue(
  spec: string,
  options: RedisJobQueueOptions = {},
): Promise<RedisJobQueue> {
  if (!isRedisUrl(spec))
    throw new TerrariumError("INVALID_INPUT", `--queue takes redis://host:port[/db], got "${spec}"`);
  const { url, options: fromUrl } = parseQueueUrl(spec);
  return RedisJobQueue.connect(url, { ...options, ...fromUrl });
}
