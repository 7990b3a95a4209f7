import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import { TerrariumError } from "../../core/errors.js";
import {
  classify,
  type GuestHost,
  type GuestLimits,
  type GuestOutcome,
  type GuestRequest,
  loadedEngine,
  requestInput,
  sandboxEngine,
} from "./engine.js";
import type {
  HostAnswer,
  HostCall,
  RunMessage,
  SandboxWorkerData,
  SourceTapes,
  SourceUse,
  WorkerMessage,
} from "./protocol.js";
import { MAX_AHEAD, SourceLease } from "./sources.js";

/**
 * Sandboxed tool calls run in worker threads, so that a tool that loops or allocates holds one worker,
 * never the host's event loop (the server's other sessions, /health).
 *
 * Scheduling. `size` workers (default min(4, cores)) serve calls; a call waits in a FIFO queue while
 * `size` calls are running that have not yet run for `slowAfterMs`. A call that runs longer than that
 * (a loop heading for its time limit, or plain heavy work) stops counting against `size`: the pool
 * starts another worker for the calls waiting behind it, up to `maxWorkers` threads in all, so a few
 * slow or hostile calls delay the others by at most `slowAfterMs` (plus a worker's start), not by their
 * time limits. At `maxWorkers` busy threads calls wait for the first to finish. Workers beyond `size`
 * are stopped after `idleMs` without work. Slow calls also yield the CPU while fresh calls need it
 * (retune below, pace in worker.ts), like a scheduler that favours short jobs: ten looping tools on a
 * two-core machine share one core between them and leave the other to everything else.
 *
 * Time limits. A call's time limit counts its own execution: the worker starts the clock when the
 * guest starts, so time spent in the queue is not charged to the tool (a fair limit for the tool's
 * author; a caller that needs a bound on waiting sets its own timeout around the step). The worker
 * stops the guest itself at the limit (QuickJS's interrupt handler); should it not answer within
 * `graceMs` after the limit (a thread starved of CPU, a stall inside the engine), the host terminates the
 * worker, answers the call with the time-limit error and starts a replacement when one is needed.
 *
 * Inline calls. Handing a call to a worker and back costs more than a small tool's whole run (two
 * messages, two thread wake-ups, the state as text both ways), so a call from an environment (values drawn
 * ahead, a SourceLease) is first run in this thread's own engine, with a budget of `inlineMs` instead of
 * its time limit: the interrupt handler stops it there, so it holds the event loop at most that long. Its
 * answer is taken only when the call ended on its own within the budget and took nothing beyond the
 * values drawn for it; otherwise (budget spent, tapes run out, memory limit, an engine failure) nothing of
 * that run is kept (the engine restores its snapshot, the sources were not touched) and the call runs in a
 * worker with its full limits and the same values, so the answer is the one a worker alone would give.
 * A tool whose inline run was declined (or took longer than its budget) goes straight to a worker for its
 * next calls, 2 after the first such run, twice as many after each further one in a row (at most
 * `MAX_OFFLOAD_CALLS`), so a slow or hostile tool costs this thread one budget now and then, while a quick
 * one that was only descheduled once (a busy machine) is soon back inline.
 *
 * Engine failures. A worker whose engine failed during a call (an abort, a WebAssembly trap) is replaced
 * at once rather than reused; a worker that crashed or exited is dropped and replaced on demand. The
 * engine's own text travels to the host only as the call's outcome, and quickjs.ts logs it instead of
 * showing it to the caller.
 */

export interface SandboxPoolOptions {
  /** Workers that serve calls concurrently (default min(4, available cores)). */
  size?: number;
  /** Most worker threads at once, slow calls included (default max(16, size)). */
  maxWorkers?: number;
  /** After this long a running call no longer holds one of the `size` slots (default 50 ms). */
  slowAfterMs?: number;
  /** How long past its time limit a worker may take to answer before it is terminated (default 500 ms). */
  graceMs?: number;
  /** Workers beyond `size` stop after this long without work (default 5000 ms). */
  idleMs?: number;
  /**
   * Budget in ms for running a call in this thread before it is handed to a worker (default 2; 0: every
   * call runs in a worker). See "Inline calls" above.
   */
  inlineMs?: number;
  /** Where the reason the engine could not start is logged (default: stderr); callers get a generic error. */
  log?: (line: string) => void;
}

