import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSContext,
  type QuickJSEmscriptenModule,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
  RELEASE_SYNC,
  Scope,
} from "quickjs-emscripten";
import { isPlainObject } from "../../catalog/json-schema.js";
import { HeapGuard } from "./heap.js";
import { GUEST_PRELUDE } from "./prelude.js";
import type { SourceTapes, SourceUse } from "./protocol.js";
import { HeapSnapshot } from "./snapshot.js";

/**
 * The QuickJS (WebAssembly) engine that runs sandboxed tools. It runs inside the sandbox's worker threads
 * (pool.ts, worker.ts): one WebAssembly module (the release-sync variant) is loaded per thread and shared
 * by that thread's calls; it is loaded through newQuickJSWASMModuleFromVariant rather than getQuickJS so
 * that the sandbox owns its memory (see heap.ts). Its one runtime and context, with the prelude, are made
 * once and snapshotted (snapshot.ts); every call starts from that snapshot and the snapshot is written back
 * after it, so nothing a tool does survives its call, and no call pays for building a context. The guest
 * sees only what the prelude gives it (no file system, network, process, timers or module loader: the
 * release build has none of them, and no module loader is set).
 *
 * Limits: a time limit (an interrupt handler with a deadline), a memory limit (QuickJS's own limit plus a
 * cap on the WebAssembly heap, see heap.ts, because QuickJS's accounting under Emscripten only counts
 * single large allocations) and a small interpreter stack limit, so that deep recursion ends in a QuickJS
 * "stack overflow" error long before the host's stack runs out. Should the engine itself fail anyway (the
 * host stack overflowing inside WebAssembly, an abort), its memory can no longer be trusted: the module is
 * dropped and the next call loads a fresh one. The same happens after a call ran out of memory, since
 * QuickJS may then hold objects it can no longer free.
 */

/**
 * What a guest call needs: the tool's source (a function expression) and the JSON of `{state, args}`, or
 * the state and arguments themselves (`values`, JSON values: a call run in this thread reads them without
 * a round trip through text; see requestInput).
 */
export interface GuestRequest {
  code: string;
  input?: string;
  values?: { state: unknown; args: unknown };
  /** Clock readings, random numbers and ids drawn ahead (sources.ts): the guest takes these first. */
  tapes?: SourceTapes;
  /**
   * Whether the guest may answer with what it changed instead of the whole new state (outcome `changes`):
   * the state then reaches the guest as a lazy draft, read a part at a time (LazyState).
   */
  changes?: boolean;
}

/** The request's `{state, args}` as JSON text (what a worker gets). */
export function requestInput(request: GuestRequest): string {
  if (request.input !== undefined) return request.input;
  const values = request.values;
  if (!values) throw new Error("a guest request needs its input or its values");
  return `{"state":${JSON.stringify(values.state)},"args":${JSON.stringify(values.args)}}`;
}

/** The host's side of `ctx`: the instance's clock and seeded sources. */
export interface GuestHost {
  /** ISO 8601 time (ctx.now()). */
  now(): string;
  /** Milliseconds since the epoch (Date inside the sandbox). */
  clock(): number;
  /** A float in [0, 1) (ctx.random(), Math.random()). */
  random(): number;
  /** A fresh id (ctx.id(prefix)). */
  id(prefix?: string): string;
}

/**
 * Called from the interrupt handler while the guest runs (every few thousand instructions), with the
 * call's deadline (performance.now() time). A worker uses it to yield the CPU (see worker.ts); it must not
 * sleep past the deadline.
 */
export type Pace = (deadline: number) => void;

export interface GuestLimits {
  timeLimitMs: number;
  memoryLimitBytes: number;
}

/** Why the sandbox stopped a call before it could finish on its own. */
export type StopReason =
  | "time"
  | "memory"
  | "stack"
  | "compile"
  | "not-a-function"
  | "unserializable"
  | "tampered"
  | "bad-output"
  | "unsettled"
  | "engine";

