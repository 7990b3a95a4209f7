import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { Catalog } from "../../catalog/catalog.js";
import { loadToolFile, toolsFromDocument } from "../../catalog/load.js";
import { readDocument } from "../../catalog/read-document.js";
import type { Tool } from "../../catalog/tool.js";
import { jsonEqual } from "../../core/canonical-json.js";
import { TerrariumError } from "../../core/errors.js";
import { diffJson } from "../../core/json-diff.js";
import { DEFAULT_MAX_RESULT_BYTES } from "../../core/json-limits.js";
import { formatPointer } from "../../core/json-pointer.js";
import { CallValidator } from "../../validate/validator.js";
import { admitCall, makeTransition } from "../transition.js";
import type { CreateOptions, Environment, EnvironmentInstance, Transition } from "../types.js";
import { BridgeDied, BridgeTimeout, DEFAULT_MAX_LINE_BYTES, PythonFailure, PythonProcess } from "./bridge.js";

/** A Python environment descriptor (YAML or JSON). Relative paths are relative to the descriptor. */
const Descriptor = z
  .object({
    kind: z.literal("python"),
    name: z.string().min(1).optional(),
    description: z.string().optional(),
    file: z.string().optional(),
    module: z.string().optional(),
    pythonPath: z.array(z.string()).default([]),
    class: z.string().min(1),
    init: z
      .object({
        method: z.string().default("__init__"),
        config: z.unknown().optional(),
        configFile: z.string().optional(),
      })
      .strict()
      .default({ method: "__init__" }),
    /** A tool-schema source in any catalog format; otherwise the public methods are the tools. */
    tools: z.string().optional(),
    /** Attributes that form the state; otherwise every public attribute. */
    state: z.array(z.string()).optional(),
    /** Time limit of one call, in milliseconds. */
    timeoutMs: z.number().int().positive().default(10_000),
    /** Largest result of one call (its JSON text, in bytes); a larger one fails the call with TOO_LARGE. */
    maxResultBytes: z.number().int().positive().default(DEFAULT_MAX_RESULT_BYTES),
  })
  .strict()
  .refine((d) => Boolean(d.file) !== Boolean(d.module), {
    message: 'give the class by "file" or by "module", not both',
  });

export type PythonDescriptor = z.infer<typeof Descriptor>;

/** The least time a bridge gets to start and import the environment's module. */
const LOAD_TIMEOUT_MS = 30_000;

/** One call as an instance ran it: enough to run it again with the same outcome. */
export interface ReplayCall {
  name: string;
  arguments: unknown;
  seed?: string;
}

/** How an instance was built: construction, an optional set_state, then the calls that succeeded. */
interface Journal {
  init: { method: string; config?: unknown };
  /** A state handed to the class's set_state after construction. */
  setState?: unknown;
  /** Failed calls are left out: the bridge undoes them, so they have nothing to replay. */
  calls: ReplayCall[];
}

/** How a state was reached: the state the calls start from and the calls, oldest first. */
export interface ReplayLineage {
  base: unknown;
  calls: ReplayCall[];
}

/** Where `restore` must place an instance. */
export interface RestoreTarget {
  /** The state the instance must have; a rebuild that does not reach it exactly is refused. */
  state: unknown;
  /** The calls that led to the state; read only when the class cannot take a state (no set_state). */
  lineage?: () => Promise<ReplayLineage | undefined>;
  /** Seeds the instance's later steps that are not given a seed of their own. */
  seed?: string;
}

/** An instance whose steps can run under a given random seed (so that a replay repeats them). */
export interface SeededInstance extends EnvironmentInstance {
  step(call: { name: string; arguments?: unknown }, options?: { seed?: string }): Promise<Transition>;
}

/**
 * Environments whose instances hold more than their JSON state (a Python object) and so cannot simply be
 * built from a state: `restore` places an instance exactly at a recorded state, through the class's
 * set_state or by replaying the calls that led there with their seeds, and refuses when neither works.
 */
export interface ReplayingEnvironment extends Environment {
  restore(target: RestoreTarget): Promise<SeededInstance>;
}

export function isReplayingEnvironment(environment: Environment): environment is ReplayingEnvironment {
  return typeof (environment as Partial<ReplayingEnvironment>).restore === "function";
}