export interface SandboxPoolStats {
  workers: number;
  busy: number;
  queued: number;
  /** Workers terminated because they did not answer in time. */
  terminated: number;
  /** Workers replaced because the engine failed inside them (its state could no longer be trusted). */
  retired: number;
  /** Workers started since the pool was made. */
  started: number;
  /** Calls answered in this thread (inline), and calls tried inline and then handed to a worker. */
  inline: number;
  declined: number;
}

interface Job {
  request: GuestRequest;
  host: GuestHost | SourceLease;
  limits: GuestLimits;
  resolve(outcome: GuestOutcome): void;
}

/** Ends a job: the lease's sources are settled (from the worker's report, when there is one) first. */
function settleJob(job: Job | undefined, outcome: GuestOutcome, used?: SourceUse): void {
  if (!job) return;
  if (job.host instanceof SourceLease) job.host.settle(used);
  job.resolve(outcome);
}

interface Slot {
  worker: Worker;
  signal: Int32Array;
  port: MessagePort;
  ready: boolean;
  job: Job | undefined;
  jobId: number;
  slow: boolean;
  timers: ReturnType<typeof setTimeout>[];
  idleTimer: ReturnType<typeof setTimeout> | undefined;
}

export class SandboxPool {
  readonly size: number;
  readonly maxWorkers: number;
  private readonly slowAfterMs: number;
  private readonly graceMs: number;
  private readonly idleMs: number;
  private readonly inlineMs: number;
  /**
   * Tools (by code) whose last inline run was declined or overran: how many runs in a row did, and how
   * many of their next calls go straight to a worker.
   */
  private readonly offloaded = new Map<string, { strikes: number; skip: number }>();
  private inline = 0;
  private declined = 0;
  private readonly log: (line: string) => void;
  private readonly slots = new Set<Slot>();
  private readonly queue: Job[] = [];
  private nextJobId = 1;
  private terminated = 0;
  private retired = 0;
  private started = 0;
  private closed = false;
  private warming: Promise<void> | undefined;
  private readonly cores = availableParallelism();
  private readonly pacing = new SharedArrayBuffer(4);
  private readonly share = new Int32Array(this.pacing);