/**
 * What one run produced, before it is read: plain strings and flags only, so that it can cross from a
 * worker thread to the host without carrying any object the guest shaped (see classify).
 */
export type RawOutcome =
  | {
      kind: "ran";
      /** The prelude's JSON report, when the call ended with one. */
      text?: string;
      timedOut: boolean;
      memory: boolean;
      settled: boolean;
      rejection?: { message: string; detailsText?: string };
      /** What the call took from its tapes and the host, when the guest could still say. */
      used?: SourceUse;
    }
  /** The engine itself failed (host stack overflow, an abort); the module was dropped. */
  | { kind: "failed"; reason: "stack" | "engine" | "memory"; detail: string };

export type GuestOutcome =
  /** The new state whole, or what the tool changed: [0, path, value] sets, [1, path] deletes. */
  | { kind: "returned"; observation: unknown; state: unknown }
  | { kind: "returned"; observation: unknown; changes: unknown }
  /** The tool rejected the call with ctx.fail. */
  | { kind: "rejected"; message: string; details?: Record<string, unknown> }
  /** The tool threw (message: "TypeError: ..."). */
  | { kind: "raised"; message: string }
  | { kind: "stopped"; reason: StopReason; detail?: string };

/**
 * Interpreter stack limit. QuickJS counts its own (WebAssembly) stack, but every interpreter frame also
 * takes a V8 frame, several times larger; 32 KiB (about 180 nested JavaScript calls) keeps the worst
 * cases measured (the parser on deeply nested source, JSON.stringify on deep values) well inside V8's stack.
 */
const MAX_STACK_BYTES = 32 * 1024;

let loading: Promise<SandboxEngine> | undefined;
let current: SandboxEngine | undefined;

/** The process's engine, loaded on first use (and again after a failure of the engine). */
export function sandboxEngine(): Promise<SandboxEngine> {
  if (!loading) {
    const attempt = SandboxEngine.load().then((engine) => {
      current = engine;
      return engine;
    });
    loading = attempt;
    attempt.catch(() => {
      if (loading === attempt) loading = undefined;
    });
  }
  return loading;
}

/** This thread's engine when it is loaded and usable now, without waiting (pool.ts's inline calls). */
export function loadedEngine(): SandboxEngine | undefined {
  return current;
}

export class SandboxEngine {
  private discarded = false;
  private warm: Warm | undefined;
  private active: ActiveCall | undefined;
  /** Whether a call ran since the snapshot was last written back. */
  private untidy = false;

  private constructor(
    private readonly module: QuickJSWASMModule,
    private readonly heap: HeapGuard,
  ) {}

  static async load(): Promise<SandboxEngine> {
    const heap = new HeapGuard();
    let emscripten: QuickJSEmscriptenModule | undefined;
    const variant: QuickJSSyncVariant = {
      type: "sync",
      importFFI: () => RELEASE_SYNC.importFFI(),
      importModuleLoader: async () => {
        const loader = unwrapDefault(await RELEASE_SYNC.importModuleLoader());
        return async (options) => {
          // printErr: an abort's message is reported with the outcome, not printed to the host's stderr.
          const quiet = { ...options, wasmMemory: heap.memory, print: () => {}, printErr: () => {} };
          emscripten = await loader(quiet as typeof options);
          return emscripten;
        };
      },
    };
    const module = await newQuickJSWASMModuleFromVariant(variant);
    if (!emscripten) throw new Error("the QuickJS module loaded without its Emscripten module");
    heap.attach(emscripten);
    return new SandboxEngine(module, heap);
  }

  /** Runs one tool call from the engine's snapshot. Never throws for anything the guest does. */
  run(request: GuestRequest, host: GuestHost, limits: GuestLimits): GuestOutcome {
    return classify(this.execute(request, host, limits));
  }

