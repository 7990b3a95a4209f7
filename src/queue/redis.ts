import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { type Job, Queue, UnrecoverableError, Worker } from "bullmq";
import { Redis } from "ioredis";
import { TerrariumError } from "../core/errors.js";
import { RedisHealth, reasonOf, redactUrl, retryDelay } from "./redis-health.js";
import {
  budgetSpentMessage,
  countProgress,
  errorMessage,
  type ItemResult,
  type JobKind,
  type JobQueue,
  type JobRunner,
  type RunOutcome,
  type RunProgress,
  type RunSubmission,
  type SubmitOptions,
} from "./types.js";

export interface RedisJobQueueOptions {
  /** Name of the BullMQ queue. Default "terrarium". */
  queue?: string;
  /** Prefix of every Redis key (BullMQ's and the runs'). Default "terrarium". */
  prefix?: string;
  /** How often a waiting submitter looks for new results, in ms. Default 200. */
  pollMs?: number;
  /** How often a waiting submitter checks that its pending items still have a job, in ms. Default 2000. */
  lostCheckMs?: number;
  /** How long a run's results are kept after its last change, in seconds. Default 7 days. */
  keepSeconds?: number;
  /** How long a submitter waits without a result before it says so (`SubmitOptions.onWaiting`), in ms. Default 30 s. */
  waitingNoticeMs?: number;
  /**
   * Where the queue's own lines go: one when Redis becomes unreachable, one when it is back, and errors
   * of the queue machinery. Default: standard error, prefixed with "terrarium: ".
   */
  log?: (line: string) => void;
}

export interface WorkOptions {
  /** Items this worker processes at once. Default 1. */
  concurrency?: number;
  /** Name shown in results (which worker made an item). Default host:pid. */
  name?: string;
  /**
   * How long a worker's hold on an item lasts without renewal, in ms (renewed every half of it while
   * the worker lives). A worker that dies releases its items this long after. Default 30 s.
   */
  lockDurationMs?: number;
  /** How often workers look for items whose worker died, in ms. Default 15 s. */
  stalledIntervalMs?: number;
  /** Times an item may lose its worker and still be retried (beyond that it fails). Default 2. */
  maxStalledCount?: number;
  /** Called after each item this worker finishes (for logs). */
  onItem?: (result: ItemResult<unknown>, kind: string) => void;
}

/** A running worker in this process. */
export interface QueueWorker {
  readonly name: string;
  /** Items this worker has finished. */
  readonly processed: number;
  /** Items in this worker's hands now. */
  readonly active: number;
  /** True once `close` was called. */
  readonly stopping: boolean;
  /**
   * Stops taking items and waits for the ones in hand; with `force`, does not wait: items in hand are
   * abandoned and other workers take them once their lock expires (as when a worker dies).
   */
  close(options?: { force?: boolean }): Promise<void>;
}

/** What a BullMQ job carries: the item and the run it belongs to (the run's context is stored once). */
interface JobData {
  runId: string;
  itemId: string;
  payload: unknown;
}

const LOST =
  "the item's job is gone without a result: its workers died more often than allowed, or it was removed from the queue";
/** When the run's own record is gone too, Redis lost its data: a restart without persistence, or a flush. */
const WIPED =
  "the item's job and the run's records are gone from Redis (restarted without persistence (AOF), or its keys were deleted): submit the run again to redo it";

/**
 * Runs on Redis through BullMQ: one BullMQ job per item (job id derived from run and item, so submitting
 * a run again never queues an item twice), the run's context in a hash, each item's result in a results
 * hash and its id appended to a log list, which is how a submitter (or anyone) follows a run that any
 * number of workers share. Results are written before a job completes, so a result is never lost; an
 * item whose worker dies is released when its lock expires and another worker takes it (BullMQ's stalled
 * jobs).
 *
 * Limits that hold across workers: `setLimits` sets BullMQ's global concurrency (items at once over all
 * workers of the queue) and global rate limit (items per interval). Model calls happen inside items, so
 * these bound a queue's model traffic; use one queue per provider to give providers different limits.
 */
export class RedisJobQueue implements JobQueue {
  readonly description: string;
  private readonly kinds = new Map<string, JobKind>();
  private readonly queueName: string;
  private readonly prefix: string;
  private readonly pollMs: number;
  private readonly lostCheckMs: number;
  private readonly keepSeconds: number;
  private readonly waitingNoticeMs: number;
  private readonly redis: Redis;
  private queue: Queue | undefined;
  private readonly workers = new Set<QueueWorker>();
  private readonly health: RedisHealth;
  private readonly log: (line: string) => void;

