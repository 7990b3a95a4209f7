import { isImmutableJson, setOwn } from "../../core/immutable-json.js";
import { officialEnvSimPath, parseEnvSimPath, same } from "../../core/json-diff.js";
import { createRandom } from "../../core/random.js";
import { groupOf } from "./groups.js";
import {
  fromJson,
  type PyValue,
  parseJsonOrPython,
  parseToObj,
  pythonCanonical,
  pythonEquals,
} from "./python-literal.js";
import {
  ENVSIM_SCHEMA_VERSION,
  type EnvSimPrediction,
  type EnvSimSample,
  type SampleGroup,
} from "./types.js";

/**
 * Scoring of EnvSimBench predictions: Feedback Match (FM) and Config Match (CM) per sample, in two modes.
 *
 * - `paper` reproduces the official scorer (`10.eval_model.py`), quirks included: FM parses both sides
 *   with its `parse_to_obj` and compares them with Python `==`; CM applies the predicted changes and then
 *   checks only the paths that truly changed (recomputed from the states), so extra predicted changes are
 *   never penalised, and a predicted delete of a path the check reads fails (the official check wants the
 *   key present: a ground-truth removal passes only when the key holds null). Paths are the official
 *   ones, keys joined with "." and split on "." (terrarium's escapes are undone first).
 * - `strict` is what the metrics' definitions say: FM is equality of the parsed values as typed JSON-like
 *   data (no `1 == True`), CM is deep equality of the whole predicted after-state with the real one;
 *   paths are read with `parseEnvSimPath`, so keys holding "." work.
 *
 * A prediction with `error` scores FM = CM = false in both modes.
 */
export type ScoreMode = "paper" | "strict";

export interface SampleScore {
  fm: boolean;
  cm: boolean;
  /** The ground truth holds a runtime-dependent value (see `runtimeDependentFields`). */
  runtimeDependent: boolean;
  /** Set when the prediction carried an error (the simulator produced nothing usable). */
  error?: true;
}

type PredictedChange = EnvSimPrediction["changes"][number];

export function scoreSample(
  sample: EnvSimSample,
  prediction: EnvSimPrediction,
  mode: ScoreMode,
): SampleScore {
  const runtimeDependent = isRuntimeDependent(sample);
  if (prediction.error !== undefined) return { fm: false, cm: false, runtimeDependent, error: true };
  const changes = Array.isArray(prediction.changes) ? prediction.changes : [];
  return {
    fm: feedbackMatch(sample.observationText, prediction.observation, mode),
    cm: mode === "paper" ? configMatchPaper(sample, changes) : configMatchStrict(sample, changes),
    runtimeDependent,
  };
}

// ---------------------------------------------------------------------------------------------------
// Feedback Match

/** The parsed value of an observation: JSON first, then a Python literal; `undefined` when neither parses. */
function parseObservation(observation: unknown): PyValue | undefined {
  // A simulator that returned structured feedback rather than text: take the value as it is.
  if (typeof observation !== "string") return fromJson(observation);
  const parsed = parseJsonOrPython(observation);
  return parsed.ok ? parsed.value : undefined;
}

/**
 * FM. Paper mode: `parse_to_obj(predicted) == parse_to_obj(expected)` as the official scorer computes it
 * (see `parseToObj`: code fences, the whole text as JSON, the first `{…}`, `ast.literal_eval`, quoted
 * text; what parses to nothing stays the raw, unstripped text). So two parsed values compare as values
 * (`{'a': 1}` equals `{"a": 1.0}`), `None` is None but `null` only parses inside JSON, a parsed str can
 * equal the other side's raw text (`"done"` equals `done`), and unparsed texts compare exactly, spaces
 * included. Strict mode: both parsed (JSON, then Python literal), equal canonical forms (key and set
 * order ignored, `1` equals `1.0`, but no bool/number or tuple/list mixing); otherwise the trimmed texts
 * must be equal.
 */
