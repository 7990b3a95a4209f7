import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { ErrorCounts } from "../../core/error-tally.js";
import { TerrariumError } from "../../core/errors.js";
import type { AggregateName, CellSummary, EnvSimSummary, Estimate, ScoreMode } from "./score.js";
import { ENVSIM_SCHEMA_VERSION, type SampleGroup } from "./types.js";

/**
 * Reports of EnvSimBench summaries, one or more simulators side by side, in the layouts of the paper:
 * Table 2 (Failure / No-Change groups), Table 3 (Simple / Medium / Difficult), the overall table, the
 * FM–CM gap with the share of CM failures that pass FM, and the per-Δ table of Appendix A. Output as
 * Markdown, CSV, JSON and a single-file HTML page with vega-lite charts that works offline.
 */
export interface SimulatorSummary {
  /** The simulator's display name (untrusted: escaped wherever it is written). */
  name: string;
  summary: EnvSimSummary;
  /**
   * The simulator's errored predictions over every sample of the benchmark (grouped or not), by kind with
   * the first message: what `envsim eval` fails on unless `--max-errors` allows it.
   */
  errors?: ErrorCounts;
}

export interface TableOptions {
  /** Show the 95% bootstrap interval after each rate (default true). */
  ci?: boolean;
  /** The scoring mode the summaries were made with; stated in the report when given. */
  mode?: ScoreMode;
}

/** What each scoring mode means, as the reports state it. */
export const MODE_NOTES: Readonly<Record<ScoreMode, string>> = {
  paper:
    "Scoring: paper mode, the official EnvSimBench scorer's rules (FM compares the parsed feedback with Python ==; CM applies the predicted changes and checks only the paths that truly changed).",
  strict:
    "Scoring: strict mode (FM: the parsed feedback equal as typed data; CM: the whole predicted after-state equal to the real one).",
};

interface Table {
  id: string;
  title: string;
  headers: string[];
  rows: string[][];
}

const GROUP_LABELS: Record<SampleGroup, string> = {
  failure: "Fail",
  no_change_zero_args: "No-Chg(0)",
  no_change_with_args: "No-Chg(1)",
  simple: "Simple",
  medium: "Medium",
  difficult: "Difficult",
};

const MISSING = "—";

function round1(value: number): string {
  const rounded = Math.round(value * 10) / 10;
  return String(rounded === 0 ? 0 : rounded);
}

function percent(value: number): string {
  return `${round1(value * 100)}%`;
}

function rate(estimate: Estimate | undefined, ci: boolean): string {
  if (estimate === undefined) return MISSING;
  const main = percent(estimate.value);
  return ci ? `${main} (${round1(estimate.low * 100)}–${round1(estimate.high * 100)})` : main;
}

function points(estimate: Estimate | undefined, ci: boolean): string {
  if (estimate === undefined) return MISSING;
  const main = `${round1(estimate.value * 100)} pp`;
  return ci ? `${main} (${round1(estimate.low * 100)}–${round1(estimate.high * 100)})` : main;
}

function countShare(count: number, share: number | null): string {
  return share === null ? String(count) : `${count} (${percent(share)})`;
}

function fmCm(cell: CellSummary | undefined | null, ci: boolean): string[] {
  return [rate(cell?.fm, ci), rate(cell?.cm, ci)];
}