  constructor(options: SandboxPoolOptions = {}) {
    this.size = positiveInteger("size", options.size ?? Math.min(4, availableParallelism()));
    this.maxWorkers = positiveInteger("maxWorkers", options.maxWorkers ?? Math.max(16, this.size));
    if (this.maxWorkers < this.size) {
      throw new TerrariumError(
        "CONFIG_INVALID",
        `maxWorkers (${this.maxWorkers}) is below size (${this.size})`,
      );
    }
    this.slowAfterMs = nonNegative("slowAfterMs", options.slowAfterMs ?? 50);
    this.graceMs = nonNegative("graceMs", options.graceMs ?? 500);
    this.idleMs = nonNegative("idleMs", options.idleMs ?? 5000);
    this.inlineMs = nonNegative("inlineMs", options.inlineMs ?? DEFAULT_INLINE_MS);
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  /**
   * Runs one tool call in a worker. Never rejects for anything the guest does. A SourceLease as host sends
   * values drawn ahead with the call (sources.ts); any other host is asked for each value.
   */
  run(request: GuestRequest, host: GuestHost | SourceLease, limits: GuestLimits): Promise<GuestOutcome> {
    if (this.closed) return Promise.reject(new TerrariumError("INTERNAL", "the sandbox pool is closed"));
    if (host instanceof SourceLease && this.inlineMs > 0) {
      const outcome = this.runInline(request, host, limits);
      if (outcome) return Promise.resolve(outcome);
    }
    return new Promise((resolve) => {
      this.queue.push({ request, host, limits, resolve });
      this.pump();
    });
  }

  /**
   * Runs a call in this thread's engine within the inline budget (see "Inline calls" above); undefined
   * when the call is to run in a worker instead. Nothing of a declined run is kept.
   */
  private runInline(
    request: GuestRequest,
    lease: SourceLease,
    limits: GuestLimits,
  ): GuestOutcome | undefined {
    const engine = loadedEngine();
    if (!engine) {
      // Loaded for the next calls (after a warm-up that did not load it, or an engine dropped by a failure).
      sandboxEngine().catch(() => undefined);
      return undefined;
    }
    const offloaded = this.offloaded.get(request.code);
    if (offloaded && offloaded.skip > 0) {
      offloaded.skip--;
      return undefined;
    }
    const tapes = lease.draw();
    const budget = Math.min(this.inlineMs, limits.timeLimitMs);
    const host = new TapeHost(tapes);
    const started = performance.now();
    const raw = engine.execute({ ...request, tapes }, host, {
      timeLimitMs: budget,
      memoryLimitBytes: limits.memoryLimitBytes,
    });
    // Less the one-off work of compiling a tool for its image (engine.ts), which is not the tool's.
    const elapsed = performance.now() - started - engine.imageMs;
    const final =
      raw.kind === "ran" && !host.exhausted && !raw.memory && (!raw.timedOut || budget >= limits.timeLimitMs);
    // A run that took far longer than its budget (a long stretch inside one built-in) is kept when it
    // finished, but the tool's next calls go to a worker (not for a little longer: on a busy machine this
    // thread is often descheduled for a few milliseconds). Values that ran out are drawn in larger numbers
    // next time (the forecast), unless no more can be drawn ahead.
    if ((!final && !host.exhausted) || host.exhausted === "always" || elapsed > STALL_BUDGETS * budget)
      this.offload(request.code, offloaded);
    else if (offloaded) this.offloaded.delete(request.code);
    if (!final) {
      this.declined++;
      return undefined;
    }
    this.inline++;
    lease.settle(raw.used);
    return classify(raw);
  }

  private offload(code: string, offloaded: { strikes: number; skip: number } | undefined): void {
    if (offloaded) {
      offloaded.strikes++;
      offloaded.skip = Math.min(MAX_OFFLOAD_CALLS, 2 ** offloaded.strikes);
      return;
    }
    // Bounded: the oldest entry goes first (its tool is tried inline again).
    if (this.offloaded.size >= MAX_OFFLOADED) {
      const oldest = this.offloaded.keys().next();
      if (!oldest.done) this.offloaded.delete(oldest.value);
    }
    this.offloaded.set(code, { strikes: 1, skip: 2 });
  }

  /** Starts the `size` workers and waits until one runs a call (errors surface here). */
  warm(): Promise<void> {
    if (!this.warming) {
      const attempt = this.tryWarm();
      this.warming = attempt;
      attempt.catch(() => {
        if (this.warming === attempt) this.warming = undefined;
      });
    }
    return this.warming;
  }

  private async tryWarm(): Promise<void> {
    // All `size` workers load now, in parallel, so that the first calls do not wait for them; so does
    // this thread's engine for inline calls (without it every call runs in a worker).
    while (this.slots.size < this.size) this.spawn();
    const local = this.inlineMs > 0 ? sandboxEngine().catch(() => undefined) : undefined;
    const outcome = await this.run({ code: "() => null", input: '{"state":{},"args":{}}' }, IDLE_HOST, {
      timeLimitMs: 10_000,
      memoryLimitBytes: 16 * 1024 * 1024,
    });
    if (outcome.kind !== "returned") {
      const detail = outcome.kind === "stopped" ? (outcome.detail ?? outcome.reason) : outcome.kind;
      // The engine's own words are for the operator's log, not for whoever asked for a session.
      this.log(`terrarium: sandbox: the QuickJS sandbox could not start: ${detail}`);
      throw new TerrariumError("INTERNAL", "the QuickJS sandbox could not start (the server's log says why)");
    }
    await local;
  }

  stats(): SandboxPoolStats {
    let busy = 0;
    for (const slot of this.slots) if (slot.job) busy++;
    return {
      workers: this.slots.size,
      busy,
      queued: this.queue.length,
      terminated: this.terminated,
      retired: this.retired,
      started: this.started,
      inline: this.inline,
      declined: this.declined,
    };
  }

  /** Stops every worker; calls still waiting or running get an engine error. */
  async close(): Promise<void> {
    this.closed = true;
    const stopping: Promise<unknown>[] = [];
    for (const slot of [...this.slots]) {
      this.drop(slot);
      stopping.push(slot.worker.terminate());
      settleJob(slot.job, engineStop("the sandbox pool was closed"));
    }
    for (const job of this.queue.splice(0)) job.resolve(engineStop("the sandbox pool was closed"));
    await Promise.allSettled(stopping);
  }

  private pump(): void {
    this.dispatch();
    this.retune();
  }

  /**
   * Sets how much CPU each slow call may use. They are left alone unless something else needs the
   * cores: fresh calls (running, loading or waiting) or, with as many slow calls as cores, the host's own
   * thread. Then the slow calls share all cores but one between them, each at least 2% of a core.
   */
  private retune(): void {
    let slow = 0;
    let fresh = 0;
    for (const slot of this.slots) {
      if (!slot.job) continue;
      if (slot.slow) slow++;
      else fresh++;
    }
    let permille = 1000;
    if (slow > 0 && (fresh > 0 || this.queue.length > 0 || slow >= this.cores)) {
      const cores = Math.max(1, this.cores - 1);
      permille = Math.max(20, Math.min(1000, Math.floor((1000 * cores) / slow)));
    }
    Atomics.store(this.share, 0, permille);
  }

  /** Hands waiting calls to workers while the rules above allow. */
  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      let holding = 0;
      let free: Slot | undefined;
      for (const slot of this.slots) {
        if (slot.job && !slot.slow) holding++;
        if (!slot.job && (!free || (slot.ready && !free.ready))) free = slot;
      }
      if (holding >= this.size) return;
      if (!free) {
        if (this.slots.size >= this.maxWorkers) return;
        free = this.spawn();
      }
      this.assign(free, this.queue.shift() as Job);
    }
  }

  private assign(slot: Slot, job: Job): void {
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    slot.job = job;
    slot.jobId = this.nextJobId++;
    slot.slow = false;
    slot.worker.ref();
    // Counted from here, not from the start: a call whose worker is still loading holds its slot no longer.
    slot.timers.push(
      setTimeout(() => {
        slot.slow = true;
        this.pump();
      }, this.slowAfterMs),
    );
    if (slot.ready) this.start(slot);
  }

  private start(slot: Slot): void {
    const job = slot.job as Job;
    const message: RunMessage = {
      type: "run",
      id: slot.jobId,
      code: job.request.code,
      input: requestInput(job.request),
      timeLimitMs: job.limits.timeLimitMs,
      memoryLimitBytes: job.limits.memoryLimitBytes,
      ...(job.request.changes ? { changes: true } : {}),
    };
    // Drawn now, not when queued: a clock's readings belong to the moment the call starts.
    if (job.host instanceof SourceLease) message.tapes = job.host.draw();
    slot.worker.postMessage(message);
    slot.timers.push(setTimeout(() => this.overrun(slot), job.limits.timeLimitMs + this.graceMs));
  }

  /** The worker did not answer in time: it is terminated and the call gets the time-limit error. */
  private overrun(slot: Slot): void {
    const job = slot.job;
    this.terminated++;
    this.drop(slot);
    void slot.worker.terminate();
    settleJob(job, { kind: "stopped", reason: "time" });
    this.pump();
  }

  private finish(
    slot: Slot,
    id: number,
    outcome: GuestOutcome,
    used: SourceUse | undefined,
    broken = false,
  ): void {
    const job = slot.job;
    if (!job || id !== slot.jobId) return;
    if (broken) {
      // The engine failed inside this worker (an abort, a trap): whatever it left behind in the thread
      // is not trusted with another call. A fresh worker takes its place before the next call is handed out.
      this.retired++;
      this.drop(slot);
      void slot.worker.terminate();
      if (!this.closed && this.slots.size < this.size) this.spawn();
      settleJob(job, outcome, used);
      this.pump();
      return;
    }
    this.clearTimers(slot);
    slot.job = undefined;
    slot.slow = false;
    slot.worker.unref();
    settleJob(job, outcome, used);
    this.pump();
    if (!slot.job && this.slots.has(slot) && this.slots.size > this.size) {
      slot.idleTimer = setTimeout(() => {
        if (slot.job || this.slots.size <= this.size) return;
        this.drop(slot);
        void slot.worker.terminate();
      }, this.idleMs);
      slot.idleTimer.unref();
    }
  }

  private spawn(): Slot {
    const signal = new SharedArrayBuffer(4);
    const channel = new MessageChannel();
    const data: SandboxWorkerData = {
      signal,
      hostPort: channel.port2,
      pacing: this.pacing,
      slowAfterMs: this.slowAfterMs,
    };
    const worker = createWorker(data, [channel.port2]);
    this.started++;
    const slot: Slot = {
      worker,
      signal: new Int32Array(signal),
      port: channel.port1,
      ready: false,
      job: undefined,
      jobId: 0,
      slow: false,
      timers: [],
      idleTimer: undefined,
    };
    this.slots.add(slot);
    // A worker that cannot load the engine at all must not leave its call waiting forever.
    const loading = setTimeout(() => {
      if (!slot.ready)
        this.fail(slot, `the sandbox worker did not start within ${START_TIMEOUT_MS / 1000} s`);
    }, START_TIMEOUT_MS);
    loading.unref();
    slot.port.on("message", (call: HostCall) => this.answer(slot, call));
    slot.port.unref();
    worker.on("message", (message: WorkerMessage) => {
      if (message.type === "ready") {
        slot.ready = true;
        clearTimeout(loading);
        if (slot.job) this.start(slot);
        this.pump();
      } else if (message.type === "done") {
        const broken = message.raw.kind === "failed" && message.raw.reason === "engine";
        this.finish(slot, message.id, classify(message.raw), message.used, broken);
      } else if (message.type === "broken") {
        this.fail(slot, `the QuickJS engine could not load: ${message.message}`);
      }
    });
    worker.on("error", (error) => this.fail(slot, describeWorkerError(error)));
    worker.on("exit", (code) => this.fail(slot, `the sandbox worker exited (code ${code})`));
    worker.unref();
    return slot;
  }

  /** A guest's call to ctx.now / ctx.random / ctx.id / Date / Math.random, answered from its instance. */
  private answer(slot: Slot, call: HostCall): void {
    let answer: HostAnswer;
    const host = slot.job?.host;
    try {
      if (!host) throw new Error("no call is running");
      const [operation, argument] = call;
      switch (operation) {
        case "now":
          answer = [true, host.now()];
          break;
        case "clock":
          answer = [true, host.clock()];
          break;
        case "random":
          answer = [true, host.random()];
          break;
        case "id":
          answer = [true, host.id(typeof argument === "string" ? argument : undefined)];
          break;
        default:
          throw new Error("unknown host call");
      }
    } catch (error) {
      answer = [false, error instanceof Error ? error.message : String(error)];
    }
    slot.port.postMessage(answer);
    Atomics.store(slot.signal, 0, 1);
    Atomics.notify(slot.signal, 0);
  }

  /** A worker that broke or exited on its own: its call gets an engine error. */
  private fail(slot: Slot, message: string): void {
    if (!this.slots.has(slot)) return;
    const job = slot.job;
    this.drop(slot);
    void slot.worker.terminate();
    settleJob(
      job,
      /out of memory/i.test(message) ? { kind: "stopped", reason: "memory" } : engineStop(message),
    );
    this.pump();
  }

  private drop(slot: Slot): void {
    this.clearTimers(slot);
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    this.slots.delete(slot);
    slot.port.close();
  }

  private clearTimers(slot: Slot): void {
    for (const timer of slot.timers) clearTimeout(timer);
    slot.timers = [];
  }
}

