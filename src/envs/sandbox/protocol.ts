import type { MessagePort } from "node:worker_threads";
import type { RawOutcome } from "./engine.js";

/**
 * Messages between the host (pool.ts) and a sandbox worker (worker.ts). Only strings, numbers and flags
 * cross: the guest's results travel as the prelude's JSON text and are parsed on the host's side.
 *
 * Calls from the guest to the host (ctx.now, ctx.random, ctx.id, Date, Math.random) are synchronous for
 * the guest. Most are answered from values the host drew ahead and sent with the call (SourceTapes,
 * sources.ts); once a tape has run out the worker posts them on `hostPort` and blocks on `signal` (Atomics.wait) until the host
 * has posted the answer and set the flag; it then takes the answer with receiveMessageOnPort. The host
 * answers from the calling instance's own clock, random source and id generator, in the order asked,
 * which is what keeps seeded runs identical to running in the host's thread.
 */

export interface SandboxWorkerData {
  /** One Int32: 0 while a host call is pending, 1 once its answer has been posted. */
  signal: SharedArrayBuffer;
  hostPort: MessagePort;
  /**
   * Shared by all the pool's workers, one Int32: the share of a core (in thousandths) that each call
   * running longer than `slowAfterMs` may take right now; 1000 = no limit (see pool.ts).
   */
  pacing: SharedArrayBuffer;
  slowAfterMs: number;
}

export type HostOperation = "now" | "clock" | "random" | "id";

/** Worker -> host on hostPort: [operation, argument?]. Host -> worker: [true, value] or [false, message]. */
export type HostCall = [HostOperation] | [HostOperation, string];
export type HostAnswer = [true, string | number] | [false, string];

/**
 * Values drawn ahead for one call (sources.ts): the guest takes them in order and asks the host only once a
 * tape has run out. `clock` is "system" when the worker may read the system clock itself, readings drawn
 * on a clone of the instance's clock, or absent (every reading is asked for).
 */
export interface SourceTapes {
  clock?: "system" | number[];
  random: number[];
  /** Ids without a prefix; the worker adds `prefix_`. */
  ids: string[];
}

/** How many clock readings, random numbers and ids a call took in all (from its tapes first). */
export interface SourceUse {
  clock: number;
  random: number;
  ids: number;
}

/** Host -> worker on the worker's parentPort. */
export interface RunMessage {
  type: "run";
  id: number;
  code: string;
  input: string;
  timeLimitMs: number;
  memoryLimitBytes: number;
  tapes?: SourceTapes;
  /** The guest may answer with its changes (GuestRequest.changes). */
  changes?: boolean;
}

/** Worker -> host on parentPort. */
export type WorkerMessage =
  | { type: "ready" }
  | { type: "broken"; message: string }
  /** `used` is missing when the guest could not say (it ran out of memory, the engine failed). */
  | { type: "done"; id: number; raw: RawOutcome; used?: SourceUse };
