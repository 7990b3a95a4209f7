import type { Catalog } from "../catalog/catalog.js";
import { diffJson, type EnvSimChange, envSimFromJsonChanges, type JsonChange } from "../core/json-diff.js";
import type { CallValidator } from "../validate/validator.js";
import type { Transition } from "./types.js";

/**
 * Builds a transition record from what a step saw. One change format is computed: `changes` (JSON Patch
 * style), given by the caller when it knows them (a TypeScript step's draft does) or diffed here;
 * `envChanges` and its count `delta` are derived from them on first read (most steps are never scored
 * EnvSimBench's way) and are then the same as `diffEnvSim(before, after)` would give. Both are own,
 * enumerable properties, so spreading, JSON and equality see the record as before.
 */
export function makeTransition(
  call: Transition["call"],
  success: boolean,
  observation: unknown,
  before: unknown,
  after: unknown,
  changes: JsonChange[] = diffJson(before, after),
): Transition {
  let envChanges: EnvSimChange[] | undefined;
  let delta: number | undefined;
  return {
    call,
    success,
    observation,
    before,
    after,
    changes,
    get envChanges(): EnvSimChange[] {
      if (envChanges === undefined) envChanges = envSimFromJsonChanges(before, after, changes);
      return envChanges;
    },
    set envChanges(value: EnvSimChange[]) {
      envChanges = value;
    },
    get delta(): number {
      if (delta !== undefined) return delta;
      if (envChanges === undefined) envChanges = envSimFromJsonChanges(before, after, changes);
      return envChanges.length;
    },
    set delta(value: number) {
      delta = value;
    },
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
    return { rejected: makeTransition(recorded, false, observation, before, before, []) };
  }
  const args = typeof recorded.arguments === "string" ? JSON.parse(recorded.arguments) : recorded.arguments;
  return { recorded, args: args as Record<string, unknown> };
}