  /**
   * Like run, but answers with the unread outcome (what a worker thread sends back to the host). With
   * `tidyLater` the snapshot is written back by tidy() (a worker calls it once the answer is on its way)
   * or at the start of the next call, whichever comes first; otherwise before this returns.
   */
  execute(
    request: GuestRequest,
    host: GuestHost,
    limits: GuestLimits,
    pace?: Pace,
    tidyLater = false,
  ): RawOutcome {
    try {
      this.tidy();
      const outcome = this.runWarm(request, host, limits, pace);
      if (!tidyLater) this.tidy();
      return outcome;
    } catch (error) {
      this.discard();
      const overflow = error instanceof RangeError && /call stack/i.test(error.message);
      return {
        kind: "failed",
        // An abort after the memory cap refused to grow is QuickJS failing on its out-of-memory path:
        // for the tool's author that is the memory limit, not an engine failure.
        reason: overflow ? "stack" : this.heap.tripped ? "memory" : "engine",
        detail: error instanceof Error ? error.message : String(error),
      };
    }
  }

  /** Writes the snapshot back after a call run with `tidyLater`. */
  tidy(): void {
    if (!this.untidy) return;
    this.warm?.snapshot.restore();
    this.untidy = false;
  }

  /** Forgets this engine: the next call to sandboxEngine() loads a new module. */
  private discard(): void {
    if (this.discarded) return;
    this.discarded = true;
    this.warm = undefined;
    if (current === this) {
      current = undefined;
      loading = undefined;
    }
  }

  /**
   * The runtime and context every call of this engine runs in: made once, with the host functions and
   * the prelude, then snapshotted (snapshot.ts). Each call starts from that snapshot and the snapshot is
   * written back after it, so a call sees exactly what the first would have seen.
   */
  private prepare(): Warm {
    const runtime = this.module.newRuntime();
    runtime.setMaxStackSize(MAX_STACK_BYTES);
    runtime.setInterruptHandler(() => {
      const call = this.active;
      if (!call || call.deadline === Number.POSITIVE_INFINITY) return false;
      call.pace?.(call.deadline);
      if (performance.now() <= call.deadline) return false;
      call.timedOut = true;
      return true;
    });
    const context = runtime.newContext();
    const scope = new Scope();
    try {
      const hostObject = scope.manage(context.newObject());
      const expose = (
        name: string,
        body: (call: ActiveCall, ...args: QuickJSHandle[]) => QuickJSHandle | undefined,
      ) => {
        const fn = scope.manage(
          context.newFunction(name, (...args) =>
            this.heap.unguarded(() => {
              const call = this.active;
              if (!call) throw new Error("no call is running");
              return body(call, ...args);
            }),
          ),
        );
        context.setProp(hostObject, name, fn);
      };
      expose("now", (call) => context.newString(call.host.now()));
      expose("clock", (call) => context.newNumber(call.host.clock()));
      expose("random", (call) => context.newNumber(call.host.random()));
      expose("id", (call, prefix) =>
        context.newString(
          call.host.id(prefix && context.typeof(prefix) === "string" ? context.getString(prefix) : undefined),
        ),
      );
      // A part of the state the guest's lazy draft reads for the first time (prelude.ts).
      expose("load", (call, id) => {
        if (!call.state.load) throw new Error("no state to load from");
        return context.newString(call.state.load(id ? context.getNumber(id) : -1));
      });
      expose("fail", (call, message, details) => {
        // The first rejection wins: a tool that catches its own ctx.fail still fails.
        if (call.rejection) return undefined;
        const rejection: { message: string; detailsText?: string } = {
          message: message && context.typeof(message) === "string" ? context.getString(message) : "rejected",
        };
        // Read as text here and parsed by classify, on the host's side.
        if (details && context.typeof(details) === "string")
          rejection.detailsText = context.getString(details);
        call.rejection = rejection;
        return undefined;
      });
      const factory = scope.manage(unwrap(context, context.evalCode(GUEST_PRELUDE, "terrarium-prelude.js")));
      // The prelude's closure keeps the host object and its functions alive; only `drive` is held here.
      const drive = unwrap(context, context.callFunction(factory, context.undefined, hostObject));
      const usage = context.getProp(drive, "usage");
      scope.dispose();
      return { runtime, context, drive, usage, snapshot: new HeapSnapshot(this.heap.memory) };
    } catch (error) {
      scope.dispose();
      throw error;
    }
  }

