import { errorVerdict } from "../../core/error-tally.js";
import { type ErrorKindCount, errorsOfRun, type UsersSummary } from "./summary.js";
import type { StoredRun } from "./transcript.js";

/** What a users run tells CI: its exit code, and one line per reason it is not 0. */
export interface UsersRunVerdict {
  exitCode: 0 | 1;
  /** Runs that ended in an error or whose judging failed. */
  erroredRuns: number;
  errors: ErrorKindCount[];
  lines: string[];
}

/**
 * Exit 0 only when every run played and (with judges) was judged, and every threshold passed. Errored runs
 * beyond `maxErrors` fail the command with the batch commands' lines: one per kind of error, with its count
 * and first message, then how many runs errored.
 */
export function usersRunVerdict(
  summary: UsersSummary,
  runs: readonly StoredRun[],
  options: { maxErrors: number },
): UsersRunVerdict {
  const erroredRuns = runs.filter((run) => errorsOfRun(run, summary.settings.judges).length > 0).length;
  const errors = summary.runs.errorKinds;
  const verdict = errorVerdict(
    {
      errored: erroredRuns,
      errorKinds: errors.map(({ kind, count, firstRunId, firstMessage }) => ({
        kind,
        count,
        firstId: firstRunId,
        firstMessage,
      })),
    },
    { total: runs.length, maxErrors: options.maxErrors, noun: runs.length === 1 ? "run" : "runs" },
  );
  const lines = [...verdict.lines];
  const thresholdsFailed = summary.thresholds !== undefined && !summary.thresholds.passed;
  for (const failure of summary.thresholds?.failures ?? []) lines.push(`--fail-under: ${failure.reason}`);
  return { exitCode: verdict.failed || thresholdsFailed ? 1 : 0, erroredRuns, errors, lines };
}
