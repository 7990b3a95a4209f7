import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import type { Tool } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import { createRandom, type Random } from "../../core/random.js";
import { BUILTIN_ENVIRONMENTS } from "../../envs/corpus/index.js";
import { isReplayingEnvironment, type SeededInstance } from "../../envs/python/environment.js";
import type { Environment, EnvironmentInstance, Transition } from "../../envs/types.js";
import type { Models } from "../../models/hub.js";
import type { Message } from "../../models/types.js";
import { type CollectionSettings, type ResumeInfo, SampleWriter, trajectoryKey } from "./sample-store.js";
import { ENVSIM_SCHEMA_VERSION, type EnvSimSample, type PrefixCall } from "./types.js";

/**
 * Collection of EnvSimBench samples: trajectories of calls on an executable environment, each step a
 * sample. As in EnvSimBench's pipeline, step 0 of a trajectory is its setup state with no action; the
 * first action is step 1, and its `before` is the setup state. Every sample records the seed its step
 * ran under and the environment's reference, so `(environment, before, call, seed)` repeats it exactly.
 */

/** A transition as an EnvSimBench sample. */
export function toSample(
  environment: Environment,
  taskId: string,
  step: number,
  transition: Transition,
  task?: string,
  seed?: string,
  reference: string = referenceOf(environment),
  prefix?: PrefixCall[],
): EnvSimSample {
  const args = (transition.call.arguments ?? {}) as Record<string, unknown>;
  return {
    schemaVersion: ENVSIM_SCHEMA_VERSION,
    id: `${environment.name}/${taskId}/${step}`,
    envId: environment.name,
    taskId,
    ...(task ? { task } : {}),
    step,
    call: { name: transition.call.name, arguments: args },
    observation: transition.observation,
    observationText:
      transition.observationText ??
      (typeof transition.observation === "string"
        ? transition.observation
        : JSON.stringify(transition.observation)),
    before: transition.before,
    after: transition.after,
    changes: transition.envChanges,
    delta: transition.delta,
    success: transition.success,
    argCount: Object.keys(args).length,
    envCode: environment.source.code ?? "",
    envKind: environment.source.kind,
    environment: reference,
    ...(seed !== undefined ? { seed } : {}),
    ...(prefix ? { prefix } : {}),
  };
}

/**
 * The seed a Python instance's step runs under, from the seed its sample records: the seed a fresh
 * instance created with `seed` gives its first step. Collection, the code simulator and its replays of a
 * sample's prefix all derive it here, so they draw the same random numbers.
 */
export function instanceStepSeed(seed: string): string {
  return `${seed}:1`;
}

/**
 * The calls of a trajectory so far, for the samples of environments that cannot start from any state
 * (their `prefix`); none for the others, which a before-state alone rebuilds.
 */
class PrefixRecorder {
  private readonly calls: PrefixCall[] | undefined;

  constructor(environment: Environment) {
    this.calls = startsFromState(environment) ? undefined : [];
  }

  /** The prefix of the next sample (a copy: samples outlive the trajectory). */
  current(): PrefixCall[] | undefined {
    return this.calls ? [...this.calls] : undefined;
  }

  add(sample: EnvSimSample): void {
    this.calls?.push({
      name: sample.call.name,
      arguments: sample.call.arguments,
      ...(sample.seed !== undefined ? { seed: sample.seed } : {}),
    });
  }
}

/**
 * How to load an environment again, from what the user named: a built-in name stays a name, a module or
 * descriptor becomes its absolute path (so a sample can be re-run from another working directory).
 */
export function environmentReference(reference: string): string {
  if (Object.hasOwn(BUILTIN_ENVIRONMENTS, reference)) return reference;
  return isAbsolute(reference) ? reference : resolve(reference);
}

