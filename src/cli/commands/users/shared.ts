import type { UsersSummary } from "../../../users/run/index.js";
import { type CliIo, compactTable } from "../../io.js";

const pct = (value: number | null) => (value === null ? "n/a" : value.toFixed(1));
const num = (value: number | null | undefined, digits = 3) =>
  value === null || value === undefined ? "n/a" : value.toFixed(digits);

/** The run's row in the shape of VISTA's Table 1, plus goal success, and where the report is. */
export function printTableRow(io: CliIo, summary: UsersSummary, outDir: string): void {
  const m = summary.metrics;
  const table = compactTable([
    "TE",
    "TDE",
    "TD",
    "# Failures",
    "Goal %",
    "Profile %",
    "Knowledge %",
    "Tokens/turn",
    "Actions/turn",
    "Success",
    "Errored",
  ]);
  table.push([
    num(m.te),
    num(m.tde),
    num(m.td),
    m.failures === null ? "n/a" : String(m.failures),
    pct(m.realism.goal),
    pct(m.realism.profile),
    pct(m.realism.knowledge),
    m.tokensPerTurn.toFixed(0),
    m.actionsPerTurn.toFixed(2),
    m.success === null
      ? "n/a"
      : `${(100 * m.success).toFixed(1)}%${m.successRuns === undefined ? "" : ` of ${m.successRuns}`}`,
    m.errored === undefined ? "n/a" : String(m.errored),
  ]);
  const runs = summary.runs;
  const coverage = m.coverage;
  // Summaries written before coverage details existed have none: the line is then left out.
  const coverageLine = coverage
    ? `coverage: N = ${coverage.toolCount} tool${coverage.toolCount === 1 ? "" : "s"} (${coverage.toolCountSource}), ${coverage.conversations} conversation${coverage.conversations === 1 ? "" : "s"}, ${coverage.calls} agent tool call${coverage.calls === 1 ? "" : "s"}\n`
    : "";
  io.stdout.write(
    `${table.toString()}\n${coverageLine}${runs.total} runs (${runs.errors} errors; ${Object.entries(
      runs.endReasons,
    )
      .map(([reason, count]) => `${reason} ${count}`)
      .join(", ")}); report: ${outDir}/report.html\n`,
  );
}
