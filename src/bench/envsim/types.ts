import type { EnvSimChange } from "../../core/json-diff.js";

/** Version of EnvSimBench sample, prediction and result files terrarium writes. */
export const ENVSIM_SCHEMA_VERSION = 1;

/** Δ tiers of EnvSimBench: No-Change 0, Simple 1–2, Medium 3–6, Difficult 7–12 (above 12 excluded). */
export type DeltaTier = "no_change" | "simple" | "medium" | "difficult" | "excluded";

/**
 * The evaluation groups: outcome, Δ tier, and for No-Change the argument count (0, or exactly 1 as the
 * official sampler takes it; a no-change call with more arguments is in no group).
 */
export type SampleGroup =
  | "failure"
  | "no_change_zero_args"
  | "no_change_with_args"
  | "simple"
  | "medium"
  | "difficult";

/** One environment transition, the unit EnvSimBench measures simulators on. */
export interface EnvSimSample {
  schemaVersion: number;
  /** `${envId}/${taskId}/${step}`. */
  id: string;
  envId: string;
  taskId: string;
  task?: string;
  /**
   * The action's place in its episode, from 1. Step 0 is the setup state before any action (EnvSimBench's
   * step 0, which has no action and so no sample); it is the first sample's `before`.
   */
  step: number;
  call: { name: string; arguments: Record<string, unknown> };
  /** What the tool returned, as JSON. */
  observation: unknown;
  /** The observation as text, the form EnvSimBench compares (Python `str()` for Python environments). */
  observationText: string;
  before: unknown;
  after: unknown;
  /** EnvSimBench-style changes (objects walked, lists whole); their count is `delta`. */
  changes: EnvSimChange[];
  delta: number;
  success: boolean;
  argCount: number;
  /** The environment's implementation source. */
  envCode: string;
  /** How the implementation is written: typescript, python, quickjs. */
  envKind: string;
  /**
   * How to load the environment again: a built-in name, or the absolute path of its module or descriptor
   * (`environmentOf` in sample-store.ts falls back to `envId` for samples that lack it).
   */
  environment?: string;
  /**
   * The seed the step ran under: an instance created from `before` with this seed, given the call as its
   * first step, repeats the transition exactly (same ids, times and random draws). This is what the
   * `code` simulator does, for samples explored, replayed or made by an agent, in every kind of environment.
   */
  seed?: string;
  /**
   * Python environments: the earlier calls of the sample's trajectory, oldest first, each with its step's
   * seed (the `seed` of the sample it made). Replayed on a fresh instance they reach `before` together
   * with what the state does not show (a Python object's private attributes, such as a file system's
   * current directory), which is how the `code` simulator rebuilds the instance. Absent in samples
   * collected before terrarium kept it and in samples of environments that start from any state.
   */
  prefix?: PrefixCall[];
}

/** One earlier call of a sample's trajectory (see `EnvSimSample.prefix`). */
export interface PrefixCall {
  name: string;
  arguments: Record<string, unknown>;
  seed?: string;
}

/** What a simulator predicted for one sample. */
export interface EnvSimPrediction {
  sampleId: string;
  /** The predicted observation as text. */
  observation: string;
  /** Predicted changes in EnvSimBench form (`path` dotted, dots in keys escaped; `removed` is a delete). */
  changes: Array<{ path: string; type: "added" | "modified" | "removed"; after?: unknown; before?: unknown }>;
  /** Set when the simulator failed to produce a prediction (the sample then scores FM = CM = false). */
  error?: string;
  /** The kind of that error (`model_call_failed`, `model_timeout`, …, `simulator_error` otherwise). */
  errorKind?: string;
}