/**
 * The reference of an environment known only as an object: its built-in name, or the file it was read
 * from (a sandboxed descriptor, a TypeScript module). A Python environment's file is its class's `.py`,
 * not its descriptor: collect those by reference (`collectSamples`) or pass `reference`.
 */
function referenceOf(environment: Environment): string {
  if (BUILTIN_ENVIRONMENTS[environment.name] === environment) return environment.name;
  const file = environment.source.file;
  if (file && environment.source.kind !== "python" && existsSync(file)) return resolve(file);
  return environment.name;
}

/** Whether instances can start from any state (then every step runs on a fresh instance from `before`). */
function startsFromState(environment: Environment): boolean {
  return environment.source.kind !== "python";
}

/**
 * Runs one step so that it can be repeated exactly as `create({state: before, seed})` then `step(call)`.
 * Environments that start from any state get a fresh instance per step, seeded for that step. A Python
 * instance holds more than its state (the object), so the live one makes the step, under the seed a fresh
 * instance created with `seed` gives its first step (`<seed>:1`).
 */
async function stepOnce(
  environment: Environment,
  live: EnvironmentInstance,
  call: { name: string; arguments?: unknown },
  seed: string,
): Promise<Transition> {
  if (!startsFromState(environment)) {
    if (isReplayingEnvironment(environment))
      return (live as SeededInstance).step(call, { seed: instanceStepSeed(seed) });
    return live.step(call);
  }
  const fresh = await environment.create({ state: await live.state(), seed });
  try {
    const transition = await fresh.step(call);
    await live.reset(transition.after);
    return transition;
  } finally {
    await fresh.close();
  }
}

/** What schema-driven exploration reached: per tool, successes and the distinct rejections (guards) seen. */
export interface OutcomeCoverage {
  tools: Record<string, { calls: number; successes: number; rejections: string[] }>;
  /** Tools called at least once with success / at least one distinct rejection, over all tools. */
  toolsSucceeded: number;
  toolsRejected: number;
  toolCount: number;
  /** Distinct (tool, outcome) pairs reached: each success counts once per tool, each rejection message once. */
  outcomes: number;
}

/** Tallies the outcomes of samples into an `OutcomeCoverage`. */
export class CoverageTally {
  private readonly coverage: OutcomeCoverage;

  constructor(environment: Environment) {
    this.coverage = {
      tools: {},
      toolsSucceeded: 0,
      toolsRejected: 0,
      toolCount: environment.tools.length,
      outcomes: 0,
    };
    for (const tool of environment.tools)
      this.coverage.tools[tool.name] = { calls: 0, successes: 0, rejections: [] };
  }

  add(sample: EnvSimSample): void {
    // Calls of tools the environment does not have (an agent's invention) are no outcome of a tool.
    if (!Object.hasOwn(this.coverage.tools, sample.call.name)) return;
    const entry = this.coverage.tools[sample.call.name] as OutcomeCoverage["tools"][string];
    entry.calls++;
    if (sample.success) entry.successes++;
    else {
      const message = errorMessage(sample.observation);
      if (!entry.rejections.includes(message)) entry.rejections.push(message);
    }
  }

  result(): OutcomeCoverage {
    const entries = Object.values(this.coverage.tools);
    this.coverage.toolsSucceeded = entries.filter((e) => e.successes > 0).length;
    this.coverage.toolsRejected = entries.filter((e) => e.rejections.length > 0).length;
    this.coverage.outcomes = entries.reduce(
      (total, e) => total + (e.successes > 0 ? 1 : 0) + e.rejections.length,
      0,
    );
    return this.coverage;
  }
}

/** How trajectories are made. */
export type CollectSource =
  /** Schema-driven exploration, no model: arguments from each tool's schema, values from the state. */
  | { kind: "explore" }
  /** The paper's way: an agent model explores with native (or emulated) tool calling. */
  | { kind: "agent"; models: Models; model?: string; role?: string }
  /** Given call lists, one trajectory each, from the initial state. */
  | { kind: "replay"; calls: Array<Array<{ name: string; arguments?: unknown }>> };

