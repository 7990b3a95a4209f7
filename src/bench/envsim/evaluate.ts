import { createReadStream, existsSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Tool } from "../../catalog/tool.js";
import { errorKindOf } from "../../core/error-tally.js";
import { TerrariumError } from "../../core/errors.js";
import { formatEnvSimPath } from "../../core/json-diff.js";
import { parsePointer } from "../../core/json-pointer.js";
import { createRandom } from "../../core/random.js";
import { loadEnvironment } from "../../envs/load.js";
import type { Environment } from "../../envs/types.js";
import type { Models } from "../../models/hub.js";
import { LlmSimulator } from "../../sim/simulators/llm.js";
import { SchemaSimulator } from "../../sim/simulators/schema.js";
import type { Simulator } from "../../sim/types.js";
import { CodePredictor } from "./code-replay.js";
import {
  historySystemPrompt,
  historyUserPrompt,
  mdpSystemPrompt,
  mdpUserPrompt,
  PREDICTION_SCHEMA,
  type SimulationHistory,
  type SimulationOutput,
  type ToolInfo,
} from "./prompts/simulation.js";
import { environmentOf } from "./sample-store.js";
import type { EnvSimPrediction, EnvSimSample } from "./types.js";

/** Who predicts: a model with one of the two prompts, one of terrarium's simulators, or the code itself. */
export type EvalSimulator =
  | { kind: "model"; model: string; prompt: "mdp" | "history" }
  | { kind: "terrarium"; simulator: "llm" | "schema"; model?: string }
  | { kind: "code" };

export function describeSimulator(simulator: EvalSimulator): string {
  if (simulator.kind === "code") return "code (the environment itself)";
  return simulator.kind === "model"
    ? `${simulator.model} (${simulator.prompt} prompt)`
    : `terrarium ${simulator.simulator}${simulator.model ? ` (${simulator.model})` : ""}`;
}

/**
 * Reads a simulator spec: `code`, `schema`, `llm:<provider:model>` (terrarium's llm simulator), or a
 * model name `<provider:model>` (the paper's prompt) with `#history` for the history-only prompt.
 */
export function parseSimulatorSpec(spec: string): EvalSimulator {
  if (spec === "code") return { kind: "code" };
  if (spec === "schema") return { kind: "terrarium", simulator: "schema" };
  if (spec.startsWith("llm:")) return { kind: "terrarium", simulator: "llm", model: spec.slice(4) };
  const [model, prompt] = spec.split("#");
  if (!model?.includes(":")) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `simulator "${spec}" is not code, schema, llm:<model> or a model name provider:model[#history]`,
    );
  }
  if (prompt !== undefined && prompt !== "history" && prompt !== "mdp") {
    throw new TerrariumError("INVALID_INPUT", `unknown prompt "#${prompt}" (mdp or history)`);
  }
  return { kind: "model", model, prompt: prompt === "history" ? "history" : "mdp" };
}

// ---------------------------------------------------------------------------------------------------
// Episodes: what the history prompt shows

/** One earlier step of an episode, as the history prompt shows it. */
export interface EpisodeStep {
  step: number;
  call: { name: string; arguments: Record<string, unknown> };
  observationText: string;
}

/** How a sample is tied to its environment: the reference it was collected from, else its name. */
function environmentKey(sample: Pick<EnvSimSample, "envId" | "environment">): string {
  return environmentOf(sample);
}

function episodeKey(environment: string, taskId: string): string {
  return `${environment}\u0000${taskId}`;
}

/** How many samples get their whole episode, part of it, or none (see `EpisodeIndex.coverage`). */
export interface EpisodeCoverage {
  samples: number;
  /** Every earlier step of the episode is there (the episode's first action counts: it has none). */
  complete: number;
  /** Some earlier steps are there, with gaps. */
  partial: number;
  /** The episode is not in the index at all, or none of its earlier steps is. */
  missing: number;
}

/**
 * The steps of every episode (one environment, one task) of a collection, kept without their states, so
 * the history prompt sees the sample's own episode up to its step. A benchmark holds only the sampled
 * steps of each episode, so the index is built from the transitions the benchmark was built from.
 */
export class EpisodeIndex {
  private readonly episodes = new Map<string, Map<number, EpisodeStep>>();

  /**
   * @param wanted only episodes of these samples are kept (all when absent), so a large collection
   *   costs memory for the benchmark's episodes only.
   */
  constructor(private readonly wanted?: ReadonlySet<string>) {}

