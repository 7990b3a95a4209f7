import type { Command } from "commander";
import { envsimPredictJob } from "../../bench/envsim/queued.js";
import type { Models } from "../../models/hub.js";
import { type JobKind, openRedisQueue, type QueueWorker, type RedisJobQueue } from "../../queue/index.js";
import { datasetTaskJob } from "../../task/dataset-job.js";
import { usersRunJob } from "../../users/run/queued.js";
import { type CliIo, parsePositiveInteger } from "../io.js";
import { modelsFor } from "./envsim/shared.js";

interface WorkerCliOptions {
  queue: string;
  concurrency: number;
  name?: string;
  maxActive?: number;
  rate?: number;
  lockDuration?: number;
  stalledInterval?: number;
}

export function registerWorkerCommand(program: Command, io: CliIo): void {
  program
    .command("worker")
    .description(
      "process the work items other terrarium commands put on a Redis queue (--queue), until stopped",
    )
    .requiredOption("--queue <url>", "the Redis queue: redis://host:port[/db][?queue=<name>&prefix=<prefix>]")
    .option("--concurrency <n>", "items this worker processes at once", parsePositiveInteger, 2)
    .option("--name <name>", "this worker's name in results and logs (default host:pid)")
    .option(
      "--max-active <n>",
      "items at once over all workers of the queue (a limit kept in Redis; every worker may set it)",
      parsePositiveInteger,
    )
    .option(
      "--rate <n>",
      "items started per second over all workers of the queue (kept in Redis)",
      parsePositiveInteger,
    )
    .option(
      "--lock-duration <ms>",
      "how long an item stays with a worker that stopped answering before another takes it",
      parsePositiveInteger,
      30_000,
    )
    .option("--stalled-interval <ms>", "how often workers look for such items", parsePositiveInteger, 15_000)
    .addHelpText(
      "after",
      `
Model calls use this machine's terrarium.config.yaml (--config): its providers, keys, cache and limits.
A submission's budget (budgetUsd in the submitting machine's configuration) holds over all workers: each
item adds what its model calls cost to the run's total in Redis, and once the total reaches the budget the
items not yet started fail with MODEL_BUDGET_EXCEEDED. --max-active and --rate are kept in Redis too.
The first SIGINT or SIGTERM finishes the items in hand and exits; a second one exits at once (the items in
hand then go to other workers when their lock expires).

Run one or more per machine, then submit work with the same --queue (envsim eval, gats --dataset, users run):
  $ terrarium worker --queue redis://127.0.0.1:6379 --concurrency 4
  $ terrarium envsim eval --bench bench.jsonl --simulator code --out results/ --queue redis://127.0.0.1:6379
(A worker runs until stopped, and a submission waits for workers: neither is a self-contained example.)
`,
    )
    .action(async (options: WorkerCliOptions, command: Command) => {
      const running = await startWorker(options, io, (roles) => modelsFor(command, roles));
      await new Promise<void>((resolve) => {
        let stopping = false;
        const onSignal = (signal: NodeJS.Signals) => {
          if (stopping) {
            // Like a killed worker: the items in hand go to other workers when their lock expires.
            io.stderr.write(`${signal} again: exiting now; the items in hand go to other workers\n`);
            process.exit(130);
          }
          stopping = true;
          io.stderr.write(`${signal}: finishing the items in hand (send it again to exit at once)\n`);
          void running.stop().then(() => {
            process.off("SIGINT", onSignal);
            process.off("SIGTERM", onSignal);
            resolve();
          });
        };
        process.on("SIGINT", onSignal);
        process.on("SIGTERM", onSignal);
      });
    });
}

/** Every kind of work item terrarium's commands put on a queue, using the worker's models. */
export function knownJobKinds(models: (roles: Record<string, string>) => Models): JobKind[] {
  return [
    envsimPredictJob(models) as JobKind,
    datasetTaskJob(models) as JobKind,
    usersRunJob(models) as JobKind,
  ];
}

export interface RunningWorker {
  readonly queue: RedisJobQueue;
  readonly worker: QueueWorker;
  /** Closes the worker (waiting for its items unless `force`) and the queue. */
  stop(force?: boolean): Promise<void>;
}

/** Starts a worker for every known kind on the queue; what `terrarium worker` runs until a signal. */
export async function startWorker(
  options: WorkerCliOptions,
  io: CliIo,
  models: (roles: Record<string, string>) => Models,
  kinds: JobKind[] = knownJobKinds(models),
): Promise<RunningWorker> {
  const queue = await openRedisQueue(options.queue);
  queue.register(...kinds);
  if (options.maxActive !== undefined || options.rate !== undefined)
    await queue.setLimits({
      ...(options.maxActive !== undefined ? { concurrency: options.maxActive } : {}),
      ...(options.rate !== undefined ? { rate: { max: options.rate, perMs: 1000 } } : {}),
    });
  let failed = 0;
  const worker = queue.work({
    concurrency: options.concurrency,
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.lockDuration !== undefined ? { lockDurationMs: options.lockDuration } : {}),
    ...(options.stalledInterval !== undefined ? { stalledIntervalMs: options.stalledInterval } : {}),
    onItem: (result, kind) => {
      if (result.ok) return;
      failed++;
      io.stderr.write(`${kind} ${result.id} failed after ${result.attempts} attempts: ${result.error}\n`);
    },
  });
  io.stderr.write(
    `worker ${worker.name} on ${queue.description}: ${kinds.map((kind) => kind.kind).join(", ")}; ${options.concurrency} at once\n`,
  );
  let done: Promise<void> | undefined;
  const running: RunningWorker = {
    queue,
    worker,
    stop(force = false) {
      done ??= (async () => {
        await worker.close({ force });
        await queue.close();
        io.stderr.write(
          `worker ${worker.name} stopped: ${worker.processed} items processed (${failed} failed)\n`,
        );
      })();
      return done;
    },
  };
  return running;
}