  private runWarm(
    request: GuestRequest,
    host: GuestHost,
    limits: GuestLimits,
    pace: Pace | undefined,
  ): RawOutcome {
    if (!this.warm) this.warm = this.prepare();
    const { runtime, context, drive, usage } = this.warm;
    // The heap is the snapshot's before every call: its free space is measured once per memory size.
    const size = this.heap.memory.buffer.byteLength;
    if (this.warm.free === undefined || this.warm.free.size !== size) {
      this.warm.free = { size, bytes: this.heap.freeSpace() };
    }
    const free = this.warm.free.bytes;
    const state = LazyState.of(request, guestTape(request.tapes));
    const call: ActiveCall = { host, pace, deadline: Number.POSITIVE_INFINITY, timedOut: false, state };
    this.active = call;
    let release: (() => void) | undefined;
    try {
      // Handles made from here on are never freed one by one: restoring the snapshot frees them all.
      const source = context.newString(request.code);
      const guestInput = state.input;
      const input = context.newString(guestInput);

      runtime.setMemoryLimit(limits.memoryLimitBytes);
      // Less what the call's two strings took (UTF-8: at most three bytes per UTF-16 unit, and headers).
      const strings = 3 * (request.code.length + guestInput.length) + 1024;
      release = this.heap.arm(limits.memoryLimitBytes, Math.max(0, free - strings));
      call.deadline = performance.now() + limits.timeLimitMs;
      const result = context.callFunction(drive, context.undefined, source, input);
      // The driver answers with a string, or a promise of one when the tool is async.
      let answer: QuickJSHandle | undefined;
      let settled = true;
      let escapedNull = false;
      if (result.error) {
        // QuickJS throws null when it runs out of memory while building the error itself.
        escapedNull = context.sameValue(result.error, context.null);
      } else if (context.typeof(result.value) === "string") {
        answer = result.value;
      } else {
        while (!call.timedOut && !this.heap.tripped) {
          const jobs = runtime.executePendingJobs();
          if (jobs.error) break;
          if (jobs.value === 0) break;
        }
        const promise = context.getPromiseState(result.value);
        if (promise.type === "fulfilled") {
          if (!promise.notAPromise) answer = promise.value;
        } else if (promise.type !== "rejected") {
          settled = false;
        }
      }
      release();
      release = undefined;
      call.deadline = Number.POSITIVE_INFINITY;
      // Read only once the cap is lifted: copying the answer out must not be what runs out of memory.
      const text = answer && context.typeof(answer) === "string" ? context.getString(answer) : undefined;

      const memory = this.heap.tripped || escapedNull;
      const used = memory ? undefined : readUsage(context, usage);
      const outcome: RawOutcome = {
        kind: "ran",
        ...(text !== undefined ? { text } : {}),
        ...(used ? { used } : {}),
        timedOut: call.timedOut,
        memory,
        settled,
        ...(call.rejection ? { rejection: call.rejection } : {}),
      };
      // After running out of memory the module is dropped rather than restored, so the memory the guest
      // made the heap grow to goes with it; the next call loads a fresh one (a few milliseconds).
      if (memory) this.discard();
      else this.untidy = true;
      return outcome;
    } finally {
      release?.();
      this.active = undefined;
    }
  }
}