/** What a trajectory produces, in order: its setup state (step 0), its samples, at most one error. */
export type TrajectoryEvent =
  | { kind: "start"; state: unknown }
  | { kind: "sample"; sample: EnvSimSample }
  | { kind: "error"; step: number; error: string };

/** One trajectory to run: what identifies it (for `--resume`) and how to run it. */
export interface TrajectoryPlan {
  taskId: string;
  task?: string;
  /** The seed its instance is created with. */
  seed: string;
  run(): AsyncGenerator<TrajectoryEvent>;
}

export interface PlanOptions {
  /** Trajectories (explore, agent; replay runs one per call list). */
  trajectories: number;
  /** Actions per trajectory (steps 1..steps; step 0 is the setup state). */
  steps: number;
  seed: string | number;
  /** How to load the environment again (default: its built-in name or file). */
  reference?: string;
}

/**
 * The trajectories a source makes on an environment, each run on its own instance. Trajectory i of a
 * source is the same whenever it runs (its randomness and seeds derive from the seed and i), which is
 * what lets `--resume` skip the finished ones.
 */
export function planTrajectories(
  environment: Environment,
  source: CollectSource,
  options: PlanOptions,
): TrajectoryPlan[] {
  const reference = options.reference ?? referenceOf(environment);
  // Start states are shared: the initial state is built once (a large one, tau2-retail's, costs to build).
  let initial: Promise<unknown> | undefined;
  const create = (seed: string) => {
    if (!startsFromState(environment)) return environment.create({ seed });
    initial ??= environment.initialState();
    return initial.then((state) => environment.create({ state, seed }));
  };
  const plans: TrajectoryPlan[] = [];
  const count = source.kind === "replay" ? source.calls.length : options.trajectories;
  for (let index = 0; index < count; index++) {
    const seed = `${options.seed}/${index}`;
    if (source.kind === "explore") {
      plans.push({
        taskId: `schema-${index}`,
        seed,
        run: async function* () {
          const random = createRandom(`${options.seed}/explore/${index}`);
          const instance = await create(seed);
          const prefix = new PrefixRecorder(environment);
          try {
            yield { kind: "start", state: await instance.state() };
            for (let step = 1; step <= options.steps; step++) {
              const call = randomValidCall(environment.tools, await instance.state(), random);
              const stepSeed = `${seed}/${step}`;
              const transition = await stepOnce(environment, instance, call, stepSeed);
              const sample = toSample(
                environment,
                `schema-${index}`,
                step,
                transition,
                undefined,
                stepSeed,
                reference,
                prefix.current(),
              );
              prefix.add(sample);
              yield { kind: "sample", sample };
            }
          } finally {
            await instance.close();
          }
        },
      });
    } else if (source.kind === "replay") {
      const calls = source.calls[index] ?? [];
      plans.push({
        taskId: `replay-${index}`,
        seed,
        run: async function* () {
          const instance = await create(seed);
          const prefix = new PrefixRecorder(environment);
          try {
            yield { kind: "start", state: await instance.state() };
            for (const [at, call] of calls.entries()) {
              const step = at + 1;
              const stepSeed = `${seed}/${step}`;
              const transition = await stepOnce(environment, instance, call, stepSeed);
              const sample = toSample(
                environment,
                `replay-${index}`,
                step,
                transition,
                undefined,
                stepSeed,
                reference,
                prefix.current(),
              );
              prefix.add(sample);
              yield { kind: "sample", sample };
            }
          } finally {
            await instance.close();
          }
        },
      });
    } else {
      const task = `Use this environment the way a real user would (trajectory ${index + 1}): look things up, then change them, including requests that should be refused.`;
      plans.push({
        taskId: `agent-${index}`,
        task,
        seed,
        run: () =>
          agentTrajectory(environment, source, { ...options, reference }, index, task, () => create(seed)),
      });
    }
  }
  return plans;
}

