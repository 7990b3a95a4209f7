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
import { DerivedSnapshot, HeapSnapshot } from "./snapshot.js";

/**
 * The QuickJS (WebAssembly) engine that runs sandboxed tools. It runs inside the sandbox's worker threads
 * (pool.ts, worker.ts): one WebAssembly module (the release-sync variant) is loaded per thread and shared
 * by that thread's calls; it is loaded through newQuickJSWASMModuleFromVariant rather than getQuickJS so
 * that the sandbox owns its memory (see heap.ts). Its one runtime and context, with the prelude, are made
 * once and snapshotted (snapshot.ts); every call starts from that snapshot and the snapshot is written back
 * after it, so nothing a tool does survives its call, and no call pays for building a context. The guest
 * sees only what the prelude gives it (no file system, network, process, timers or module loader: the
 * release build has none of them, and no module loader is set). A tool's source is compiled once per
 * engine and kept in a snapshot of its own (a tool image, see compileImage), so that a call of a known tool
 * starts from its image and skips compiling.
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
  /** Whether a call ran since a snapshot was last written back. */
  private untidy = false;
  /** The tool image whose snapshot the memory holds (when tidy); undefined for the base snapshot. */
  private shown: ToolImage | undefined;
  /** How long the last call spent making a tool image (ms), 0 when it made none. */
  imageMs = 0;

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

  /** Writes the snapshot back after a call run with `tidyLater` (the last call's tool image, if it had one). */
  tidy(): void {
    if (this.untidy) this.show(this.shown);
  }

  /** Puts the memory at a tool image's snapshot (undefined: the base snapshot), unless it is there. */
  private show(image: ToolImage | undefined): void {
    if (!this.untidy && this.shown === image) return;
    if (image) {
      if (!image.snapshot.keptWhole && this.warm) this.keepWhole(this.warm, image);
      image.snapshot.restore();
    } else this.warm?.snapshot.restore();
    this.shown = image;
    this.untidy = false;
  }

  /**
   * Keeps a whole copy of an image's snapshot, so that restoring it writes each byte once, for the
   * MAX_WHOLE_IMAGES images shown last (each a copy of the base's size; the others keep their chunks only).
   */
  private keepWhole(warm: Warm, image: ToolImage): void {
    image.snapshot.keepWhole();
    warm.whole.push(image);
    if (warm.whole.length > MAX_WHOLE_IMAGES) warm.whole.shift()?.snapshot.dropWhole();
  }

  /** The largest free block of a snapshot's heap (the memory must be at that snapshot now). */
  private freeOf(holder: { free?: { size: number; bytes: number } }): number {
    const size = this.heap.memory.buffer.byteLength;
    if (holder.free === undefined || holder.free.size !== size) {
      holder.free = { size, bytes: this.heap.freeSpace() };
    }
    return holder.free.bytes;
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
              if (call.compiling) {
                // A source that takes values while it is evaluated is compiled with each call instead.
                call.impure = true;
                throw new Error("no values while the tool is compiled");
              }
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
      const compile = context.getProp(drive, "compile");
      const runCompiled = context.getProp(drive, "run");
      scope.dispose();
      this.shown = undefined;
      this.untidy = false;
      return {
        runtime,
        context,
        drive,
        usage,
        compile,
        runCompiled,
        snapshot: new HeapSnapshot(this.heap.memory),
        images: new Map(),
        whole: [],
        uncompiled: new Set(),
      };
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
    const warm = this.warm;
    const { runtime, context, usage } = warm;
    const code = request.code;
    let image = warm.images.get(code);
    if (image) {
      // Most recently used last: the first entry is the one to drop.
      warm.images.delete(code);
      warm.images.set(code, image);
    }
    this.show(image);
    this.imageMs = 0;
    const state = LazyState.of(request, tapeLine(request.tapes));
    const call: ActiveCall = {
      host,
      pace,
      deadline: Number.POSITIVE_INFINITY,
      timedOut: false,
      state,
      compiling: false,
      impure: false,
    };
    this.active = call;
    let release: (() => void) | undefined;
    try {
      runtime.setMemoryLimit(limits.memoryLimitBytes);
      // Compiling the tool counts against the call's time, as when the driver compiles it.
      const deadline = performance.now() + limits.timeLimitMs;
      if (!image && typeof code === "string" && !warm.uncompiled.has(code)) {
        const started = performance.now();
        const compiled = this.compileImage(warm, code, call, deadline);
        this.imageMs = performance.now() - started;
        if (compiled === "timed-out") {
          this.untidy = true;
          // What the driver reports for a source that runs past the limit before the tool exists.
          return {
            kind: "ran",
            used: { clock: 0, random: 0, ids: 0 },
            timedOut: true,
            memory: false,
            settled: true,
          };
        }
        image = compiled;
      }
      // The heap is a snapshot's before every call: its free space is measured once per memory size.
      const free = this.freeOf(image ?? warm);
      // Handles made from here on are never freed one by one: restoring the snapshot frees them all.
      const source = image ? undefined : context.newString(code);
      const guestInput = state.input;
      const input = context.newString(guestInput);
      // Less what the call's strings took (UTF-8: at most three bytes per UTF-16 unit, and headers).
      const strings = 3 * ((image ? 0 : code.length) + guestInput.length) + 1024;
      release = this.heap.arm(limits.memoryLimitBytes, Math.max(0, free - strings));
      call.deadline = deadline;
      const result = image
        ? context.callFunction(warm.runCompiled, context.undefined, image.tool, input)
        : context.callFunction(warm.drive, context.undefined, source as QuickJSHandle, input);
      // The driver answers with a string, or a promise of one when the tool is async.
      let answer: QuickJSHandle | undefined;
      let settled = true;
      let escapedNull = false;
      let synchronous = false;
      if (result.error) {
        // QuickJS throws null when it runs out of memory while building the error itself.
        escapedNull = context.sameValue(result.error, context.null);
      } else if (context.typeof(result.value) === "string") {
        answer = result.value;
        synchronous = true;
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
      let text =
        answer && (synchronous || context.typeof(answer) === "string")
          ? context.getString(answer)
          : undefined;
      const memory = this.heap.tripped || escapedNull;
      let used: SourceUse | undefined;
      // A synchronous answer starts with what the call took (prelude.ts); otherwise the guest is asked.
      const counted = synchronous && text !== undefined ? splitUsage(text) : undefined;
      if (counted) text = counted.text;
      if (!memory) used = counted ? counted.used : readUsage(context, usage);
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

  /**
   * Compiles a tool's source once and keeps a snapshot of the engine with the compiled function in it
   * (a tool image): later calls of the same source start from that snapshot and skip compiling. Only a
   * source whose evaluation is deterministic is kept: one that takes no values from the host (clock,
   * random numbers, ids, state), ends within the call's time, and allocates little (no growth of the
   * heap, at most MAX_COMPILED_BYTES); then evaluating it once and keeping the result is the same as
   * evaluating it at the start of every call, since every call starts from the same snapshot. Anything
   * else is compiled with each call, as before (remembered in `uncompiled`), and the memory is put back at
   * the base snapshot. The memory must be at the base snapshot when this is called.
   */
  private compileImage(
    warm: Warm,
    code: string,
    call: ActiveCall,
    deadline: number,
  ): ToolImage | "timed-out" | undefined {
    const { context } = warm;
    const memory = this.heap.memory;
    // The image keeps what compiling wrote past the base's heap: that stretch is cleared first (see
    // DerivedSnapshot), which takes a moment per megabyte, so not in a memory that earlier calls grew.
    if (memory.buffer.byteLength > MAX_IMAGE_MEMORY_BYTES) {
      this.forget(warm, code);
      return undefined;
    }
    const baseFree = this.freeOf(warm);
    DerivedSnapshot.clearTail(memory, warm.snapshot);
    const source = context.newString(code);
    // No ballast (the compiled function lands next to the base's heap), and the heap may not grow.
    const release = this.heap.arm(baseFree, baseFree);
    let result: { error?: QuickJSHandle; value?: QuickJSHandle };
    call.compiling = true;
    call.deadline = deadline;
    try {
      result = context.callFunction(warm.compile, context.undefined, source);
    } finally {
      call.compiling = false;
      call.deadline = Number.POSITIVE_INFINITY;
      release();
    }
    const pure = !call.impure && !this.heap.tripped;
    call.impure = false;
    if (call.timedOut && pure) {
      this.forget(warm, code);
      return "timed-out";
    }
    call.timedOut = false;
    let image: ToolImage | undefined;
    if (pure && !result.error && result.value && context.typeof(result.value) === "function") {
      const snapshot = new DerivedSnapshot(memory, warm.snapshot);
      if (snapshot.tail <= MAX_COMPILED_BYTES) image = { tool: result.value, snapshot };
    }
    if (!image) {
      this.forget(warm, code);
      this.untidy = true;
      this.show(undefined);
      // Measured again: the attempt can leave the allocator room past the base's heap that the base's
      // measurement does not know of (found with a source that allocated megabytes); measuring probes
      // the allocator afresh, so the call below gets exactly its limit.
      warm.free = undefined;
      return undefined;
    }
    if (warm.images.size >= MAX_TOOL_IMAGES) {
      const oldest = warm.images.entries().next();
      if (!oldest.done) {
        warm.images.delete(oldest.value[0]);
        const whole = warm.whole.indexOf(oldest.value[1]);
        if (whole >= 0) warm.whole.splice(whole, 1);
      }
    }
    warm.images.set(code, image);
    this.shown = image;
    this.untidy = false;
    return image;
  }

  /** Remembers a source that is compiled with each call (bounded: forgotten all at once when full). */
  private forget(warm: Warm, code: string): void {
    if (warm.uncompiled.size >= MAX_UNCOMPILED) warm.uncompiled.clear();
    warm.uncompiled.add(code);
  }
}

/** Tool images kept per engine (each some kilobytes beside the base snapshot). */
const MAX_TOOL_IMAGES = 64;
/** Images that also keep a whole copy of their snapshot (each about the base's size, some 300 KB). */
const MAX_WHOLE_IMAGES = 8;
const MAX_UNCOMPILED = 1024;
/** Most memory past the base's heap a tool's source may take when compiled for its image to be kept. */
const MAX_COMPILED_BYTES = 256 * 1024;
/** No images are made in a memory larger than this (see compileImage). */
const MAX_IMAGE_MEMORY_BYTES = 64 * 1024 * 1024;

/** A tool compiled once, and the snapshot of the engine with it (see compileImage). */
interface ToolImage {
  /** The compiled function; valid whenever the memory is at `snapshot`. */
  tool: QuickJSHandle;
  snapshot: DerivedSnapshot;
  free?: { size: number; bytes: number };
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
  /** The prelude's compile(source) and run(tool, input) (tool images). */
  compile: QuickJSHandle;
  runCompiled: QuickJSHandle;
  snapshot: HeapSnapshot;
  /** Tool images by source, least recently used first. */
  images: Map<string, ToolImage>;
  /** Images that keep a whole copy of their snapshot, the one that got it first first (see keepWhole). */
  whole: ToolImage[];
  /** Sources compiled with each call (see compileImage). */
  uncompiled: Set<string>;
}

/** What the host functions and the interrupt handler need to know about the running call. */
interface ActiveCall {
  host: GuestHost;
  pace: Pace | undefined;
  /** performance.now() time; infinite while the host itself works in the engine. */
  deadline: number;
  timedOut: boolean;
  rejection?: { message: string; detailsText?: string };
  /** While the tool's source is compiled for an image: host functions then refuse, and mark it impure. */
  compiling: boolean;
  impure: boolean;
  state: LazyState | { input: string; load?: undefined };
}

/**
 * The tapes as the guest reads them (prelude.ts): the JSON `[clock readings, random numbers, ids]`, or ""
 * when there are none. Clock readings go up to the first one without an ISO form: from there the host is
 * asked, and says why it fails (ctx.now() shows a reading as its ISO text, made in the guest).
 */
function tapeLine(tapes: SourceTapes | undefined): string {
  // None at all reads as none drawn (the host is asked for each value).
  if (!tapes || (tapes.random.length === 0 && tapes.ids.length === 0 && !tapes.clock?.length)) return "";
  let clock: unknown[] = [];
  if (Array.isArray(tapes.clock)) {
    const readings = tapes.clock;
    let valid = 0;
    while (valid < readings.length && hasIsoForm(readings[valid])) valid++;
    clock = valid === readings.length ? readings : readings.slice(0, valid);
  }
  return JSON.stringify([clock, tapes.random, tapes.ids]);
}

/** Whether a clock reading has an ISO text (Date's range, ECMA-262's TimeClip). */
function hasIsoForm(reading: unknown): boolean {
  return typeof reading === "number" && Number.isFinite(reading) && Math.abs(reading) <= 8.64e15;
}

/** A synchronous answer's `<clock>,<random>,<ids>;` and the report after it (undefined when malformed). */
function splitUsage(answer: string): { used: SourceUse; text: string } | undefined {
  const end = answer.indexOf(";");
  if (end < 0) return undefined;
  const used = parseUsage(answer, end);
  return used ? { used, text: answer.slice(end + 1) } : undefined;
}

/** `<clock>,<random>,<ids>` (whole numbers) from the start of `text` to `end`; undefined otherwise. */
function parseUsage(text: string, end = text.length): SourceUse | undefined {
  const counts = [0, 0, 0];
  let which = 0;
  let digits = 0;
  for (let i = 0; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code === 44 /* , */) {
      if (digits === 0 || which === 2) return undefined;
      which++;
      digits = 0;
    } else if (code >= 48 && code <= 57 && digits < 15) {
      counts[which] = (counts[which] as number) * 10 + (code - 48);
      digits++;
    } else return undefined;
  }
  if (which !== 2 || digits === 0) return undefined;
  return { clock: counts[0] as number, random: counts[1] as number, ids: counts[2] as number };
}

function readUsage(context: QuickJSContext, usage: QuickJSHandle): SourceUse | undefined {
  const result = context.callFunction(usage, context.undefined);
  if (result.error || context.typeof(result.value) !== "string") return undefined;
  return parseUsage(context.getString(result.value));
}

/**
 * The state on the engine's side of the guest's lazy draft (prelude.ts): parsed here (V8's JSON.parse is
 * far faster than QuickJS's), and handed to the guest one object at a time as it reads them: an object as
 * its entries, flat: key, 0, value for a value, key, 1, id for an object and key, 2, id for an array, one
 * after another in one array; an array whole, as JSON. The guest starts with the root's entries.
 */
class LazyState {
  private readonly parts: unknown[] = [];

  /** What the guest starts from: the tape line, then `{args, root}` (prelude.ts). */
  readonly input: string;

  private constructor(root: Record<string, unknown>, args: unknown, tape: string, keys: string[]) {
    this.parts[0] = root;
    this.input = `${tape}\n${JSON.stringify({ args, root: this.entries(root, keys) })}`;
  }

  /** A lazy draft of `root`. */
  private static make(root: Record<string, unknown>, args: unknown, tape: string): LazyState {
    return new LazyState(root, args, tape, Object.keys(root));
  }

  /**
   * From the request's values, or its `{state, args}` text. When the state is not an object (or the
   * request does not ask for changes) it goes whole, as the tape line and `{state, args}` (`input`).
   */
  static of(request: GuestRequest, tape: string): LazyState | { input: string; load?: undefined } {
    const lazy = request.changes === true;
    const values = request.input === undefined ? request.values : undefined;
    if (!values) return LazyState.from(requestInput(request), tape, lazy);
    if (lazy && isPlainObject(values.state)) {
      return LazyState.make(values.state as Record<string, unknown>, values.args, tape);
    }
    return { input: `${tape}\n${requestInput(request)}` };
  }

  /** From the host's `{state, args}` text; whole when the state is not an object (see of). */
  static from(text: string, tape: string, lazy: boolean): LazyState | { input: string; load?: undefined } {
    if (lazy) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (isPlainObject(parsed) && isPlainObject(parsed.state)) {
        return LazyState.make(parsed.state as Record<string, unknown>, parsed.args, tape);
      }
    }
    return { input: `${tape}\n${text}` };
  }

  load(id: number): string {
    const part = this.parts[id];
    if (typeof part !== "object" || part === null) throw new Error(`no part ${id} in the state`);
    const object = part as Record<string, unknown>;
    return JSON.stringify(Array.isArray(part) ? part : this.entries(object, Object.keys(object)));
  }

  private entries(object: Record<string, unknown>, keys: string[]): unknown[] {
    const entries: unknown[] = [];
    for (const key of keys) {
      const value = object[key];
      if (typeof value !== "object" || value === null) entries.push(key, 0, value);
      else {
        this.parts.push(value);
        entries.push(key, Array.isArray(value) ? 2 : 1, this.parts.length - 1);
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
