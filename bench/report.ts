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
