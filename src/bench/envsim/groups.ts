import type { DeltaTier, EnvSimSample, SampleGroup } from "./types.js";

export function deltaTier(delta: number): DeltaTier {
  if (delta === 0) return "no_change";
  if (delta <= 2) return "simple";
  if (delta <= 6) return "medium";
  if (delta <= 12) return "difficult";
  return "excluded";
}

/** The group of a sample, recomputed from its outcome, Δ and argument count (as EnvSimBench does). */
export function groupOf(
  sample: Pick<EnvSimSample, "success" | "delta" | "argCount">,
): SampleGroup | undefined {
  if (!sample.success) return "failure";
  const tier = deltaTier(sample.delta);
  if (tier === "excluded") return undefined;
  if (tier === "no_change") return sample.argCount === 0 ? "no_change_zero_args" : "no_change_with_args";
  return tier;
}
