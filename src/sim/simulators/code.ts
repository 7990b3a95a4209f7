import type { Tool } from "../../catalog/tool.js";
import type { Environment, EnvironmentInstance } from "../../envs/types.js";
import type { SimulationContext, SimulationResult, Simulator } from "../types.js";

/**
 * The exact simulator: runs the tool's real implementation in an executable environment. One live
 * instance per session, rebuilt from the stored state whenever the session's state moved without it
 * (a reset, a fork, a state set from outside, a restart).
 */
export class CodeSimulator implements Simulator {
  readonly name = "code" as const;
  private readonly instances = new Map<string, { instance: EnvironmentInstance; snapshotIndex: number }>();
  private readonly toolNames: Set<string>;

  constructor(
    readonly environment: Environment,
    private readonly seed?: string,
  ) {
    this.toolNames = new Set(environment.tools.map((tool) => tool.name));
  }

  handles(tool: Tool): boolean {
    return this.toolNames.has(tool.name);
  }

  async simulate(context: SimulationContext): Promise<SimulationResult> {
    const instance = await this.instanceFor(context);
    const transition = await instance.step({ name: context.tool.name, arguments: context.arguments });
    // The instance now holds the state of the snapshot this step will produce (if it changes anything).
    this.instances.set(context.sessionId, {
      instance,
      snapshotIndex: context.snapshotIndex + (transition.changes.length > 0 ? 1 : 0),
    });
    return {
      status: transition.success ? "ok" : "tool_error",
      observation: transition.observation,
      changes: transition.changes,
    };
  }

  forget(sessionId: string): void {
    const entry = this.instances.get(sessionId);
    this.instances.delete(sessionId);
    void entry?.instance.close();
  }

  async close(): Promise<void> {
    for (const sessionId of [...this.instances.keys()]) this.forget(sessionId);
    await this.environment.close?.();
  }

  private async instanceFor(context: SimulationContext): Promise<EnvironmentInstance> {
    const cached = this.instances.get(context.sessionId);
    if (cached && cached.snapshotIndex === context.snapshotIndex) return cached.instance;
    if (cached) void cached.instance.close();
    return this.environment.create({
      state: context.state,
      seed: `${this.seed ?? "code"}:${context.sessionId}:${context.snapshotIndex}`,
    });
  }
}
