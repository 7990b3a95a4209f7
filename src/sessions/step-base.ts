import { TerrariumError } from "../core/errors.js";
import type { StepBase } from "./types.js";

/**
 * Refuses a step computed on a session that no longer ends where it did (`Store.appendStep`'s `base`):
 * an earlier step it was built on was not stored, so storing this one would record a state no call made.
 */
export function checkStepBase(id: string, base: StepBase, lastCall: number, snapshot: number): void {
  if (base.lastCall === lastCall && base.snapshot === snapshot) return;
  throw new TerrariumError(
    "STORE_UNAVAILABLE",
    `the call was not stored: session ${id} no longer ends where the call started (an earlier call it followed was not stored); send it again`,
    { details: { expected: { ...base }, found: { lastCall, snapshot } } },
  );
}
