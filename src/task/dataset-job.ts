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
}

/**
 * What became of a task: solved or not; flagged when a simulated call of the chosen attempts failed (the
 * verdict is then unreliable); failed when the task could not be run.
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
        ? { error: `${simulatorErrors} simulated call(s) of the chosen attempts failed`, simulatorErrors }
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
    return { record: { schemaVersion: 1, id: task.id, error: (error as Error).message }, outcome: "failed" };
  }
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
      const models = modelsFor({});
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