/** The engine's one runtime and context, and the snapshot every call starts from. */
interface Warm {
  /** The largest free block of the snapshot's heap, for a memory of `size` bytes. */
  free?: { size: number; bytes: number };
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  drive: QuickJSHandle;
  /** The prelude's count of the values the call took: "clock,random,ids". */
  usage: QuickJSHandle;
  snapshot: HeapSnapshot;
}

/** What the host functions and the interrupt handler need to know about the running call. */
interface ActiveCall {
  host: GuestHost;
  pace: Pace | undefined;
  /** performance.now() time; infinite while the host itself works in the engine. */
  deadline: number;
  timedOut: boolean;
  rejection?: { message: string; detailsText?: string };
  state: LazyState | { input: string; load?: undefined };
}

/** The tapes as the guest takes them; a clock's readings also as ctx.now() shows them. */
interface GuestTape {
  clock?: number[];
  now?: string[];
  random: number[];
  ids: string[];
}

function guestTape(tapes: SourceTapes | undefined): GuestTape | undefined {
  if (!tapes) return undefined;
  const tape: GuestTape = { random: tapes.random, ids: tapes.ids };
  if (Array.isArray(tapes.clock)) {
    const now: string[] = [];
    for (const reading of tapes.clock) {
      const date = new Date(reading);
      // A reading with no ISO form ends the tape: from there the host is asked, and says why it fails.
      if (Number.isNaN(date.getTime())) break;
      now.push(date.toISOString());
    }
    tape.clock = tapes.clock.slice(0, now.length);
    tape.now = now;
  }
  return tape;
}

function readUsage(context: QuickJSContext, usage: QuickJSHandle): SourceUse | undefined {
  const result = context.callFunction(usage, context.undefined);
  if (result.error || context.typeof(result.value) !== "string") return undefined;
  const [clock, random, ids] = context.getString(result.value).split(",").map(Number);
  if (![clock, random, ids].every((n) => Number.isInteger(n) && (n as number) >= 0)) return undefined;
  return { clock: clock as number, random: random as number, ids: ids as number };
}

/**
 * The state on the engine's side of the guest's lazy draft (prelude.ts): parsed here (V8's JSON.parse is
 * far faster than QuickJS's), and handed to the guest one object at a time as it reads them: an object as
 * its entries, [key, 0, value] for a value, [key, 1, id] for an object and [key, 2, id] for an array; an
 * array whole, as JSON. The guest starts with the root's entries.
 */
class LazyState {
  private readonly parts: unknown[] = [];

  /** What the guest starts from: `{args, root, tape}`. */
  readonly input: string;

  private constructor(root: Record<string, unknown>, args: unknown, tape: GuestTape | undefined) {
    this.parts[0] = root;
    this.input = JSON.stringify({ args, root: this.entries(root), tape });
  }

  /**
   * From the request's values, or its `{state, args}` text. When the state is not an object (or the
   * request does not ask for changes) it goes whole, as `{state, args, tape}` (`input` holds that text).
   */
  static of(
    request: GuestRequest,
    tape: GuestTape | undefined,
  ): LazyState | { input: string; load?: undefined } {
    const lazy = request.changes === true;
    const values = request.input === undefined ? request.values : undefined;
    if (!values) return LazyState.from(requestInput(request), tape, lazy);
    if (lazy && isPlainObject(values.state)) {
      return new LazyState(values.state as Record<string, unknown>, values.args, tape);
    }
    if (!tape) return { input: requestInput(request) };
    return { input: JSON.stringify({ state: values.state, args: values.args, tape }) };
  }

