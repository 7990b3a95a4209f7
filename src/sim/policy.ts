import type { Catalog } from "../catalog/catalog.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import type { SimulatorPolicy } from "./engine.js";
import { isSimulatorName, SIMULATOR_NAMES, type Simulator, type SimulatorName } from "./types.js";

/** A policy in one line, as the banner, /health and errors say it. */
export function describePolicy(policy: SimulatorPolicy): string {
  if (typeof policy === "string") return policy;
  const parts: string[] = [];
  for (const key of ["read", "write", "unknown"] as const)
    if (policy[key]) parts.push(`${key}=${policy[key]}`);
  for (const [tool, name] of Object.entries(policy.tools ?? {})) parts.push(`${tool}=${name}`);
  parts.push(`else ${policy.default ?? "auto"}`);
  return parts.join(", ");
}

const POLICY_KEYS = ["read", "write", "unknown", "default", "tools"];

/** A policy given as data (by a library caller) names simulators that exist. */
export function checkPolicyShape(policy: SimulatorPolicy): void {
  const valid = `valid simulators: ${SIMULATOR_NAMES.join(", ")}`;
  if (typeof policy === "string") {
    if (policy !== "auto" && !isSimulatorName(policy))
      throw new TerrariumError("INVALID_INPUT", `unknown simulator "${policy}" (${valid}, or auto)`);
    return;
  }
  for (const [key, value] of Object.entries(policy)) {
    if (!POLICY_KEYS.includes(key))
      throw new TerrariumError(
        "INVALID_INPUT",
        `the policy has an unknown key "${key}" (valid keys: ${POLICY_KEYS.join(", ")})`,
      );
    const entries = key === "tools" ? Object.entries((value ?? {}) as object) : [[key, value]];
    for (const [name, simulator] of entries)
      if (!isSimulatorName(simulator))
        throw new TerrariumError("INVALID_INPUT", `the policy sends ${name} to "${simulator}" (${valid})`);
  }
}

export function usesSimulator(policy: SimulatorPolicy, name: SimulatorName): boolean {
  if (typeof policy === "string") return policy === name;
  return (
    [policy.read, policy.write, policy.unknown, policy.default].includes(name) ||
    Object.values(policy.tools ?? {}).includes(name)
  );
}

/** The simulator the policy names for a tool (as `Engine.simulatorFor` reads it), or auto. */
function wantedSimulator(policy: SimulatorPolicy, tool: Tool): SimulatorName | "auto" {
  if (typeof policy === "string") return policy;
  return policy.tools?.[tool.name] ?? policy[tool.effect] ?? policy.default ?? "auto";
}

/** Every tool the policy sends somewhere can be answered there; otherwise one sentence per problem. */
export function checkPolicyCovers(
  policy: SimulatorPolicy,
  catalog: Catalog,
  simulators: Simulator[],
  hasModel: boolean,
): void {
  if (typeof policy === "object") {
    const unknown = Object.keys(policy.tools ?? {}).filter((name) => !catalog.get(name));
    if (unknown.length > 0) {
      const name = unknown[0] as string;
      const closest = catalog.closest(name);
      throw new TerrariumError(
        "INVALID_INPUT",
        `the policy names "${name}", which is neither an effect (read, write, unknown, default) nor a tool${closest.length ? ` (closest tools: ${closest.join(", ")})` : ""}`,
      );
    }
  }
  const byName = new Map(simulators.map((simulator) => [simulator.name, simulator]));
  const refused = new Map<SimulatorName, string[]>();
  for (const tool of catalog.tools) {
    const wanted = wantedSimulator(policy, tool);
    if (wanted === "auto" || wanted === "schema") continue;
    const ok = wanted === "llm" ? hasModel : (byName.get(wanted)?.handles(tool) ?? false);
    if (!ok) refused.set(wanted, [...(refused.get(wanted) ?? []), tool.name]);
  }
  const problems: string[] = [];
  for (const [name, toolNames] of refused) {
    const listed =
      toolNames.length > 4
        ? `${toolNames.slice(0, 4).join(", ")} and ${toolNames.length - 4} more`
        : toolNames.join(", ");
    const why =
      name === "llm"
        ? "needs a model: pass --model, or set roles.simulator or roles.default in terrarium.config.yaml"
        : name === "code"
          ? "answers only the tools of an environment (serve a built-in name, a module or a descriptor)"
          : "forwards only OpenAPI operations to a server: give --proxy <baseURL>, or tools whose document lists servers";
    problems.push(`the policy sends ${listed} to the ${name} simulator, which ${why}`);
  }
  if (problems.length > 0)
    throw new TerrariumError("INVALID_INPUT", `${problems.join("; ")} (policy: ${describePolicy(policy)})`);
}