const START_TIMEOUT_MS = 30_000;
const DEFAULT_INLINE_MS = 2;
/** Most calls of a tool sent straight to a worker after its inline runs were declined (see runInline). */
const MAX_OFFLOAD_CALLS = 128;
/** An inline run that finished but took this many budgets counts as declined for its tool's next calls. */
const STALL_BUDGETS = 10;
const MAX_OFFLOADED = 1000;

/**
 * The host of an inline call: only the values drawn ahead. Once a tape has run out the call is handed to a
 * worker (whose host asks the instance's sources), so an inline run never draws from them itself. The
 * system clock is read here, as a worker reads it.
 */
class TapeHost implements GuestHost {
  /** Whether a tape ran out: "always" when it could not have been longer (see runInline). */
  exhausted: false | "now" | "always" = false;

  constructor(private readonly tapes: SourceTapes) {}

  now(): string {
    return new Date(this.clock()).toISOString();
  }

  clock(): number {
    const clock = this.tapes.clock;
    if (clock === "system") return Date.now();
    return this.runOut(clock);
  }

  random(): number {
    return this.runOut(this.tapes.random);
  }

  id(): string {
    return this.runOut(this.tapes.ids);
  }

  private runOut(tape: unknown[] | undefined): never {
    if (this.exhausted !== "always") this.exhausted = !tape || tape.length >= MAX_AHEAD ? "always" : "now";
    throw new Error("the values drawn for this call ran out");
  }
}