async function* agentTrajectory(
  environment: Environment,
  source: Extract<CollectSource, { kind: "agent" }>,
  options: PlanOptions & { reference: string },
  index: number,
  task: string,
  create: () => Promise<EnvironmentInstance>,
): AsyncGenerator<TrajectoryEvent> {
  const tools = environment.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
  }));
  const taskId = `agent-${index}`;
  const instance = await create();
  const prefix = new PrefixRecorder(environment);
  const messages: Message[] = [
    {
      role: "system",
      content: `You are exploring "${environment.name}": ${environment.description}\nMake one or more tool calls per turn. Vary the tools and the arguments.`,
    },
    { role: "user", content: task },
  ];
  try {
    yield { kind: "start", state: await instance.state() };
    let step = 0;
    while (step < options.steps) {
      let turn: Awaited<ReturnType<Models["generateWithTools"]>>;
      try {
        turn = await source.models.generateWithTools({
          ...(source.model ? { model: source.model } : { role: source.role ?? "explorer" }),
          messages,
          tools,
          temperature: 0.7,
          seed: Number.parseInt(String(options.seed), 10) || 0,
          variant: `${index}/${step}`,
        });
      } catch (error) {
        // The model failed (after its retries): the trajectory ends here, the failure is recorded.
        yield { kind: "error", step: step + 1, error: (error as Error).message ?? String(error) };
        return;
      }
      if (turn.toolCalls.length === 0) break;
      messages.push({ role: "assistant", content: turn.text, toolCalls: turn.toolCalls });
      for (const call of turn.toolCalls) {
        if (step >= options.steps) break;
        step++;
        const stepSeed = `${options.seed}/${index}/${step}`;
        const transition = await stepOnce(
          environment,
          instance,
          { name: call.name, arguments: call.arguments },
          stepSeed,
        );
        const sample = toSample(
          environment,
          taskId,
          step,
          transition,
          task,
          stepSeed,
          options.reference,
          prefix.current(),
        );
        prefix.add(sample);
        yield { kind: "sample", sample };
        messages.push({
          role: "tool",
          toolCallId: call.id,
          name: call.name,
          content: JSON.stringify(transition.observation),
        });
      }
    }
  } finally {
    await instance.close();
  }
}

/** Runs plans and gathers their samples in memory (for small collections; files use `collectSamples`). */
async function gather(
  plans: TrajectoryPlan[],
  onError?: (error: { taskId: string; step: number; error: string }) => void,
): Promise<EnvSimSample[]> {
  const samples: EnvSimSample[] = [];
  for (const plan of plans)
    for await (const event of plan.run()) {
      if (event.kind === "sample") samples.push(event.sample);
      else if (event.kind === "error")
        onError?.({ taskId: plan.taskId, step: event.step, error: event.error });
    }
  return samples;
}

/**
 * Schema-driven exploration with no model: arguments generated from each tool's schema, with strings taken
 * from the current state where a parameter plausibly names an existing entity, so guards and
 * state-changing branches are reached. Actions are steps 1..steps (step 0 is the setup state). In memory:
 * large collections go to a file with `collectSamples`.
 */
export async function exploreWithSchemas(
  environment: Environment,
  options: PlanOptions,
): Promise<{ samples: EnvSimSample[]; coverage: OutcomeCoverage }> {
  const samples = await gather(planTrajectories(environment, { kind: "explore" }, options));
  const tally = new CoverageTally(environment);
  for (const sample of samples) tally.add(sample);
  return { samples, coverage: tally.result() };
}

/** Replays given call lists (one trajectory each) from the initial state; each step seeded as in exploration. */
export async function replayCalls(
  environment: Environment,
  trajectories: Array<Array<{ name: string; arguments?: unknown }>>,
  seed: string | number = 0,
  reference?: string,
): Promise<EnvSimSample[]> {
  return gather(
    planTrajectories(
      environment,
      { kind: "replay", calls: trajectories },
      { trajectories: trajectories.length, steps: 0, seed, ...(reference ? { reference } : {}) },
    ),
  );
}