function buildTables(entries: readonly SimulatorSummary[], options: TableOptions = {}): Table[] {
  const ci = options.ci ?? true;
  const failureGroups: SampleGroup[] = ["failure", "no_change_zero_args", "no_change_with_args"];
  const changeGroups: SampleGroup[] = ["simple", "medium", "difficult"];
  const aggregate = (entry: SimulatorSummary, name: AggregateName) => entry.summary.aggregates[name];
  const tables: Table[] = [
    {
      id: "failure-no-change",
      title: "Failure and No-Change groups (paper Table 2)",
      headers: [
        "Simulator",
        ...failureGroups.flatMap((group) => [`${GROUP_LABELS[group]} FM`, `${GROUP_LABELS[group]} CM`]),
        "Avg FM",
        "Avg CM",
      ],
      rows: entries.map((entry) => [
        entry.name,
        ...failureGroups.flatMap((group) => fmCm(entry.summary.groups[group], ci)),
        ...fmCm(aggregate(entry, "failure_no_change"), ci),
      ]),
    },
    {
      id: "state-change",
      title: "State-changing groups (paper Table 3)",
      headers: [
        "Simulator",
        ...changeGroups.flatMap((group) => [`${GROUP_LABELS[group]} FM`, `${GROUP_LABELS[group]} CM`]),
      ],
      rows: entries.map((entry) => [
        entry.name,
        ...changeGroups.flatMap((group) => fmCm(entry.summary.groups[group], ci)),
      ]),
    },
    {
      id: "overall",
      title: "Overall",
      headers: [
        "Simulator",
        "n",
        "Fail+No-Chg FM",
        "Fail+No-Chg CM",
        "State-Change FM",
        "State-Change CM",
        "Overall FM",
        "Overall CM",
      ],
      rows: entries.map((entry) => [
        entry.name,
        String(entry.summary.overall?.n ?? 0),
        ...fmCm(aggregate(entry, "failure_no_change"), ci),
        ...fmCm(aggregate(entry, "state_change"), ci),
        ...fmCm(entry.summary.overall, ci),
      ]),
    },
    {
      id: "gap",
      title: "FM–CM gap and plausible feedback masking a wrong state",
      headers: [
        "Simulator",
        "FM–CM gap (state-change)",
        "CM failures",
        "CM failures passing FM",
        "CM failures with runtime values",
        "Errors",
      ],
      rows: entries.map((entry) => {
        const overall = entry.summary.overall;
        return [
          entry.name,
          points(aggregate(entry, "state_change")?.gap, ci),
          String(overall?.cmFailures ?? 0),
          overall ? countShare(overall.cmFailuresPassingFm, overall.maskedShare) : MISSING,
          overall ? countShare(overall.cmFailuresRuntimeDependent, overall.cmFailuresRuntimeShare) : MISSING,
          String(overall?.errors ?? 0),
        ];
      }),
    },
  ];
  const deltas = [...new Set(entries.flatMap((entry) => Object.keys(entry.summary.deltas)))].sort(
    (a, b) => Number(a) - Number(b),
  );
  tables.push({
    id: "per-delta",
    title: "Per Δ, successful samples (paper Appendix A)",
    headers: ["Δ", "n", ...entries.flatMap((entry) => [`${entry.name} FM`, `${entry.name} CM`])],
    rows: deltas.map((delta) => {
      const counts = [
        ...new Set(entries.map((entry) => entry.summary.deltas[delta]?.n).filter((n) => n !== undefined)),
      ];
      return [delta, counts.join(", "), ...entries.flatMap((entry) => fmCm(entry.summary.deltas[delta], ci))];
    }),
  });
  return tables;
}

// ---------------------------------------------------------------------------------------------------
// Markdown

function markdownCell(text: string): string {
  return text
    .replace(/\\/g, "\\\\")
    .replace(/\|/g, "\\|")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/\r?\n|\r/g, " ");
}

function markdownTable(table: Table): string {
  const line = (cells: string[]) => `| ${cells.map(markdownCell).join(" | ")} |`;
  const rule = `|${table.headers.map((_, index) => (index === 0 ? " --- " : " ---: ")).join("|")}|`;
  return [line(table.headers), rule, ...table.rows.map(line)].join("\n");
}

export interface MarkdownOptions extends TableOptions {
  /** Top heading (default "EnvSimBench results"). */
  title?: string;
}

