import type { Tool } from "../catalog/tool.js";
import type { Clock } from "../core/clock.js";
import type { EnvSimChange, JsonChange } from "../core/json-diff.js";

/** What one step of an environment did. */
export interface Transition {
  call: { name: string; arguments: unknown };
  /** Whether the tool did its job (false: a guard rejected the call, the call was invalid, or it raised). */
  success: boolean;
  /** What the tool returned (or the error it reported). */
  observation: unknown;
  /** The observation as the implementation's language prints it (Python's `str()`), when that differs from JSON. */
  observationText?: string;
  before: unknown;
  after: unknown;
  /** JSON Patch-style changes from `before` to `after`. */
  changes: JsonChange[];
  /** EnvSimBench-style changes (objects walked, lists whole). */
  envChanges: EnvSimChange[];
  /** Number of EnvSimBench-style changes. */
  delta: number;
}

/** How an environment is implemented, for EnvSimBench's "implementation source" prompts. */
export interface EnvironmentSource {
  kind: "typescript" | "python" | "quickjs";
  /** File the implementation lives in, when there is one. */
  file?: string;
  /** The implementation's source text, when it is available. */
  code?: string;
}

export interface CreateOptions {
  /** Start from this state instead of the initial one (TypeScript and config-built Python environments). */
  state?: unknown;
  /** Seeds the environment's random source and fixes its clock, so the run repeats exactly. */
  seed?: string | number;
  clock?: Clock;
}

/** An executable environment: tools whose real implementation changes a JSON state. */
export interface Environment {
  name: string;
  description: string;
  tools: Tool[];
  source: EnvironmentSource;
  /** The state a new instance starts from. */
  initialState(): Promise<unknown>;
  create(options?: CreateOptions): Promise<EnvironmentInstance>;
  /** Releases what the environment holds (a Python bridge). */
  close?(): Promise<void>;
}

export interface EnvironmentInstance {
  readonly environment: Environment;
  step(call: { name: string; arguments?: unknown }): Promise<Transition>;
  state(): Promise<unknown>;
  /** An independent copy: same state, its own future. */
  fork(): Promise<EnvironmentInstance>;
  /** Back to the initial state, or to the given one. */
  reset(state?: unknown): Promise<void>;
  close(): Promise<void>;
}

/** An instance whose step may be told which input schema the caller already validated the arguments against. */
export interface CheckedInstance extends EnvironmentInstance {
  step(
    call: { name: string; arguments?: unknown },
    options?: { checkedAgainst?: object },
  ): Promise<Transition>;
}

/**
 * An instance that can be made anew in place: `restart(options)` leaves it exactly what
 * `environment.create(options)` would make (TypeScript and sandboxed environments; the code simulator
 * restarts a session's instance for each call instead of making a new one).
 */
export interface RestartableInstance extends CheckedInstance {
  restart(options: CreateOptions): void;
}