const IDLE_HOST: GuestHost = {
  now: () => new Date(0).toISOString(),
  clock: () => 0,
  random: () => 0,
  id: (prefix) => (prefix ? `${prefix}_0` : "0"),
};

function engineStop(detail: string): GuestOutcome {
  return { kind: "stopped", reason: "engine", detail };
}

function describeWorkerError(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (code === "ERR_WORKER_OUT_OF_MEMORY") return "the sandbox worker ran out of memory";
  return `the sandbox worker failed: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * The worker's entry. From the build it is `sandbox-worker.js` beside the bundle (tsup.config.ts names it
 * so). From source (tests, `npm run terrarium`) worker.ts is bundled once per process with esbuild (a
 * development dependency) into node_modules/.cache, which makes a worker start in tens of milliseconds;
 * without esbuild it is loaded through tsx, like other TypeScript, which takes a few hundred.
 */
function createWorker(workerData: SandboxWorkerData, transferList: MessagePort[]): Worker {
  const built = new URL("./sandbox-worker.js", import.meta.url);
  if (built.protocol === "file:" && existsSync(fileURLToPath(built))) {
    return new Worker(built, { workerData, transferList });
  }
  const source = new URL("./worker.ts", import.meta.url);
  const bundle = bundledSource(source);
  if (bundle) return new Worker(bundle, { workerData, transferList });
  const boot = `import(${JSON.stringify(tsxApi())}).then((api) => api.tsImport(${JSON.stringify(source.href)}, ${JSON.stringify(source.href)})).catch((error) => {
  require("node:worker_threads").parentPort.postMessage({ type: "broken", message: String(error && error.message || error) });
});`;
  return new Worker(boot, { eval: true, workerData, transferList });
}

let bundled: URL | null | undefined;

function bundledSource(source: URL): URL | undefined {
  if (bundled !== undefined) return bundled ?? undefined;
  bundled = null;
  try {
    const root = fileURLToPath(new URL("../../../", source));
    const modules = join(root, "node_modules");
    if (!existsSync(modules)) return undefined;
    const esbuild = createRequire(import.meta.url)("esbuild") as {
      buildSync(options: Record<string, unknown>): { outputFiles: Array<{ text: string }> };
    };
    const output = esbuild.buildSync({
      entryPoints: [fileURLToPath(source)],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      write: false,
    }).outputFiles[0]?.text;
    if (!output) return undefined;
    // Named by content, so processes built from different sources never share a file; written whole
    // (rename) so a process never starts a half-written one.
    const directory = join(modules, ".cache", "terrarium");
    const file = join(
      directory,
      `sandbox-worker-${createHash("sha256").update(output).digest("hex").slice(0, 16)}.mjs`,
    );
    if (!existsSync(file)) {
      mkdirSync(directory, { recursive: true });
      const partial = `${file}.${process.pid}.tmp`;
      writeFileSync(partial, output);
      renameSync(partial, file);
    }
    bundled = pathToFileURL(file);
  } catch {
    bundled = null;
  }
  return bundled ?? undefined;
}

/** The file URL of tsx's ESM API (an eval'd worker cannot resolve package names from here). */
function tsxApi(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("tsx/package.json");
  const exports = (require(manifest) as { exports: Record<string, { import: { default: string } }> }).exports;
  const entry = exports["./esm/api"]?.import.default ?? "./dist/esm/api/index.mjs";
  return pathToFileURL(join(dirname(manifest), entry)).href;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new TerrariumError(
      "CONFIG_INVALID",
      `the sandbox pool's ${name} must be a positive whole number, got ${value}`,
    );
  }
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new TerrariumError(
      "CONFIG_INVALID",
      `the sandbox pool's ${name} must be a number of at least 0, got ${value}`,
    );
  }
  return value;
}

