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
  /** A call made whose answer its caller refused (invalid structured output, …): paid, never cached. */
  rejected?: boolean;
  /** True when the model has no price entry: its `costUsd` of 0 means "unknown", not "free". */
  unpriced?: boolean;
}

export interface UsageTotals {
  /** Answers obtained, cache hits included: `calls - cachedCalls` calls were really made. */
  calls: number;
  cachedCalls: number;
  failedCalls: number;
  /** Calls made whose answer the caller refused (and that were therefore not cached). */
  rejectedCalls: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  latencyMs: number;
  /** The cost of the priced calls; see `unpricedCalls`. */
  costUsd: number;
  /** Calls to models with no price entry: while above 0, `costUsd` is a lower bound. */
  unpricedCalls: number;
}

export function emptyTotals(): UsageTotals {
  return {
    calls: 0,
    cachedCalls: 0,
    failedCalls: 0,
    rejectedCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    latencyMs: 0,
    costUsd: 0,
    unpricedCalls: 0,
  };
}

export function addUsage(totals: UsageTotals, record: UsageRecord): void {
  totals.calls++;
  if (record.cached) totals.cachedCalls++;
  if (!record.ok) totals.failedCalls++;
  if (record.rejected) totals.rejectedCalls++;
  totals.inputTokens += record.inputTokens;
  totals.outputTokens += record.outputTokens;
  totals.cachedInputTokens += record.cachedInputTokens;
  totals.latencyMs += record.latencyMs;
  totals.costUsd += record.costUsd;
  if (record.unpriced) totals.unpricedCalls++;
}

/**
 * A cost for people: dollars when every call was priced, "price unknown" when none was, and a lower bound
 * naming the unpriced calls otherwise (a model with no price entry is not free).
 */
export function formatCost(totals: Pick<UsageTotals, "costUsd" | "unpricedCalls">, digits = 4): string {
  const unpriced = totals.unpricedCalls ?? 0;
  if (unpriced === 0) return `$${totals.costUsd.toFixed(digits)}`;
  if (totals.costUsd === 0) return "price unknown";
  return `≥ $${totals.costUsd.toFixed(digits)} (${unpriced} calls of unpriced models)`;
}

/** Every call of a run, with totals overall, per model, per role and per scope. */
export class UsageLedger {
  private readonly records: UsageRecord[] = [];
  private readonly total = emptyTotals();

  /** A ledger with a parent is one run's share: every record also lands in the parent. */
  constructor(private readonly parent?: UsageLedger) {}

  add(record: UsageRecord): void {
    this.records.push(record);
    addUsage(this.total, record);
    this.parent?.add(record);
  }

  /** The ledger at the top of the chain (budgets are checked against it). */
  get root(): UsageLedger {
    return this.parent ? this.parent.root : this;
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

/** A usage ledger that also notes when each call was accounted. */
export class TimedLedger extends UsageLedger {
  readonly times: number[] = [];

  override add(record: UsageRecord): void {
    super.add(record);
    this.times.push(Date.now() / 1000);
  }
}
