import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { type GuestHost, type RawOutcome, sandboxEngine } from "./engine.js";
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
const { signal, hostPort } = workerData as SandboxWorkerData;
const flag = new Int32Array(signal);

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

const host: GuestHost = {
  now: () => String(ask("now")),
  clock: () => Number(ask("clock")),
  random: () => Number(ask("random")),
  id: (prefix) => String(ask("id", prefix)),
};

function send(message: WorkerMessage): void {
  port.postMessage(message);
}

port.on("message", async (message: RunMessage) => {
  if (message?.type !== "run") return;
  let raw: RawOutcome;
  try {
    // The engine is loaded again here after a run that had to drop it.
    const engine = await sandboxEngine();
    raw = engine.execute({ code: message.code, input: message.input }, host, {
      timeLimitMs: message.timeLimitMs,
      memoryLimitBytes: message.memoryLimitBytes,
    });
  } catch (error) {
    raw = {
      kind: "failed",
      reason: "engine",
      detail: error instanceof Error ? error.message : String(error),
    };
  }
  send({ type: "done", id: message.id, raw });
});

sandboxEngine().then(
  () => send({ type: "ready" }),
  (error: unknown) =>
    send({ type: "broken", message: error instanceof Error ? error.message : String(error) }),
);
