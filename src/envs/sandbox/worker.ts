import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { type GuestHost, type RawOutcome, sandboxEngine } from "./engine.js";
import type {
  HostAnswer,
  HostCall,
  HostOperation,
  RunMessage,
  SandboxWorkerData,
  SourceTapes,
  SourceUse,
  WorkerMessage,
} from "./protocol.js";

/**
 * A sandbox worker thread: loads the QuickJS engine, then runs one tool call at a time for the pool
 * (pool.ts) and answers with the unread outcome. The guest's host calls block this thread, never the
 * host's (see protocol.ts).
 */

if (!parentPort) throw new Error("the sandbox worker must run in a worker thread");
const port = parentPort;
const { signal, hostPort, pacing, slowAfterMs } = workerData as SandboxWorkerData;
const flag = new Int32Array(signal);
const share = new Int32Array(pacing);
/** Never notified: Atomics.wait on it is a sleep that uses no CPU. */
const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Length of one run-then-sleep cycle of a paced call. */
const PACE_PERIOD_MS = 20;

let callStarted = 0;
let sliceStarted = 0;

/**
 * A call that has run longer than slowAfterMs yields the CPU while the pool asks it to: it runs its share
 * of each period and sleeps the rest (never past its deadline), so fresh calls, new workers and the
 * host's thread get the cores. Its time limit is wall-clock time and keeps running while it sleeps.
 */
function pace(deadline: number): void {
  const now = performance.now();
  if (now - callStarted < slowAfterMs) return;
  const allowed = Atomics.load(share, 0) / 1000;
  if (allowed >= 1) {
    sliceStarted = now;
    return;
  }
  if (now - sliceStarted < PACE_PERIOD_MS * allowed) return;
  const pause = Math.min(PACE_PERIOD_MS * (1 - allowed), deadline - now);
  if (pause > 0) Atomics.wait(sleeper, 0, 0, pause);
  sliceStarted = performance.now();
}

function ask(operation: HostOperation, argument?: string): string | number {
  Atomics.store(flag, 0, 0);
  const call: HostCall = argument === undefined ? [operation] : [operation, argument];
  hostPort.postMessage(call);
  while (Atomics.load(flag, 0) === 0) Atomics.wait(flag, 0, 0);
  const answer = receiveMessageOnPort(hostPort)?.message as HostAnswer | undefined;
  if (!answer) throw new Error(`the host did not answer ${operation}()`);
  if (!answer[0]) throw new Error(String(answer[1]));
  return answer[1];
}

const NO_TAPES: SourceTapes = { random: [], ids: [] };
/** The running call's tapes (values drawn ahead by the host) and how much of each it took. */
let tapes: SourceTapes = NO_TAPES;
let used: SourceUse = { clock: 0, random: 0, ids: 0 };

/** The next clock reading from the tape, or undefined once the host must be asked. */
function taped(): number | undefined {
  const clock = tapes.clock;
  const index = used.clock++;
  if (clock === "system") return Date.now();
  return clock !== undefined && index < clock.length ? clock[index] : undefined;
}

const host: GuestHost = {
  now: () => {
    const reading = taped();
    // As the host's ctx.now(): the ISO form of a reading (an unreadable time throws, as it does there).
    return reading === undefined ? String(ask("now")) : new Date(reading).toISOString();
  },
  clock: () => taped() ?? Number(ask("clock")),
  random: () => {
    const index = used.random++;
    return index < tapes.random.length ? (tapes.random[index] as number) : Number(ask("random"));
  },
  id: (prefix) => {
    const index = used.ids++;
    if (index >= tapes.ids.length) return String(ask("id", prefix));
    const id = tapes.ids[index] as string;
    return prefix ? `${prefix}_${id}` : id;
  },
};

function send(message: WorkerMessage): void {
  port.postMessage(message);
}

port.on("message", async (message: RunMessage) => {
  if (message?.type !== "run") return;
  let raw: RawOutcome;
  tapes = message.tapes ?? NO_TAPES;
  used = { clock: 0, random: 0, ids: 0 };
  try {
    // The engine is loaded again here after a run that had to drop it.
    const engine = await sandboxEngine();
    callStarted = performance.now();
    sliceStarted = callStarted;
    raw = engine.execute(
      { code: message.code, input: message.input },
      host,
      {
        timeLimitMs: message.timeLimitMs,
        memoryLimitBytes: message.memoryLimitBytes,
      },
      pace,
    );
  } catch (error) {
    raw = {
      kind: "failed",
      reason: "engine",
      detail: error instanceof Error ? error.message : String(error),
    };
  }
  tapes = NO_TAPES;
  send({ type: "done", id: message.id, raw, used });
});

sandboxEngine().then(
  () => send({ type: "ready" }),
  (error: unknown) =>
    send({ type: "broken", message: error instanceof Error ? error.message : String(error) }),
);
