/**
 * VISTA's mode comparison (seed 003, Table 1): several users run folders side by side, one row each, in
 * Table 1's columns, the better value of each column marked (bold in HTML, `*` in text). Higher is better
 * for coverage, failures, realism and success; lower for tokens and actions per turn. Values are compared
 * as printed (rounded), so two values that read the same are both marked.
 */
import { TerrariumError } from "../../core/errors.js";
import type { UsersSummary } from "../run/summary.js";
import { USERS_RUN_SCHEMA_VERSION } from "../run/transcript.js";
import { arrayOf, escapeHtml as esc, finite, page } from "./html.js";
import { folderLabel, readUsersSummary } from "./render.js";
import { columnGroups, GROUP_TITLES, type MetricColumn, passKs, table1Columns } from "./table1.js";

export interface ComparisonColumn {
  key: string;
  header: string;
  group: MetricColumn["group"];
  better: "higher" | "lower";
}

export interface ComparisonRow {
  label: string;
  agent: string;
  mode: string;
  userModel: string;
  /** Raw values by column key (null: not measured). */
  values: Record<string, number | null>;
  /** Printed values by column key (`n/a` for null). */
  cells: Record<string, string>;
  /** Column keys where this row holds the better value. */
  best: string[];
}

export interface ScenarioComparison {
  scenarioId: string;
  /** One per run, in the order of the rows: mean goal success, its std and n, or null when none was judged. */
  success: Array<{ mean: number; std: number; n: number } | null>;
  cells: string[];
  /** Per run: whether it holds the best mean success. */
  best: boolean[];
}

export interface UsersComparison {
  columns: ComparisonColumn[];
  rows: ComparisonRow[];
  /** Scenarios every run has, with their success side by side. */
  scenarios: ScenarioComparison[];
  /** Differences in setup worth knowing before reading the numbers (agent, user model, runs, scenarios). */
  notes: string[];
  text: string;
  html: string;
}

/** Characters that could drive a terminal (escape sequences, other controls) become `?`. */
function plain(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, "?");
}

/** Which rows hold the better value of one column, comparing the printed (rounded) values. */
function bestOf(column: MetricColumn, values: Array<number | null>): boolean[] {
  const shown = values.map((value) => {
    if (value === null) return null;
    const printed = column.format(value);
    // Tokens print as `79.9k`: scale back so that 950 and 1.2k compare correctly.
    const number = printed.endsWith("k") ? Number(printed.slice(0, -1)) * 1000 : Number(printed);
    return Number.isFinite(number) ? number : null;
  });
  const present = shown.filter((value): value is number => value !== null);
  if (present.length === 0) return values.map(() => false);
  const target = column.better === "higher" ? Math.max(...present) : Math.min(...present);
  return shown.map((value) => value !== null && value === target);
}

function uniqueLabels(labels: string[]): string[] {
  const seen = new Map<string, number>();
  return labels.map((label) => {
    const base = label === "" ? "run" : label;
    const count = (seen.get(base) ?? 0) + 1;
    seen.set(base, count);
    return count === 1 ? base : `${base} (${count})`;
  });
}

/**
 * Compares two or more users runs. Labels that repeat get ` (2)`, ` (3)`... so rows stay apart.
 * Fewer than two runs, or a summary of another schema version, is an error.
 */
