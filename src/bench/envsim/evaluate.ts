import type { Tool } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import { parsePointer } from "../../core/json-pointer.js";
import { createRandom } from "../../core/random.js";
import { loadEnvironment } from "../../envs/load.js";
import type { Environment } from "../../envs/types.js";
import type { Models } from "../../models/hub.js";
import { LlmSimulator } from "../../sim/simulators/llm.js";
import { SchemaSimulator } from "../../sim/simulators/schema.js";
import type { Simulator } from "../../sim/types.js";
import {
  historyFromSamples,
  historySystemPrompt,
  historyUserPrompt,
  mdpSystemPrompt,
  mdpUserPrompt,
  PREDICTION_SCHEMA,
  type SimulationOutput,
} from "./prompts/simulation.js";
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

export interface EvaluateOptions {
  models: Models;
  /** Every sample of the benchmark, for the history prompt (earlier steps of the same trajectory). */
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
  const todo = samples.filter((sample) => !options.done?.has(sample.id));
  const predictions: EnvSimPrediction[] = [];
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const sample = todo[next++] as EnvSimSample;
      let prediction: EnvSimPrediction;
      try {
        prediction = await predict(sample, simulator, options);
      } catch (error) {
        prediction = { sampleId: sample.id, observation: "", changes: [], error: (error as Error).message };
      }
      predictions.push(prediction);
      await options.onPrediction?.(prediction);
      options.onProgress?.(predictions.length, todo.length);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, worker));
  return predictions;
}

const environments = new Map<string, Promise<Environment>>();

async function predict(
  sample: EnvSimSample,
  simulator: EvalSimulator,
  options: EvaluateOptions,
): Promise<EnvSimPrediction> {
  if (simulator.kind === "code") {
    // The environment itself, rebuilt from the sample's before-state with the seed it ran under.
    let environment = environments.get(sample.envId);
    if (!environment) {
      environment = loadEnvironment(sample.envId);
      environments.set(sample.envId, environment);
    }
    const instance = await (await environment).create({
      state: sample.before,
      ...(sample.seed !== undefined ? { seed: sample.seed } : {}),
    });
    try {
      const transition = await instance.step(sample.call);
      const observation =
        typeof transition.observation === "string"
          ? transition.observation
          : JSON.stringify(transition.observation);
      const changes = transition.envChanges.map(({ path, type, after }) => ({
        path,
        type,
        ...(type === "removed" ? {} : { after }),
      }));
      return { sampleId: sample.id, observation, changes };
    } finally {
      await instance.close();
    }
  }
  if (simulator.kind === "model") {
    const messages =
      simulator.prompt === "mdp"
        ? [
            { role: "system" as const, content: mdpSystemPrompt() },
            { role: "user" as const, content: mdpUserPrompt(sample) },
          ]
        : [
            { role: "system" as const, content: historySystemPrompt() },
            {
              role: "user" as const,
              content: historyUserPrompt(sample, historyFromSamples(options.context ?? [], sample)),
            },
          ];
    const result = await options.models.generateObject<SimulationOutput>({
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
    simulator.simulator === "schema" ? new SchemaSimulator() : new LlmSimulator(options.models);
  const tool: Tool = {
    name: sample.call.name,
    description: "",
    inputSchema: { type: "object" },
    effect: "unknown",
    effectSource: "inferred",
    origin: { format: "environment" },
  };
  const result = await engineSimulator.simulate({
    sessionId: sample.id,
    tool,
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
      path: parsePointer(change.path).join("."),
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
