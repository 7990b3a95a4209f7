import { TerrariumError } from "../../core/errors.js";
import { buildEngine } from "../../sim/build-engine.js";
import type { Engine } from "../../sim/engine.js";
import { HttpTarget, TerrariumServerClient } from "./http.js";
import { loadHttpConfig } from "./http-config.js";
import { loadModuleAgent, ModuleTarget } from "./module.js";
import { OpenAiCompatibleTarget } from "./openai-compatible.js";
import { PlannerTarget } from "./planner.js";
import { DEFAULT_MAX_TOOL_STEPS, DEFAULT_TIMEOUT_MS, resolveSources } from "./shared.js";
import { parseAgentSpec } from "./spec.js";
import type { AgentTarget, CreateAgentTargetOptions } from "./types.js";

/**
 * The agent under test from its `--agent` spec. Everything that can be wrong with the input (the spec,
 * missing --agent-tools, the http config, the module, an unknown model provider) is refused here, before
 * any model is called.
 */
export async function createAgentTarget(
  spec: string,
  options: CreateAgentTargetOptions,
): Promise<AgentTarget> {
  const parsed = parseAgentSpec(spec);
  const timeoutMs = positiveInteger(options.timeoutMs, DEFAULT_TIMEOUT_MS, "timeoutMs");
  const maxToolSteps = positiveInteger(options.maxToolSteps, DEFAULT_MAX_TOOL_STEPS, "maxToolSteps");
  const sources =
    options.agentTools && options.agentTools.length > 0
      ? resolveSources(options.agentTools, options.cwd)
      : undefined;
  switch (parsed.kind) {
    case "planner": {
      if (!sources)
        throw new TerrariumError(
          "INVALID_INPUT",
          `--agent "${spec}" needs --agent-tools: the planner acts on tools terrarium runs (an environment such as tau2-retail, or tool definition files)`,
        );
      // Resolving the backend checks the provider and its key without calling the model.
      try {
        await options.models.backend(parsed.model);
      } catch (error) {
        throw located(error, `--agent "${spec}"`);
      }
      const engine = await engineFor(sources, options);
      return new PlannerTarget(spec, parsed.model, {
        engine,
        models: options.models,
        maxToolSteps,
        timeoutMs,
      });
    }
    case "openai-compatible": {
      const engine = sources ? await engineFor(sources, options) : undefined;
      return new OpenAiCompatibleTarget(spec, {
        baseURL: parsed.baseURL,
        model: parsed.model,
        ...(engine ? { engine } : {}),
        maxToolSteps,
        timeoutMs,
      });
    }
    case "http": {
      let config: ReturnType<typeof loadHttpConfig>;
      try {
        config = loadHttpConfig(options.httpConfig, options.cwd);
      } catch (error) {
        throw located(error, "--http-config");
      }
      const requestTimeout = config.timeoutMs ?? timeoutMs;
      let tools: string[] = [];
      if (sources) tools = await toolNamesOf(sources, options);
      else if (config.terrariumServer) {
        try {
          tools = await new TerrariumServerClient(config.terrariumServer, {
            config,
            timeoutMs: requestTimeout,
          }).toolNames();
        } catch (error) {
          throw new TerrariumError(
            "INVALID_INPUT",
            `--http-config terrariumServer ${config.terrariumServer} cannot be used: ${(error as Error).message}`,
            { cause: error },
          );
        }
      }
      return new HttpTarget(spec, { url: parsed.url, config, tools, timeoutMs: requestTimeout });
    }
    case "module": {
      const agent = await loadModuleAgent(parsed.path, parsed.exportName, options.cwd);
      const tools = sources ? await toolNamesOf(sources, options) : [];
      return new ModuleTarget(spec, agent, tools);
    }
  }
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1)
    throw new TerrariumError("INVALID_INPUT", `${name} must be a positive whole number (got ${value})`);
  return value;
}

/** The engine that runs the agent's tools: an environment's code, or files simulated as `serve` does. */
async function engineFor(sources: string[], options: CreateAgentTargetOptions): Promise<Engine> {
  try {
    const built = await buildEngine({
      sources,
      models: options.models,
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
    });
    return built.engine;
  } catch (error) {
    throw located(error, "--agent-tools");
  }
}

async function toolNamesOf(sources: string[], options: CreateAgentTargetOptions): Promise<string[]> {
  const engine = await engineFor(sources, options);
  try {
    return engine.catalog.tools.map((tool) => tool.name);
  } finally {
    await engine.close();
  }
}

/** The error with the option it came from in front of its message (its code and location kept). */
function located(error: unknown, option: string): TerrariumError {
  if (!(error instanceof TerrariumError))
    return new TerrariumError("INVALID_INPUT", `${option}: ${(error as Error)?.message ?? String(error)}`, {
      cause: error,
    });
  return new TerrariumError(error.code, `${option}: ${error.message}`, {
    where: error.where,
    ...(error.details ? { details: error.details } : {}),
    cause: error,
  });
}
