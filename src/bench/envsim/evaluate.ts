import type { Tool } from "../../catalog/tool.js";
import { parsePointer } from "../../core/json-pointer.js";
import { createRandom } from "../../core/random.js";
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

/** Who predicts: a model with one of the two prompts, or one of terrarium's own simulators. */
export type EvalSimulator =
  | { kind: "model"; model: string; prompt: "mdp" | "history" }
  | { kind: "terrarium"; simulator: "llm" | "schema"; model?: string };

export function describeSimulator(simulator: EvalSimulator): string {
  return simulator.kind === "model"
    ? `${simulator.model} (${simulator.prompt} prompt)`
    : `terrarium ${simulator.simulator}${simulator.model ? ` (${simulator.model})` : ""}`;
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

async function predict(
  sample: EnvSimSample,
  simulator: EvalSimulator,
  options: EvaluateOptions,
): Promise<EnvSimPrediction> {
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
