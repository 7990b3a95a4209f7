import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { type GuestHost, type RawOutcome, type SandboxEngine, sandboxEngine } from "./engine.js";
import type {
  HostAnswer,
  HostCall,
  HostOperation,
  RunMessage,
  SandboxWorkerData,
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

/**
 * Whether the running call may read the system clock here. Every other value drawn ahead travels with the
 * call into the guest (engine.ts); the guest asks this host only once its tapes have run out.
 */
let systemClock = false;

const host: GuestHost = {
  now: () => (systemClock ? new Date(Date.now()).toISOString() : String(ask("now"))),
  clock: () => (systemClock ? Date.now() : Number(ask("clock"))),
  random: () => Number(ask("random")),
  id: (prefix) => String(ask("id", prefix)),
};

function send(message: WorkerMessage): void {
  port.postMessage(message);
}

port.on("message", async (message: RunMessage) => {
  if (message?.type !== "run") return;
  let raw: RawOutcome;
  let engine: SandboxEngine | undefined;
  systemClock = message.tapes?.clock === "system";
  try {
    // The engine is loaded again here after a run that had to drop it.
    engine = await sandboxEngine();
    callStarted = performance.now();
    sliceStarted = callStarted;
    raw = engine.execute(
      {
        code: message.code,
        input: message.input,
        ...(message.tapes ? { tapes: message.tapes } : {}),
        ...(message.changes ? { changes: true } : {}),
      },
      host,
      {
        timeLimitMs: message.timeLimitMs,
        memoryLimitBytes: message.memoryLimitBytes,
      },
      pace,
      true,
    );
  } catch (error) {
    raw = {
      kind: "failed",
      reason: "engine",
      detail: error instanceof Error ? error.message : String(error),
    };
  }
  systemClock = false;
  send({ type: "done", id: message.id, raw, ...(raw.kind === "ran" && raw.used ? { used: raw.used } : {}) });
  // The engine's memory goes back to its snapshot while the host reads the answer.
  try {
    engine?.tidy();
  } catch {
    // A failure here shows on the next call, which restores first.
  }
});

sandboxEngine().then(
  () => send({ type: "ready" }),
  (error: unknown) =>
    send({ type: "broken", message: error instanceof Error ? error.message : String(error) }),
);