let shared: SandboxPool | undefined;

/**
 * Reads the pool's environment variables without making the pool, so that a server refuses a bad value
 * when it starts rather than at its first sandboxed call.
 */
export function checkSandboxSettings(): void {
  readCount("TERRARIUM_SANDBOX_WORKERS");
  readCount("TERRARIUM_SANDBOX_MAX_WORKERS");
  readMilliseconds("TERRARIUM_SANDBOX_INLINE_MS");
}

/**
 * The process's pool, made on first use. Its size comes from TERRARIUM_SANDBOX_WORKERS when set (and
 * TERRARIUM_SANDBOX_MAX_WORKERS), its inline budget from TERRARIUM_SANDBOX_INLINE_MS (0: every call in a
 * worker thread), otherwise from the defaults; configureSandboxPool replaces it.
 */
export function sandboxPool(): SandboxPool {
  if (!shared) {
    const size = readCount("TERRARIUM_SANDBOX_WORKERS");
    const maxWorkers = readCount("TERRARIUM_SANDBOX_MAX_WORKERS");
    const inlineMs = readMilliseconds("TERRARIUM_SANDBOX_INLINE_MS");
    shared = new SandboxPool({
      ...(size !== undefined ? { size } : {}),
      ...(maxWorkers !== undefined ? { maxWorkers } : {}),
      ...(inlineMs !== undefined ? { inlineMs } : {}),
    });
  }
  return shared;
}

/** Replaces the process's pool; calls still running on the old one end with an engine error. */
export function configureSandboxPool(options: SandboxPoolOptions): SandboxPool {
  const previous = shared;
  shared = new SandboxPool(options);
  if (previous) void previous.close();
  return shared;
}

function readMilliseconds(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text.trim() === "") return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) {
    throw new TerrariumError(
      "CONFIG_INVALID",
      `${name} must be a number of milliseconds (0 or more), got "${text}"`,
    );
  }
  return value;
}

function readCount(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text.trim() === "") return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) {
    throw new TerrariumError("CONFIG_INVALID", `${name} must be a positive whole number, got "${text}"`);
  }
  return value;
}