export function feedbackMatch(expected: string, predicted: unknown, mode: ScoreMode): boolean {
  if (mode === "paper") return pythonEquals(parseToObj(expected), parseToObj(predicted));
  const expectedValue = parseObservation(expected);
  const predictedValue = parseObservation(predicted);
  const predictedText = typeof predicted === "string" ? predicted.trim() : undefined;
  if (expectedValue !== undefined && predictedValue !== undefined)
    return pythonCanonical(expectedValue) === pythonCanonical(predictedValue);
  return predictedText !== undefined && expected.trim() === predictedText;
}

// ---------------------------------------------------------------------------------------------------
// Config Match, paper mode

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The parts of a predicted path as the official `apply_change` splits it: a string on "." (after
 * terrarium's escapes are undone, so an escaped path reads as its official form), a list as it is; an
 * empty or missing path changes nothing. A part that is not a string stands for a dict key no checked
 * path can reach (Python keeps `1` and `"1"` apart), so it is kept as a number or left out (`null`).
 */
function pathParts(path: unknown): Array<string | number | null> | undefined {
  if (Array.isArray(path))
    return path.length === 0
      ? undefined
      : path.map((part) =>
          typeof part === "string"
            ? part
            : typeof part === "number" || typeof part === "boolean"
              ? Number(part)
              : null,
        );
  if (typeof path === "string") return path === "" ? undefined : officialEnvSimPath(path).split(".");
  if (pythonFalsy(path)) return undefined;
  // Python's `str()` of a path that is neither str nor list (a number, True, a dict).
  return [path === true ? "True" : typeof path === "number" ? String(path) : JSON.stringify(path)];
}

/**
 * Python's `int(part)` for list indices: a str with optional sign, surrounding spaces and digit
 * underscores; a number is truncated. `undefined` where Python raises (the change is then skipped).
 */
function pythonIndex(part: string | number | null): number | undefined {
  if (part === null) return undefined;
  if (typeof part === "number") return Number.isFinite(part) ? Math.trunc(part) : undefined;
  const match = /^\s*([+-]?\d+(?:_\d+)*)\s*$/.exec(part);
  return match ? Number((match[1] as string).replace(/_/g, "")) : undefined;
}

class ApplyCrash extends Error {}

/** Python list indexing: negative indices count from the end; out of range raises (here: ApplyCrash). */
function listSlot(list: unknown[], index: number): number {
  const slot = index < 0 ? list.length + index : index;
  if (slot < 0 || slot >= list.length) throw new ApplyCrash("list index out of range");
  return slot;
}

/**
 * Applies one predicted change the way the official scorer does: missing dict keys on the way are
 * created as `{}`, list indices are Python ints (lists grow with `{}` on the way and `None` at the end),
 * a change that meets anything else on its way is skipped, and a delete removes the key or list element.
 * The value is `value` when the change has one (the official prompt's name), else `after`.
 */
function applyPaperChange(state: unknown, change: PredictedChange): void {
  if (!isPlainObject(change)) throw new ApplyCrash("a change that is not an object");
  const parts = pathParts(change.path);
  if (parts === undefined) return;
  const remove = (change.type as string) === "removed" || (change.type as string) === "delete";
  let current = state;
  for (const part of parts.slice(0, -1)) {
    if (isPlainObject(current)) {
      // A key that is not a str cannot be reached by any checked path: the rest of the change is lost.
      if (typeof part !== "string") return;
      if (!Object.hasOwn(current, part)) setOwn(current, part, {});
      current = current[part];
    } else if (Array.isArray(current)) {
      const index = pythonIndex(part);
      if (index === undefined) return;
      while (index >= current.length) current.push({});
      current = current[listSlot(current, index)];
    } else return;
  }
  const last = parts[parts.length - 1] as string | number | null;
  if (remove) {
    if (isPlainObject(current)) {
      if (typeof last === "string") delete current[last];
    } else if (Array.isArray(current)) {
      const index = pythonIndex(last);
      if (index !== undefined && index >= 0 && index < current.length) current.splice(index, 1);
    }
    return;
  }
  const given = (change as { value?: unknown }).value;
  const raw = Object.hasOwn(change, "value") && given !== undefined ? given : change.after;
  const value = raw === undefined ? null : writableCopy(raw);
  if (isPlainObject(current)) {
    if (typeof last === "string") setOwn(current, last, value);
  } else if (Array.isArray(current)) {
    const index = pythonIndex(last);
    if (index === undefined) return;
    while (index >= current.length) current.push(null);
    current[listSlot(current, index)] = value;
  }
}

/**
 * A writable deep copy. An environment's state may hold persistent records (its large objects, Proxies:
 * see core/persistent-record.ts), which structuredClone refuses; immutable states are JSON, so JSON copies them.
 */
function writableCopy<T>(value: T): T {
  return isImmutableJson(value) ? (JSON.parse(JSON.stringify(value)) as T) : structuredClone(value);
}

/** Python truthiness of a JSON value (`x or {}` replaces a falsy state with an empty dict). */
function pythonFalsy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  return isPlainObject(value) && Object.keys(value).length === 0;
}