/** Reads a descriptor file and starts the environment it describes. */
export async function loadPythonEnvironment(descriptorFile: string): Promise<PythonEnvironment> {
  const raw = readDocument(descriptorFile);
  const parsed = Descriptor.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TerrariumError(
      "CONFIG_INVALID",
      `Python environment descriptor: ${issue?.message ?? "invalid"}`,
      {
        where: { file: descriptorFile, pointer: formatPointer((issue?.path ?? []).map(String)) },
      },
    );
  }
  return PythonEnvironment.start(parsed.data, dirname(resolve(descriptorFile)), descriptorFile);
}

/**
 * Environments implemented as Python classes. Every instance lives in its own `python3` bridge process, so
 * a call that hangs (and is stopped by killing its process) or crashes touches no other instance. Each
 * instance keeps its journal (construction and the calls that succeeded, with their seeds); after its
 * process died, the next use starts a new one and replays the journal, checking that the state comes back.
 *
 * Measured on a 2-core VM (Python 3.11): a bridge process costs ~125 ms to start and load a class and
 * ~16 MB of memory; so the environment keeps one loaded process warm once it has built more than one
 * instance (a server's sessions), and callers bound how many instances they keep (the code simulator's LRU).
 */
export class PythonEnvironment implements ReplayingEnvironment {
  readonly source: Environment["source"];
  /** @internal */ readonly validator = new CallValidator();
  private readonly live = new Set<PythonInstance>();
  private spare: Promise<PythonProcess> | undefined;
  private creates = 0;
  private counter = 0;
  private closed = false;

  private constructor(
    readonly name: string,
    readonly description: string,
    readonly tools: Tool[],
    /** @internal */ readonly catalog: Catalog,
    /** @internal */ readonly descriptor: PythonDescriptor,
    private readonly loadMessage: Record<string, unknown>,
    private readonly initConfig: unknown,
    /** What the class offers beyond its tools: get_state() and set_state(state). */
    readonly capabilities: { getState: boolean; setState: boolean },
    code: string,
    file: string | undefined,
    first: PythonProcess,
  ) {
    this.source = { kind: "python", ...(file ? { file } : {}), code };
    this.validator.prepare(catalog);
    this.spare = Promise.resolve(first);
  }

  static async start(
    descriptor: PythonDescriptor,
    baseDir: string,
    descriptorFile?: string,
  ): Promise<PythonEnvironment> {
    const at = (path: string) => (isAbsolute(path) ? path : resolve(baseDir, path));
    const name = descriptor.name ?? descriptor.class;
    const loadMessage = {
      env: name,
      class: descriptor.class,
      pythonPath: descriptor.pythonPath.map(at),
      ...(descriptor.file ? { file: at(descriptor.file) } : { module: descriptor.module }),
    };
    const initConfig =
      descriptor.init.configFile !== undefined
        ? readDocument(at(descriptor.init.configFile))
        : descriptor.init.config;
    const bridge = new PythonProcess(undefined, undefined, maxLineBytes(descriptor));
    let loaded: Record<string, unknown>;
    try {
      loaded = await bridge.request("load", loadMessage, Math.max(descriptor.timeoutMs, LOAD_TIMEOUT_MS));
    } catch (error) {
      await bridge.close();
      throw bridgeError(`cannot load ${descriptor.class}`, error, descriptorFile);
    }
    const tools = descriptor.tools
      ? await loadToolFile(at(descriptor.tools))
      : toolsFromDocument(loaded.tools, { format: "function" }).map((tool) => ({
          ...tool,
          origin: { ...tool.origin, ...(descriptor.file ? { file: at(descriptor.file) } : {}) },
        }));
    const description =
      descriptor.description ?? ((loaded.doc as string) || `Python environment ${descriptor.class}`);
    const file = descriptor.file ? at(descriptor.file) : undefined;
    const capabilities = (loaded.capabilities ?? {}) as { getState?: boolean; setState?: boolean };
    return new PythonEnvironment(
      name,
      description,
      tools,
      new Catalog(tools),
      descriptor,
      loadMessage,
      initConfig,
      { getState: capabilities.getState === true, setState: capabilities.setState === true },
      String(loaded.source ?? ""),
      file,
      bridge,
    );
  }

  async initialState(): Promise<unknown> {
    const instance = await this.create();
    try {
      return await instance.state();
    } finally {
      await instance.close();
    }
  }

  /**
   * A new instance; with `state`, placed at that state through set_state, or else by building the class
   * with the state as its config, and refused when the built instance's state is not exactly the one given.
   */
  async create(options: CreateOptions = {}): Promise<SeededInstance> {
    const instance = this.newInstance(options.seed === undefined ? undefined : String(options.seed));
    try {
      if (options.state === undefined) await instance.reset();
      else await instance.reset(options.state);
    } catch (error) {
      await instance.close();
      throw error;
    }
    return instance;
  }