  /** The index of these samples' episodes (a list that holds whole episodes, such as collected transitions). */
  static fromSamples(samples: Iterable<EnvSimSample>): EpisodeIndex {
    const index = new EpisodeIndex();
    for (const sample of samples) index.add(environmentKey(sample), sample.envId, sample);
    return index;
  }

  /** The keys `wanted` should hold for these samples. */
  static keysOf(samples: Iterable<EnvSimSample>): Set<string> {
    const keys = new Set<string>();
    for (const sample of samples) {
      keys.add(episodeKey(environmentKey(sample), sample.taskId));
      keys.add(episodeKey(sample.envId, sample.taskId));
    }
    return keys;
  }

  /** Adds one step; steps without an action (EnvSimBench's step 0, the setup state) are not steps here. */
  add(
    reference: string,
    name: string,
    step: { taskId: string; step: number; call?: unknown; observationText?: unknown; observation?: unknown },
  ): void {
    const call = step.call as { name?: unknown; arguments?: unknown } | undefined;
    if (!call || typeof call.name !== "string" || typeof step.step !== "number") return;
    const text =
      typeof step.observationText === "string"
        ? step.observationText
        : typeof step.observation === "string"
          ? step.observation
          : JSON.stringify(step.observation ?? null);
    const entry: EpisodeStep = {
      step: step.step,
      call: { name: call.name, arguments: (call.arguments ?? {}) as Record<string, unknown> },
      observationText: text,
    };
    // Kept under the reference and under the name: samples from before references were kept have names only.
    for (const key of new Set([episodeKey(reference, step.taskId), episodeKey(name, step.taskId)])) {
      if (this.wanted && !this.wanted.has(key)) continue;
      let episode = this.episodes.get(key);
      if (!episode) {
        episode = new Map();
        this.episodes.set(key, episode);
      }
      episode.set(step.step, entry);
    }
  }

  private episodeOf(sample: Pick<EnvSimSample, "envId" | "taskId">): Map<number, EpisodeStep> | undefined {
    return (
      this.episodes.get(episodeKey(environmentKey(sample), sample.taskId)) ??
      this.episodes.get(episodeKey(sample.envId, sample.taskId))
    );
  }

  /** The steps of the sample's episode before it, oldest first. */
  history(sample: Pick<EnvSimSample, "envId" | "taskId" | "step">): EpisodeStep[] {
    const episode = this.episodeOf(sample);
    if (!episode) return [];
    return [...episode.values()].filter((s) => s.step < sample.step).sort((a, b) => a.step - b.step);
  }

  /** Whether each sample gets its whole episode before it: no gap between the episode's first action and it. */
  coverage(samples: Iterable<Pick<EnvSimSample, "envId" | "taskId" | "step">>): EpisodeCoverage {
    const result: EpisodeCoverage = { samples: 0, complete: 0, partial: 0, missing: 0 };
    for (const sample of samples) {
      result.samples++;
      const episode = this.episodeOf(sample);
      if (!episode) {
        result.missing++;
        continue;
      }
      const first = Math.min(...episode.keys());
      const earlier = this.history(sample);
      const expected = sample.step - first;
      if (expected <= 0 || earlier.length === expected) result.complete++;
      else if (earlier.length === 0) result.missing++;
      else result.partial++;
    }
    return result;
  }
}

/**
 * Reads the episodes of a collection file without its states: v1 sample lines (states inline) and v2
 * sample files (`sample-store.ts`: environment, trajectory and sample records; states are skipped, not
 * rebuilt). `wanted` (see `EpisodeIndex.keysOf`) keeps only the episodes a benchmark needs.
 */