  /**
   * Opens a queue after checking that Redis answers: a wrong URL or nothing listening fails here, as
   * bad input, not in the first submit. Once open, the queue's connections ride out outages: commands
   * wait for Redis to come back instead of failing.
   */
  static async connect(url: string, options: RedisJobQueueOptions = {}): Promise<RedisJobQueue> {
    // One attempt, no retries: an unreachable Redis at the start is a setup error to report now.
    const probe = new Redis(url, {
      lazyConnect: true,
      connectTimeout: 5000,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    // ioredis rejects with "Connection is closed"; the socket's own error says why.
    let cause: Error | undefined;
    probe.on("error", (error: Error) => {
      cause ??= error;
    });
    try {
      await probe.connect();
      await probe.ping();
    } catch (error) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `cannot reach Redis at ${redactUrl(url)} (${reasonOf(cause ?? (error as Error))}): is redis-server running there, and is the URL right?`,
      );
    } finally {
      probe.disconnect();
    }
    return new RedisJobQueue(url, options);
  }

  constructor(
    private readonly url: string,
    options: RedisJobQueueOptions = {},
  ) {
    this.queueName = options.queue ?? "terrarium";
    this.prefix = options.prefix ?? "terrarium";
    this.pollMs = options.pollMs ?? 200;
    this.lostCheckMs = options.lostCheckMs ?? 2000;
    this.keepSeconds = options.keepSeconds ?? 7 * 24 * 3600;
    this.waitingNoticeMs = options.waitingNoticeMs ?? 30_000;
    this.description = `${redactUrl(url)} (queue ${this.queueName})`;
    this.log = options.log ?? ((line) => process.stderr.write(`terrarium: ${line}\n`));
    this.health = new RedisHealth(redactUrl(url), this.log);
    this.redis = this.connection();
  }

  /** Whether every connection of the queue is up (false from a dropped connection until it is back). */
  get reachable(): boolean {
    return this.health.reachable;
  }

  /** Connections of this queue that dropped and came back since it was opened. */
  get reconnects(): number {
    return this.health.reconnects;
  }