export function compareUsersRuns(
  runs: ReadonlyArray<{ label: string; summary: UsersSummary }>,
): UsersComparison {
  if (runs.length < 2) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `users compare needs at least 2 runs to compare, got ${runs.length}`,
    );
  }
  runs.forEach(({ label, summary }, index) => {
    if (summary === null || typeof summary !== "object" || summary.kind !== "terrarium.users.summary") {
      throw new TerrariumError("INVALID_INPUT", `run ${index + 1} (${label}): not a users run summary`);
    }
    if (summary.schemaVersion !== USERS_RUN_SCHEMA_VERSION) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `run ${index + 1} (${label}): summary schemaVersion ${String(summary.schemaVersion)}, this terrarium reads ${USERS_RUN_SCHEMA_VERSION}`,
      );
    }
  });
  const labels = uniqueLabels(
    runs.map(({ label, summary }) => String(label || summary.settings?.mode || "")),
  );
  const ks = [...new Set(runs.flatMap(({ summary }) => passKs(summary)))].sort((a, b) => a - b);
  const metricColumns = table1Columns(ks);
  const values = metricColumns.map((column) => runs.map(({ summary }) => column.read(summary)));
  const bests = metricColumns.map((column, index) => bestOf(column, values[index] ?? []));
  const rows: ComparisonRow[] = runs.map(({ summary }, r) => {
    const rowValues: Record<string, number | null> = {};
    const cells: Record<string, string> = {};
    const best: string[] = [];
    metricColumns.forEach((column, c) => {
      const value = values[c]?.[r] ?? null;
      rowValues[column.key] = value;
      cells[column.key] = column.format(value);
      if (bests[c]?.[r]) best.push(column.key);
    });
    return {
      label: labels[r] as string,
      agent: String(summary.settings?.agent ?? ""),
      mode: String(summary.settings?.mode ?? ""),
      userModel: String(summary.settings?.userModel ?? ""),
      values: rowValues,
      cells,
      best,
    };
  });

  const scenarioIds = runs.map(({ summary }) =>
    arrayOf<{ id?: unknown }>(summary.scenarios).map((scenario) => String(scenario?.id)),
  );
  const shared = (scenarioIds[0] ?? []).filter((id) => scenarioIds.every((ids) => ids.includes(id)));
  const scenarios: ScenarioComparison[] = [...new Set(shared)].map((scenarioId) => {
    const success = runs.map(({ summary }) => {
      const row = arrayOf<UsersSummary["scenarios"][number]>(summary.scenarios).find(
        (scenario) => String(scenario?.id) === scenarioId,
      );
      const stat = row?.success as Record<string, unknown> | null | undefined;
      const mean = finite(stat?.mean);
      if (!stat || mean === null) return null;
      return { mean, std: finite(stat.std) ?? 0, n: finite(stat.n) ?? 0 };
    });
    const cells = success.map((stat) =>
      stat === null ? "n/a" : `${stat.mean.toFixed(2)} ± ${stat.std.toFixed(2)} (n=${stat.n})`,
    );
    const rounded = success.map((stat) => (stat === null ? null : Number(stat.mean.toFixed(2))));
    const present = rounded.filter((value): value is number => value !== null);
    const top = present.length === 0 ? null : Math.max(...present);
    return { scenarioId, success, cells, best: rounded.map((value) => top !== null && value === top) };
  });

  const notes: string[] = [];
  const differ = (name: string, pick: (summary: UsersSummary) => unknown) => {
    const seen = [...new Set(runs.map(({ summary }) => JSON.stringify(pick(summary) ?? null)))];
    if (seen.length > 1) notes.push(`the runs differ in ${name}: ${seen.join(" vs ")}`);
  };
  differ("agent", (s) => s.settings?.agent);
  differ("user model", (s) => s.settings?.userModel);
  differ("runs per scenario", (s) => s.settings?.runs);
  differ("judges", (s) => s.settings?.judges);
  const allIds = new Set(scenarioIds.flat());
  if (allIds.size > shared.length) {
    notes.push(
      `${allIds.size - new Set(shared).size} scenario(s) are not in every run; the metrics above cover each run's own scenarios`,
    );
  }

  const columns: ComparisonColumn[] = metricColumns.map(({ key, header, group, better }) => ({
    key,
    header,
    group,
    better,
  }));
  const text = comparisonText(columns, rows, scenarios, notes);
  const html = comparisonHtml(columns, rows, scenarios, notes);
  return { columns, rows, scenarios, notes, text, html };
}

/** Compares run folders by their `summary.json`, each labelled with its folder's name. */
export function compareUsersRunFolders(dirs: readonly string[]): UsersComparison {
  if (dirs.length < 2) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `users compare needs at least 2 run folders to compare, got ${dirs.length}`,
    );
  }
  return compareUsersRuns(dirs.map((dir) => ({ label: folderLabel(dir), summary: readUsersSummary(dir) })));
}