/**
 * The paper's way: an agent model explores the environment for up to `steps` calls per trajectory, with
 * native tool calling (or emulated, for local models), seeing each call's result. A failed model call
 * ends its trajectory (given to `onError`) and the others go on.
 */
export async function exploreWithAgent(
  environment: Environment,
  models: Models,
  options: PlanOptions & {
    role?: string;
    model?: string;
    onError?: (error: { taskId: string; step: number; error: string }) => void;
  },
): Promise<EnvSimSample[]> {
  const source: CollectSource = {
    kind: "agent",
    models,
    ...(options.model ? { model: options.model } : {}),
    ...(options.role ? { role: options.role } : {}),
  };
  return gather(planTrajectories(environment, source, options), options.onError);
}

/** An environment to collect from, with the reference it was named by. */
export interface CollectTarget {
  reference: string;
  environment: Environment;
}

export interface CollectOptions {
  /** The sample file (v2, see sample-store.ts). */
  out: string;
  source: CollectSource;
  trajectories: number;
  steps: number;
  seed: string;
  /** Continue the collection in `out`: finished trajectories are skipped; unfinished ones and ones that ended with an agent error are collected again. */
  resume?: boolean;
  /** A delta chain is cut by a full state after this many deltas (see `SampleWriter`). */
  fullStateEvery?: number;
  /** Called after each trajectory (written out by then), and for each one a resume skips. */
  onTrajectory?: (done: {
    environment: string;
    taskId: string;
    samples: number;
    error?: string;
    skipped?: boolean;
  }) => void;
  /** Called after each environment's trajectories, with their outcome coverage. */
  onEnvironment?: (done: EnvironmentSummary) => void;
}

export interface EnvironmentSummary {
  environment: string;
  reference: string;
  samples: number;
  trajectories: number;
  /** Trajectories already in a resumed file. */
  skipped: number;
  errors: Array<{ taskId: string; step: number; error: string }>;
  coverage: OutcomeCoverage;
}

export interface CollectSummary {
  samples: number;
  trajectories: number;
  skipped: number;
  errors: number;
  /** Bytes this run wrote. */
  bytes: number;
  environments: EnvironmentSummary[];
  resumed?: ResumeInfo;
}

/** How many trajectories `collectSamples` will run (for progress), without the ones a resume skips. */
export function plannedTrajectories(
  targets: CollectTarget[],
  options: Pick<CollectOptions, "source" | "trajectories">,
): number {
  return (
    targets.length * (options.source.kind === "replay" ? options.source.calls.length : options.trajectories)
  );
}

/**
 * Collects trajectories from environments into a sample file, streaming: each sample is written as it is
 * made (states as deltas, see sample-store.ts) and nothing accumulates, so memory stays bounded however
 * many transitions are collected. A failed agent-model call is recorded in the file and the run goes on.
 */
