/**
 * What loading a catalog noticed: warnings (something was normalised, translated or dropped, and the tool
 * still loaded) and skips (an operation could not be read and was left out). Real API descriptions are
 * untidy; one bad operation must never cost a user the rest of the file, but nothing may vanish silently.
 */

export const LOAD_REPORT_SCHEMA_VERSION = 1;

export interface CatalogNote {
  /** A stable machine-readable code, e.g. `NULLABLE_WITHOUT_TYPE`, `PATTERN_DROPPED`, `OPERATION_INVALID`. */
  code: string;
  message: string;
  file?: string;
  /** JSON Pointer: into the file for skips; into the tool's schema (`/inputSchema/...`) for tool warnings. */
  pointer?: string;
  /** The tool the note is about, when there is one. */
  tool?: string;
}

/** How many warnings a report keeps word for word; the rest are only counted by code. */
const MAX_KEPT_WARNINGS = 5_000;

export class LoadReport {
  readonly warnings: CatalogNote[] = [];
  readonly skipped: CatalogNote[] = [];
  /** Warnings by code, including those past the kept limit. */
  readonly warningCounts = new Map<string, number>();
  private readonly seen = new Set<string>();

  warn(note: CatalogNote): void {
    // The same schema is often inlined into many tools; one warning per place and message is enough.
    const key = `${note.code}\u0000${note.file ?? ""}\u0000${note.tool ?? ""}\u0000${note.pointer ?? ""}\u0000${note.message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.warningCounts.set(note.code, (this.warningCounts.get(note.code) ?? 0) + 1);
    if (this.warnings.length < MAX_KEPT_WARNINGS) this.warnings.push(note);
  }

  skip(note: CatalogNote): void {
    this.skipped.push(note);
  }

  get warningCount(): number {
    let total = 0;
    for (const count of this.warningCounts.values()) total += count;
    return total;
  }

  toJSON(): {
    schemaVersion: number;
    skipped: CatalogNote[];
    warnings: CatalogNote[];
    warningCounts: Record<string, number>;
  } {
    return {
      schemaVersion: LOAD_REPORT_SCHEMA_VERSION,
      skipped: this.skipped,
      warnings: this.warnings,
      warningCounts: Object.fromEntries(this.warningCounts),
    };
  }
}

/**
 * One line for the end of a listing or a server's start-up: `1,204 tools; 19 operations skipped: …;
 * 312 warnings (…)`. The skip reasons are grouped by code so a long list stays readable.
 */
export function summariseLoad(toolCount: number, report: LoadReport): string {
  const parts = [`${formatCount(toolCount)} ${toolCount === 1 ? "tool" : "tools"}`];
  if (report.skipped.length > 0) {
    const byCode = countBy(report.skipped.map((note) => note.code));
    parts.push(
      `${formatCount(report.skipped.length)} ${report.skipped.length === 1 ? "operation" : "operations"} skipped: ${describeCounts(byCode)}`,
    );
  }
  const warnings = report.warningCount;
  if (warnings > 0) {
    parts.push(
      `${formatCount(warnings)} ${warnings === 1 ? "warning" : "warnings"} (${describeCounts(report.warningCounts)})`,
    );
  }
  return parts.join("; ");
}

/** Each skip on its own line, `file#/pointer: code: message`, for a closer look than the summary. */
export function describeNote(note: CatalogNote): string {
  const where = `${note.file ?? ""}${note.pointer !== undefined ? `#${note.pointer}` : ""}`;
  const tool = note.tool ? ` (${note.tool})` : "";
  return `${where}${tool}: ${note.code}: ${note.message}`;
}

function countBy(values: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

function describeCounts(counts: Map<string, number>): string {
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([code, count]) => `${count} ${code}`)
    .join(", ");
}

function formatCount(count: number): string {
  return count.toLocaleString("en-US");
}