function table(headers: string[], body: string[][], alignLeft: number): string {
  const widths = headers.map((header, c) =>
    Math.max([...header].length, ...body.map((row) => [...(row[c] ?? "")].length)),
  );
  const pad = (cell: string, c: number) => {
    const gap = " ".repeat((widths[c] ?? 0) - [...cell].length);
    return c < alignLeft ? cell + gap : gap + cell;
  };
  const line = (cells: string[]) => cells.map((cell, c) => pad(cell, c)).join("  ");
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

function comparisonText(
  columns: ComparisonColumn[],
  rows: ComparisonRow[],
  scenarios: ScenarioComparison[],
  notes: string[],
): string {
  const headers = [
    "Run",
    ...columns.map((column) => `${column.header}${column.better === "lower" ? " ↓" : ""}`),
  ];
  const body = rows.map((row) => [
    plain(row.label),
    ...columns.map(
      (column) => `${row.cells[column.key] ?? "n/a"}${row.best.includes(column.key) ? "*" : " "}`,
    ),
  ]);
  const groups = columnGroups(columns)
    .map(
      ({ group }) =>
        `${GROUP_TITLES[group]}: ${columns
          .filter((column) => column.group === group)
          .map((column) => column.header)
          .join(", ")}`,
    )
    .join(" | ");
  const parts = [
    "Users runs compared (VISTA Table 1)",
    groups,
    "",
    table(headers, body, 1),
    "* better value (higher is better, except Tokens and Actions per turn: lower)",
  ];
  if (scenarios.length > 0) {
    parts.push(
      "",
      "Goal success per scenario (mean ± std over runs)",
      table(
        ["Scenario", ...rows.map((row) => plain(row.label))],
        scenarios.map((scenario) => [
          plain(scenario.scenarioId),
          ...scenario.cells.map((cell, r) => `${cell}${scenario.best[r] ? "*" : " "}`),
        ]),
        1,
      ),
    );
  } else {
    parts.push("", "No scenario is shared by every run.");
  }
  if (notes.length > 0) parts.push("", ...notes.map((note) => `note: ${plain(note)}`));
  return `${parts.join("\n")}\n`;
}

function comparisonHtml(
  columns: ComparisonColumn[],
  rows: ComparisonRow[],
  scenarios: ScenarioComparison[],
  notes: string[],
): string {
  const groups = columnGroups(columns)
    .map(({ group, span }) => `<th colspan="${span}">${esc(GROUP_TITLES[group])}</th>`)
    .join("");
  const heads = columns.map((column) => `<th class="num">${esc(column.header)}</th>`).join("");
  const body = rows
    .map((row) => {
      const cells = columns
        .map((column) => {
          const text = esc(row.cells[column.key] ?? "n/a");
          const best = row.best.includes(column.key);
          return `<td class="num${best ? " best" : ""}" data-metric="${esc(column.key)}">${best ? `<b>${text}</b>` : text}</td>`;
        })
        .join("");
      return `<tr><th>${esc(row.label)}<div class="muted">${esc(row.mode)} · ${esc(row.agent)} · ${esc(row.userModel)}</div></th>${cells}</tr>`;
    })
    .join("\n");
  const scenarioTable =
    scenarios.length === 0
      ? '<p class="muted">No scenario is shared by every run.</p>'
      : `<table><thead><tr><th>Scenario</th>${rows.map((row) => `<th class="num">${esc(row.label)}</th>`).join("")}</tr></thead><tbody>
${scenarios
  .map(
    (scenario) =>
      `<tr><th>${esc(scenario.scenarioId)}</th>${scenario.cells
        .map((cell, r) =>
          scenario.best[r]
            ? `<td class="num best"><b>${esc(cell)}</b></td>`
            : `<td class="num">${esc(cell)}</td>`,
        )
        .join("")}</tr>`,
  )
  .join("\n")}
</tbody></table>`;
  const content = `<h1>Users runs compared</h1>
<h2 id="table1">Table 1</h2>
<div class="scroll"><table class="table1"><thead><tr><th rowspan="2">Run</th>${groups}</tr><tr>${heads}</tr></thead>
<tbody>
${body}
</tbody></table></div>
<p class="muted">Bold: the better value of each column (higher is better, except Tokens and Actions per turn). n/a: not measured.</p>
<h2 id="scenarios">Goal success per scenario</h2>
${scenarioTable}
${notes.length > 0 ? `<h2 id="notes">Notes</h2><ul>${notes.map((note) => `<li>${esc(note)}</li>`).join("")}</ul>` : ""}`;
  return page("terrarium users compare", content, { script: false });
}
