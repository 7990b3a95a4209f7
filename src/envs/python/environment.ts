import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { Catalog } from "../../catalog/catalog.js";
import { loadToolFile, toolsFromDocument } from "../../catalog/load.js";
import { readDocument } from "../../catalog/read-document.js";
import type { Tool } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import { formatPointer } from "../../core/json-pointer.js";
import { CallValidator } from "../../validate/validator.js";
import { admitCall, makeTransition } from "../transition.js";
import type { CreateOptions, Environment, EnvironmentInstance, Transition } from "../types.js";
import { BridgeDied, BridgeTimeout, PythonFailure, PythonProcess } from "./bridge.js";

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
  })
  .strict()
  .refine((d) => Boolean(d.file) !== Boolean(d.module), {
    message: 'give the class by "file" or by "module", not both',
  });

export type PythonDescriptor = z.infer<typeof Descriptor>;

interface Journal {
  init: { method: string; config?: unknown };
  calls: Array<{ name: string; arguments: unknown; seed?: string }>;
}

/** Reads a descriptor file and starts the environment it describes. */
export async function loadPythonEnvironment(descriptorFile: string): Promise<Environment> {
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
 * Environments implemented as Python classes, run in a long-lived `python3` bridge process. Instances live
 * in the bridge; terrarium keeps each one's journal (how it was built and the calls it ran) so that after a
 * crash or a timeout the bridge is restarted and every instance rebuilt by replaying its journal.
 */
export class PythonEnvironment implements Environment {
  readonly source: Environment["source"];
  private readonly journals = new Map<string, Journal>();
  private readonly validator = new CallValidator();
  private loadedGeneration: number;
  private counter = 0;

  private constructor(
    private readonly process: PythonProcess,
    readonly name: string,
    readonly description: string,
    readonly tools: Tool[],
    private readonly catalog: Catalog,
    private readonly descriptor: PythonDescriptor,
    private readonly loadMessage: Record<string, unknown>,
    private readonly initConfig: unknown,
    code: string,
    file: string | undefined,
  ) {
    this.source = { kind: "python", ...(file ? { file } : {}), code };
    this.validator.prepare(catalog);
    this.loadedGeneration = process.generation;
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
    const bridge = new PythonProcess();
    let loaded: Record<string, unknown>;
    try {
      loaded = await bridge.request("load", loadMessage, descriptor.timeoutMs);
    } catch (error) {
      await bridge.close();
      throw bridgeError(`cannot load ${descriptor.class}`, error, descriptorFile);
    }
    const tools = descriptor.tools
      ? loadToolFile(at(descriptor.tools))
      : toolsFromDocument(loaded.tools, { format: "function" }).map((tool) => ({
          ...tool,
          origin: { ...tool.origin, ...(descriptor.file ? { file: at(descriptor.file) } : {}) },
        }));
    const description =
      descriptor.description ?? ((loaded.doc as string) || `Python environment ${descriptor.class}`);
    const file = descriptor.file ? at(descriptor.file) : undefined;
    return new PythonEnvironment(
      bridge,
      name,
      description,
      tools,
      new Catalog(tools),
      descriptor,
      loadMessage,
      initConfig,
      String(loaded.source ?? ""),
      file,
    );
  }

  async initialState(): Promise<unknown> {
    const instance = await this.create();
    const state = await instance.state();
    await instance.close();
    return state;
  }

  async create(options: CreateOptions = {}): Promise<EnvironmentInstance> {
    // A recorded state can stand in for the config of classes that are built from a plain config dict.
    const config = options.state !== undefined ? options.state : this.initConfig;
    const journal: Journal = {
      init: { method: this.descriptor.init.method, ...(config !== undefined ? { config } : {}) },
      calls: [],
    };
    const id = this.newInstanceId();
    const reply = await this.send(
      "create",
      this.createMessage(id, journal),
      `cannot build ${this.descriptor.class}`,
    );
    this.journals.set(id, journal);
    return new PythonInstance(
      this,
      id,
      reply.state,
      options.seed === undefined ? undefined : String(options.seed),
    );
  }

  async close(): Promise<void> {
    this.journals.clear();
    await this.process.close();
  }

  // --- used by instances -------------------------------------------------------------------------

  /** Validates, runs one call in the bridge, and records it; crashes and timeouts restore the instance. */
  async call(
    id: string,
    before: unknown,
    call: { name: string; arguments?: unknown },
    seed: string | undefined,
  ): Promise<Transition> {
    const admitted = admitCall(this.validator, this.catalog, call, before);
    if ("rejected" in admitted) return admitted.rejected;
    const { recorded, args } = admitted;
    const message = { instance: id, name: call.name, arguments: args, ...(seed ? { seed } : {}) };
    try {
      await this.ensureLive();
      const reply = await this.process.request("call", message, this.descriptor.timeoutMs);
      this.journals.get(id)?.calls.push({ name: call.name, arguments: args, ...(seed ? { seed } : {}) });
      // A raised exception becomes its traceback; an error the method returned is the observation itself.
      const observation = typeof reply.error === "string" ? { error: reply.error } : reply.result;
      const transition = makeTransition(recorded, reply.ok === true, observation, before, reply.state);
      // EnvSimBench compares the Python text of a result (single quotes, True, None), so keep it.
      if (typeof reply.error !== "string" && typeof reply.text === "string")
        transition.observationText = reply.text;
      return transition;
    } catch (error) {
      if (error instanceof BridgeTimeout || error instanceof BridgeDied) {
        // The process is gone; the next request rebuilds every instance from its journal (this call left out).
        const why =
          error instanceof BridgeTimeout
            ? `the call ran longer than ${this.descriptor.timeoutMs} ms and was stopped`
            : `the Python process died during the call (${error.message})`;
        return makeTransition(
          recorded,
          false,
          { error: `${why}; the environment was restored to its state before the call` },
          before,
          before,
        );
      }
      throw error;
    }
  }

  async fork(id: string, seed: string | undefined): Promise<PythonInstance> {
    const journal = this.journals.get(id) as Journal;
    const newId = this.newInstanceId();
    const reply = await this.send("fork", { instance: id, new: newId }, "cannot fork");
    this.journals.set(newId, { init: journal.init, calls: [...journal.calls] });
    return new PythonInstance(this, newId, reply.state, seed);
  }

  async rebuild(id: string, state: unknown): Promise<unknown> {
    const config = state !== undefined ? state : this.initConfig;
    const journal: Journal = {
      init: { method: this.descriptor.init.method, ...(config !== undefined ? { config } : {}) },
      calls: [],
    };
    const reply = await this.send(
      "create",
      this.createMessage(id, journal),
      `cannot rebuild ${this.descriptor.class}`,
    );
    this.journals.set(id, journal);
    return reply.state;
  }

  async dispose(id: string): Promise<void> {
    this.journals.delete(id);
    if (this.process.alive)
      await this.process.request("dispose", { instance: id }, this.descriptor.timeoutMs);
  }

  /** Kills the bridge process (tests use it to check recovery). */
  crashForTesting(): void {
    this.process.kill();
  }

  private newInstanceId(): string {
    this.counter++;
    return `${this.name}#${this.counter}`;
  }

  private createMessage(id: string, journal: Journal): Record<string, unknown> {
    return {
      env: this.name,
      instance: id,
      init: journal.init,
      ...(this.descriptor.state ? { stateAttrs: this.descriptor.state } : {}),
    };
  }

  private async send(
    op: string,
    message: Record<string, unknown>,
    what: string,
  ): Promise<Record<string, unknown>> {
    await this.ensureLive();
    try {
      return await this.process.request(op, message, this.descriptor.timeoutMs);
    } catch (error) {
      throw bridgeError(what, error);
    }
  }

  /** After a (re)start, loads the class again and replays every instance's journal. */
  private async ensureLive(): Promise<void> {
    if (this.process.alive && this.process.generation === this.loadedGeneration) return;
    this.process.start();
    this.loadedGeneration = this.process.generation;
    await this.process.request("load", this.loadMessage, this.descriptor.timeoutMs);
    for (const [id, journal] of this.journals) {
      await this.process.request("create", this.createMessage(id, journal), this.descriptor.timeoutMs);
      for (const call of journal.calls) {
        await this.process.request("call", { instance: id, ...call }, this.descriptor.timeoutMs);
      }
    }
  }
}

class PythonInstance implements EnvironmentInstance {
  private steps = 0;
  private forks = 0;

  constructor(
    readonly environment: PythonEnvironment,
    private readonly id: string,
    private current: unknown,
    private readonly seed: string | undefined,
  ) {}

  async step(call: { name: string; arguments?: unknown }): Promise<Transition> {
    this.steps++;
    const seed = this.seed === undefined ? undefined : `${this.seed}:${this.steps}`;
    const transition = await this.environment.call(this.id, this.current, call, seed);
    this.current = transition.after;
    return transition;
  }

  async state(): Promise<unknown> {
    return structuredClone(this.current);
  }

  async fork(): Promise<EnvironmentInstance> {
    this.forks++;
    return this.environment.fork(
      this.id,
      this.seed === undefined ? undefined : `${this.seed}/fork-${this.forks}`,
    );
  }

  async reset(state?: unknown): Promise<void> {
    this.current = await this.environment.rebuild(this.id, state);
    this.steps = 0;
  }

  async close(): Promise<void> {
    await this.environment.dispose(this.id);
  }
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
