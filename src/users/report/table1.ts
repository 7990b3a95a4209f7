/**
 * The columns of VISTA's Table 1 (seed 003): coverage (TE, TDE, TD, # Failures), realism in percent
 * (Goal, Profile, Knowledge) and cost per turn (Tokens, Actions), followed by goal success, the runs it
 * leaves out for an error, and pass^k.
 * The report and the comparison both read a summary through these, so they show the same numbers the same
 * way.
 */
import type { UsersSummary } from "../run/summary.js";
import { finite } from "./html.js";

export type ColumnGroup = "coverage" | "realism" | "cost" | "outcome";

export interface MetricColumn {
  /** Stable key (`te`, `realism.goal`, `passHatK.2`, ...). */
  key: string;
  /** Column header as in the paper. */
  header: string;
  group: ColumnGroup;
  /** Which way is better: higher for coverage, failures, realism and success; lower for cost. */
  better: "higher" | "lower";
  /** The value from a summary; null when it is missing (judges not run, no judged run). */
  read(summary: UsersSummary): number | null;
  /** The value as the tables print it (`n/a` for null). */
  format(value: number | null): string;
}

export const GROUP_TITLES: Record<ColumnGroup, string> = {
  coverage: "Coverage (0-1) ↑",
  realism: "Realism (%) ↑",
  cost: "Cost (per turn) ↓",
  outcome: "Goal success ↑",
};

const metrics = (summary: UsersSummary): Record<string, unknown> =>
  (summary?.metrics ?? {}) as unknown as Record<string, unknown>;
const realism = (summary: UsersSummary): Record<string, unknown> =>
  (metrics(summary).realism ?? {}) as Record<string, unknown>;
const passes = (summary: UsersSummary): Record<string, unknown> =>
  (metrics(summary).passHatK ?? {}) as Record<string, unknown>;

const decimals = (digits: number) => (value: number | null) =>
  value === null ? "n/a" : value.toFixed(digits);

/** Tokens as the paper prints them: `79.9k` from a thousand up. */
export function formatTokens(value: number | null): string {
  if (value === null) return "n/a";
  if (Math.abs(value) >= 1000) return `${(value / 1000).toFixed(1)}k`;
  return value.toFixed(1);
}

function integer(value: number | null): string {
  return value === null ? "n/a" : String(Math.round(value));
}

/** The k of pass^k a summary reports, in increasing order. */
export function passKs(summary: UsersSummary): number[] {
  return Object.keys(passes(summary))
    .map(Number)
    .filter((k) => Number.isInteger(k) && k >= 1)
    .sort((a, b) => a - b);
}

/** Table 1's columns, then success and pass^k for each k given. */
export function table1Columns(ks: readonly number[]): MetricColumn[] {
  const columns: MetricColumn[] = [
    {
      key: "te",
      header: "TE",
      group: "coverage",
      better: "higher",
      read: (s) => finite(metrics(s).te),
      format: decimals(2),
    },
    {
      key: "tde",
      header: "TDE",
      group: "coverage",
      better: "higher",
      read: (s) => finite(metrics(s).tde),
      format: decimals(2),
    },
    {
      key: "td",
      header: "TD",
      group: "coverage",
      better: "higher",
      read: (s) => finite(metrics(s).td),
      format: decimals(2),
    },
    {
      key: "failures",
      header: "# Failures",
      group: "coverage",
      better: "higher",
      read: (s) => finite(metrics(s).failures),
      format: integer,
    },
    {
      key: "realism.goal",
      header: "Goal",
      group: "realism",
      better: "higher",
      read: (s) => finite(realism(s).goal),
      format: decimals(2),
    },
    {
      key: "realism.profile",
      header: "Profile",
      group: "realism",
      better: "higher",
      read: (s) => finite(realism(s).profile),
      format: decimals(2),
    },
    {
      key: "realism.knowledge",
      header: "Knowledge",
      group: "realism",
      better: "higher",
      read: (s) => finite(realism(s).knowledge),
      format: decimals(2),
    },
    {
      key: "tokensPerTurn",
      header: "Tokens",
      group: "cost",
      better: "lower",
      read: (s) => finite(metrics(s).tokensPerTurn),
      format: formatTokens,
    },
    {
      key: "actionsPerTurn",
      header: "Actions",
      group: "cost",
      better: "lower",
      read: (s) => finite(metrics(s).actionsPerTurn),
      format: decimals(2),
    },
    {
      key: "success",
      header: "Success",
      group: "outcome",
      better: "higher",
      read: (s) => finite(metrics(s).success),
      format: decimals(2),
    },
    {
      // Beside success: the runs it leaves out because of an error.
      key: "errored",
      header: "Errored",
      group: "outcome",
      better: "lower",
      read: (s) => finite(metrics(s).errored),
      format: integer,
    },
  ];
  for (const k of ks) {
    columns.push({
      key: `passHatK.${k}`,
      header: `pass^${k}`,
      group: "outcome",
      better: "higher",
      read: (s) => finite(passes(s)[String(k)]),
      format: decimals(2),
    });
  }
  return columns;
}

/** Consecutive columns of the same group, for the two-row header. */
export function columnGroups(
  columns: ReadonlyArray<{ group: ColumnGroup }>,
): Array<{ group: ColumnGroup; span: number }> {
  const groups: Array<{ group: ColumnGroup; span: number }> = [];
  for (const column of columns) {
    const last = groups[groups.length - 1];
    if (last && last.group === column.group) last.span += 1;
    else groups.push({ group: column.group, span: 1 });
  }
  return groups;
}