  /** An instance exactly at a recorded state: set_state when the class has it, else a replay of the lineage. */
  async restore(target: RestoreTarget): Promise<SeededInstance> {
    const instance = this.newInstance(target.seed);
    try {
      const lineage = this.capabilities.setState ? undefined : await target.lineage?.();
      if (lineage) await instance.replayTo(lineage, target.state);
      else await instance.reset(target.state);
    } catch (error) {
      await instance.close();
      throw error;
    }
    return instance;
  }

  async close(): Promise<void> {
    this.closed = true;
    const spare = this.spare;
    this.spare = undefined;
    await Promise.all([
      ...[...this.live].map((instance) => instance.close()),
      spare?.then((process) => process.close()).catch(() => undefined),
    ]);
  }

  /** Kills every instance's bridge process (tests use it to check recovery). */
  crashForTesting(): void {
    for (const instance of this.live) instance.crashForTesting();
  }

  /** How many instances are open (each holds a process while it has been used). */
  get openInstances(): number {
    return this.live.size;
  }

  // --- used by instances -------------------------------------------------------------------------

  /** @internal The construction of a fresh instance, as the descriptor gives it. */
  freshInit(): Journal["init"] {
    return {
      method: this.descriptor.init.method,
      ...(this.initConfig !== undefined ? { config: this.initConfig } : {}),
    };
  }

  /** @internal */
  createMessage(id: string, init: Journal["init"]): Record<string, unknown> {
    return {
      env: this.name,
      instance: id,
      init,
      ...(this.descriptor.state ? { stateAttrs: this.descriptor.state } : {}),
    };
  }

  /** @internal A started process with the class loaded: the warm spare when there is one. */
  async acquire(): Promise<PythonProcess> {
    if (this.closed) throw new TerrariumError("INVALID_INPUT", `the environment ${this.name} is closed`);
    this.creates++;
    const spare = this.spare;
    this.spare = undefined;
    let process = spare ? await spare.catch(() => undefined) : undefined;
    if (!process?.alive) process = await this.startProcess();
    // More than one instance means sessions come and go: keep the next process started and loaded.
    if (this.creates > 1 && !this.closed && !this.spare) {
      this.spare = this.startProcess();
      this.spare.catch(() => undefined);
    }
    return process;
  }

  /** @internal Takes back the process of a closed instance; one that never ran a call can serve again. */
  async release(instance: PythonInstance, process: PythonProcess | undefined, clean: boolean): Promise<void> {
    this.live.delete(instance);
    if (!process) return;
    if (clean && !this.closed && !this.spare && process.alive) {
      this.spare = Promise.resolve(process);
      return;
    }
    await process.close();
  }

  /** @internal */
  async load(process: PythonProcess): Promise<void> {
    try {
      // Starting an interpreter and importing the module is not a tool call: under load it may take seconds.
      await process.request("load", this.loadMessage, Math.max(this.descriptor.timeoutMs, LOAD_TIMEOUT_MS));
    } catch (error) {
      throw bridgeError(`cannot load ${this.descriptor.class}`, error);
    }
  }

  /** @internal */
  newInstance(seed: string | undefined): PythonInstance {
    this.counter++;
    const instance = new PythonInstance(this, `${this.name}#${this.counter}`, seed);
    this.live.add(instance);
    return instance;
  }

  private async startProcess(): Promise<PythonProcess> {
    const process = new PythonProcess(undefined, undefined, maxLineBytes(this.descriptor));
    try {
      await this.load(process);
    } catch (error) {
      process.kill();
      throw error;
    }
    return process;
  }
}