/** The before-state with the predicted changes applied as the official scorer applies them. */
export function applyPredictedChangesPaper(before: unknown, changes: readonly PredictedChange[]): unknown {
  const state = pythonFalsy(before) ? {} : writableCopy(before);
  for (const change of changes) applyPaperChange(state, change);
  return state;
}

/**
 * The changes the official scorer checks (its `diff_dicts` of `10.eval_model.py`): dicts are walked,
 * anything else is compared whole with Python `!=` (so `True` to `1`, or `[1]` to `[1.0]`, is no
 * change); paths are the keys joined with "." as they are, and a removal's value is None.
 */
export function officialTrueChanges(
  before: unknown,
  after: unknown,
): Array<{ path: string; after: unknown }> {
  const out: Array<{ path: string; after: unknown }> = [];
  const walk = (b: Record<string, unknown>, a: Record<string, unknown>, prefix: string): void => {
    for (const key of new Set([...Object.keys(b), ...Object.keys(a)])) {
      const path = prefix ? `${prefix}.${key}` : key;
      if (!Object.hasOwn(b, key)) out.push({ path, after: a[key] });
      else if (!Object.hasOwn(a, key)) out.push({ path, after: null });
      else if (isPlainObject(b[key]) && isPlainObject(a[key]))
        walk(b[key] as Record<string, unknown>, a[key] as Record<string, unknown>, path);
      else if (!same(b[key], a[key]) && !pythonEquals(fromJson(b[key]), fromJson(a[key])))
        out.push({ path, after: a[key] });
    }
  };
  walk(asDict(before), asDict(after), "");
  return out;
}

/** `state or {}`, as a dict; a state that is not a dict has no keys the official diff could walk. */
function asDict(state: unknown): Record<string, unknown> {
  return isPlainObject(state) ? state : {};
}

/**
 * Paper CM: after applying the predicted changes, every truly changed path (`officialTrueChanges` of the
 * sample's states, split on "." and walked through dict keys only) must exist and hold the true
 * after-value under Python `==`. A true removal compares against None, so the key must be present and
 * null: deleting it fails, writing null passes (the official scorer's behaviour). Changes predicted
 * elsewhere are not looked at. A state that is not a dict (never the case in EnvSimBench) is compared whole.
 */
