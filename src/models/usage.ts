import type { TokenUsage } from "./types.js";

/** One model call as accounted. */
export interface UsageRecord {
  model: string;
  role?: string;
  /** Groups calls of one session, task or sample. */
  scope?: string;
  cached: boolean;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  latencyMs: number;
  costUsd: number;
  /** Attempts made, retries included (0 for a cache hit). */
  attempts: number;
  ok: boolean;
}

export interface UsageTotals {
  calls: number;
  cachedCalls: number;
  failedCalls: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  latencyMs: number;
  costUsd: number;
}

export function emptyTotals(): UsageTotals {
  return {
    calls: 0,
    cachedCalls: 0,
    failedCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    latencyMs: 0,
    costUsd: 0,
  };
}

export function addUsage(totals: UsageTotals, record: UsageRecord): void {
  totals.calls++;
  if (record.cached) totals.cachedCalls++;
  if (!record.ok) totals.failedCalls++;
  totals.inputTokens += record.inputTokens;
  totals.outputTokens += record.outputTokens;
  totals.cachedInputTokens += record.cachedInputTokens;
  totals.latencyMs += record.latencyMs;
  totals.costUsd += record.costUsd;
}

/** Every call of a run, with totals overall, per model, per role and per scope. */
export class UsageLedger {
  private readonly records: UsageRecord[] = [];
  private readonly total = emptyTotals();

  add(record: UsageRecord): void {
    this.records.push(record);
    addUsage(this.total, record);
  }

  get totals(): UsageTotals {
    return { ...this.total };
  }

  get all(): readonly UsageRecord[] {
    return this.records;
  }

  /** Totals grouped by a field of the records (`model`, `role` or `scope`). */
  by(field: "model" | "role" | "scope"): Record<string, UsageTotals> {
    const groups: Record<string, UsageTotals> = {};
    for (const record of this.records) {
      const key = record[field] ?? "(none)";
      groups[key] ??= emptyTotals();
      addUsage(groups[key], record);
    }
    return groups;
  }

  /** Totals of the records of one scope. */
  forScope(scope: string): UsageTotals {
    const totals = emptyTotals();
    for (const record of this.records) if (record.scope === scope) addUsage(totals, record);
    return totals;
  }
}

export function usageOf(
  record: Pick<UsageRecord, "inputTokens" | "outputTokens" | "cachedInputTokens">,
): TokenUsage {
  return {
    inputTokens: record.inputTokens,
    outputTokens: record.outputTokens,
    cachedInputTokens: record.cachedInputTokens,
  };
}
