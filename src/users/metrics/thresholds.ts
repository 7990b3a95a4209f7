import { TerrariumError } from "../../core/errors.js";

/**
 * `--fail-under` thresholds: `tde=0.5,realism.goal=95` means the command fails when TDE is below 0.5 or the
 * goal-consistency realism is below 95. A metric name is a dotted path into the metrics object
 * (`realism.goal` reads `metrics.realism.goal`); a key that itself contains the dots is read first.
 */

export interface Threshold {
  metric: string;
  threshold: number;
}

const METRIC_NAME = /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$/;

function invalid(message: string, spec: string): TerrariumError {
  return new TerrariumError("CONFIG_INVALID", `--fail-under: ${message}`, { details: { spec } });
}

/**
 * Parses `metric=number[,metric=number...]`. Whitespace around parts is allowed. Each error names the bad
 * part and its position (1-based) so the user can fix it: an empty part, a part without `=`, a bad metric
 * name, a value that is not a finite number, a metric given twice.
 */
export function parseThresholds(spec: string): Threshold[] {
  const text = spec.trim();
  if (text === "") throw invalid("empty threshold list; expected metric=number[,metric=number...]", spec);
  const thresholds: Threshold[] = [];
  const seen = new Set<string>();
  text.split(",").forEach((raw, index) => {
    const part = raw.trim();
    const where = `part ${index + 1}`;
    if (part === "") throw invalid(`${where} is empty (a stray comma?) in "${spec}"`, spec);
    const equals = part.indexOf("=");
    if (equals < 0) throw invalid(`${where} "${part}" has no "="; expected metric=number`, spec);
    const metric = part.slice(0, equals).trim();
    const value = part.slice(equals + 1).trim();
    if (metric === "") throw invalid(`${where} "${part}" has no metric name before "="`, spec);
    if (!METRIC_NAME.test(metric)) {
      throw invalid(
        `${where} "${part}": "${metric}" is not a metric name (letters, digits, _ and -, dotted)`,
        spec,
      );
    }
    const threshold = value === "" ? Number.NaN : Number(value);
    if (!Number.isFinite(threshold)) {
      throw invalid(`${where} "${part}": threshold "${value}" is not a finite number`, spec);
    }
    if (seen.has(metric)) throw invalid(`${where} "${part}": metric "${metric}" is given twice`, spec);
    seen.add(metric);
    thresholds.push({ metric, threshold });
  });
  return thresholds;
}

/** Reads a metric by name: an own key equal to the whole name first, then the dotted path. */
export function metricValue(metrics: unknown, metric: string): unknown {
  if (metrics !== null && typeof metrics === "object" && Object.hasOwn(metrics, metric)) {
    return (metrics as Record<string, unknown>)[metric];
  }
  let current: unknown = metrics;
  for (const key of metric.split(".")) {
    if (current === null || typeof current !== "object" || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

export interface ThresholdResult extends Threshold {
  /** The metric's value, or null when it is missing or not a finite number. */
  value: number | null;
  passed: boolean;
  /** Why it failed, for the CLI's message; absent when it passed. */
  reason?: string;
}

export interface ThresholdCheck {
  /** True when every threshold passed; the command exits non-zero otherwise. */
  passed: boolean;
  results: ThresholdResult[];
  failures: ThresholdResult[];
}

/**
 * Checks each threshold against a metrics object. A metric passes when its value is >= the threshold.
 * A metric that is missing or not a finite number fails (a CI gate must not pass silently on a typo).
 */
export function checkThresholds(metrics: unknown, thresholds: ReadonlyArray<Threshold>): ThresholdCheck {
  const results = thresholds.map((entry): ThresholdResult => {
    const raw = metricValue(metrics, entry.metric);
    if (typeof raw !== "number" || !Number.isFinite(raw)) {
      const reason =
        raw === undefined
          ? `metric "${entry.metric}" is not in the results`
          : `metric "${entry.metric}" is not a number (${JSON.stringify(raw) ?? String(raw)})`;
      return { ...entry, value: null, passed: false, reason };
    }
    if (raw >= entry.threshold) return { ...entry, value: raw, passed: true };
    return {
      ...entry,
      value: raw,
      passed: false,
      reason: `${entry.metric} = ${raw} is under ${entry.threshold}`,
    };
  });
  const failures = results.filter((result) => !result.passed);
  return { passed: failures.length === 0, results, failures };
}

/** The metrics of a users run that `--fail-under` can read, and whether they need the judges. */
const USERS_RUN_METRICS: ReadonlyArray<{ name: string; judged: boolean }> = [
  { name: "te", judged: false },
  { name: "tde", judged: false },
  { name: "td", judged: false },
  { name: "tokensPerTurn", judged: false },
  { name: "actionsPerTurn", judged: false },
  ...["turns", "promptTokens", "completionTokens", "actions"].map((key) => ({
    name: `cost.${key}`,
    judged: false,
  })),
  ...["promptTokensPerTurn", "completionTokensPerTurn", "tokensPerTurn", "actionsPerTurn"].map((key) => ({
    name: `cost.${key}`,
    judged: false,
  })),
  { name: "failures", judged: true },
  { name: "realism.goal", judged: true },
  { name: "realism.profile", judged: true },
  { name: "realism.knowledge", judged: true },
  { name: "success", judged: true },
];

/**
 * Refuses, before any run, thresholds that could never pass: a metric `users run` does not compute, a
 * `passHatK.<k>` beyond `--runs`, a judged metric with the judges off. Every problem is listed at once.
 */
export function checkUsersThresholds(
  thresholds: ReadonlyArray<Threshold>,
  options: { runs: number; judges: boolean },
): void {
  const problems: string[] = [];
  for (const { metric } of thresholds) {
    const passHat = /^passHatK\.(\d+)$/.exec(metric);
    const known = passHat
      ? { name: metric, judged: true }
      : USERS_RUN_METRICS.find((entry) => entry.name === metric);
    if (!known) {
      problems.push(`"${metric}" is not a metric of users run`);
      continue;
    }
    if (passHat && (Number(passHat[1]) < 1 || Number(passHat[1]) > options.runs))
      problems.push(`"${metric}" needs 1 <= k <= --runs (${options.runs})`);
    if (known.judged && !options.judges)
      problems.push(`"${metric}" is judged, and --no-judges turns the judges off`);
  }
  if (problems.length === 0) return;
  const names = [...USERS_RUN_METRICS.map((entry) => entry.name), "passHatK.<k>"].join(", ");
  throw new TerrariumError("CONFIG_INVALID", `--fail-under: ${problems.join("; ")} (metrics: ${names})`);
}