export async function collectSamples(
  targets: CollectTarget[],
  options: CollectOptions,
): Promise<CollectSummary> {
  const collection: CollectionSettings = {
    source: options.source.kind,
    seed: options.seed,
    steps: options.steps,
    ...(options.source.kind === "agent" && options.source.model ? { model: options.source.model } : {}),
  };
  const writerOptions = {
    collection,
    ...(options.fullStateEvery !== undefined ? { fullStateEvery: options.fullStateEvery } : {}),
  };
  let writer: SampleWriter;
  let resumed: ResumeInfo | undefined;
  if (options.resume) ({ writer, resumed } = SampleWriter.resume(options.out, writerOptions));
  else writer = SampleWriter.create(options.out, writerOptions);
  const summary: CollectSummary = {
    samples: 0,
    trajectories: 0,
    skipped: 0,
    errors: 0,
    bytes: 0,
    environments: [],
    ...(resumed ? { resumed } : {}),
  };
  try {
    for (const { reference, environment } of targets) {
      const record = writer.environment({
        name: environment.name,
        reference,
        envKind: environment.source.kind,
        code: environment.source.code ?? "",
      });
      const tally = new CoverageTally(environment);
      const done: EnvironmentSummary = {
        environment: environment.name,
        reference,
        samples: 0,
        trajectories: 0,
        skipped: 0,
        errors: [],
        coverage: tally.result(),
      };
      const plans = planTrajectories(environment, options.source, {
        trajectories: options.trajectories,
        steps: options.steps,
        seed: options.seed,
        reference,
      });
      for (const plan of plans) {
        if (resumed?.finished.has(trajectoryKey(reference, plan.taskId))) {
          done.skipped++;
          options.onTrajectory?.({
            environment: environment.name,
            taskId: plan.taskId,
            samples: 0,
            skipped: true,
          });
          continue;
        }
        let handle: ReturnType<SampleWriter["beginTrajectory"]> | undefined;
        let error: string | undefined;
        for await (const event of plan.run()) {
          if (event.kind === "start") {
            handle = writer.beginTrajectory(record, {
              taskId: plan.taskId,
              ...(plan.task !== undefined ? { task: plan.task } : {}),
              seed: plan.seed,
              state: event.state,
            });
            continue;
          }
          if (!handle) throw new TerrariumError("INTERNAL", "a trajectory produced a step before its start");
          if (event.kind === "sample") {
            writer.sample(handle, event.sample);
            tally.add(event.sample);
          } else {
            writer.error(handle, event.step, event.error);
            error = event.error;
            done.errors.push({ taskId: plan.taskId, step: event.step, error: event.error });
          }
        }
        if (!handle) continue;
        writer.endTrajectory(handle);
        done.samples += handle.samples;
        done.trajectories++;
        options.onTrajectory?.({
          environment: environment.name,
          taskId: plan.taskId,
          samples: handle.samples,
          ...(error !== undefined ? { error } : {}),
        });
      }
      done.coverage = tally.result();
      summary.samples += done.samples;
      summary.trajectories += done.trajectories;
      summary.skipped += done.skipped;
      summary.errors += done.errors.length;
      summary.environments.push(done);
      options.onEnvironment?.(done);
    }
    summary.bytes = writer.size();
  } finally {
    writer.close();
  }
  return summary;
}

function errorMessage(observation: unknown): string {
  if (observation && typeof observation === "object" && "error" in observation) {
    const error = (observation as { error: unknown }).error;
    const text = typeof error === "string" ? error : JSON.stringify(error);
    // Keep the rule, not the instance: numbers and quoted names vary from call to call.
    return text
      .replace(/\d+(\.\d+)?/g, "N")
      .replace(/"[^"]*"|'[^']*'/g, "…")
      .slice(0, 120);
  }
  return "failed";
}

/** A schema-valid call whose string values come from the state when the state has candidates. */
export function randomValidCall(
  tools: Tool[],
  state: unknown,
  random: Random,
): { name: string; arguments: Record<string, unknown> } {
  const tool = random.pick(tools);
  const index = indexState(state);
  return {
    name: tool.name,
    arguments: valueFor(tool.inputSchema, index, random, 0, "") as Record<string, unknown>,
  };
}

/** What the state offers as argument values: strings by field name, and record keys by collection name. */
interface StateIndex {
  byField: Map<string, string[]>;
  byCollection: Map<string, string[]>;
  all: string[];
}

