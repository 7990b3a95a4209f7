import { diffEnvSim, diffJson } from "../core/json-diff.js";
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
