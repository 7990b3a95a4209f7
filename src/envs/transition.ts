import type { Catalog } from "../catalog/catalog.js";
import { diffEnvSim, diffJson } from "../core/json-diff.js";
import type { CallValidator } from "../validate/validator.js";
import type { Transition } from "./types.js";

/** Builds a transition record from what a step saw, computing both change formats and Δ. */
export function makeTransition(
  call: Transition["call"],
  success: boolean,
  observation: unknown,
  before: unknown,
  after: unknown,
): Transition {
  const envChanges = diffEnvSim(before, after);
  return {
    call,
    success,
    observation,
    before,
    after,
    changes: diffJson(before, after),
    envChanges,
    delta: envChanges.length,
  };
}

/**
 * The check every environment makes before running a call: a call that breaks its tool's schema is
 * rejected as a failed transition that leaves the state as it was; a valid one comes back with its
 * arguments parsed (they may arrive as a JSON string).
 */
export function admitCall(
  validator: CallValidator,
  catalog: Catalog,
  call: { name: string; arguments?: unknown },
  before: unknown,
): { recorded: Transition["call"]; args: Record<string, unknown> } | { rejected: Transition } {
  const recorded = { name: call.name, arguments: call.arguments ?? {} };
  const verdict = validator.validate(catalog, recorded);
  if (!verdict.valid) {
    const observation = { error: "invalid call", violations: verdict.errors };
    return { rejected: makeTransition(recorded, false, observation, before, before) };
  }
  const args = typeof recorded.arguments === "string" ? JSON.parse(recorded.arguments) : recorded.arguments;
  return { recorded, args: args as Record<string, unknown> };
}