function methodNote(entries: readonly SimulatorSummary[], ci: boolean, mode?: ScoreMode): string {
  const first = entries[0]?.summary;
  const base = "FM = Feedback Match, CM = Config Match; rates are pooled over the samples of each cell.";
  const parts = [base];
  if (mode !== undefined) parts.push(MODE_NOTES[mode]);
  if (ci && first !== undefined)
    parts.push(
      `In brackets: 95% percentile-bootstrap intervals (${first.bootstrap} resamples, seed ${first.seed}).`,
    );
  return parts.join(" ");
}

/** The paper's tables as Markdown, one row per simulator (the per-Δ table has a column pair per simulator). */
export function renderMarkdown(entries: readonly SimulatorSummary[], options: MarkdownOptions = {}): string {
  const ci = options.ci ?? true;
  const parts = [
    `# ${markdownCell(options.title ?? "EnvSimBench results")}`,
    methodNote(entries, ci, options.mode),
  ];
  for (const table of buildTables(entries, options)) parts.push(`## ${table.title}`, markdownTable(table));
  const errored = entries.filter((entry) => (entry.errors?.errored ?? 0) > 0);
  if (errored.length > 0) {
    parts.push(
      "## Errored predictions",
      "An errored prediction (the simulator gave no usable answer) scores FM = CM = false and is part of every n above.",
    );
    for (const entry of errored) {
      const errors = entry.errors as ErrorCounts;
      parts.push(
        [
          `- ${markdownCell(entry.name)}: ${errors.errored} errored`,
          ...errors.errorKinds.map(
            (kind) =>
              `  - ${markdownCell(kind.kind)}: ${kind.count} (first, ${markdownCell(kind.firstId)}: ${markdownCell(kind.firstMessage)})`,
          ),
        ].join("\n"),
      );
    }
  }
  return `${parts.join("\n\n")}\n`;
}

// ---------------------------------------------------------------------------------------------------
// CSV and JSON

const CSV_COLUMNS = [
  "simulator",
  "scope",
  "key",
  "n",
  "errors",
  "fm",
  "fm_low",
  "fm_high",
  "cm",
  "cm_low",
  "cm_high",
  "gap",
  "gap_low",
  "gap_high",
  "fm_failures",
  "cm_failures",
  "cm_failures_passing_fm",
  "masked_share",
  "runtime_dependent",
  "fm_failures_runtime",
  "cm_failures_runtime",
  "cm_failures_runtime_share",
] as const;

