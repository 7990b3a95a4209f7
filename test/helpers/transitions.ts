import { expect } from "vitest";
import type { EnvironmentInstance, Transition } from "../../src/envs/types.js";

/** One call on an environment instance. */
export async function step(instance: EnvironmentInstance, name: string, args: Record<string, unknown> = {}) {
  return instance.step({ name, arguments: args });
}

/** A successful step with exactly these changed paths (in any order); returns its observation. */
export function changed(t: Transition, paths: string[]): any {
  expect(t.success, `${t.call.name}: ${JSON.stringify(t.observation)}`).toBe(true);
  expect(t.envChanges.map((c) => c.path).sort()).toEqual([...paths].sort());
  expect(t.delta).toBe(paths.length);
  return t.observation;
}

/** A rejected step: nothing changes and the error says why. */
export function rejected(t: Transition, reason: string): void {
  expect(t.success, `${t.call.name} should be rejected`).toBe(false);
  expect(t.delta).toBe(0);
  expect(t.after).toBe(t.before);
  expect((t.observation as { error: string }).error).toContain(reason);
}

/** The instance's current state, untyped for assertions. */
export const state = async (instance: EnvironmentInstance) => (await instance.state()) as any;
