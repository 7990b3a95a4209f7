import type { Tool } from "../../catalog/tool.js";
import { canonicalJson } from "../../core/canonical-json.js";
import { synthesize } from "../synthesize.js";
import type { SimulationContext, SimulationResult, Simulator } from "../types.js";

/**
 * The offline simulator: a schema-valid observation synthesized deterministically from the session's
 * seed, with identifiers derived from the tool and its arguments. It knows nothing of the tool's meaning,
 * so it never changes the state.
 */
export class SchemaSimulator implements Simulator {
  readonly name = "schema" as const;
  readonly readsHistory = false;

  handles(_tool: Tool): boolean {
    return true;
  }

  async simulate(context: SimulationContext): Promise<SimulationResult> {
    const observation =
      context.tool.outputSchema === undefined
        ? { ok: true }
        : synthesize(context.tool.outputSchema, {
            random: context.random,
            idSeed: `${context.tool.name}|${canonicalJson(context.arguments)}`,
            now: context.now,
          });
    return { status: "ok", observation, changes: [] };
  }
}