class PythonInstance implements SeededInstance {
  private process: PythonProcess | undefined;
  /** Generation of the process in which the class is loaded / this instance's object was built. */
  private loadedGeneration = -1;
  private builtGeneration = -1;
  private journal: Journal = { init: { method: "__init__" }, calls: [] };
  private current: unknown = undefined;
  /** Whether a tool call ran in the process (its module state may have changed): then it is not reused. */
  private touched = false;
  private steps = 0;
  private forks = 0;
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly environment: PythonEnvironment,
    private readonly id: string,
    private readonly seed: string | undefined,
  ) {}

  step(call: { name: string; arguments?: unknown }, options: { seed?: string } = {}): Promise<Transition> {
    return this.exclusive(() => this.stepNow(call, options.seed));
  }

  async state(): Promise<unknown> {
    return structuredClone(this.current);
  }

  /** An independent copy; its object is rebuilt from the journal in its own process at its first use. */
  fork(): Promise<EnvironmentInstance> {
    return this.exclusive(async () => {
      this.forks++;
      const copy = this.environment.newInstance(
        this.seed === undefined ? undefined : `${this.seed}/fork-${this.forks}`,
      );
      copy.adopt(structuredClone(this.journal), structuredClone(this.current));
      return copy;
    });
  }

  /** Back to a fresh instance, or to the given state (set_state, or the state as config; checked). */
  reset(state?: unknown): Promise<void> {
    return this.exclusive(() => this.keepingJournalOnFailure(() => this.resetNow(state)));
  }

  private async resetNow(state: unknown): Promise<void> {
    const cls = this.environment.descriptor.class;
    if (state === undefined) {
      const init = this.environment.freshInit();
      this.current = await this.build({ init, calls: [] });
    } else if (this.environment.capabilities.setState) {
      const reached = await this.build({ init: this.environment.freshInit(), setState: state, calls: [] });
      if (!jsonEqual(reached, state))
        throw this.refusal(
          `${cls}.set_state(state) did not give the state back: ${describeDifference(state, reached)}`,
        );
      this.current = reached;
    } else {
      const init = { method: this.environment.descriptor.init.method, config: state };
      const cannot = (detail: string) =>
        this.refusal(
          `${cls} cannot start from this state: built with it as its config, ${detail}. ${SET_STATE_ADVICE}`,
        );
      let reached: unknown;
      try {
        reached = await this.build({ init, calls: [] });
      } catch (error) {
        throw cannot(reason(error));
      }
      if (!jsonEqual(reached, state)) throw cannot(describeDifference(state, reached));
      this.current = reached;
    }
    this.steps = 0;
  }

  /** A refused or failed rebuild leaves the instance described by its previous journal (rebuilt at next use). */
  private async keepingJournalOnFailure(task: () => Promise<void>): Promise<void> {
    const previous = this.journal;
    try {
      await task();
    } catch (error) {
      this.journal = previous;
      this.builtGeneration = -1;
      throw error;
    }
  }

  close(): Promise<void> {
    return this.exclusive(async () => {
      if (this.closed) return;
      this.closed = true;
      const process = this.process;
      this.process = undefined;
      const clean = !this.touched && process?.alive === true;
      if (clean && process)
        await process
          .request("dispose", { instance: this.id }, this.environment.descriptor.timeoutMs)
          .catch(() => undefined);
      await this.environment.release(this, process, clean);
    });
  }

  // --- used by the environment ---------------------------------------------------------------------

  /** @internal Takes a journal and the state it leads to (a fork); built at first use. */
  adopt(journal: Journal, current: unknown): void {
    this.journal = journal;
    this.current = current;
  }

  /** @internal Builds the lineage's base, replays its calls, and checks the state reached. */
  replayTo(lineage: ReplayLineage, target: unknown): Promise<void> {
    return this.exclusive(() => this.keepingJournalOnFailure(() => this.replayNow(lineage, target)));
  }

  private async replayNow(lineage: ReplayLineage, target: unknown): Promise<void> {
    const cls = this.environment.descriptor.class;
    // The base: a fresh instance when that is the base, else the base as config (checked).
    let init = this.environment.freshInit();
    let reached = await this.build({ init, calls: [] });
    if (!jsonEqual(reached, lineage.base)) {
      init = { method: this.environment.descriptor.init.method, config: lineage.base };
      const cannot = (detail: string) =>
        this.refusal(
          `cannot rebuild the session: its calls start from a state (set from outside, or changed by another ` +
            `simulator) that ${cls} cannot be built at: with it as its config, ${detail}. ${SET_STATE_ADVICE}`,
        );
      try {
        reached = await this.build({ init, calls: [] });
      } catch (error) {
        throw cannot(reason(error));
      }
      if (!jsonEqual(reached, lineage.base)) throw cannot(describeDifference(lineage.base, reached));
    }
    const kept: ReplayCall[] = [];
    reached = await this.replayCalls(lineage.calls, kept);
    this.journal = { init, calls: kept };
    if (!jsonEqual(reached, target)) {
      this.builtGeneration = -1;
      throw this.refusal(
        `cannot rebuild the session: replaying its ${lineage.calls.length} calls does not give its stored state ` +
          `(${describeDifference(target, reached)}); is ${cls} deterministic under a seed?`,
      );
    }
    this.current = reached;
  }

  /** @internal */
  crashForTesting(): void {
    this.process?.kill();
  }

  // --- internals ------------------------------------------------------------------------------------

  private async stepNow(
    call: { name: string; arguments?: unknown },
    givenSeed?: string,
  ): Promise<Transition> {
    if (this.closed) throw new TerrariumError("INVALID_INPUT", "this environment instance is closed");
    const environment = this.environment;
    const before = this.current;
    // Every step counts (rejected ones too), so a seeded run's seeds do not depend on which calls were valid.
    this.steps++;
    const admitted = admitCall(environment.validator, environment.catalog, call, before);
    if ("rejected" in admitted) return admitted.rejected;
    const { recorded, args } = admitted;
    const seed = givenSeed ?? (this.seed === undefined ? undefined : `${this.seed}:${this.steps}`);
    // Rebuilding after a crash may fail on its own; that is an error of the environment, not of this call.
    const process = await this.ensureBuilt();
    const message = {
      instance: this.id,
      name: call.name,
      arguments: args,
      maxResultBytes: environment.descriptor.maxResultBytes,
      ...(seed ? { seed } : {}),
    };
    let reply: Record<string, unknown>;
    try {
      this.touched = true;
      reply = await process.request("call", message, environment.descriptor.timeoutMs, this.builtGeneration);
    } catch (error) {
      if (error instanceof BridgeTimeout || error instanceof BridgeDied) {
        // The process is gone; the next use rebuilds this instance from its journal (this call left out).
        this.builtGeneration = -1;
        const why =
          error instanceof BridgeTimeout
            ? `the call ran longer than ${environment.descriptor.timeoutMs} ms and was stopped`
            : `the Python process died during the call (${error.message})`;
        return makeTransition(
          recorded,
          false,
          { error: `${why}; the environment was restored to its state before the call` },
          before,
          before,
        );
      }
      throw bridgeError(`${call.name} failed in the bridge`, error);
    }
    if (reply.tooLarge === true) {
      // Refused by the bridge before it was sent; the call is undone like any failed call (or rebuilt).
      if (reply.restored !== true || !jsonEqual(reply.state, before)) {
        process.kill();
        this.builtGeneration = -1;
      }
      throw new TerrariumError("TOO_LARGE", `${call.name}: ${String(reply.error)}`, {
        details: { limit: environment.descriptor.maxResultBytes, size: reply.size },
      });
    }
    // A raised exception becomes its traceback; an error the method returned is the observation itself.
    const observation = typeof reply.error === "string" ? { error: reply.error } : reply.result;
    if (reply.ok === true) {
      this.journal.calls.push({ name: call.name, arguments: args, ...(seed ? { seed } : {}) });
      this.current = reply.state;
      const transition = makeTransition(recorded, true, observation, before, reply.state);
      // EnvSimBench compares the Python text of a result (single quotes, True, None), so keep it.
      if (typeof reply.text === "string") transition.observationText = reply.text;
      return transition;
    }
    // A failed call leaves the state as it was. The bridge undid its mutations; if it could not (no
    // snapshot of the object), the process is dropped and the journal, which lacks this call, rebuilds it.
    if (reply.restored !== true || !jsonEqual(reply.state, before)) {
      process.kill();
      this.builtGeneration = -1;
    }
    const transition = makeTransition(recorded, false, observation, before, before);
    if (typeof reply.error !== "string" && typeof reply.text === "string")
      transition.observationText = reply.text;
    return transition;
  }

  /** The process, started and with the class loaded, for this instance. */
  private async loaded(): Promise<PythonProcess> {
    if (this.closed) throw new TerrariumError("INVALID_INPUT", "this environment instance is closed");
    if (!this.process) {
      this.process = await this.environment.acquire();
      this.loadedGeneration = this.process.generation;
    }
    if (!this.process.alive) this.process.start();
    if (this.loadedGeneration !== this.process.generation) {
      this.builtGeneration = -1;
      await this.environment.load(this.process);
      this.loadedGeneration = this.process.generation;
    }
    return this.process;
  }

  /** The process with this instance's object in it; after a death, rebuilt from the journal and checked. */
  private async ensureBuilt(): Promise<PythonProcess> {
    const process = await this.loaded();
    if (this.builtGeneration === process.generation) return process;
    const reached = await this.build(this.journal);
    if (!jsonEqual(reached, this.current)) {
      this.builtGeneration = -1;
      throw new TerrariumError(
        "INTERNAL",
        `after its Python process was restarted, replaying this instance's ${this.journal.calls.length} calls ` +
          `did not give its state back (${describeDifference(this.current, reached)}); ` +
          `is ${this.environment.descriptor.class} deterministic under a seed?`,
      );
    }
    return this.process as PythonProcess;
  }

  /** Builds the object from a journal in the (loaded) process; the journal becomes this instance's. */
  private async build(journal: Journal): Promise<unknown> {
    const environment = this.environment;
    const process = await this.loaded();
    const timeout = environment.descriptor.timeoutMs;
    this.builtGeneration = -1;
    let reply: Record<string, unknown>;
    try {
      reply = await process.request(
        "create",
        environment.createMessage(this.id, journal.init),
        timeout,
        this.loadedGeneration,
      );
      if (journal.setState !== undefined)
        reply = await process.request(
          "set_state",
          { instance: this.id, state: journal.setState },
          timeout,
          this.loadedGeneration,
        );
    } catch (error) {
      throw bridgeError(`cannot build ${environment.descriptor.class}`, error);
    }
    this.builtGeneration = process.generation;
    const built: Journal = {
      init: journal.init,
      ...(journal.setState !== undefined ? { setState: journal.setState } : {}),
      calls: [],
    };
    const state =
      journal.calls.length === 0 ? reply.state : await this.replayCalls(journal.calls, built.calls);
    this.journal = built;
    return state;
  }

  /** Runs calls on the built object with their seeds; those that succeed are added to `kept`. */
  private async replayCalls(calls: ReplayCall[], kept: ReplayCall[]): Promise<unknown> {
    const process = this.process as PythonProcess;
    const timeout = this.environment.descriptor.timeoutMs;
    if (calls.length > 0) this.touched = true;
    let state: unknown;
    let known = false;
    try {
      for (const call of calls) {
        const reply = await process.request(
          "call",
          { instance: this.id, ...call },
          timeout,
          this.builtGeneration,
        );
        if (reply.ok === true) kept.push(call);
        // A failed call that the bridge could not undo leaves a state only a fresh read can tell.
        known = reply.ok === true || reply.restored === true;
        if (known) state = reply.state;
      }
      if (!known)
        state = (await process.request("state", { instance: this.id }, timeout, this.builtGeneration)).state;
    } catch (error) {
      this.builtGeneration = -1;
      throw bridgeError(`cannot replay the calls of ${this.environment.descriptor.class}`, error);
    }
    return state;
  }

  private refusal(message: string): TerrariumError {
    // The object in the process is not the one the journal describes any more.
    this.builtGeneration = -1;
    return new TerrariumError("INVALID_INPUT", message);
  }

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/**
 * The longest answer read from a bridge: room for a result at the limit and its text, beside the state
 * (which has no limit of its own, and a generous one here).
 */
