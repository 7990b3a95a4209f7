import { createRandom } from "../../core/random.js";
import { groupOf } from "./groups.js";
import type { EnvSimSample, SampleGroup } from "./types.js";

/**
 * How many samples each stratum gets. The paper's defaults: Failure 20; No-Change 80 (40 with zero
 * arguments, 40 with one or more); Simple 50 (25 at Δ=1, 25 at Δ=2); Medium 200 (50 at each Δ of 3..6);
 * Difficult 50 in all (Δ 7..12).
 */
export interface BenchmarkTargets {
  failure: number;
  noChangeZeroArgs: number;
  noChangeWithArgs: number;
  /** Per Δ value in 1..2. */
  simplePerDelta: number;
  /** Per Δ value in 3..6. */
  mediumPerDelta: number;
  /** For Δ 7..12 together. */
  difficult: number;
}

export const PAPER_TARGETS: BenchmarkTargets = {
  failure: 20,
  noChangeZeroArgs: 40,
  noChangeWithArgs: 40,
  simplePerDelta: 25,
  mediumPerDelta: 50,
  difficult: 50,
};

export interface BuildReport {
  strata: Array<{
    stratum: string;
    target: number;
    available: number;
    selected: number;
    environments: number;
  }>;
  total: number;
}

/**
 * Builds a benchmark from collected samples: step 0 of each trajectory is dropped (it starts from the
 * initial state), samples are stratified by outcome, Δ tier and argument count, and each stratum is
 * filled greedily to maximise distinct environments, then distinct Δ (the diversity rule).
 */
export function buildBenchmark(
  samples: EnvSimSample[],
  options: { targets?: Partial<BenchmarkTargets>; seed?: string | number } = {},
): { samples: EnvSimSample[]; report: BuildReport } {
  const targets = { ...PAPER_TARGETS, ...options.targets };
  const random = createRandom(`${options.seed ?? 0}/build`);
  const usable = samples.filter((sample) => sample.step > 0);
  const strata: Array<{ stratum: string; target: number; members: EnvSimSample[] }> = [
    { stratum: "failure", target: targets.failure, members: [] },
    { stratum: "no_change_zero_args", target: targets.noChangeZeroArgs, members: [] },
    { stratum: "no_change_with_args", target: targets.noChangeWithArgs, members: [] },
    ...[1, 2].map((delta) => ({
      stratum: `simple_delta_${delta}`,
      target: targets.simplePerDelta,
      members: [] as EnvSimSample[],
    })),
    ...[3, 4, 5, 6].map((delta) => ({
      stratum: `medium_delta_${delta}`,
      target: targets.mediumPerDelta,
      members: [] as EnvSimSample[],
    })),
    { stratum: "difficult", target: targets.difficult, members: [] },
  ];
  const byName = new Map(strata.map((s) => [s.stratum, s]));
  for (const sample of usable) {
    const group = groupOf(sample) as SampleGroup | undefined;
    if (!group) continue;
    const name = group === "simple" || group === "medium" ? `${group}_delta_${sample.delta}` : group;
    byName.get(name)?.members.push(sample);
  }
  const selected: EnvSimSample[] = [];
  const report: BuildReport = { strata: [], total: 0 };
  for (const stratum of strata) {
    const chosen = pickDiverse(shuffle(stratum.members, random), stratum.target);
    selected.push(...chosen);
    report.strata.push({
      stratum: stratum.stratum,
      target: stratum.target,
      available: stratum.members.length,
      selected: chosen.length,
      environments: new Set(chosen.map((s) => s.envId)).size,
    });
  }
  report.total = selected.length;
  return { samples: selected, report };
}

/** Greedy: each pick prefers an environment seen least so far, then a Δ seen least so far. */
function pickDiverse(candidates: EnvSimSample[], target: number): EnvSimSample[] {
  const chosen: EnvSimSample[] = [];
  const envCount = new Map<string, number>();
  const deltaCount = new Map<number, number>();
  const pool = [...candidates];
  while (chosen.length < target && pool.length > 0) {
    let bestIndex = 0;
    let bestKey: [number, number] = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
    for (const [index, sample] of pool.entries()) {
      const key: [number, number] = [envCount.get(sample.envId) ?? 0, deltaCount.get(sample.delta) ?? 0];
      if (key[0] < bestKey[0] || (key[0] === bestKey[0] && key[1] < bestKey[1])) {
        bestKey = key;
        bestIndex = index;
      }
    }
    const [sample] = pool.splice(bestIndex, 1) as [EnvSimSample];
    chosen.push(sample);
    envCount.set(sample.envId, (envCount.get(sample.envId) ?? 0) + 1);
    deltaCount.set(sample.delta, (deltaCount.get(sample.delta) ?? 0) + 1);
  }
  return chosen;
}

function shuffle<T>(items: T[], random: { int(min: number, max: number): number }): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