export function configMatchPaper(sample: EnvSimSample, changes: readonly PredictedChange[]): boolean {
  let predicted: unknown;
  try {
    predicted = applyPredictedChangesPaper(sample.before, changes);
  } catch (error) {
    // The official scorer raises on these (an out-of-range negative list index, a change that is not an
    // object) and loses the sample; here it fails CM.
    if (error instanceof ApplyCrash) return false;
    throw error;
  }
  const before = pythonFalsy(sample.before) ? {} : sample.before;
  const after = pythonFalsy(sample.after) ? {} : sample.after;
  if (!isPlainObject(before) || !isPlainObject(after))
    return pythonEquals(fromJson(predicted), fromJson(sample.after));
  for (const truth of officialTrueChanges(before, after)) {
    let current: unknown = predicted;
    for (const key of truth.path.split(".")) {
      if (!isPlainObject(current) || !Object.hasOwn(current, key)) return false;
      current = current[key];
    }
    if (!pythonEquals(fromJson(current), fromJson(truth.after))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------
// Config Match, strict mode

/**
 * Applies predicted changes exactly: `added` and `modified` both set the value (their labels are not
 * checked; the resulting state is), creating missing objects on the way; `removed` deletes. Array
 * elements may be addressed by index (set in range or append at the end, delete in range). Returns
 * `undefined` when a change cannot be applied as stated: a path through a non-container, a delete of
 * something absent, an index out of range.
 */
export function applyPredictedChangesStrict(
  before: unknown,
  changes: readonly PredictedChange[],
): { ok: true; value: unknown } | { ok: false } {
  let state: unknown = writableCopy(before);
  for (const change of changes) {
    const remove = (change.type as string) === "removed" || (change.type as string) === "delete";
    const value = change.after === undefined ? null : writableCopy(change.after);
    const parts = typeof change.path === "string" ? parseEnvSimPath(change.path) : undefined;
    if (parts === undefined) return { ok: false };
    if (parts.length === 0) {
      if (remove) return { ok: false };
      state = value;
      continue;
    }
    let current = state;
    for (const part of parts.slice(0, -1)) {
      if (isPlainObject(current)) {
        if (!Object.hasOwn(current, part)) {
          if (remove) return { ok: false };
          setOwn(current, part, {});
        }
        current = current[part];
      } else if (Array.isArray(current)) {
        const index = /^\d+$/.test(part) ? Number(part) : -1;
        if (index < 0 || index >= current.length) return { ok: false };
        current = current[index];
      } else return { ok: false };
    }
    const last = parts[parts.length - 1] as string;
    if (isPlainObject(current)) {
      if (remove) {
        if (!Object.hasOwn(current, last)) return { ok: false };
        delete current[last];
      } else setOwn(current, last, value);
    } else if (Array.isArray(current)) {
      const index = /^\d+$/.test(last) ? Number(last) : -1;
      if (remove) {
        if (index < 0 || index >= current.length) return { ok: false };
        current.splice(index, 1);
      } else {
        if (index < 0 || index > current.length) return { ok: false };
        current[index] = value;
      }
    } else return { ok: false };
  }
  return { ok: true, value: state };
}

/** Strict CM: all predicted changes applied to `before` must give exactly `after` (JSON deep equality). */
export function configMatchStrict(sample: EnvSimSample, changes: readonly PredictedChange[]): boolean {
  const applied = applyPredictedChangesStrict(sample.before, changes);
  return applied.ok && same(applied.value, sample.after);
}

// ---------------------------------------------------------------------------------------------------
// Runtime-dependent values

export type RuntimeReason = "timestamp" | "epoch" | "uuid" | "generated-id";

export interface RuntimeFinding {
  /** Where: `observation`, `observation.<path>`, or a changed path (with the part inside its value). */
  where: string;
  /** The token that looked generated. */
  token: string;
  reason: RuntimeReason;
}

const ISO_DATETIME = /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/g;
const UUID = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/g;
/** Epoch seconds (10 digits) or milliseconds (13 digits) from 2001 to 2033, as found inside ids. */
const EMBEDDED_EPOCH = /(?<![0-9])1\d{9}(?:\d{3})?(?:\.\d+)?(?![0-9])/g;
const ALNUM_RUN = /[A-Za-z0-9]+/g;
const TIME_KEY = /time|date|stamp|_at$|^at$|(?:^|_)ts$|created|updated|modified|expir|deadline/i;

function isEpochNumber(value: number): boolean {
  return (value >= 1e9 && value < 2.2e9) || (value >= 1e12 && value < 2.2e12);
}

/** Tokens of a string that look generated at run time. */
function generatedTokens(text: string): Array<{ token: string; reason: RuntimeReason }> {
  const found: Array<{ token: string; reason: RuntimeReason }> = [];
  for (const match of text.matchAll(ISO_DATETIME)) found.push({ token: match[0], reason: "timestamp" });
  for (const match of text.matchAll(UUID)) found.push({ token: match[0], reason: "uuid" });
  for (const match of text.matchAll(EMBEDDED_EPOCH)) found.push({ token: match[0], reason: "epoch" });
  for (const match of text.matchAll(ALNUM_RUN)) {
    const token = match[0];
    const digits = (token.match(/[0-9]/g) ?? []).length;
    const letters = token.length - digits;
    // Hex ids (uuid4().hex[:8], token_hex) and long random alphanumeric tokens (token_urlsafe, nanoid).
    const hexId = token.length >= 8 && /^[0-9a-fA-F]+$/.test(token) && digits > 0 && letters > 0;
    const randomId = token.length >= 16 && digits >= 2 && letters >= 2;
    if (hexId || randomId) found.push({ token, reason: "generated-id" });
  }
  return found;
}

/**
 * Where the ground truth holds values a simulator could only know by running the code: the after-values
 * (and new keys) of the true changes and the observation. Heuristic:
 *
 * - date-times (ISO 8601 or Python's `str(datetime)`, `2024-05-01T12:00:00Z`, `2024-05-01 12:00:00.5`);
 *   plain dates are not counted, since they are usually computed from the arguments;
 * - UUIDs; hex ids of 8+ characters mixing letters and digits; alphanumeric tokens of 16+ characters
 *   with at least two letters and two digits; 10- or 13-digit epoch numbers embedded in strings (`TXN_1774080132`);
 * - numbers in the epoch range (seconds or milliseconds, 2001–2033) that have a fractional part
 *   (`time.time()`) or sit under a time-like key (`created_at`, `timestamp`, `expires`…).
 *
 * A token that already appears in the before-state or the call arguments is predictable and not counted.
 * Removed values are not looked at: nothing about them has to be predicted.
 */
export function runtimeDependentFields(sample: EnvSimSample): RuntimeFinding[] {
  const known = `${safeJson(sample.before)}\u0000${safeJson(sample.call?.arguments)}`;
  const findings: RuntimeFinding[] = [];
  const seen = new Set<string>();
  const report = (where: string, token: string, reason: RuntimeReason): void => {
    if (known.includes(token)) return;
    const id = `${where}\u0000${token}`;
    if (seen.has(id)) return;
    seen.add(id);
    findings.push({ where, token, reason });
  };
  const scanString = (text: string, where: string): void => {
    for (const { token, reason } of generatedTokens(text)) report(where, token, reason);
  };
  const scan = (value: unknown, where: string, key: string | undefined): void => {
    if (typeof value === "string") scanString(value, where);
    else if (typeof value === "number") {
      if (
        Number.isFinite(value) &&
        isEpochNumber(value) &&
        (!Number.isInteger(value) || (key !== undefined && TIME_KEY.test(key)))
      )
        report(where, String(value), "epoch");
    } else if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) scan(item, `${where}.${index}`, key);
    } else if (isPlainObject(value)) {
      for (const [childKey, child] of Object.entries(value)) {
        const childWhere = where === "" ? childKey : `${where}.${childKey}`;
        scanString(childKey, childWhere);
        scan(child, childWhere, childKey);
      }
    }
  };
  for (const change of sample.changes) {
    if (change.type === "removed") continue;
    const segments = parseEnvSimPath(change.path);
    // New keys count too: a record filed under a generated id must be predicted with that id.
    for (const segment of segments) scanString(segment, change.path);
    scan(change.after, change.path, segments[segments.length - 1]);
  }
  // The observation as JSON when there is one (keys give context to numbers), else its text.
  if (sample.observation !== undefined) scan(sample.observation, "observation", undefined);
  else scanString(sample.observationText, "observation");
  return findings;
}

export function isRuntimeDependent(sample: EnvSimSample): boolean {
  return runtimeDependentFields(sample).length > 0;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "";
  }
}

