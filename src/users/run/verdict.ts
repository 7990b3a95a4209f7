import type { UsersSummary } from "./summary.js";
import type { StoredRun } from "./transcript.js";

/** The kinds of error a run can end with, as the exit lines name them. */
export type RunErrorKind = "agent_error" | "user_error" | "judge_error";

export interface RunErrorGroup {
  kind: RunErrorKind;
  count: number;
  firstMessage: string;
  firstRunId: string;
}

/** What a users run tells CI: its exit code, and one line per reason it is not 0. */
export interface UsersRunVerdict {
  exitCode: 0 | 1;
  /** Runs that ended in an error or whose judging failed. */
  erroredRuns: number;
  errors: RunErrorGroup[];
  lines: string[];
}

/** The errors of each run, in the order they happened (the run's own, then its judges'). */
export function runErrors(run: StoredRun, judged: boolean): Array<{ kind: RunErrorKind; message: string }> {
  const errors: Array<{ kind: RunErrorKind; message: string }> = [];
  const reason = run.end?.endReason;
  if (reason === "agent_error" || reason === "user_error")
    errors.push({ kind: reason, message: run.end?.error ?? reason });
  if (judged && run.turns.length > 0) {
    const judgeErrors = Object.entries(run.judgement?.errors ?? {});
    if (!run.judgement) errors.push({ kind: "judge_error", message: "the run was not judged" });
    for (const [judge, message] of judgeErrors)
      errors.push({ kind: "judge_error", message: `${judge}: ${message}` });
  }
  return errors;
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
  const judged = summary.settings.judges;
  const groups = new Map<RunErrorKind, RunErrorGroup>();
  let erroredRuns = 0;
  for (const run of runs) {
    const errors = runErrors(run, judged);
    if (errors.length > 0) erroredRuns++;
    for (const { kind, message } of errors) {
      const group = groups.get(kind);
      if (group) group.count++;
      else groups.set(kind, { kind, count: 1, firstMessage: message, firstRunId: run.runId });
    }
  }
  const errors = [...groups.values()];
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