  /**
   * From the host's `{state, args}` text. When the state is not an object it goes whole, as
   * `{state, args, tape}` (`input` then holds that text).
   */
  static from(
    text: string,
    tape: GuestTape | undefined,
    lazy: boolean,
  ): LazyState | { input: string; load?: undefined } {
    if (!lazy && !tape) return { input: text };
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { input: text };
    }
    if (!isPlainObject(parsed)) return { input: text };
    if (!lazy || !isPlainObject(parsed.state)) {
      return { input: tape ? JSON.stringify({ state: parsed.state, args: parsed.args, tape }) : text };
    }
    return new LazyState(parsed.state as Record<string, unknown>, parsed.args, tape);
  }

  load(id: number): string {
    const part = this.parts[id];
    if (typeof part !== "object" || part === null) throw new Error(`no part ${id} in the state`);
    return JSON.stringify(Array.isArray(part) ? part : this.entries(part as Record<string, unknown>));
  }

  private entries(object: Record<string, unknown>): unknown[] {
    const entries: unknown[] = [];
    for (const key of Object.keys(object)) {
      const value = object[key];
      if (typeof value !== "object" || value === null) entries.push([key, 0, value]);
      else {
        this.parts.push(value);
        entries.push([key, Array.isArray(value) ? 2 : 1, this.parts.length - 1]);
      }
    }
    return entries;
  }
}

/**
 * Reads a raw outcome. It runs on the host's side: the report is parsed here with JSON.parse, which
 * makes every key (also "__proto__") an own data property, so nothing the guest wrote can reach a
 * prototype of the host.
 */
export function classify(raw: RawOutcome): GuestOutcome {
  if (raw.kind === "failed") {
    return raw.reason === "memory"
      ? { kind: "stopped", reason: "memory" }
      : { kind: "stopped", reason: raw.reason, detail: raw.detail };
  }
  const { text } = raw;
  if (raw.timedOut) return { kind: "stopped", reason: "time" };
  if (raw.memory) return { kind: "stopped", reason: "memory" };
  if (raw.rejection) {
    const rejection: { message: string; details?: Record<string, unknown> } = {
      message: raw.rejection.message,
    };
    const parsed = raw.rejection.detailsText !== undefined ? parseJson(raw.rejection.detailsText) : undefined;
    if (parsed?.ok)
      rejection.details = isPlainObject(parsed.value) ? parsed.value : { details: parsed.value };
    return { kind: "rejected", ...rejection };
  }
  if (!raw.settled) return { kind: "stopped", reason: "unsettled" };
  if (text === undefined)
    return { kind: "stopped", reason: "bad-output", detail: "the call ended without a result" };
  const parsed = parseJson(text);
  const report = parsed.ok && isPlainObject(parsed.value) ? parsed.value : undefined;
  switch (report?.kind) {
    case "returned":
      return report.changes !== undefined
        ? { kind: "returned", observation: report.observation ?? null, changes: report.changes }
        : { kind: "returned", observation: report.observation ?? null, state: report.state };
    case "raised":
      return { kind: "raised", message: String(report.message) };
    case "memory":
      return { kind: "stopped", reason: "memory" };
    case "compile":
    case "unserializable":
      return { kind: "stopped", reason: report.kind, detail: String(report.message) };
    case "not-a-function":
      return { kind: "stopped", reason: "not-a-function", detail: String(report.type) };
    case "tampered":
      return {
        kind: "stopped",
        reason: "tampered",
        detail: `${String(report.target)} (${String(report.key)})`,
      };
    default:
      return { kind: "stopped", reason: "bad-output", detail: "the sandbox's report could not be read" };
  }
}

function unwrap(
  context: QuickJSContext,
  result: { error?: QuickJSHandle; value?: QuickJSHandle },
): QuickJSHandle {
  if (result.error) {
    const problem = JSON.stringify(context.dump(result.error));
    result.error.dispose();
    throw new Error(`the sandbox prelude failed: ${problem}`);
  }
  return result.value as QuickJSHandle;
}

function unwrapDefault<T>(value: T | { default: T } | { default: { default: T } }): T {
  let current: unknown = value;
  while (typeof current === "object" && current !== null && "default" in current) {
    current = (current as { default: unknown }).default;
  }
  return current as T;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}