export async function readEpisodes(file: string, wanted?: ReadonlySet<string>): Promise<EpisodeIndex> {
  if (!existsSync(file))
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the transitions (no such file)", {
      where: { file },
    });
  const index = new EpisodeIndex(wanted);
  const environments = new Map<string, { name: string; reference: string }>();
  const trajectories = new Map<string, { reference: string; name: string; taskId: string }>();
  const lines = createInterface({
    input: createReadStream(file, "utf8"),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let number = 0;
  for await (const line of lines) {
    number++;
    if (line.trim() === "") continue;
    // State records are the bulk of a v2 file and carry nothing the history needs.
    if (line.startsWith('{"kind":"state"')) continue;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch (error) {
      throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
        where: { file, line: number },
      });
    }
    if (record === null || typeof record !== "object") continue;
    switch (record.kind) {
      case undefined: {
        const sample = record as unknown as EnvSimSample;
        if (typeof sample.envId === "string" && typeof sample.taskId === "string")
          index.add(environmentKey(sample), sample.envId, sample);
        break;
      }
      case "environment":
        environments.set(String(record.id), {
          name: String(record.name),
          reference: String(record.reference ?? record.name),
        });
        break;
      case "trajectory": {
        const environment = environments.get(String(record.environment));
        if (environment)
          trajectories.set(String(record.id), { ...environment, taskId: String(record.taskId) });
        break;
      }
      case "sample": {
        const trajectory = trajectories.get(String(record.trajectory));
        if (trajectory)
          index.add(trajectory.reference, trajectory.name, {
            taskId: trajectory.taskId,
            step: record.step as number,
            call: record.call,
            observationText: record.observationText,
            observation: record.observation,
          });
        break;
      }
      default:
        break;
    }
  }
  return index;
}

// ---------------------------------------------------------------------------------------------------
// Benchmark files: refuse what is not one

/** Required fields of a benchmark sample, checked on each line before any prediction is made. */
const SAMPLE_FIELDS: Array<[keyof EnvSimSample, string]> = [
  ["id", "string"],
  ["envId", "string"],
  ["taskId", "string"],
  ["step", "number"],
  ["call", "object"],
  ["observationText", "string"],
  ["success", "boolean"],
  ["delta", "number"],
  ["changes", "object"],
];

/**
 * Checks that a parsed line is a benchmark sample and says what the file is when it is not: predictions
 * or a summary written by `envsim eval`, SFT training data, a published EnvSimBench record (to import
 * first), or something else missing a sample's fields.
 */
export function checkBenchmarkSample(
  record: unknown,
  where: { file?: string; line?: number } = {},
): EnvSimSample {
  const fail = (message: string) => new TerrariumError("INVALID_INPUT", message, { where });
  if (record === null || typeof record !== "object" || Array.isArray(record))
    throw fail("not a benchmark: a line is not a JSON object (expected one EnvSimBench sample per line)");
  const r = record as Record<string, unknown>;
  if ("sampleId" in r && !("call" in r))
    throw fail(
      "this is a predictions file written by envsim eval, not a benchmark: pass the benchmark (the file envsim build wrote) to --bench",
    );
  if (r.kind === "envsim-report")
    throw fail(
      "this is an envsim report (summary.json), not a benchmark: pass the file envsim build wrote to --bench",
    );
  if (Array.isArray(r.messages) || Array.isArray(r.conversations) || ("instruction" in r && "output" in r))
    throw fail(
      "this is SFT training data (chat, ShareGPT or Alpaca records) written by envsim sft, not a benchmark: pass the file envsim build wrote to --bench",
    );
  if ("task_info" in r || "step_detail" in r)
    throw fail(
      "this is a published EnvSimBench record: convert the file with `terrarium envsim import` first, then pass the result to --bench",
    );
  if (typeof r.kind === "string")
    throw fail(
      `this is a record of kind "${r.kind}" from a collection file: build a benchmark from it with \`terrarium envsim build\` and pass that to --bench`,
    );
  const missing = SAMPLE_FIELDS.filter(([field, type]) => typeof r[field] !== type || r[field] === null).map(
    ([field]) => field,
  );
  if (missing.length > 0)
    throw fail(`not an EnvSimBench sample: ${missing.join(", ")} missing or of the wrong type`);
  if (typeof (r.call as { name?: unknown }).name !== "string")
    throw fail("not an EnvSimBench sample: call.name missing");
  return record as EnvSimSample;
}

// ---------------------------------------------------------------------------------------------------
// Running simulators

export interface EvaluateOptions {
  models: Models;
  /**
   * The episodes the history prompt shows (each sample's earlier steps): build it from the collected
   * transitions with `readEpisodes` or `EpisodeIndex.fromSamples`. Required by the history prompt.
   */
  episodes?: EpisodeIndex;
  /**
   * Samples to find earlier steps in when `episodes` is not given (kept for callers of the first API).
   * A benchmark alone holds only the sampled steps of each episode: pass the whole collection.
   */
  context?: EnvSimSample[];
  concurrency?: number;
  /** Sample ids that already have a prediction (a resumed run skips them). */
  done?: Set<string>;
  /** Called with each prediction as it is made, so a run can be written out as it goes. */
  onPrediction?: (prediction: EnvSimPrediction) => void | Promise<void>;
  onProgress?: (finished: number, total: number) => void;
}

