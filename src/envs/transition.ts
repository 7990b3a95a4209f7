import type { Catalog } from "../catalog/catalog.js";
import { diffJson, type EnvSimChange, envSimFromJsonChanges, type JsonChange } from "../core/json-diff.js";
import type { CallValidator } from "../validate/validator.js";
import type { Transition } from "./types.js";

/** Replaces a lazily derived member by its value (a plain data property, in the same place). */
function settle(transition: Transition, key: "envChanges" | "delta", value: unknown): void {
  Object.defineProperty(transition, key, { value, writable: true, enumerable: true, configurable: true });
}

/*
 * The accessors of every transition: one pair of functions for all of them, so that records share one
 * hidden class (accessors made per record, as an object literal's getters are, give each record its own
 * hidden class, and the garbage collector pays for them). A read computes the value from the record's own
 * `before`, `after` and `changes` and settles it as data.
 */
const ENV_CHANGES: PropertyDescriptor = {
  get(this: Transition) {
    const value = envSimFromJsonChanges(this.before, this.after, this.changes);
    settle(this, "envChanges", value);
    return value;
  },
  set(this: Transition, value: EnvSimChange[]) {
    settle(this, "envChanges", value);
  },
  enumerable: true,
  configurable: true,
};
const DELTA: PropertyDescriptor = {
  get(this: Transition) {
    return this.envChanges.length;
  },
  set(this: Transition, value: number) {
    settle(this, "delta", value);
  },
  enumerable: true,
  configurable: true,
};

/**
 * Builds a transition record from what a step saw. One change format is computed: `changes` (JSON Patch
 * style), given by the caller when it knows them (a TypeScript step's draft does) or diffed here;
 * `envChanges` and its count `delta` are derived from them on first read (most steps are never scored
 * EnvSimBench's way) and are then the same as `diffEnvSim(before, after)` would give. Both are own,
 * enumerable properties in their usual places, so spreading, JSON and equality see the record as before.
 */
export function makeTransition(
  call: Transition["call"],
  success: boolean,
  observation: unknown,
  before: unknown,
  after: unknown,
  changes: JsonChange[] = diffJson(before, after),
): Transition {
  const transition = { call, success, observation, before, after, changes } as Transition;
  Object.defineProperty(transition, "envChanges", ENV_CHANGES);
  Object.defineProperty(transition, "delta", DELTA);
  return transition;
}

/**
 * The check every environment makes before running a call: a call that breaks its tool's schema is
 * rejected as a failed transition that leaves the state as it was; a valid one comes back with its
 * arguments parsed (they may arrive as a JSON string).
 *
 * `checkedAgainst` is the input schema the caller already validated the arguments (an object) against:
 * when it is the tool's own (the very object), the verdict is known and not asked again. The engine
 * validates every call before a simulator sees it, so a code environment under it validates nothing.
 */
export function admitCall(
  validator: CallValidator,
  catalog: Catalog,
  call: { name: string; arguments?: unknown },
  before: unknown,
  checkedAgainst?: object,
): { recorded: Transition["call"]; args: Record<string, unknown> } | { rejected: Transition } {
  const recorded = { name: call.name, arguments: call.arguments ?? {} };
  if (
    checkedAgainst !== undefined &&
    typeof recorded.arguments === "object" &&
    recorded.arguments !== null &&
    !Array.isArray(recorded.arguments) &&
    catalog.get(call.name)?.inputSchema === checkedAgainst
  )
    return { recorded, args: recorded.arguments as Record<string, unknown> };
  const verdict = validator.validate(catalog, recorded);
  if (!verdict.valid) {
    const observation = { error: "invalid call", violations: verdict.errors };
    return { rejected: makeTransition(recorded, false, observation, before, before, []) };
  }
  const args = typeof recorded.arguments === "string" ? JSON.parse(recorded.arguments) : recorded.arguments;
  return { recorded, args: args as Record<string, unknown> };
}
