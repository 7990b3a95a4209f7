import { errorKindOf } from "../core/error-tally.js";
import type { Models } from "../models/hub.js";
import type { JobKind } from "../queue/index.js";
import { runTaskLine, type TaskLine } from "./run-task.js";
import type { BootstrapMode } from "./task-engine.js";

/** The kind of the work items of `gats --dataset --queue`: one dataset task. */
export const GATS_TASK_JOB = "gats.task";

/** How every task of a dataset run is run (shared by its items). */
export interface DatasetTaskOptions {
  maxRetries: number;
  bootstrap: BootstrapMode;
  plannerModel?: string;
  /**
   * A model given on the submitter's command line for the roles its configuration leaves unset; a worker
   * uses it as `roles.default` when its own configuration has none.
   */
  defaultModel?: string;
}

/**
 * What became of a task: solved or not; flagged when a simulated call of the chosen attempts failed (the
 * verdict is then unreliable); failed when the task could not be run. Flagged and failed tasks are the
 * errored ones: their line has `error` and `errorKind`.
 */
export type DatasetTaskOutcome = "solved" | "unsolved" | "flagged" | "failed";

/** A task's line of the results file, with its outcome. */
export interface DatasetTaskResult {
  record: Record<string, unknown>;
  outcome: DatasetTaskOutcome;
}

/** Runs one dataset task with GATS into its results line; a task that cannot run becomes an error line. */
export async function runDatasetTask(
  task: TaskLine,
  models: Models,
  options: DatasetTaskOptions,
): Promise<DatasetTaskResult> {
  try {
    const result = await runTaskLine(task, models, {
      maxRetries: options.maxRetries,
      bootstrap: options.bootstrap,
      ...(options.plannerModel ? { plannerModel: options.plannerModel } : {}),
    });
    // A simulated call that failed (the simulator's model) makes the verdict unreliable: flagged as an
    // error, not counted as solved or unsolved.
    const simulatorErrors = result.turns.reduce(
      (total, turn) =>
        total + (turn.attempts[turn.chosen]?.calls.filter((c) => c.status === "error").length ?? 0),
      0,
    );
    const record = {
      schemaVersion: 1,
      id: task.id,
      success: result.success,
      ...(simulatorErrors > 0
        ? {
            error: `${simulatorErrors} simulated call(s) of the chosen attempts failed${firstSimulatorError(result)}`,
            errorKind: "simulator_error",
            simulatorErrors,
          }
        : {}),
      bootstrap: result.bootstrap,
      calls: result.calls,
      attempts: result.turns.map((turn) =>
        turn.attempts.map((a) => ({
          success: a.judgement.success,
          score: a.judgement.score,
          calls: a.calls.length,
          failedCalls: a.calls.filter((c) => c.status === "error").length,
          usage: a.usage,
        })),
      ),
      usage: result.usage,
      latencyMs: Math.round(result.latencyMs),
    };
    return { record, outcome: simulatorErrors > 0 ? "flagged" : result.success ? "solved" : "unsolved" };
  } catch (error) {
    return {
      record: {
        schemaVersion: 1,
        id: task.id,
        error: (error as Error).message,
        errorKind: errorKindOf(error, "task_error"),
      },
      outcome: "failed",
    };
  }
}

/** The first failed simulated call of the chosen attempts, as ` (name: message)`. */
function firstSimulatorError(result: Awaited<ReturnType<typeof runTaskLine>>): string {
  for (const turn of result.turns) {
    const failed = turn.attempts[turn.chosen]?.calls.find((c) => c.status === "error");
    if (failed) {
      const observation = failed.observation as { error?: unknown } | undefined;
      return ` (${failed.name}: ${String(observation?.error ?? "no answer")})`;
    }
  }
  return "";
}

/**
 * How a worker runs dataset tasks: the worker's models (its configuration's roles), one ledger view per
 * task as in a single process.
 */
export function datasetTaskJob(
  modelsFor: (roles: Record<string, string>) => Models,
): JobKind<DatasetTaskOptions, TaskLine, DatasetTaskResult> {
  return {
    kind: GATS_TASK_JOB,
    async open(options) {
      let models = modelsFor({});
      // The submitter's command-line model serves the roles this worker's configuration leaves unset.
      if (options.defaultModel && !models.config.roles.default) {
        await models.close();
        models = modelsFor({ default: options.defaultModel });
      }
      return {
        process: async ({ payload }, item) => {
          const result = await runDatasetTask(payload, models.forRun(), options);
          item.spend((result.record.usage as { costUsd?: number } | undefined)?.costUsd ?? 0);
          return result;
        },
        close: () => models.close(),
      };
    },
  };
}