function indexState(state: unknown): StateIndex {
  const index: StateIndex = { byField: new Map(), byCollection: new Map(), all: [] };
  const add = (map: Map<string, string[]>, key: string, value: string) => {
    const list = map.get(key) ?? [];
    if (!list.includes(value)) list.push(value);
    map.set(key, list);
  };
  const walk = (value: unknown, key: string, depth: number) => {
    if (depth > 8 || index.all.length > 3000) return;
    if (typeof value === "string" && value.length <= 80) {
      add(index.byField, key.toLowerCase(), value);
      index.all.push(value);
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, key, depth + 1);
    } else if (value && typeof value === "object") {
      for (const [child, member] of Object.entries(value)) {
        // The keys of a map of records (accounts: {ACC-1: {...}}) are the ids of that collection.
        if (member && typeof member === "object" && !Array.isArray(member))
          add(index.byCollection, key.toLowerCase(), child);
        walk(member, child, depth + 1);
      }
    }
  };
  walk(state, "", 0);
  return index;
}

/** Values a parameter plausibly takes: the same field elsewhere in the state, or the keys of its collection. */
function candidatesFor(name: string, index: StateIndex): string[] {
  const lower = name.toLowerCase();
  const sameField = index.byField.get(lower);
  if (sameField?.length) return sameField;
  const stem = lower
    .replace(/(_id|id|_ids|ids|_name|_key|_code)$/, "")
    .replace(/^(from|to|source|target|new|old)_/, "");
  if (stem) {
    for (const [collection, keys] of index.byCollection) {
      if (
        collection === stem ||
        collection === `${stem}s` ||
        collection === `${stem}es` ||
        (stem.length > 3 && collection.includes(stem))
      )
        return keys;
    }
  }
  return index.all;
}

function valueFor(
  schema: Record<string, unknown>,
  index: StateIndex,
  random: Random,
  depth: number,
  name: string,
): unknown {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return random.pick(schema.enum);
  if ("const" in schema) return schema.const;
  const type = Array.isArray(schema.type)
    ? random.pick((schema.type as string[]).filter((t) => t !== "null"))
    : schema.type;
  switch (type) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(properties)) {
        if (!required.has(name) && random.next() < 0.5) continue;
        if (depth < 4) out[name] = valueFor(property, index, random, depth + 1, name);
      }
      return out;
    }
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      const max = typeof schema.maxItems === "number" ? Math.min(schema.maxItems, min + 3) : min + 2;
      return Array.from({ length: random.int(min, max) }, () =>
        valueFor((schema.items ?? {}) as Record<string, unknown>, index, random, depth + 1, name),
      );
    }
    case "integer": {
      const min =
        typeof schema.minimum === "number"
          ? schema.minimum
          : typeof schema.exclusiveMinimum === "number"
            ? schema.exclusiveMinimum + 1
            : 0;
      const max = typeof schema.maximum === "number" ? schema.maximum : min + 10;
      return random.int(Math.ceil(min), Math.floor(Math.max(min, max)));
    }
    case "number": {
      const min =
        typeof schema.minimum === "number"
          ? schema.minimum
          : typeof schema.exclusiveMinimum === "number"
            ? schema.exclusiveMinimum + 0.01
            : 0.5;
      const max = typeof schema.maximum === "number" ? schema.maximum : min + 200;
      return Math.round((min + random.next() * (max - min)) * 100) / 100;
    }
    case "boolean":
      return random.next() < 0.5;
    default: {
      if (schema.format === "date") return `2025-0${random.int(1, 9)}-${String(random.int(10, 28))}`;
      if (schema.format === "date-time")
        return `2025-0${random.int(1, 9)}-${String(random.int(10, 28))}T1${random.int(0, 9)}:00:00Z`;
      // Mostly values the state already holds for this kind of parameter, sometimes a fresh word.
      const candidates = candidatesFor(name, index);
      const fromState =
        candidates.length > 0 && random.next() < 0.85 ? random.pick(candidates) : `new-${random.int(1, 999)}`;
      return typeof schema.maxLength === "number" ? fromState.slice(0, schema.maxLength) : fromState;
    }
  }
}