// ---------------------------------------------------------------------------------------------------
// Summaries with bootstrap confidence intervals

export interface Estimate {
  /** The observed value. */
  value: number;
  /** 2.5th and 97.5th percentiles of the bootstrap distribution (percentile method). */
  low: number;
  high: number;
}

export interface CellSummary {
  /** Samples counted (errors included unless `dropErrors`). */
  n: number;
  /** Predictions that carried an error (counted as failures, or dropped with `dropErrors`). */
  errors: number;
  fmCount: number;
  cmCount: number;
  fm: Estimate;
  cm: Estimate;
  /** FM rate minus CM rate, bootstrapped on the same resamples (paired). */
  gap: Estimate;
  fmFailures: number;
  cmFailures: number;
  /** CM failures whose FM passed: plausible feedback masking a wrong state. */
  cmFailuresPassingFm: number;
  /** `cmFailuresPassingFm / cmFailures`; null when there are no CM failures. */
  maskedShare: number | null;
  /** Samples whose ground truth holds runtime-dependent values. */
  runtimeDependent: number;
  fmFailuresRuntimeDependent: number;
  cmFailuresRuntimeDependent: number;
  /** `cmFailuresRuntimeDependent / cmFailures`; null when there are no CM failures. */
  cmFailuresRuntimeShare: number | null;
}

