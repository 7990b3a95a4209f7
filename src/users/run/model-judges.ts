import type { Models } from "../../models/hub.js";
import { ChecklistWriter } from "../../task/feedback.js";
import { consolidateFailures, flaggedDimensions, isJudgeError, judgeRun } from "../judges/index.js";
import { seedNumber } from "../simulator/user.js";
import type { UsersJudges } from "./run-users.js";
import type { RunJudgement } from "./transcript.js";

/**
 * The model judges of a users run: realism, failure scores and goal success per run (each its own
 * `forRun` ledger view, every call seeded from the run's seed), and one consolidation of every flagged turn at the end.
 */
export function modelJudges(models: Models, options: { concurrency?: number } = {}): UsersJudges {
  // One writer for the whole evaluation: runs of a scenario without a checklist are judged on the same one.
  const checklistWriter = new ChecklistWriter(models, "checklist");
  return {
    async judgeRun(input): Promise<RunJudgement> {
      const verdict = await judgeRun(models.forRun(), input, {
        scope: `${input.runId}#judges`,
        seed: seedNumber(input.seed),
        goal: { checklistWriter },
        ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
      });
      const errors: Record<string, string> = {};
      for (const [name, message] of Object.entries(verdict.errors)) if (message) errors[name] = message;
      return {
        ...(isJudgeError(verdict.realism) ? {} : { realism: verdict.realism }),
        ...(isJudgeError(verdict.failures)
          ? {}
          : {
              failures: verdict.failures.map((score) => ({
                turn: score.turn,
                scores: score.scores,
                flagged: flaggedDimensions(score),
              })),
            }),
        ...(isJudgeError(verdict.goal) ? {} : { goal: verdict.goal }),
        errors,
      };
    },
    async consolidate(items) {
      const failures = await consolidateFailures(models.forRun(), {
        items: items.map((item) => ({ ...item, dimension: item.dimension as never })),
      });
      return failures.map((failure) => ({ ...failure }));
    },
  };
}
