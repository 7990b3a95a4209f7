/** What one benchmark returns: lines of its table for people, and a report for machines. */
export interface BenchResult {
  name: string;
  lines: string[];
  report: Record<string, unknown>;
  /** Whether the benchmark's target was met (undefined when it states none). */
  pass?: boolean;
}

/** Median of a list of numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Median steps per second over `rounds` rounds of at least `minMs` each, after a short warm-up. */
export async function stepsPerSecond(step: () => unknown, minMs = 300, rounds = 5): Promise<number> {
  for (let i = 0; i < 20; i++) await step();
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    let steps = 0;
    const started = performance.now();
    while (performance.now() - started < minMs) {
      await step();
      steps++;
    }
    samples.push(steps / ((performance.now() - started) / 1000));
  }
  return median(samples);
}