/** Runs a simulator over samples; a failure becomes a prediction with an error (it scores as wrong). */
export async function evaluateSamples(
  samples: EnvSimSample[],
  simulator: EvalSimulator,
  options: EvaluateOptions,
): Promise<EnvSimPrediction[]> {
  const episodes =
    options.episodes ?? (options.context ? EpisodeIndex.fromSamples(options.context) : undefined);
  if (simulator.kind === "model" && simulator.prompt === "history" && !episodes)
    throw new TerrariumError(
      "INVALID_INPUT",
      "the history prompt needs each sample's episode: give the transitions the benchmark was built from (envsim eval --transitions <file>; in code, options.episodes)",
    );
  const todo = samples.filter((sample) => !options.done?.has(sample.id));
  const predictions: EnvSimPrediction[] = [];
  const predictor = new SamplePredictor(simulator, {
    models: options.models,
    ...(episodes ? { episodes } : {}),
  });
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const prediction = await predictor.predict(todo[next++] as EnvSimSample);
      predictions.push(prediction);
      await options.onPrediction?.(prediction);
      options.onProgress?.(predictions.length, todo.length);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, worker));
  } finally {
    await predictor.close();
  }
  return predictions;
}

/**
 * Predicts samples one at a time with one simulator, keeping the environments it loads until closed:
 * what `evaluateSamples` runs concurrently, and what a queue worker runs for its items.
 */
export class SamplePredictor {
  private readonly run: RunContext;

  constructor(simulator: EvalSimulator, options: { models: Models; episodes?: EpisodeIndex }) {
    this.run = {
      simulator,
      models: options.models,
      episodes: options.episodes,
      environments: new EnvironmentCache(),
      code: new CodePredictor(),
    };
  }

  /**
   * The sample's prediction; a failure becomes a prediction with an error (it scores as wrong).
   * `options` overrides the models (a per-item view) and the episodes (the history prompt's) of this call.
   */
  async predict(
    sample: EnvSimSample,
    options: { models?: Models; episodes?: EpisodeIndex } = {},
  ): Promise<EnvSimPrediction> {
    try {
      return await predict(sample, { ...this.run, ...options });
    } catch (error) {
      return {
        sampleId: sample.id,
        observation: "",
        changes: [],
        error: (error as Error).message,
        errorKind: errorKindOf(error, "simulator_error"),
      };
    }
  }

  async close(): Promise<void> {
    await this.run.code.close();
    await this.run.environments.close();
  }
}

interface RunContext {
  simulator: EvalSimulator;
  models: Models;
  episodes: EpisodeIndex | undefined;
  environments: EnvironmentCache;
  /** The code simulator's instances, kept by the trajectory prefix they stand at. */
  code: CodePredictor;
}

/** Environments of one run, loaded once per reference; ones that cannot be loaded are remembered as such. */
class EnvironmentCache {
  private readonly loaded = new Map<string, Promise<Environment>>();

  get(reference: string): Promise<Environment> {
    let environment = this.loaded.get(reference);
    if (!environment) {
      environment = loadEnvironment(reference);
      // Remembered even when it fails: one failed load per run, not one per sample.
      environment.catch(() => {});
      this.loaded.set(reference, environment);
    }
    return environment;
  }

