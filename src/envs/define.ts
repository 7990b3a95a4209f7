import { Catalog } from "../catalog/catalog.js";
import { closeArgumentObject, emptyArgumentSchema } from "../catalog/json-schema.js";
import { toJsonSchema2020 } from "../catalog/normalise.js";
import type { JsonObjectSchema, JsonSchema, Tool, ToolEffect } from "../catalog/tool.js";
import { type Clock, isoTime, ManualClock, systemClock } from "../core/clock.js";
import { createIdGenerator, type IdGenerator } from "../core/ids.js";
import { toImmutableJson } from "../core/immutable-json.js";
import { createRandom, type Random, unseededRandom } from "../core/random.js";
import { SchemaCompiler } from "../validate/ajv.js";
import { CallValidator } from "../validate/validator.js";
import { StateDraft } from "./draft.js";
import { cloneArguments, observationOf } from "./step-values.js";
import { admitCall, makeTransition } from "./transition.js";
import type {
  CreateOptions,
  Environment,
  EnvironmentInstance,
  RestartableInstance,
  Transition,
} from "./types.js";

/** Where a seeded run's clock starts: every seeded run sees the same times. */
export const SEEDED_CLOCK_START = "2025-01-01T00:00:00.000Z";

/** What a tool implementation gets: a draft of the state to change, its arguments, and the runtime sources. */
export interface ToolContext<S> {
  /** A private copy of the state: change it freely; it becomes the new state only if `run` returns. */
  state: S;
  // biome-ignore lint/suspicious/noExplicitAny: tool arguments are checked against the tool's schema before run sees them
  args: Record<string, any>;
  clock: Clock;
  /** The current time as an ISO 8601 string, from the injected clock. */
  now(): string;
  random: Random;
  ids: IdGenerator;
  /** Rejects the call (a guard): the state stays as it was and the step is a failure. */
  fail(message: string, details?: Record<string, unknown>): never;
}

export interface ToolImplementation<S> {
  description: string;
  /** JSON Schema of the arguments (an object schema; unknown arguments are rejected). */
  input?: JsonObjectSchema;
  output?: JsonSchema;
  effect: ToolEffect;
  run(context: ToolContext<S>): unknown;
}

export interface EnvironmentDefinition<S> {
  name: string;
  description: string;
  initialState: S | (() => S);
  tools: Record<string, ToolImplementation<S>>;
  /** The module file that defines it, for EnvSimBench prompts that show the implementation. */
  file?: string;
}

let compiler: SchemaCompiler | undefined;

/**
 * One schema compiler for every TypeScript environment of the process: Ajv compiles its meta-schema
 * once, not once per environment, and tools with equal schemas share their compiled code.
 */
function sharedCompiler(): SchemaCompiler {
  if (compiler === undefined) compiler = new SchemaCompiler();
  return compiler;
}

/** A guard's rejection, raised by `context.fail`. */
export class ToolFailure extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * Defines a TypeScript environment. Steps are pure underneath: each runs on a copy of the state, so the
 * input is never changed, a rejected or crashing call leaves the state as it was, and an instance can start
 * from any recorded state.
 */
export function defineEnvironment<S>(definition: EnvironmentDefinition<S>): Environment {
  const tools: Tool[] = Object.entries(definition.tools).map(([name, tool]) => ({
    name,
    description: tool.description,
    inputSchema: closeArgumentObject(
      tool.input
        ? (toJsonSchema2020({ type: "object", ...tool.input }) as JsonObjectSchema)
        : emptyArgumentSchema(),
    ),
    ...(tool.output !== undefined ? { outputSchema: tool.output } : {}),
    effect: tool.effect,
    effectSource: "declared",
    origin: {
      format: "environment",
      ...(definition.file ? { file: definition.file } : {}),
      pointer: `/${definition.name}/${name}`,
    },
  }));
  const catalog = new Catalog(tools);
  const validator = new CallValidator(sharedCompiler());
  validator.prepare(catalog);
  const initial = () =>
    toImmutableJson(
      typeof definition.initialState === "function"
        ? (definition.initialState as () => S)()
        : definition.initialState,
    ) as S;

  const environment: Environment = {
    name: definition.name,
    description: definition.description,
    tools,
    source: {
      kind: "typescript",
      ...(definition.file ? { file: definition.file } : {}),
      code: sourceOf(definition),
    },
    initialState: async () => initial(),
    create: async (options: CreateOptions = {}) => {
      const { state, random, clock } = startOf(options, initial);
      return new TypeScriptInstance(
        environment,
        definition,
        catalog,
        validator,
        state,
        random,
        clock,
        initial,
      );
    },
  };
  return environment;
}

/** What an instance made with `options` starts with: its state, random source and clock. */
function startOf<S>(options: CreateOptions, initial: () => S): { state: S; random: Random; clock: Clock } {
  return {
    state: options.state !== undefined ? (toImmutableJson(options.state) as S) : initial(),
    random: options.seed !== undefined ? createRandom(options.seed) : unseededRandom(),
    clock:
      options.clock ?? (options.seed !== undefined ? new ManualClock(SEEDED_CLOCK_START, 1000) : systemClock),
  };
}