function csvField(value: string | number | null): string {
  if (value === null) return "";
  let text = String(value);
  // Keep spreadsheets from running a name as a formula.
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function cellRows(entry: SimulatorSummary): Array<[string, string, CellSummary]> {
  const rows: Array<[string, string, CellSummary]> = [];
  const { summary } = entry;
  if (summary.overall) rows.push(["overall", "all", summary.overall]);
  for (const [name, cell] of Object.entries(summary.aggregates))
    if (cell) rows.push(["aggregate", name, cell]);
  for (const [name, cell] of Object.entries(summary.groups)) if (cell) rows.push(["group", name, cell]);
  for (const [delta, cell] of Object.entries(summary.deltas)) rows.push(["delta", delta, cell]);
  return rows;
}

/**
 * One row per simulator and cell (overall, aggregates, groups, Δ values), rates as fractions; with
 * `mode`, a last column says which scoring mode made them.
 */
export function renderCsv(entries: readonly SimulatorSummary[], options: { mode?: ScoreMode } = {}): string {
  const lines = [[...CSV_COLUMNS, ...(options.mode ? ["mode"] : [])].join(",")];
  for (const entry of entries) {
    for (const [scope, key, cell] of cellRows(entry)) {
      const values: Array<string | number | null> = [
        entry.name,
        scope,
        key,
        cell.n,
        cell.errors,
        cell.fm.value,
        cell.fm.low,
        cell.fm.high,
        cell.cm.value,
        cell.cm.low,
        cell.cm.high,
        cell.gap.value,
        cell.gap.low,
        cell.gap.high,
        cell.fmFailures,
        cell.cmFailures,
        cell.cmFailuresPassingFm,
        cell.maskedShare,
        cell.runtimeDependent,
        cell.fmFailuresRuntimeDependent,
        cell.cmFailuresRuntimeDependent,
        cell.cmFailuresRuntimeShare,
        ...(options.mode ? [options.mode] : []),
      ];
      lines.push(values.map(csvField).join(","));
    }
  }
  return `${lines.join("\n")}\n`;
}

export interface EnvSimReport {
  schemaVersion: number;
  kind: "envsim-report";
  /** The scoring mode of every summary (absent when the caller did not say). */
  mode?: ScoreMode;
  simulators: SimulatorSummary[];
}

/** The summaries as one JSON document with a schema version (and the scoring mode, when given). */
export function renderJson(entries: readonly SimulatorSummary[], options: { mode?: ScoreMode } = {}): string {
  const report: EnvSimReport = {
    schemaVersion: ENVSIM_SCHEMA_VERSION,
    kind: "envsim-report",
    ...(options.mode ? { mode: options.mode } : {}),
    simulators: [...entries],
  };
  return `${JSON.stringify(report, null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------------
// Vega-lite charts

interface ChartRow {
  simulator: string;
  metric: "FM" | "CM";
  rate: number;
  low: number;
  high: number;
  n: number;
}

function chartSpec(
  rows: Array<ChartRow & Record<string, unknown>>,
  x: { field: string; title: string; sort?: string[] },
  title: string,
): Record<string, unknown> {
  const xEncoding = {
    field: x.field,
    type: "ordinal",
    title: x.title,
    ...(x.sort ? { sort: x.sort } : {}),
    axis: { labelAngle: 0 },
  };
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title,
    data: { values: rows },
    facet: { row: { field: "metric", type: "nominal", title: null, sort: ["FM", "CM"] } },
    spec: {
      width: 640,
      height: 180,
      layer: [
        {
          mark: { type: "bar" },
          encoding: {
            x: xEncoding,
            xOffset: { field: "simulator", type: "nominal" },
            y: {
              field: "rate",
              type: "quantitative",
              title: "match rate",
              scale: { domain: [0, 1] },
              axis: { format: "%" },
            },
            color: { field: "simulator", type: "nominal", title: "Simulator" },
            tooltip: [
              { field: "simulator", type: "nominal" },
              { field: x.field, type: "ordinal", title: x.title },
              { field: "metric", type: "nominal" },
              { field: "rate", type: "quantitative", format: ".1%" },
              { field: "low", type: "quantitative", format: ".1%", title: "95% low" },
              { field: "high", type: "quantitative", format: ".1%", title: "95% high" },
              { field: "n", type: "quantitative" },
            ],
          },
        },
        {
          mark: { type: "rule", color: "#333" },
          encoding: {
            x: xEncoding,
            // The interval stands in the middle of its simulator's bar.
            xOffset: { field: "simulator", type: "nominal", bandPosition: 0.5 },
            y: { field: "low", type: "quantitative" },
            y2: { field: "high" },
          },
        },
      ],
    },
    // One x scale for both rows (the per-simulator offsets take their width from it); axes on each row.
    resolve: { axis: { x: "independent" } },
  };
}

function metricRows(name: string, cell: CellSummary): ChartRow[] {
  return (["FM", "CM"] as const).map((metric) => {
    const estimate = metric === "FM" ? cell.fm : cell.cm;
    return {
      simulator: name,
      metric,
      rate: estimate.value,
      low: estimate.low,
      high: estimate.high,
      n: cell.n,
    };
  });
}

/** A vega-lite spec: FM and CM per Δ, one bar per simulator, with 95% interval rules. */
export function deltaChartSpec(entries: readonly SimulatorSummary[]): Record<string, unknown> {
  const rows = entries.flatMap((entry) =>
    Object.entries(entry.summary.deltas).flatMap(([delta, cell]) =>
      metricRows(entry.name, cell).map((row) => ({ ...row, delta: Number(delta) })),
    ),
  );
  return chartSpec(rows, { field: "delta", title: "Δ (changed fields)" }, "FM and CM per Δ");
}

/** A vega-lite spec: FM and CM per group (paper Figure 5), one bar per simulator. */
export function groupChartSpec(entries: readonly SimulatorSummary[]): Record<string, unknown> {
  const order = Object.keys(GROUP_LABELS) as SampleGroup[];
  const rows = entries.flatMap((entry) =>
    order.flatMap((group) => {
      const cell = entry.summary.groups[group];
      return cell ? metricRows(entry.name, cell).map((row) => ({ ...row, group: GROUP_LABELS[group] })) : [];
    }),
  );
  return chartSpec(
    rows,
    { field: "group", title: "group", sort: order.map((group) => GROUP_LABELS[group]) },
    "FM and CM per group",
  );
}

// ---------------------------------------------------------------------------------------------------
// HTML

/** The three libraries' minified browser builds, inlined into the HTML page. */
export interface VegaLibraries {
  vega: string;
  vegaLite: string;
  vegaEmbed: string;
  /** Versions found, written into the page as a comment. */
  versions?: Record<string, string>;
}

const VEGA_PACKAGES = [
  { name: "vega", key: "vega", major: 5 },
  { name: "vega-lite", key: "vegaLite", major: 5 },
  { name: "vega-embed", key: "vegaEmbed", major: 6 },
] as const;

/**
 * Reads the minified builds of vega@5, vega-lite@5 and vega-embed@6 from node_modules, resolved like
 * `require` from `from` (a file path or URL; default: this module). Throws a TerrariumError naming the
 * missing packages when any is not installed.
 */
export function loadVegaLibraries(from: string | URL = import.meta.url): VegaLibraries {
  const base = typeof from === "string" && !from.startsWith("file:") ? pathToFileURL(from).href : from;
  const require = createRequire(base);
  const found: Partial<Record<"vega" | "vegaLite" | "vegaEmbed", string>> = {};
  const versions: Record<string, string> = {};
  const missing: string[] = [];
  for (const pkg of VEGA_PACKAGES) {
    // Look for the package directory itself: a package's "exports" may hide its package.json and builds.
    const directory = (require.resolve.paths(pkg.name) ?? [])
      .map((modules) => join(modules, pkg.name))
      .find((candidate) => existsSync(join(candidate, "package.json")));
    if (directory === undefined) {
      missing.push(`${pkg.name}@${pkg.major}`);
      continue;
    }
    const manifest = JSON.parse(readFileSync(join(directory, "package.json"), "utf8")) as Record<
      string,
      unknown
    >;
    const candidates = [manifest.jsdelivr, manifest.unpkg, `build/${pkg.name}.min.js`].filter(
      (file): file is string => typeof file === "string" && file.endsWith(".js"),
    );
    const file = candidates.map((name) => join(directory, name)).find((path) => existsSync(path));
    if (file === undefined) {
      missing.push(`${pkg.name}@${pkg.major} (no browser build in ${directory})`);
      continue;
    }
    found[pkg.key] = readFileSync(file, "utf8");
    versions[pkg.name] = typeof manifest.version === "string" ? manifest.version : "unknown";
  }
  if (missing.length > 0 || !found.vega || !found.vegaLite || !found.vegaEmbed) {
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `the HTML report inlines vega, vega-lite and vega-embed so that it works offline, but ${missing.join(", ")} ` +
        "cannot be found in node_modules; install them with: npm install --save-dev vega@5 vega-lite@5 vega-embed@6",
      { details: { missing } },
    );
  }
  return { vega: found.vega, vegaLite: found.vegaLite, vegaEmbed: found.vegaEmbed, versions };
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** JSON that cannot end or confuse a `<script>` element: `<`, `>`, `&` and line separators escaped. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

/** Library source made safe to inline: `</script` and `<!--` only occur inside strings, regexes or comments. */
function inlineScript(source: string): string {
  return source.replace(/<\/(script)/gi, "\\x3C/$1").replace(/<!--/g, "\\x3C!--");
}

function htmlTable(table: Table): string {
  const head = table.headers.map((header) => `<th>${escapeHtml(header)}</th>`).join("");
  const body = table.rows
    .map(
      (row) =>
        `<tr>${row.map((cell, index) => (index === 0 ? `<th>${escapeHtml(cell)}</th>` : `<td>${escapeHtml(cell)}</td>`)).join("")}</tr>`,
    )
    .join("\n");
  return `<h2 id="${table.id}">${escapeHtml(table.title)}</h2>\n<table>\n<thead><tr>${head}</tr></thead>\n<tbody>\n${body}\n</tbody>\n</table>`;
}

export interface HtmlOptions extends TableOptions {
  title?: string;
  /** The libraries to inline; default: read from node_modules with `loadVegaLibraries`. */
  libraries?: VegaLibraries;
  /** Where node_modules is resolved from when `libraries` is not given (a file path or URL). */
  resolveFrom?: string | URL;
}

const STYLE = `body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ccc;padding:0.25rem 0.5rem;text-align:right}
thead th,tbody th{text-align:left;background:#f4f4f4}
.chart{margin:1rem 0 2rem}
p.note{color:#555}`;

const BOOT = `(function () {
  var nodes = document.querySelectorAll("script[data-chart]");
  for (var i = 0; i < nodes.length; i++) {
    var node = nodes[i];
    var target = document.getElementById(node.getAttribute("data-chart"));
    var spec = JSON.parse(node.textContent);
    vegaEmbed(target, spec, { actions: false, renderer: "svg" }).catch(
      (function (element) {
        return function (error) {
          element.textContent = "Chart failed: " + error;
        };
      })(target),
    );
  }
})();`;

/**
 * A single self-contained HTML page: the tables, and vega-lite charts of FM and CM per Δ and per group.
 * The libraries are inlined, so it opens offline; every name and title from the data is escaped.
 */
export function renderHtml(entries: readonly SimulatorSummary[], options: HtmlOptions = {}): string {
  const libraries = options.libraries ?? loadVegaLibraries(options.resolveFrom);
  const ci = options.ci ?? true;
  const title = options.title ?? "EnvSimBench results";
  const charts = [
    { id: "chart-delta", heading: "FM and CM per Δ", spec: deltaChartSpec(entries) },
    { id: "chart-group", heading: "FM and CM per group", spec: groupChartSpec(entries) },
  ];
  const versions = Object.entries(libraries.versions ?? {})
    .map(([name, version]) => `${name}@${version}`)
    .join(" ");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
${STYLE}
</style>
<!-- inlined: ${escapeHtml(versions || "vega, vega-lite, vega-embed").replace(/--/g, "- -")} -->
<script>
${inlineScript(libraries.vega)}
</script>
<script>
${inlineScript(libraries.vegaLite)}
</script>
<script>
${inlineScript(libraries.vegaEmbed)}
</script>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p class="note">${escapeHtml(methodNote(entries, ci, options.mode))}</p>
${buildTables(entries, options).map(htmlTable).join("\n")}
${charts.map((chart) => `<h2>${escapeHtml(chart.heading)}</h2>\n<div class="chart" id="${chart.id}"></div>`).join("\n")}
${charts.map((chart) => `<script type="application/json" data-chart="${chart.id}">${scriptJson(chart.spec)}</script>`).join("\n")}
<script>
${BOOT}
</script>
</body>
</html>
`;
}