  /** The environment, or undefined when it cannot be loaded (an imported sample names none terrarium has). */
  async tryGet(reference: string): Promise<Environment | undefined> {
    try {
      return await this.get(reference);
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    for (const environment of this.loaded.values()) {
      const loaded = await environment.catch(() => undefined);
      await loaded?.close?.().catch(() => {});
    }
    this.loaded.clear();
  }
}

/** The environment a sample was collected from, loaded again (the `code` simulator and tool information). */
function sampleEnvironment(sample: EnvSimSample, environments: EnvironmentCache): Promise<Environment> {
  return environments.get(environmentKey(sample));
}

/**
 * What is known of the called tool: its description and input schema from the environment when it loads,
 * else the description read off the implementation's source (a Python docstring, a TypeScript tool comment).
 */
export async function toolInfoFor(
  sample: EnvSimSample,
  environment: Environment | undefined,
): Promise<ToolInfo> {
  const tool = environment?.tools.find((t) => t.name === sample.call.name);
  if (tool) {
    const description = tool.description.trim();
    return { ...(description ? { description } : {}), inputSchema: tool.inputSchema };
  }
  const description = describedInSource(sample.envCode, sample.call.name);
  return description ? { description } : {};
}

/** A tool's description from its source: a Python method's docstring, or terrarium's `// tool name (...)` line. */
export function describedInSource(code: string, name: string): string | undefined {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const comment = new RegExp(`^// tool ${escaped} \\([^)]*\\): (.*)$`, "m").exec(code);
  if (comment?.[1]?.trim()) return comment[1].trim();
  const python = new RegExp(
    `^[ \\t]*(?:async[ \\t]+)?def[ \\t]+${escaped}[ \\t]*\\([\\s\\S]*?\\)[^:\\n]*:[ \\t]*\\n[ \\t]*[rRuU]?("""|''')([\\s\\S]*?)\\1`,
    "m",
  ).exec(code);
  const docstring = python?.[2];
  if (!docstring) return undefined;
  // Dedent: the first line as it is, the rest by their common indentation.
  const [first = "", ...rest] = docstring.split("\n");
  const indent = Math.min(
    ...rest
      .filter((line) => line.trim() !== "")
      .map((line) => (/^[ \t]*/.exec(line) as RegExpExecArray)[0].length),
  );
  const body = [
    first.trim(),
    ...rest.map((line) => line.slice(Number.isFinite(indent) ? indent : 0).trimEnd()),
  ];
  return body.join("\n").trim() || undefined;
}

async function predict(sample: EnvSimSample, run: RunContext): Promise<EnvSimPrediction> {
  const { simulator } = run;
  if (simulator.kind === "code") {
    // The environment itself, at the sample's before-state (see CodePredictor), with the seed it ran under.
    return run.code.predict(sample, await sampleEnvironment(sample, run.environments));
  }
  const environment = await run.environments.tryGet(environmentKey(sample));
  const tool = await toolInfoFor(sample, environment);
  if (simulator.kind === "model") {
    const messages =
      simulator.prompt === "mdp"
        ? [
            { role: "system" as const, content: mdpSystemPrompt() },
            { role: "user" as const, content: mdpUserPrompt(sample, tool) },
          ]
        : [
            { role: "system" as const, content: historySystemPrompt() },
            { role: "user" as const, content: historyUserPrompt(sample, historyOf(sample, run, tool)) },
          ];
    const result = await run.models.generateObject<SimulationOutput>({
      model: simulator.model,
      messages,
      schema: PREDICTION_SCHEMA,
      schemaName: "transition_prediction",
      temperature: 0,
      scope: sample.id,
    });
    return { sampleId: sample.id, observation: result.object.observation, changes: result.object.changes };
  }
  // terrarium's own simulators answer with JSON Patch-style changes; EnvSimBench wants dotted paths.
  const engineSimulator: Simulator =
    simulator.simulator === "schema" ? new SchemaSimulator() : new LlmSimulator(run.models);
  const known = environment?.tools.find((t) => t.name === sample.call.name);
  const engineTool: Tool = known ?? {
    name: sample.call.name,
    description: tool.description ?? "",
    inputSchema: { type: "object" },
    effect: "unknown",
    effectSource: "inferred",
    origin: { format: "environment" },
  };
  const result = await engineSimulator.simulate({
    sessionId: sample.id,
    tool: engineTool,
    arguments: sample.call.arguments,
    state: sample.before,
    snapshotIndex: 0,
    history: [],
    random: createRandom(sample.id),
    now: "2025-01-01T00:00:00.000Z",
  });
  return {
    sampleId: sample.id,
    observation:
      typeof result.observation === "string" ? result.observation : JSON.stringify(result.observation),
    changes: result.changes.map((change) => ({
      path: formatEnvSimPath(parsePointer(change.path)),
      type:
        change.op === "add"
          ? ("added" as const)
          : change.op === "remove"
            ? ("removed" as const)
            : ("modified" as const),
      ...(change.op === "remove" ? {} : { after: change.after }),
    })),
  };
}

function historyOf(sample: EnvSimSample, run: RunContext, tool: ToolInfo): SimulationHistory {
  const steps = (run.episodes?.history(sample) ?? []).map(({ call, observationText }) => ({
    call,
    observation: observationText,
  }));
  return {
    ...(tool.description !== undefined ? { toolDescription: tool.description } : {}),
    ...(tool.inputSchema !== undefined ? { inputSchema: tool.inputSchema } : {}),
    steps,
  };
}