/** The pooled sets the paper reports besides the groups. */
export type AggregateName = "no_change" | "failure_no_change" | "state_change";

export interface EnvSimSummary {
  schemaVersion: number;
  seed: string;
  bootstrap: number;
  confidence: number;
  /** Samples in the summary (grouped, minus dropped errors). */
  samples: number;
  /** Samples outside every group (Δ above 12; no change with two or more arguments), left out as EnvSimBench leaves them out. */
  excluded: number;
  /** Samples with an error left out because `dropErrors` was set. */
  droppedErrors: number;
  /** All grouped samples; null when there are none. */
  overall: CellSummary | null;
  groups: Partial<Record<SampleGroup, CellSummary>>;
  aggregates: Partial<Record<AggregateName, CellSummary>>;
  /** Successful samples by Δ (the Failure group is a group of its own, whatever its Δ). */
  deltas: Record<string, CellSummary>;
}

export interface SummariseOptions {
  seed: string | number;
  /** Bootstrap resamples per cell (default 1000; 0 makes every interval the observed value). */
  bootstrap?: number;
  /**
   * Leave predictions with an error out of every denominator, as the official scripts drop calls that
   * still fail after retries. Default false: an error counts as FM = CM = false.
   */
  dropErrors?: boolean;
}

export const GROUP_ORDER: readonly SampleGroup[] = [
  "failure",
  "no_change_zero_args",
  "no_change_with_args",
  "simple",
  "medium",
  "difficult",
];

const AGGREGATE_MEMBERS: Record<AggregateName, readonly SampleGroup[]> = {
  no_change: ["no_change_zero_args", "no_change_with_args"],
  failure_no_change: ["failure", "no_change_zero_args", "no_change_with_args"],
  state_change: ["simple", "medium", "difficult"],
};

interface Row {
  sample: EnvSimSample;
  score: SampleScore;
  group: SampleGroup;
}

/**
 * Per group, per aggregate, per Δ and overall: counts, FM and CM rates with percentile-bootstrap 95%
 * intervals (resampling samples within the cell; each cell has its own random stream derived from the
 * seed and the cell's name, so the result is the same for a seed whatever else is summarised), the FM–CM
 * gap, the share of CM failures that pass FM, and failures involving runtime-dependent values.
 * `scores[i]` belongs to `samples[i]`.
 */
