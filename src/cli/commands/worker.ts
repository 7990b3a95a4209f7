import type { Command } from "commander";
import { envsimPredictJob } from "../../bench/envsim/queued.js";
import { TerrariumError } from "../../core/errors.js";
import type { Models } from "../../models/hub.js";
import { type JobKind, openRedisQueue, type QueueWorker, type RedisJobQueue } from "../../queue/index.js";
import { datasetTaskJob } from "../../task/dataset-job.js";
import { usersRunJob } from "../../users/run/queued.js";
import { type CliIo, parsePositiveInteger, wholeNumber } from "../io.js";
import { modelsFor } from "./envsim/shared.js";
import { startWorkerProbes, type WorkerProbes } from "./worker-probes.js";

interface WorkerCliOptions {
  queue: string;
  concurrency: number;
  name?: string;
  maxActive?: number;
  rate?: number;
  lockDuration?: number;
  stalledInterval?: number;
  /** Serve /metrics, /livez and /readyz on this port (0: any free port); none when unset. */
  metricsPort?: number;
  /** Address of that server. Default 127.0.0.1. */
  metricsHost?: string;
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
    .option(
      "--metrics-port <port>",
      "serve GET /metrics (Prometheus), /livez and /readyz on this port (0: any free port, printed); off by default",
      wholeNumber,
    )
    .option("--metrics-host <host>", "address the metrics port listens on", "127.0.0.1")
    .addHelpText(
      "after",
      `
Model calls use this machine's terrarium.config.yaml (--config): its providers, keys, cache and limits.
A submission's budget (budgetUsd in the submitting machine's configuration) holds over all workers: each
item adds what its model calls cost to the run's total in Redis, and once the total reaches the budget the
items not yet started fail with MODEL_BUDGET_EXCEEDED. --max-active and --rate are kept in Redis too.
The first SIGINT or SIGTERM finishes the items in hand and exits; a second one exits at once (the items in
hand then go to other workers when their lock expires).
When Redis goes away the worker waits for it (one line when it becomes unreachable, one when it is back)
and goes on; only a Redis unreachable at the start is an error (exit 2).
With --metrics-port: /livez answers 200 while the process runs, /readyz 200 when Redis answers and the
worker is not stopping (503 otherwise), /metrics the items processed and failed by kind, items in flight,
Redis reconnects, model calls and Node's process metrics.

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
  /** The /metrics, /livez and /readyz server, with --metrics-port. */
  readonly probes?: WorkerProbes;
  /** Closes the worker (waiting for its items unless `force`) and the queue. */
  stop(force?: boolean): Promise<void>;
}

/**
 * Starts a worker for every known kind on the queue (or for `kinds`); what `terrarium worker` runs until
 * a signal. With `metricsPort`, the probes server starts too (its model-call metrics count the calls of
 * the known kinds' models).
 */
export async function startWorker(
  options: WorkerCliOptions,
  io: CliIo,
  models: (roles: Record<string, string>) => Models,
  kinds?: JobKind[],
): Promise<RunningWorker> {
  let probes: WorkerProbes | undefined;
  const jobKinds =
    kinds ??
    knownJobKinds((roles) => {
      const made = models(roles);
      return probes ? probes.watchModels(made) : made;
    });
  const metricsPort = options.metricsPort;
  if (metricsPort !== undefined && (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65535))
    throw new TerrariumError(
      "INVALID_INPUT",
      "--metrics-port must be a whole number from 0 to 65535 (0: any free port)",
    );
  const metricsHost = options.metricsHost ?? "127.0.0.1";
  if (metricsHost.trim() === "")
    throw new TerrariumError("INVALID_INPUT", "--metrics-host must not be empty");
  const queue = await openRedisQueue(options.queue, {
    log: (line) => io.stderr.write(`terrarium worker: ${line}\n`),
  });
  let worker: QueueWorker | undefined;
  if (metricsPort !== undefined) {
    try {
      probes = await startWorkerProbes({
        host: metricsHost,
        port: metricsPort,
        queue,
        worker: () => worker,
        kinds: jobKinds.map((kind) => kind.kind),
      });
    } catch (error) {
      await queue.close();
      throw new TerrariumError(
        "INVALID_INPUT",
        `--metrics-port: cannot listen on ${metricsHost}:${metricsPort} (${(error as { code?: string }).code ?? (error as Error).message})`,
      );
    }
  }
  queue.register(...jobKinds);
  if (options.maxActive !== undefined || options.rate !== undefined)
    await queue.setLimits({
      ...(options.maxActive !== undefined ? { concurrency: options.maxActive } : {}),
      ...(options.rate !== undefined ? { rate: { max: options.rate, perMs: 1000 } } : {}),
    });
  let failed = 0;
  worker = queue.work({
    concurrency: options.concurrency,
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.lockDuration !== undefined ? { lockDurationMs: options.lockDuration } : {}),
    ...(options.stalledInterval !== undefined ? { stalledIntervalMs: options.stalledInterval } : {}),
    onItem: (result, kind) => {
      probes?.observeItem(result, kind);
      if (result.ok) return;
      failed++;
      io.stderr.write(`${kind} ${result.id} failed after ${result.attempts} attempts: ${result.error}\n`);
    },
  });
  const started = worker;
  io.stderr.write(
    `worker ${started.name} on ${queue.description}: ${jobKinds.map((kind) => kind.kind).join(", ")}; ${options.concurrency} at once\n`,
  );
  if (probes)
    io.stderr.write(`worker ${started.name}: metrics at ${probes.url}/metrics (probes /livez, /readyz)\n`);
  let done: Promise<void> | undefined;
  const running: RunningWorker = {
    queue,
    worker: started,
    ...(probes ? { probes } : {}),
    stop(force = false) {
      done ??= (async () => {
        await started.close({ force });
        await queue.close();
        await probes?.close();
        io.stderr.write(
          `worker ${started.name} stopped: ${started.processed} items processed (${failed} failed)\n`,
        );
      })();
      return done;
    },
  };
  return running;
}
