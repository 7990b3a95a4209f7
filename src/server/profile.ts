import type { SimulatorPolicy } from "../sim/engine.js";
import { describePolicy } from "../sim/policy.js";
import type { SemanticValidationStatus } from "../sim/semantic.js";

/** What a running server is made of, as the banner and /health report it. */
export interface ServerProfile {
  sources: string[];
  /** The SQLite file sessions live in, or null (memory). */
  db: string | null;
  /** The simulators the policy can use (`schema` is always there). */
  simulators: string[];
  policy: SimulatorPolicy;
  /** The real API's base URL for the proxy simulator, or null. */
  proxy: string | null;
  models: {
    /** The llm simulator's model (also bootstraps states and updates them from real results). */
    simulator: string | null;
    validator: string | null;
  };
  semanticValidation: SemanticValidationStatus;
}

/** A profile for an engine built by hand (no model, no validator): what createApp assumes when given none. */
export function bareProfile(simulators: string[] = ["schema"]): ServerProfile {
  return {
    sources: [],
    db: null,
    simulators,
    policy: "auto",
    proxy: null,
    models: { simulator: null, validator: null },
    semanticValidation: { enabled: false, model: null, source: null },
  };
}

/** The semantic-validation clause of the banner, from the same status /health reports. */
export function describeSemanticValidation(status: SemanticValidationStatus): string {
  return status.enabled
    ? `semantic validation: on (${status.model}, from ${status.source})`
    : "semantic validation: off (no model serves the validator role: set roles.validator or roles.default)";
}

/** `serve`'s start-up lines after the load summary. */
export function describeProfile(profile: ServerProfile, url: string, tools: number): string {
  const simulator = profile.models.simulator
    ? `; llm model ${profile.models.simulator}`
    : profile.simulators.includes("llm")
      ? ""
      : "; no model configured";
  return (
    `terrarium serving ${tools} tools at ${url}\n` +
    `  simulators: ${profile.simulators.join(", ")}${simulator}${profile.proxy ? `; proxy to ${profile.proxy}` : ""}\n` +
    `  policy: ${describePolicy(profile.policy)}\n` +
    `  ${describeSemanticValidation(profile.semanticValidation)}\n` +
    `  try: curl -s -X POST ${url}/sessions   (routes: ${url}/docs)\n`
  );
}