export function summarise(
  samples: readonly EnvSimSample[],
  scores: readonly SampleScore[],
  options: SummariseOptions,
): EnvSimSummary {
  if (samples.length !== scores.length) {
    throw new RangeError(`summarise: ${samples.length} samples but ${scores.length} scores`);
  }
  const bootstrap = options.bootstrap ?? 1000;
  if (!Number.isInteger(bootstrap) || bootstrap < 0) throw new RangeError("summarise: bad bootstrap count");
  const seed = String(options.seed);
  const random = createRandom(seed);
  const rows: Row[] = [];
  let excluded = 0;
  let droppedErrors = 0;
  samples.forEach((sample, index) => {
    const score = scores[index] as SampleScore;
    const group = groupOf(sample);
    if (group === undefined) {
      excluded++;
      return;
    }
    if (options.dropErrors && score.error) {
      droppedErrors++;
      return;
    }
    rows.push({ sample, score, group });
  });
  const cell = (name: string, members: Row[]): CellSummary | undefined =>
    members.length === 0 ? undefined : summariseCell(members, random.derive(name), bootstrap);

  const groups: EnvSimSummary["groups"] = {};
  for (const group of GROUP_ORDER) {
    const summary = cell(
      `group:${group}`,
      rows.filter((row) => row.group === group),
    );
    if (summary) groups[group] = summary;
  }
  const aggregates: EnvSimSummary["aggregates"] = {};
  for (const [name, members] of Object.entries(AGGREGATE_MEMBERS) as Array<[AggregateName, SampleGroup[]]>) {
    const summary = cell(
      `aggregate:${name}`,
      rows.filter((row) => members.includes(row.group)),
    );
    if (summary) aggregates[name] = summary;
  }
  const deltas: Record<string, CellSummary> = {};
  const deltaValues = [
    ...new Set(rows.filter((row) => row.group !== "failure").map((row) => row.sample.delta)),
  ];
  for (const delta of deltaValues.sort((a, b) => a - b)) {
    const summary = cell(
      `delta:${delta}`,
      rows.filter((row) => row.group !== "failure" && row.sample.delta === delta),
    );
    if (summary) deltas[String(delta)] = summary;
  }
  return {
    schemaVersion: ENVSIM_SCHEMA_VERSION,
    seed,
    bootstrap,
    confidence: 0.95,
    samples: rows.length,
    excluded,
    droppedErrors,
    overall: cell("overall", rows) ?? null,
    groups,
    aggregates,
    deltas,
  };
}

function summariseCell(rows: Row[], random: ReturnType<typeof createRandom>, bootstrap: number): CellSummary {
  const n = rows.length;
  const fm = rows.map((row) => (row.score.fm ? 1 : 0));
  const cm = rows.map((row) => (row.score.cm ? 1 : 0));
  const fmCount = fm.reduce<number>((sum, x) => sum + x, 0);
  const cmCount = cm.reduce<number>((sum, x) => sum + x, 0);
  const fmRates: number[] = [];
  const cmRates: number[] = [];
  const gaps: number[] = [];
  for (let b = 0; b < bootstrap; b++) {
    let fmSum = 0;
    let cmSum = 0;
    for (let i = 0; i < n; i++) {
      const pick = random.int(0, n - 1);
      fmSum += fm[pick] as number;
      cmSum += cm[pick] as number;
    }
    fmRates.push(fmSum / n);
    cmRates.push(cmSum / n);
    gaps.push((fmSum - cmSum) / n);
  }
  const estimate = (value: number, draws: number[]): Estimate => {
    if (draws.length === 0) return { value, low: value, high: value };
    const sorted = [...draws].sort((a, b) => a - b);
    return { value, low: quantile(sorted, 0.025), high: quantile(sorted, 0.975) };
  };
  const cmFailed = rows.filter((row) => !row.score.cm);
  const fmFailed = rows.filter((row) => !row.score.fm);
  const cmFailuresPassingFm = cmFailed.filter((row) => row.score.fm).length;
  const cmFailuresRuntimeDependent = cmFailed.filter((row) => row.score.runtimeDependent).length;
  return {
    n,
    errors: rows.filter((row) => row.score.error).length,
    fmCount,
    cmCount,
    fm: estimate(fmCount / n, fmRates),
    cm: estimate(cmCount / n, cmRates),
    gap: estimate((fmCount - cmCount) / n, gaps),
    fmFailures: fmFailed.length,
    cmFailures: cmFailed.length,
    cmFailuresPassingFm,
    maskedShare: cmFailed.length === 0 ? null : cmFailuresPassingFm / cmFailed.length,
    runtimeDependent: rows.filter((row) => row.score.runtimeDependent).length,
    fmFailuresRuntimeDependent: fmFailed.filter((row) => row.score.runtimeDependent).length,
    cmFailuresRuntimeDependent,
    cmFailuresRuntimeShare: cmFailed.length === 0 ? null : cmFailuresRuntimeDependent / cmFailed.length,
  };
}

/** Linear interpolation between order statistics (R's type 7) of a sorted, non-empty array. */
function quantile(sorted: number[], p: number): number {
  const position = (sorted.length - 1) * p;
  const below = Math.floor(position);
  const fraction = position - below;
  const low = sorted[below] as number;
  const high = sorted[Math.min(below + 1, sorted.length - 1)] as number;
  return low + (high - low) * fraction;
}