/** A tool's `fail`: the same function for every step of every instance. */
export function failTool(message: string, details?: Record<string, unknown>): never {
  throw new ToolFailure(message, details);
}

/**
 * What a tool's context draws from, for one start of an instance. `ids` and `now` are bound to this
 * start's own random source and clock, not read through the instance: work a tool leaves running after its
 * step (a timer, the other branch of a `Promise.all` that failed early) must never draw from a later
 * start's sources, or a call's ids and times would depend on timing and replays would differ. A new
 * `ids` object per start also keeps what the sandbox keeps by generator (ids drawn ahead, unused) to its start.
 */
export interface ToolSources {
  random: Random;
  clock: Clock;
  ids: IdGenerator;
  now: () => string;
}

export function toolSources(random: Random, clock: Clock): ToolSources {
  // Made on first use: most steps draw no id.
  let generator: IdGenerator | undefined;
  const ids = () => {
    generator ??= createIdGenerator(random.derive("ids"));
    return generator;
  };
  return {
    random,
    clock,
    ids: { next: (prefix) => ids().next(prefix), uuid: () => ids().uuid() },
    now: () => isoTime(clock.now()),
  };
}

class TypeScriptInstance<S> implements RestartableInstance {
  private forks = 0;
  /** The parts of a tool's context that stay the same from step to step (until a restart). */
  private sources: ToolSources;

  constructor(
    readonly environment: Environment,
    private readonly definition: EnvironmentDefinition<S>,
    private readonly catalog: Catalog,
    private readonly validator: CallValidator,
    private current: S,
    random: Random,
    clock: Clock,
    private readonly initial: () => S,
  ) {
    this.sources = toolSources(random, clock);
  }

  /**
   * One call. `options.checkedAgainst`: the input schema the caller already validated the arguments
   * against (the engine's validator); when it is the tool's own, the step does not validate them again.
   */
  async step(
    call: { name: string; arguments?: unknown },
    options: { checkedAgainst?: object } = {},
  ): Promise<Transition> {
    const before = this.current;
    const admitted = admitCall(this.validator, this.catalog, call, before, options.checkedAgainst);
    if ("rejected" in admitted) return admitted.rejected;
    const { recorded, args } = admitted;
    const tool = this.definition.tools[call.name] as ToolImplementation<S>;
    // The draft is a copy-on-write view of `before` (an immutable tree): a guard's `fail` or a crash
    // simply drops it, and a successful run copies only the containers the tool wrote (see draft.ts).
    const draft = new StateDraft(before);
    try {
      const { clock, now, random, ids } = this.sources;
      const result = tool.run({
        state: draft.state as S,
        args: cloneArguments(args),
        clock,
        now,
        random,
        ids,
        fail: failTool,
      });
      // Read the observation while the draft is alive: it may hold parts of the draft.
      const observation = observationOf(result instanceof Promise ? await result : result);
      // Only what JSON can say is kept (no undefined, no Dates); untouched subtrees are shared as they are.
      const { after, changes } = draft.finish();
      this.current = after as S;
      return makeTransition(recorded, true, observation, before, after, changes);
    } catch (error) {
      draft.discard();
      const observation =
        error instanceof ToolFailure
          ? { error: error.message, ...error.details }
          : { error: `the tool raised an error: ${(error as Error)?.message ?? String(error)}` };
      return makeTransition(recorded, false, observation, before, before, []);
    }
  }

  /**
   * Makes this instance exactly what `environment.create(options)` would make (state, random source,
   * ids, clock, forks), for a caller that would otherwise make a new instance per call (the code
   * simulator). Besides the allocation, a new instance per call made the collector copy about twice as
   * much per step (measured with --trace-gc-nvp on bank transfers), as the objects of each step's state
   * lived through more scavenges.
   */
  restart(options: CreateOptions): void {
    const { state, random, clock } = startOf(options, this.initial);
    this.current = state;
    this.sources = toolSources(random, clock);
    this.forks = 0;
  }

  /** The current state: an immutable tree, shared rather than copied (see `core/immutable-json.ts`). */
  async state(): Promise<unknown> {
    return this.current;
  }

  async fork(): Promise<EnvironmentInstance> {
    this.forks++;
    const { random, clock: current } = this.sources;
    const clock = current instanceof ManualClock ? current.clone() : current;
    return new TypeScriptInstance(
      this.environment,
      this.definition,
      this.catalog,
      this.validator,
      this.current,
      random.derive(`fork-${this.forks}`),
      clock,
      this.initial,
    );
  }

  async reset(state?: unknown): Promise<void> {
    this.current = state === undefined ? this.initial() : (toImmutableJson(state) as S);
  }

  async close(): Promise<void> {}
}

/** The implementation as text: each tool's description, schema and `run` function. */
function sourceOf<S>(definition: EnvironmentDefinition<S>): string {
  const parts = [`// environment ${definition.name}: ${definition.description}`];
  for (const [name, tool] of Object.entries(definition.tools)) {
    parts.push(`// tool ${name} (${tool.effect}): ${tool.description}`);
    if (tool.input) parts.push(`// input: ${JSON.stringify(tool.input)}`);
    parts.push(`${name}: ${tool.run.toString()}`);
  }
  return parts.join("\n");
}
