import type { Tool } from "../catalog/tool.js";
import type { JsonChange } from "../core/json-diff.js";
import type { Random } from "../core/random.js";
import type { HistoryEntry } from "../sessions/types.js";

/** Every simulator terrarium has (a policy names them; `auto` picks among them). */
export const SIMULATOR_NAMES = ["code", "llm", "schema", "proxy"] as const;
export type SimulatorName = (typeof SIMULATOR_NAMES)[number];

export function isSimulatorName(value: unknown): value is SimulatorName {
  return typeof value === "string" && (SIMULATOR_NAMES as readonly string[]).includes(value);
}

/** What a simulator sees for one call. */
export interface SimulationContext {
  sessionId: string;
  tool: Tool;
  arguments: Record<string, unknown>;
  state: unknown;
  /** Index of the state's snapshot, so simulators that keep live objects can tell when it moved. */
  snapshotIndex: number;
  /**
   * The session's most recent calls (up to 32, oldest first); empty for a simulator that says it does not
   * read them (`readsHistory: false`), so the engine need not read them from the store.
   */
  history: HistoryEntry[];
  random: Random;
  /** The session's clock reading, ISO 8601. */
  now: string;
  /**
   * How the session reached its state, read from the store on demand (simulators that keep live objects
   * rebuild them by replay). `replayable` says which calls the simulator can run again; a state change by
   * any other call (or a state set from outside) becomes the lineage's base.
   */
  lineage?: (replayable: (entry: HistoryEntry) => boolean) => Promise<SessionLineage>;
}

/**
 * The state a session's replayable calls start from and those calls, oldest first. A fork's lineage
 * continues its parent's up to the snapshot it was forked at; a reset continues from the first snapshot.
 */
export interface SessionLineage {
  base: unknown;
  entries: HistoryEntry[];
}

/** What a simulator answers: the observation and the typed changes to the state. */
export interface SimulationResult {
  /** `tool_error`: the (simulated) tool rejected the call; the state does not change. */
  status: "ok" | "tool_error";
  observation: unknown;
  changes: JsonChange[];
  usage?: Record<string, unknown>;
  /** The random seed the step ran under, when a replay needs it to repeat the step exactly. */
  seed?: string;
  /** Problems that did not stop the call (for example a state update that failed after the answer). */
  errors?: Array<{ rule: string; message: string }>;
  /**
   * The state after the step, when the simulator computed it from the context's `state` and its `changes`
   * are exact (they apply to `state` to give this one): the engine then takes it as it is instead of
   * applying the changes a second time. An immutable tree (`core/immutable-json.ts`).
   */
  state?: unknown;
}

export interface Simulator {
  readonly name: SimulatorName;
  /**
   * False when `simulate` never looks at `context.history`: the engine then skips reading the window of
   * recent calls (a store read and copy per call). Undefined or true: the window is read.
   */
  readonly readsHistory?: boolean;
  /** Whether this simulator can answer calls to the tool. */
  handles(tool: Tool): boolean;
  simulate(context: SimulationContext): Promise<SimulationResult>;
  /** Forgets what it keeps for a session (deleted, reset, or state replaced). */
  forget?(sessionId: string): void;
  close?(): Promise<void>;
}
