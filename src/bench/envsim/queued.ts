import { createHash } from "node:crypto";
import type { Models } from "../../models/hub.js";
import type { JobKind, JobQueue, RunProgress, SubmitOptions } from "../../queue/index.js";
import { EpisodeIndex, type EpisodeStep, parseSimulatorSpec, SamplePredictor } from "./evaluate.js";
import { environmentOf } from "./sample-store.js";
import type { EnvSimPrediction, EnvSimSample } from "./types.js";

/** The kind of the work items of `envsim eval --queue`: one sample predicted by one simulator. */
export const ENVSIM_PREDICT_JOB = "envsim.predict";

/** Shared by every item of a run: the simulator, as `--simulator` spells it. */
export interface EnvSimJobContext {
  simulator: string;
}

/** One item: the sample, and for the history prompt the steps of its episode before it. */
export interface EnvSimJobPayload {
  sample: EnvSimSample;
  history?: EpisodeStep[];
}

/**
 * How a worker predicts envsim samples. `modelsFor` gives the worker's models with the run's roles (the
 * simulator role set to the run's model when it has one); they are closed with the run.
 */
export function envsimPredictJob(
  modelsFor: (roles: Record<string, string>) => Models,
): JobKind<EnvSimJobContext, EnvSimJobPayload, EnvSimPrediction> {
  return {
    kind: ENVSIM_PREDICT_JOB,
    async open(context) {
      const simulator = parseSimulatorSpec(context.simulator);
      const model = simulator.kind === "code" ? undefined : simulator.model;
      const models = modelsFor(model ? { simulator: model } : {});
      const predictor = new SamplePredictor(simulator, { models });
      return {
        process: async ({ payload }, item) => {
          const { sample, history } = payload;
          // A view per sample: its model calls are its own, and their cost counts against the run's budget.
          const view = models.forRun();
          let episodes: EpisodeIndex | undefined;
          if (history) {
            episodes = new EpisodeIndex();
            for (const step of history)
              episodes.add(environmentOf(sample), sample.envId, { taskId: sample.taskId, ...step });
          }
          const prediction = await predictor.predict(sample, {
            models: view,
            ...(episodes ? { episodes } : {}),
          });
          item.spend(view.ledger.totals.costUsd);
          return prediction;
        },
        async close() {
          await predictor.close();
          await models.close();
        },
      };
    },
  };
}

/**
 * The run id of one simulator's predictions of one benchmark into one results folder: the same
 * evaluation submitted again (`--resume`, from any machine that sees the same files) is the same run.
 */
export function envsimRunId(parts: { benchmark: string | Buffer; simulator: string; out: string }): string {
  const hash = createHash("sha256")
    .update(parts.benchmark)
    .update("\u0000")
    .update(parts.simulator)
    .update("\u0000")
    .update(parts.out)
    .digest("hex");
  return `envsim-eval-${hash.slice(0, 24)}`;
}

export interface QueuedEvaluateOptions {
  runId: string;
  /** The episodes the history prompt shows; each item carries its sample's earlier steps. */
  episodes?: EpisodeIndex;
  /** Sample ids that already have a prediction (not submitted). */
  done?: ReadonlySet<string>;
  /** Keep what the queue finished for this run before (else the run starts over). */
  resume?: boolean;
  /** Starts per sample before it counts as failed (a worker dying mid-sample uses one). Default 3. */
  attempts?: number;
  /** Money the run's model calls may cost over all workers (see `RunSubmission.budgetUsd`). */
  budgetUsd?: number;
  /** Each prediction as it arrives from whichever worker made it, with the run's progress. */
  onPrediction?: (prediction: EnvSimPrediction, progress: RunProgress) => void | Promise<void>;
  /** While no prediction arrives (see `SubmitOptions.onWaiting`). */
  onWaiting?: SubmitOptions["onWaiting"];
}

/**
 * `evaluateSamples` through a job queue: each sample is a work item that any worker predicts. The
 * predictions are those a single process makes (each is a function of its sample and the simulator);
 * an item whose every attempt failed becomes a prediction with an error, as a failure does in process.
 */
export async function evaluateOnQueue(
  queue: JobQueue,
  samples: EnvSimSample[],
  simulator: string,
  options: QueuedEvaluateOptions,
): Promise<{ predictions: EnvSimPrediction[]; earlier: number; spentUsd: number }> {
  parseSimulatorSpec(simulator);
  if (!options.resume) await queue.discard(options.runId);
  const items = samples
    .filter((sample) => !options.done?.has(sample.id))
    .map((sample) => {
      const history = options.episodes?.history(sample);
      const payload: EnvSimJobPayload = history ? { sample, history } : { sample };
      return { id: sample.id, payload };
    });
  const predictions: EnvSimPrediction[] = [];
  let spentUsd = 0;
  const outcome = await queue.submit<EnvSimJobContext, EnvSimJobPayload, EnvSimPrediction>(
    {
      runId: options.runId,
      kind: ENVSIM_PREDICT_JOB,
      context: { simulator },
      items,
      ...(options.attempts !== undefined ? { attempts: options.attempts } : {}),
      ...(options.budgetUsd !== undefined ? { budgetUsd: options.budgetUsd } : {}),
    },
    {
      ...(options.onWaiting ? { onWaiting: options.onWaiting } : {}),
      onResult: async (result, progress) => {
        const prediction: EnvSimPrediction = result.ok
          ? result.value
          : {
              sampleId: result.id,
              observation: "",
              changes: [],
              error: result.error,
              errorKind: "worker_error",
            };
        predictions.push(prediction);
        spentUsd = progress.spentUsd;
        await options.onPrediction?.(prediction, progress);
      },
    },
  );
  return { predictions, earlier: outcome.earlier, spentUsd };
}
