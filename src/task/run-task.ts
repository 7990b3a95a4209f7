import { Catalog } from "../catalog/catalog.js";
import type { Models } from "../models/hub.js";
import { Engine } from "../sim/engine.js";
import { LlmSimulator } from "../sim/simulators/llm.js";
import { type GatsResult, gats } from "./gats.js";

export interface TaskLine {
  id: string | number;
  tools: unknown;
  turns: string[];
  state?: unknown;
}

/**
 * Runs GATS on one task whose tools have no implementation (a dataset line): the tools are simulated by
 * the llm simulator when a model serves the simulator role, else by schema synthesis.
 */
export async function runTaskLine(
  line: TaskLine,
  models: Models,
  options: { maxRetries?: number; plannerModel?: string; seed?: string } = {},
): Promise<GatsResult> {
  const catalog = Catalog.fromDocument(line.tools);
  const hasSimulatorModel = Boolean(models.config.roles.simulator ?? models.config.roles.default);
  const engine = new Engine({
    catalog,
    simulators: hasSimulatorModel ? [new LlmSimulator(models)] : [],
    seed: options.seed ?? String(line.id),
  });
  const start = await engine.createSession({ state: line.state ?? {} });
  try {
    return await gats({
      engine,
      models,
      startSession: start.id,
      turns: line.turns,
      ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
      ...(options.plannerModel ? { planner: { model: options.plannerModel } } : {}),
    });
  } finally {
    await engine.close();
  }
}