  /** True when Redis answers a PING within `timeoutMs` (false at once while a connection is down). */
  async ping(timeoutMs = 1000): Promise<boolean> {
    if (!this.health.connected) return false;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((done) => {
      timer = setTimeout(() => done(false), timeoutMs);
    });
    try {
      return await Promise.race([this.redis.ping().then((answer) => answer === "PONG"), late]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  register(...kinds: JobKind[]): void {
    for (const kind of kinds) this.kinds.set(kind.kind, kind);
  }

  /** Items at once over every worker of this queue, and items per `perMs` (both optional; 0 removes one). */
  async setLimits(limits: { concurrency?: number; rate?: { max: number; perMs: number } }): Promise<void> {
    const queue = this.bullQueue();
    if (limits.concurrency !== undefined) {
      if (limits.concurrency > 0) await queue.setGlobalConcurrency(limits.concurrency);
      else await queue.removeGlobalConcurrency();
    }
    if (limits.rate !== undefined) {
      if (limits.rate.max > 0) await queue.setGlobalRateLimit(limits.rate.max, limits.rate.perMs);
      else await queue.removeGlobalRateLimit();
    }
  }

  async submit<C, P, R>(run: RunSubmission<C, P>, options: SubmitOptions<R> = {}): Promise<RunOutcome<R>> {
    const keys = this.runKeys(run.runId);
    const attempts = Math.max(1, run.attempts ?? 3);
    const meta = this.redis.multi().hset(keys.meta, {
      kind: run.kind,
      context: JSON.stringify(run.context ?? null),
      total: run.items.length,
    });
    if (run.budgetUsd !== undefined) meta.hset(keys.meta, "budgetUsd", run.budgetUsd);
    else meta.hdel(keys.meta, "budgetUsd");
    await meta.expire(keys.meta, this.keepSeconds).exec();
    let spentUsd = Number((await this.redis.hget(keys.meta, "spentUsd")) ?? 0);
    // The log position first: whatever finishes from here on is read from the log, whatever finished
    // before is in the results read next (an item in both is taken once).
    let cursor = await this.redis.llen(keys.log);
    const stored = await this.readResults<R>(run.runId);
    const outcome: RunOutcome<R> = { results: new Map(), earlier: 0 };
    const total = run.items.length;
    const progress = (): RunProgress => countProgress(total, outcome.results.values(), spentUsd);
    const deliver = async (result: ItemResult<R>) => {
      if (outcome.results.has(result.id)) return;
      outcome.results.set(result.id, result);
      await options.onResult?.(result, progress());
    };
    const pending = new Set<string>();
    const failedBefore: string[] = [];
    for (const item of run.items) {
      const result = stored.get(item.id);
      if (result?.ok) {
        outcome.earlier++;
        await deliver(result);
      } else {
        if (result) failedBefore.push(item.id);
        pending.add(item.id);
      }
    }
    if (failedBefore.length > 0) await this.redis.hdel(keys.results, ...failedBefore);
    const queue = this.bullQueue();
    const todo = run.items.filter((item) => pending.has(item.id));
    for (let start = 0; start < todo.length; start += 500) {
      await queue.addBulk(
        todo.slice(start, start + 500).map((item) => ({
          name: run.kind,
          data: { runId: run.runId, itemId: item.id, payload: item.payload } satisfies JobData,
          opts: {
            jobId: jobIdOf(run.runId, item.id),
            attempts,
            backoff: { type: "fixed", delay: 500 },
            removeOnComplete: true,
            removeOnFail: true,
          },
        })),
      );
    }
    let lastLostCheck = Date.now();
    let lastNews = Date.now();
    const workers = () => queue.getWorkersCount().catch(() => undefined);
    if (pending.size > 0 && options.onWaiting && (await workers()) === 0)
      options.onWaiting({ workers: 0, idleMs: 0 });
    while (pending.size > 0) {
      if (options.onWaiting && Date.now() - lastNews >= this.waitingNoticeMs) {
        options.onWaiting({ workers: await workers(), idleMs: Date.now() - lastNews });
        lastNews = Date.now();
      }
      await sleep(this.pollMs);
      const [logged, spent] = await Promise.all([
        this.redis.lrange(keys.log, cursor, -1),
        this.redis.hget(keys.meta, "spentUsd"),
      ]);
      spentUsd = Number(spent ?? 0);
      cursor += logged.length;
      const fresh = [...new Set(logged)].filter((id) => pending.has(id));
      if (fresh.length > 0) {
        const values = await this.redis.hmget(keys.results, ...fresh);
        for (const [index, id] of fresh.entries()) {
          const text = values[index];
          if (text == null) continue;
          pending.delete(id);
          lastNews = Date.now();
          await deliver(JSON.parse(text) as ItemResult<R>);
        }
      }
      if (pending.size > 0 && Date.now() - lastLostCheck >= this.lostCheckMs) {
        lastLostCheck = Date.now();
        for (const result of await this.findLost<R>(run.runId, [...pending])) {
          pending.delete(result.id);
          await deliver(result);
        }
      }
    }
    return outcome;
  }

  /**
   * Pending items whose job no longer exists: a result that landed meanwhile is taken as it is, and an
   * item with neither is recorded as failed (BullMQ drops a job whose workers died too often).
   */
  private async findLost<R>(runId: string, ids: string[]): Promise<ItemResult<R>[]> {
    const lost: ItemResult<R>[] = [];
    const keys = this.runKeys(runId);
    for (let start = 0; start < ids.length; start += 1000) {
      const chunk = ids.slice(start, start + 1000);
      const pipeline = this.redis.pipeline();
      for (const id of chunk) pipeline.exists(`${this.prefix}:${this.queueName}:${jobIdOf(runId, id)}`);
      const exists = (await pipeline.exec()) ?? [];
      const gone = chunk.filter((_, index) => exists[index]?.[1] === 0);
      if (gone.length === 0) continue;
      const values = await this.redis.hmget(keys.results, ...gone);
      const wiped = (await this.redis.exists(keys.meta)) === 0;
      for (const [index, id] of gone.entries()) {
        const text = values[index];
        if (text != null) {
          lost.push(JSON.parse(text) as ItemResult<R>);
          continue;
        }
        const error = wiped ? WIPED : LOST;
        const result: ItemResult<R> = { id, ok: false, error, attempts: 0, worker: "" };
        // Only if no worker recorded one in between.
        const [[, added] = [null, 0]] =
          (await this.redis
            .multi()
            .hsetnx(keys.results, id, JSON.stringify(result))
            .expire(keys.results, this.keepSeconds)
            .exec()) ?? [];
        if (added === 1) lost.push(result);
        else lost.push(JSON.parse((await this.redis.hget(keys.results, id)) as string) as ItemResult<R>);
      }
    }
    return lost;
  }

  async progress(runId: string): Promise<RunProgress> {
    const keys = this.runKeys(runId);
    const [total, spent] = await this.redis.hmget(keys.meta, "total", "spentUsd");
    return countProgress(Number(total ?? 0), (await this.readResults(runId)).values(), Number(spent ?? 0));
  }

  results<R = unknown>(runId: string): Promise<Map<string, ItemResult<R>>> {
    return this.readResults<R>(runId);
  }

  async discard(runId: string): Promise<void> {
    const keys = this.runKeys(runId);
    await this.redis.del(keys.meta, keys.results, keys.log);
  }

  /** Starts a worker in this process for the registered kinds; it runs until closed. */
  work(options: WorkOptions = {}): QueueWorker {
    const name = options.name ?? `${hostname()}:${process.pid}`;
    const runners = new Map<string, { runner: Promise<JobRunner>; active: number; used: number }>();
    const runnerFor = (runId: string, kindName: string) => {
      let entry = runners.get(runId);
      if (!entry) {
        const kind = this.kinds.get(kindName);
        // A failure to open is the item's failure (recorded on its last attempt), not the worker's.
        const runner = this.redis.hget(this.runKeys(runId).meta, "context").then((text) => {
          if (!kind) throw new Error(`worker ${name} has no handler for jobs of kind ${kindName}`);
          if (text == null) throw new Error(`run ${runId} is unknown (its context is missing)`);
          return kind.open(JSON.parse(text));
        });
        runner.catch(() => runners.delete(runId));
        entry = { runner, active: 0, used: Date.now() };
        runners.set(runId, entry);
      }
      return entry;
    };
    let processed = 0;
    let active = 0;
    const record = async (runId: string, result: ItemResult<unknown>) => {
      const keys = this.runKeys(runId);
      await this.redis
        .multi()
        .hset(keys.results, result.id, JSON.stringify(result))
        .rpush(keys.log, result.id)
        .expire(keys.results, this.keepSeconds)
        .expire(keys.log, this.keepSeconds)
        .expire(keys.meta, this.keepSeconds)
        .exec();
      processed++;
    };
    const processor = async (job: Job<JobData>) => {
      const { runId, itemId, payload } = job.data;
      const entry = runnerFor(runId, job.name);
      active++;
      entry.active++;
      entry.used = Date.now();
      let spent = 0;
      // What the item spent is counted before its result is recorded, so a finished run's spending is whole.
      const flushSpending = async () => {
        if (spent <= 0) return;
        const amount = spent;
        spent = 0;
        await this.redis.hincrbyfloat(this.runKeys(runId).meta, "spentUsd", amount);
      };
      try {
        const [budget, spentBefore] = await this.redis.hmget(
          this.runKeys(runId).meta,
          "budgetUsd",
          "spentUsd",
        );
        if (budget != null && Number(spentBefore ?? 0) >= Number(budget)) {
          const error = budgetSpentMessage(Number(budget), Number(spentBefore ?? 0));
          const result: ItemResult<unknown> = {
            id: itemId,
            ok: false,
            error,
            attempts: job.attemptsStarted,
            worker: name,
          };
          await record(runId, result);
          options.onItem?.(result, job.name);
          throw new UnrecoverableError(error);
        }
        const runner = await entry.runner;
        const value = await runner.process(
          { id: itemId, payload },
          {
            spend: (usd) => {
              if (Number.isFinite(usd) && usd > 0) spent += usd;
            },
          },
        );
        const result: ItemResult<unknown> = {
          id: itemId,
          ok: true,
          value,
          attempts: job.attemptsStarted,
          worker: name,
        };
        await flushSpending();
        await record(runId, result);
        options.onItem?.(result, job.name);
      } catch (error) {
        if (error instanceof UnrecoverableError) throw error;
        if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
          const result: ItemResult<unknown> = {
            id: itemId,
            ok: false,
            error: errorMessage(error),
            attempts: job.attemptsStarted,
            worker: name,
          };
          await flushSpending();
          await record(runId, result);
          options.onItem?.(result, job.name);
        }
        throw error;
      } finally {
        await flushSpending();
        active--;
        entry.active--;
        entry.used = Date.now();
      }
    };
    const connection = this.connection();
    const worker = new Worker<JobData>(this.queueName, processor, {
      connection,
      prefix: this.prefix,
      concurrency: Math.max(1, options.concurrency ?? 1),
      lockDuration: options.lockDurationMs ?? 30_000,
      stalledInterval: options.stalledIntervalMs ?? 15_000,
      maxStalledCount: options.maxStalledCount ?? 2,
      name,
    });
    // Connection errors (the blocking connection's too) are retried by ioredis and told once by the
    // health lines; other errors of BullMQ's machinery are logged, each message once a minute at most.
    const told = new Map<string, number>();
    worker.on("error", (error) => {
      if (isConnectionError(error)) return;
      const message = errorMessage(error).split("\n")[0]?.slice(0, 300) ?? "";
      if (Date.now() - (told.get(message) ?? 0) < 60_000) return;
      if (told.size > 100) told.clear();
      told.set(message, Date.now());
      this.log(`worker ${name}: ${message}`);
    });
    // A run's resources are closed once it has been idle for a minute.
    const closeRunner = async (runId: string) => {
      const entry = runners.get(runId);
      runners.delete(runId);
      await entry?.runner.then((runner) => runner.close()).catch(() => {});
    };
    const sweep = setInterval(() => {
      for (const [runId, entry] of runners)
        if (entry.active === 0 && Date.now() - entry.used > 60_000) void closeRunner(runId);
    }, 10_000);
    sweep.unref();
    let closing: Promise<void> | undefined;
    const handle: QueueWorker = {
      name,
      get processed() {
        return processed;
      },
      get active() {
        return active;
      },
      get stopping() {
        return closing !== undefined;
      },
      close: (closeOptions = {}) => {
        closing ??= (async () => {
          clearInterval(sweep);
          // Waiting for an unreachable Redis could last forever (BullMQ's graceful close waits for its
          // blocking connection to end, which a reconnecting client never does), and the items in hand
          // could not be recorded anyway: stop without them; their locks expire once Redis is back and
          // other workers take them.
          const outage = this.health.whenUnreachable();
          const down = !this.health.reachable;
          const force = closeOptions.force === true || down;
          const closed = worker.close(force);
          closed.catch(() => {});
          const cut = await Promise.race([closed.then(() => false), outage.promise.then(() => true)]);
          outage.cancel();
          if (cut) {
            if (closeOptions.force !== true && active > 0)
              this.log(
                `worker ${name}: stopping without the ${active} item(s) in hand, as Redis is unreachable; other workers take them once it is back`,
              );
            connection.disconnect();
            if (force) await closed;
          }
          for (const runId of [...runners.keys()]) await closeRunner(runId);
          this.health.release(connection);
          connection.disconnect();
          this.workers.delete(handle);
        })();
        return closing;
      },
    };
    this.workers.add(handle);
    return handle;
  }

  async close(): Promise<void> {
    for (const worker of [...this.workers]) await worker.close();
    await this.queue?.close();
    this.health.release(this.redis);
    this.redis.disconnect();
  }

  private bullQueue(): Queue {
    if (!this.queue) {
      this.queue = new Queue(this.queueName, { connection: this.redis, prefix: this.prefix });
      // Its connection is ours, already watched: its errors are told by the health lines.
      this.queue.on("error", () => {});
    }
    return this.queue;
  }

  /**
   * A connection that waits out outages: it reconnects for as long as it takes, and commands wait for
   * it (no per-request retry limit, which BullMQ's blocking connections need anyway).
   */
  private connection(): Redis {
    return this.health.watch(
      new Redis(this.url, {
        connectTimeout: 5000,
        maxRetriesPerRequest: null,
        retryStrategy: retryDelay,
        lazyConnect: false,
      }),
    );
  }

  private runKeys(runId: string) {
    const base = `${this.prefix}:${this.queueName}:run:${runId}`;
    return { meta: `${base}:meta`, results: `${base}:results`, log: `${base}:log` };
  }

  private async readResults<R>(runId: string): Promise<Map<string, ItemResult<R>>> {
    const all = await this.redis.hgetall(this.runKeys(runId).results);
    return new Map(Object.entries(all).map(([id, text]) => [id, JSON.parse(text) as ItemResult<R>]));
  }
}

/** BullMQ job ids may not contain ":" nor be integers: a digest of run and item, with a letter first. */
function jobIdOf(runId: string, itemId: string): string {
  return `i${createHash("sha256").update(runId).update("\u0000").update(itemId).digest("hex").slice(0, 40)}`;
}

/** Errors of a connection that ioredis retries by itself (told once by the health lines, not each time). */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return true;
  return /Connection is closed|connect E[A-Z]+|Stream isn't writeable|ECONNRESET|EPIPE/.test(
    errorMessage(error),
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
