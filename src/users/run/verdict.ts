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
 * beyond `maxErrors` fail the command with one line per kind of error: its count and first message.
 */
export function usersRunVerdict(
  summary: UsersSummary,
  runs: readonly StoredRun[],
  options: { maxErrors: number },
): UsersRunVerdict {
  const erroredRuns = runs.filter((run) => errorsOfRun(run, summary.settings.judges).length > 0).length;
  const errors = summary.runs.errorKinds;
  const lines: string[] = [];
  const tooManyErrors = erroredRuns > options.maxErrors;
  if (erroredRuns > 0) {
    for (const group of errors)
      lines.push(
        `${group.kind}: ${group.count} (first, ${group.firstRunId}: ${oneLine(group.firstMessage)})`,
      );
    lines.push(
      `${erroredRuns} of ${runs.length} run${runs.length === 1 ? "" : "s"} errored; --max-errors allows ${options.maxErrors}${tooManyErrors ? "" : ", so this passes"}`,
    );
  }
  const thresholdsFailed = summary.thresholds !== undefined && !summary.thresholds.passed;
  for (const failure of summary.thresholds?.failures ?? []) lines.push(`--fail-under: ${failure.reason}`);
  return { exitCode: tooManyErrors || thresholdsFailed ? 1 : 0, erroredRuns, errors, lines };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}