function maxLineBytes(descriptor: PythonDescriptor): number {
  return DEFAULT_MAX_LINE_BYTES + 2 * descriptor.maxResultBytes;
}

const SET_STATE_ADVICE = "Give the class set_state(state) (and get_state()) to restore any state";

/** Where two states first differ, for messages. */
function describeDifference(expected: unknown, reached: unknown): string {
  const change = diffJson(expected, reached)[0];
  if (!change) return "the states differ";
  const at = change.path === "" ? "the root" : change.path;
  if (change.op === "add") return `it has ${at}, which the state lacks`;
  if (change.op === "remove") return `it lacks ${at}`;
  return `it differs at ${at} (${short(change.after)} instead of ${short(change.before)})`;
}

function short(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function reason(error: unknown): string {
  if (error instanceof TerrariumError) return error.message.replace(/^cannot build [^:]+: /, "it raised ");
  return error instanceof Error ? error.message : String(error);
}

function bridgeError(what: string, error: unknown, file?: string): TerrariumError {
  if (error instanceof TerrariumError) return error;
  const detail = error instanceof PythonFailure ? error.traceback.trim() : (error as Error).message;
  return new TerrariumError(
    "INVALID_INPUT",
    `${what}: ${error instanceof PythonFailure ? error.message : detail}`,
    {
      ...(file ? { where: { file } } : {}),
      details: { traceback: detail },
      cause: error,
    },
  );
}

/** Reads a descriptor's text, for callers that list environments without starting them. */
export function readDescriptorName(file: string): string | undefined {
  try {
    const parsed = Descriptor.safeParse(readDocument(file));
    return parsed.success ? (parsed.data.name ?? parsed.data.class) : undefined;
  } catch {
    return undefined;
  }
}
