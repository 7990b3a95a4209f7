/**
 * The HTML report of a `terrarium users run` folder: one self-contained file with the run's settings,
 * VISTA's Table 1 (plus goal success and pass^k), the `--fail-under` results, every scenario with its runs
 * as chats (plans, the user's actions, the agent's tool calls, judges' verdicts), and the unique failures
 * linked to the turns where they happened.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve, sep } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import type { AgentToolCallRecord, TurnRecord, UserAction } from "../conversation.js";
import type { UsersSummary } from "../run/summary.js";
import { readTranscripts, type StoredRun, USERS_RUN_SCHEMA_VERSION } from "../run/transcript.js";
import {
  arrayOf,
  displayValue,
  entriesOf,
  escapeHtml as esc,
  failureAnchor,
  finite,
  fixed,
  page,
  runAnchor,
  scenarioAnchor,
  truncate,
  turnAnchor,
} from "./html.js";
import { columnGroups, GROUP_TITLES, passKs, table1Columns } from "./table1.js";

export interface UsersReportOptions {
  /** The page title (default: `terrarium users run: <agent>`). */
  title?: string;
  /** Longest message shown whole (user and agent messages, default 4,000 characters). */
  maxMessageChars?: number;
  /** Longest tool argument, result or state shown whole (default 2,000 characters). */
  maxValueChars?: number;
  /** Agent tool calls shown per reply, and user actions per turn (default 50). */
  maxCallsShown?: number;
  /**
   * The run folder: the screenshots of browser runs (`screenshots/…`, relative to it) are embedded as
   * images, up to `maxScreenshotBytes` in all (default 25 MB); later ones are named, not shown.
   */
  screenshotsRoot?: string;
  maxScreenshotBytes?: number;
}

interface Limits {
  message: number;
  value: number;
  calls: number;
  /** A screenshot as a data: URL, or undefined when it cannot or may not be embedded. */
  image: (relative: string) => string | undefined;
}

/** Reads screenshots under `root` as data: URLs until `budget` bytes; paths outside it are refused. */
function imageLoader(root: string | undefined, budget: number): Limits["image"] {
  let left = budget;
  return (relative) => {
    if (!root || !relative.endsWith(".png")) return undefined;
    const base = resolve(root);
    const file = resolve(base, relative);
    if (!file.startsWith(`${base}${sep}`) || !existsSync(file)) return undefined;
    const size = statSync(file).size;
    if (size > left) return undefined;
    left -= size;
    return `data:image/png;base64,${readFileSync(file).toString("base64")}`;
  };
}

/** Renders the report as one HTML document (no external resource; every text from the data escaped). */
export function renderUsersReport(
  summary: UsersSummary,
  runs: readonly StoredRun[],
  options: UsersReportOptions = {},
): string {
  const limits: Limits = {
    message: options.maxMessageChars ?? 4000,
    value: options.maxValueChars ?? 2000,
    calls: options.maxCallsShown ?? 50,
    image: imageLoader(options.screenshotsRoot, options.maxScreenshotBytes ?? 25 * 1024 * 1024),
  };
  const settings = (summary?.settings ?? {}) as Partial<UsersSummary["settings"]>;
  const title = options.title ?? `terrarium users run: ${String(settings.agent ?? "unknown agent")}`;
  const byId = new Map<string, StoredRun>();
  for (const run of runs) if (!byId.has(String(run.runId))) byId.set(String(run.runId), run);
  const listed = new Set<string>();
  for (const scenario of arrayOf<UsersSummary["scenarios"][number]>(summary?.scenarios)) {
    for (const row of arrayOf<{ runId: string }>(scenario?.runs)) listed.add(String(row?.runId));
  }
  const others = runs.filter((run) => !listed.has(String(run.runId)));

  const body = [
    `<h1>${esc(title)}</h1>`,
    header(summary),
    `<p class="toolbar"><button type="button" data-set-all="open">Expand all</button><button type="button" data-set-all="close">Collapse all</button></p>`,
    metricsTable(summary),
    thresholds(summary),
    scenarios(summary, byId, limits),
    others.length > 0
      ? `<h2 id="other-transcripts">Transcripts not in the summary</h2>\n${others.map((run) => runDetails(run, undefined, limits)).join("\n")}`
      : "",
    failures(summary, limits),
  ]
    .filter((part) => part !== "")
    .join("\n");
  return page(title, body);
}

/** Reads a run folder's `summary.json` and transcripts and renders its report. */
export function renderUsersReportFromFolder(
  dir: string,
  options: UsersReportOptions = {},
): { html: string; summary: UsersSummary } {
  const summary = readUsersSummary(dir);
  const runs = readTranscripts(dir);
  return { html: renderUsersReport(summary, runs, { screenshotsRoot: dir, ...options }), summary };
}

/**
 * A run folder's `summary.json`, checked: present, JSON, a users summary, and of the schema version this
 * terrarium reads. Each error names the file.
 */
export function readUsersSummary(dir: string): UsersSummary {
  const file = join(dir, "summary.json");
  if (!existsSync(file)) {
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `${file}: no summary.json in ${dir} (is it a users run folder? \`terrarium users run\` writes it at the end)`,
      { where: { file } },
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new TerrariumError(
      "PARSE_ERROR",
      `${file}: not valid JSON (${error instanceof Error ? error.message : String(error)})`,
      { where: { file } },
    );
  }
  const invalid = (what: string) =>
    new TerrariumError("INVALID_INPUT", `${file}: ${what}`, { where: { file } });
  if (data === null || typeof data !== "object" || Array.isArray(data))
    throw invalid("not a users run summary (expected a JSON object)");
  const record = data as Record<string, unknown>;
  if (record.kind !== "terrarium.users.summary")
    throw invalid(
      `not a users run summary (kind ${JSON.stringify(record.kind) ?? "missing"}, expected "terrarium.users.summary")`,
    );
  if (record.schemaVersion !== USERS_RUN_SCHEMA_VERSION)
    throw invalid(
      `summary schemaVersion ${JSON.stringify(record.schemaVersion) ?? "missing"}, this terrarium reads ${USERS_RUN_SCHEMA_VERSION}`,
    );
  for (const [field, isArray] of [
    ["settings", false],
    ["metrics", false],
    ["runs", false],
    ["scenarios", true],
  ] as const) {
    const value = record[field];
    const ok = isArray
      ? Array.isArray(value)
      : value !== null && typeof value === "object" && !Array.isArray(value);
    if (!ok) throw invalid(`"${field}" is missing or not ${isArray ? "an array" : "an object"}`);
  }
  return data as UsersSummary;
}

/** The folder's display name (its last path segment). */
export function folderLabel(dir: string): string {
  return basename(dir.replace(/[\\/]+$/, "")) || dir;
}

function header(summary: UsersSummary): string {
  const settings = (summary?.settings ?? {}) as Partial<UsersSummary["settings"]>;
  const counts = (summary?.runs ?? {}) as Partial<UsersSummary["runs"]>;
  const tools = arrayOf<string>(settings.agentToolNames);
  const reasons = entriesOf(counts.endReasons)
    .map(([reason, count]) => {
      const bad = reason === "agent_error" || reason === "user_error" || reason === "unfinished";
      return `<span class="tag${bad ? " bad" : ""}">${esc(reason)}: ${esc(count)}</span>`;
    })
    .join(" ");
  const item = (name: string, value: string) => `<dt>${esc(name)}</dt><dd>${value}</dd>`;
  return `<dl class="meta">
${item("Agent", esc(settings.agent ?? "n/a"))}
${item("Mode", esc(settings.mode ?? "n/a"))}
${item("Seed", esc(settings.seed ?? "n/a"))}
${item("Runs per scenario", esc(settings.runs ?? "n/a"))}
${item("User model", esc(settings.userModel ?? "n/a"))}
${item("Judges", settings.judges === true ? "ran" : settings.judges === false ? "not run" : "n/a")}
${item("Agent tools", tools.length === 0 ? "none declared" : `${tools.length}: ${esc(truncate(tools.join(", "), 1000))}`)}
${item("Coverage over", coverageText(summary))}
${item("Scenarios", esc(arrayOf(summary?.scenarios).length))}
${item("Runs", `${esc(counts.total ?? "n/a")} total, ${esc(counts.completed ?? "n/a")} completed, ${esc(counts.errors ?? "n/a")} ended by an error`)}
${item("End reasons", reasons || "none")}
${item("Errors", errorKindsText(counts.errorKinds))}
</dl>`;
}

/** N (TE's and TDE's tool count) with where it came from, and the samples the coverage metrics saw. */
function coverageText(summary: UsersSummary): string {
  const metrics = (summary?.metrics ?? {}) as Partial<UsersSummary["metrics"]>;
  const coverage = metrics.coverage as Partial<UsersSummary["metrics"]["coverage"]> | undefined;
  if (!coverage || typeof coverage !== "object") return "n/a";
  const sources = arrayOf<string>(
    ((summary?.settings ?? {}) as Partial<UsersSummary["settings"]>).agentTools,
  );
  const from: Record<string, string> = {
    declared: `the agent's declared tools${sources.length > 0 ? ` (--agent-tools ${sources.join(" ")})` : ""}`,
    "declared+called": `the agent's declared tools${sources.length > 0 ? ` (--agent-tools ${sources.join(" ")})` : ""} and ${arrayOf(coverage.undeclaredCalled).length} it called without declaring (${truncate(arrayOf<string>(coverage.undeclaredCalled).join(", "), 300)})`,
    called: "the tools seen called (none declared: pass --agent-tools for the full count)",
    none: "no tool known (none declared, none called)",
  };
  const source = from[String(coverage.toolCountSource)] ?? "n/a";
  const plural = (count: unknown, word: string) =>
    `${esc(fixed(count, 0))} ${word}${finite(count) === 1 ? "" : "s"}`;
  return `N = ${esc(fixed(coverage.toolCount, 0))} tools, from ${esc(source)}; ${plural(coverage.conversations, "conversation")}, ${plural(coverage.calls, "agent tool call")}, ${plural(coverage.transitions, "transition")}; TD over ${plural(coverage.tdGroups, "goal")} with two played conversations or more`;
}

/** Each kind of error with its count and first message, "none", or n/a for a summary without the list. */
function errorKindsText(value: unknown): string {
  if (!Array.isArray(value)) return "n/a";
  const kinds = arrayOf<Record<string, unknown>>(value);
  if (kinds.length === 0) return "none";
  return `<ul>${kinds
    .map(
      (kind) =>
        `<li class="flagged"><span class="tag bad">${esc(kind?.kind)}</span> ${esc(fixed(kind?.count, 0))} run${finite(kind?.count) === 1 ? "" : "s"}; first, <a href="#${esc(runAnchor(kind?.firstRunId))}">${esc(kind?.firstRunId)}</a>: ${esc(truncate(String(kind?.firstMessage ?? ""), 500))}</li>`,
    )
    .join("")}</ul>`;
}

/** "pass^1 over 2 scenarios, pass^2 over 1" of `total`. */
function passScenariosText(summary: UsersSummary): string {
  const counts = ((summary?.metrics ?? {}) as Partial<UsersSummary["metrics"]>).passHatKScenarios;
  const entries = entriesOf(counts).filter(([k]) => /^\d+$/.test(k));
  if (entries.length === 0) return "";
  const total = arrayOf(summary?.scenarios).length;
  return ` (${entries.map(([k, n]) => `pass^${k} over ${fixed(n, 0)} of ${total} scenario${total === 1 ? "" : "s"}`).join(", ")}: a scenario counts for k when it has k judged runs)`;
}

function metricsTable(summary: UsersSummary): string {
  const columns = table1Columns(passKs(summary));
  const groups = columnGroups(columns)
    .map(({ group, span }) => `<th colspan="${span}">${esc(GROUP_TITLES[group])}</th>`)
    .join("");
  const heads = columns.map((column) => `<th class="num">${esc(column.header)}</th>`).join("");
  const cells = columns
    .map(
      (column) =>
        `<td class="num" data-metric="${esc(column.key)}">${esc(column.format(column.read(summary)))}</td>`,
    )
    .join("");
  const metrics = (summary?.metrics ?? {}) as Partial<UsersSummary["metrics"]>;
  const cost = (metrics.cost ?? {}) as Partial<UsersSummary["metrics"]["cost"]>;
  return `<h2 id="metrics">Metrics (Table 1)</h2>
<div class="scroll"><table class="table1">
<thead><tr>${groups}</tr><tr>${heads}</tr></thead>
<tbody><tr>${cells}</tr></tbody>
</table></div>
<p class="muted">Coverage over the agent's tool calls; # Failures are unique agent failures after consolidation; realism is the percentage of user utterances judged consistent; cost is the simulated user's prompt + completion tokens and actions per user turn (${esc(fixed(cost.turns, 0))} turns, ${esc(fixed(cost.promptTokens, 0))} prompt and ${esc(fixed(cost.completionTokens, 0))} completion tokens). Success is the share of played, judged runs whose goal was met (${esc(fixed(metrics.successRuns, 0))} runs); Errored counts the runs it leaves out because of an error (an agent or user error, or a judge that failed). pass^k is the mean over scenarios${esc(passScenariosText(summary))}. n/a: not measured (judges not run, nothing judged; for TE no two consecutive tool calls, for TDE no conversation, for TD no goal with two played conversations, for both entropies fewer than two tools).</p>`;
}

function thresholds(summary: UsersSummary): string {
  const check = summary?.thresholds;
  if (!check || typeof check !== "object") return "";
  const rows = arrayOf<Record<string, unknown>>(check.results)
    .map(
      (result) =>
        `<tr><td>${esc(result?.metric)}</td><td class="num">${esc(result?.threshold)}</td><td class="num">${esc(
          shortNumber(result?.value),
        )}</td><td>${result?.passed === true ? '<span class="pass">pass</span>' : '<span class="fail">fail</span>'}</td><td>${esc(result?.reason ?? "")}</td></tr>`,
    )
    .join("\n");
  return `<h2 id="thresholds">--fail-under</h2>
<p>${check.passed === true ? '<span class="pass">All thresholds passed.</span>' : '<span class="fail">Some thresholds failed.</span>'}</p>
<table><thead><tr><th>Metric</th><th class="num">Threshold</th><th class="num">Value</th><th>Result</th><th>Reason</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
}

/** A number with at most 4 decimals, or `n/a`. */
function shortNumber(value: unknown): string {
  const number = finite(value);
  return number === null ? "n/a" : String(Number(number.toFixed(4)));
}

function passList(value: unknown): string {
  const entries = entriesOf(value).filter(([k]) => /^\d+$/.test(k));
  if (entries.length === 0) return "n/a";
  return entries.map(([k, v]) => `pass^${esc(k)} ${esc(fixed(v, 2))}`).join(", ");
}

function meanStdText(value: unknown): string {
  if (value === null || typeof value !== "object") return "n/a";
  const stat = value as Record<string, unknown>;
  if (finite(stat.mean) === null) return "n/a";
  return `${fixed(stat.mean, 2)} ± ${fixed(stat.std, 2)} (n=${fixed(stat.n, 0)})`;
}

function outcome(success: unknown): string {
  if (success === true) return '<span class="pass">✓ success</span>';
  if (success === false) return '<span class="fail">✗ failed</span>';
  return '<span class="muted">n/a</span>';
}

type ScenarioRow = UsersSummary["scenarios"][number];
type RunRow = ScenarioRow["runs"][number];

function scenarios(summary: UsersSummary, byId: Map<string, StoredRun>, limits: Limits): string {
  const list = arrayOf<ScenarioRow>(summary?.scenarios);
  if (list.length === 0) return `<h2 id="scenarios">Scenarios</h2>\n<p class="muted">No scenarios.</p>`;
  const sections = list.map((scenario) => {
    const rows = arrayOf<RunRow>(scenario?.runs);
    const table = rows
      .map((row) => {
        const judgeErrors = entriesOf(row?.judgeErrors).length;
        return `<tr><td><a href="#${runAnchor(row?.runId)}">${esc(row?.runId)}</a></td><td>${esc(row?.seed)}</td><td>${esc(
          row?.endReason,
        )}${row?.error ? ` <span class="muted">(${esc(truncate(String(row.error), 200))})</span>` : ""}</td><td class="num">${esc(
          fixed(row?.turns, 0),
        )}</td><td class="num">${esc(fixed(row?.userActions, 0))}</td><td class="num">${esc(fixed(row?.agentToolCalls, 0))}</td><td>${outcome(
          row?.success,
        )}</td><td class="num">${esc(fixed(row?.score, 2))}</td><td class="num">${judgeErrors > 0 ? `<span class="fail">${judgeErrors}</span>` : "0"}</td></tr>`;
      })
      .join("\n");
    const details = rows
      .map((row) => {
        const run = byId.get(String(row?.runId));
        if (run) return runDetails(run, row, limits);
        return `<details class="run" id="${runAnchor(row?.runId)}"><summary>${esc(row?.runId)} — transcript not found</summary><p class="muted">${esc(row?.transcript ?? "")} is not in the folder.</p></details>`;
      })
      .join("\n");
    return `<section class="scenario" id="${scenarioAnchor(scenario?.id)}">
<h3>Scenario ${esc(scenario?.id)}</h3>
<p><strong>Goal:</strong> ${esc(truncate(String(scenario?.goal ?? ""), limits.message))}</p>
<p><strong>Success:</strong> ${esc(meanStdText(scenario?.success))} · <strong>pass^k:</strong> ${passList(scenario?.passHatK)}</p>
<table><thead><tr><th>Run</th><th>Seed</th><th>End</th><th class="num">Turns</th><th class="num">User actions</th><th class="num">Agent tool calls</th><th>Goal</th><th class="num">Score</th><th class="num">Judge errors</th></tr></thead>
<tbody>
${table}
</tbody></table>
${details}
</section>`;
  });
  return `<h2 id="scenarios">Scenarios</h2>\n${sections.join("\n")}`;
}

function valueBlock(value: unknown, limits: Limits): string {
  return `<pre>${esc(truncate(displayValue(value), limits.value))}</pre>`;
}

function status(value: unknown): string {
  const text = String(value ?? "n/a");
  return `<span class="tag${text === "ok" ? "" : " bad"}">${esc(text)}</span>`;
}

/** The page a UI action was taken on: embedded when it may be, else its file named. */
function screenshot(path: unknown, limits: Limits): string {
  if (typeof path !== "string" || path === "") return "";
  const url = limits.image(path);
  return url
    ? `<details class="shot"><summary>page before this action</summary><img alt="screenshot ${esc(path)}" src="${url}"></details>`
    : `<div class="muted">screenshot: ${esc(path)}</div>`;
}

function userActions(actions: UserAction[], limits: Limits): string {
  if (actions.length === 0) return "";
  const shown = actions.slice(0, limits.calls);
  const items = shown
    .map(
      (action) =>
        `<li><strong>${esc(action?.tool)}</strong> ${status(action?.status)}${action?.message ? ` ${esc(truncate(String(action.message), limits.value))}` : ""}
<details><summary>arguments and data</summary>${valueBlock(action?.arguments, limits)}${action?.data === undefined ? "" : valueBlock(action.data, limits)}</details>${screenshot(action?.screenshot, limits)}</li>`,
    )
    .join("\n");
  const more =
    actions.length > shown.length
      ? `<li class="muted">… (${actions.length - shown.length} more actions)</li>`
      : "";
  return `<div class="side"><strong>User actions</strong><ol>${items}${more}</ol></div>`;
}

function agentCalls(calls: AgentToolCallRecord[], limits: Limits): string {
  if (calls.length === 0) return "";
  const shown = calls.slice(0, limits.calls);
  const items = shown
    .map(
      (call) =>
        `<li><strong>${esc(call?.tool)}</strong> ${status(call?.status)}
<details><summary>arguments and result</summary><div class="muted">arguments</div>${valueBlock(call?.arguments, limits)}<div class="muted">result</div>${valueBlock(call?.result, limits)}</details></li>`,
    )
    .join("\n");
  const more =
    calls.length > shown.length
      ? `<li class="muted">… (${calls.length - shown.length} more tool calls)</li>`
      : "";
  return `<div class="side"><strong>Agent tool calls</strong><ol>${items}${more}</ol></div>`;
}

function plan(turn: TurnRecord, limits: Limits): string {
  const p = turn.plan;
  if (!p || typeof p !== "object") return "";
  const list = (items: unknown) => {
    const values = arrayOf(items);
    return values.length === 0
      ? '<span class="muted">none</span>'
      : `<ul>${values.map((item) => `<li>${esc(truncate(String(item), limits.value))}</li>`).join("")}</ul>`;
  };
  return `<details class="plan side"><summary>Plan: ${esc(truncate(String(p.nextStep ?? ""), 300))}</summary>
<div><strong>Known</strong>${list(p.known)}</div><div><strong>Needed</strong>${list(p.needed)}</div><div><strong>Next step</strong> ${esc(truncate(String(p.nextStep ?? ""), limits.value))}</div></details>`;
}

type Realism = NonNullable<NonNullable<StoredRun["judgement"]>["realism"]>[number];
type FailureScores = NonNullable<NonNullable<StoredRun["judgement"]>["failures"]>[number];

function realismVerdicts(verdict: Realism | undefined, judged: boolean, limits: Limits): string {
  if (!verdict) {
    return `<div class="side muted">Realism: ${judged ? "not judged for this utterance" : "n/a"}</div>`;
  }
  const aspects = (["goal", "profile", "knowledge"] as const).map((aspect) => {
    const v = (verdict as unknown as Record<string, { consistent?: unknown; reason?: unknown } | undefined>)[
      aspect
    ];
    const mark =
      v?.consistent === true
        ? '<span class="pass">✓</span>'
        : v?.consistent === false
          ? '<span class="fail">✗</span>'
          : '<span class="muted">n/a</span>';
    return `<li${v?.consistent === false ? ' class="flagged"' : ""}>${mark} ${aspect}${v?.reason ? ` — ${esc(truncate(String(v.reason), limits.value))}` : ""}</li>`;
  });
  return `<div class="side"><strong>Realism</strong><ul class="verdicts">${aspects.join("")}</ul></div>`;
}

function failureScores(scores: FailureScores | undefined, judged: boolean, limits: Limits): string {
  if (!scores) return `<div class="side muted">Failure scores: ${judged ? "not scored" : "n/a"}</div>`;
  const flagged = new Set(arrayOf<string>(scores.flagged).map(String));
  const rows = entriesOf(scores.scores)
    .slice(0, 20)
    .map(([dimension, raw]) => {
      const entry = (raw ?? {}) as { score?: unknown; justification?: unknown };
      const bad = flagged.has(dimension);
      return `<tr${bad ? ' class="flagged"' : ""}><td>${bad ? "⚑ " : ""}${esc(dimension)}</td><td class="num">${esc(fixed(entry.score, 0))}</td><td>${esc(truncate(String(entry.justification ?? ""), limits.value))}</td></tr>`;
    })
    .join("");
  return `<div class="side"><strong>Failure scores</strong>${flagged.size > 0 ? ` <span class="tag bad">flagged: ${esc([...flagged].join(", "))}</span>` : ""}
<table><thead><tr><th>Dimension</th><th class="num">Score (0-4)</th><th>Justification</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function turnBlock(run: StoredRun, turn: TurnRecord, limits: Limits): string {
  const judgement = run.judgement;
  const realism = arrayOf<Realism>(judgement?.realism).find((v) => v?.turn === turn.turn);
  const scores = arrayOf<FailureScores>(judgement?.failures).find((v) => v?.turn === turn.turn);
  const usage = (turn.userUsage ?? {}) as Partial<TurnRecord["userUsage"]>;
  const timing = (turn.timing ?? {}) as Partial<TurnRecord["timing"]>;
  const flags = [
    turn.stop ? `<span class="tag">ended: ${esc(turn.stop)}</span>` : "",
    turn.redirected ? '<span class="tag bad">repeated an earlier message: asked for another</span>' : "",
    turn.repeated ? '<span class="tag bad">repeated again: not sent, conversation ended</span>' : "",
  ]
    .filter(Boolean)
    .join(" ");
  const user = String(turn.user ?? "");
  const userBubble = `<div class="bubble user">${user === "" ? '<span class="muted">(empty message)</span>' : esc(truncate(user, limits.message))}</div>`;
  let agentPart = "";
  if (turn.agent) {
    const message = String(turn.agent.message ?? "");
    agentPart = `<div class="row-agent">
${agentCalls(arrayOf<AgentToolCallRecord>(turn.agent.toolCalls), limits)}
<div class="bubble agent">${message === "" ? '<span class="muted">(empty reply)</span>' : esc(truncate(message, limits.message))}</div>
<div class="side muted">agent: ${esc(fixed(turn.agent.latencyMs, 0))} ms${turn.agent.usage ? `, ${esc(fixed(turn.agent.usage.inputTokens, 0))} in / ${esc(fixed(turn.agent.usage.outputTokens, 0))} out tokens` : ""}</div>
${failureScores(scores, judgement !== undefined, limits)}
</div>`;
  }
  if (turn.agentError) {
    agentPart += `<div class="row-agent"><div class="bubble agent error">agent error: ${esc(truncate(String(turn.agentError), limits.message))}</div></div>`;
  }
  return `<div class="turn" id="${turnAnchor(run.runId, turn.turn)}">
<div class="turn-head">Turn ${esc(turn.turn)} · user: ${esc(fixed(usage.inputTokens, 0))} in / ${esc(fixed(usage.outputTokens, 0))} out tokens, ${esc(fixed(usage.calls, 0))} calls · ${esc(fixed(timing.userModelMs, 0))} ms model, ${esc(fixed(timing.toolsMs, 0))} ms tools, ${esc(fixed(timing.agentMs, 0))} ms agent ${flags}</div>
<div class="row-user">
${plan(turn, limits)}
${userActions(arrayOf<UserAction>(turn.actions), limits)}
${userBubble}
${realismVerdicts(realism, judgement !== undefined, limits)}
</div>
${agentPart}
</div>`;
}

function goalChecklist(run: StoredRun, limits: Limits): string {
  const goal = run.judgement?.goal;
  if (!goal) return `<p><strong>Goal:</strong> <span class="muted">n/a (not judged)</span></p>`;
  const allItems = arrayOf<Record<string, unknown>>(goal.items);
  const items = allItems
    .slice(0, 100)
    .map((item) => {
      const state = String(item?.status ?? "");
      const mark =
        state === "success"
          ? '<span class="pass">✓</span>'
          : state === "failed"
            ? '<span class="fail">✗</span>'
            : "?";
      return `<tr${state === "success" ? "" : ' class="flagged"'}><td>${mark} ${esc(state)}</td><td>${esc(truncate(String(item?.description ?? ""), limits.value))}</td><td>${esc(truncate(String(item?.reasoning ?? ""), limits.value))}</td></tr>`;
    })
    .join("");
  return `<div><strong>Goal:</strong> ${outcome(goal.success)} · score ${esc(fixed(goal.score, 2))} · checklist from ${esc(goal.checklistSource ?? "n/a")}
<table><thead><tr><th>Status</th><th>Checklist item</th><th>Reasoning</th></tr></thead><tbody>${items}</tbody></table>${allItems.length > 100 ? `<p class="muted">… (${allItems.length - 100} more items)</p>` : ""}</div>`;
}

function runDetails(run: StoredRun, row: RunRow | undefined, limits: Limits): string {
  const end = run.end;
  const endReason = String(end?.endReason ?? row?.endReason ?? "unfinished");
  const judgeErrors = entriesOf(run.judgement?.errors ?? row?.judgeErrors);
  const success = run.judgement?.goal?.success ?? row?.success ?? null;
  const turns = arrayOf<TurnRecord>(run.turns);
  const summaryLine = `${esc(run.runId)} — ${esc(endReason)} · ${turns.length} turns · ${outcome(success)}${judgeErrors.length > 0 ? ` · <span class="fail">${judgeErrors.length} judge error${judgeErrors.length === 1 ? "" : "s"}</span>` : ""}`;
  const errorsBlock =
    judgeErrors.length === 0
      ? ""
      : `<div><strong>Judge errors</strong><ul>${judgeErrors.map(([judge, message]) => `<li class="flagged"><strong>${esc(judge)}</strong>: ${esc(truncate(String(message), limits.value))}</li>`).join("")}</ul></div>`;
  const endCalls = arrayOf(end?.agentToolCalls);
  const finalState =
    end && end.finalState !== undefined
      ? `<details><summary>Final state</summary>${valueBlock(end.finalState, limits)}</details>`
      : "";
  const endBlock = end
    ? `<div class="end"><strong>End:</strong> <span class="tag${endReason === "agent_error" || endReason === "user_error" ? " bad" : ""}">${esc(endReason)}</span>${end.error ? ` ${esc(truncate(String(end.error), limits.value))}` : ""} · ${esc(fixed(end.turns, 0))} turns · ${endCalls.length} agent tool calls · ${esc(fixed(end.durationMs, 0))} ms · user model ${esc(end.userModel ?? "n/a")}${finalState}</div>`
    : `<div class="end"><strong>End:</strong> <span class="tag bad">unfinished</span> (no end line in the transcript)</div>`;
  return `<details class="run" id="${runAnchor(run.runId)}"><summary>${summaryLine}</summary>
<dl class="meta"><dt>Scenario</dt><dd>${esc(run.scenarioId)}</dd><dt>Seed</dt><dd>${esc(run.seed)}</dd><dt>Started</dt><dd>${esc(run.startedAt)}</dd><dt>Agent</dt><dd>${esc(run.agent)}</dd><dt>Mode</dt><dd>${esc(run.mode)}</dd></dl>
${turns.map((turn) => turnBlock(run, turn, limits)).join("\n")}
${endBlock}
${goalChecklist(run, limits)}
${errorsBlock}
</details>`;
}

function failures(summary: UsersSummary, limits: Limits): string {
  const settings = (summary?.settings ?? {}) as Partial<UsersSummary["settings"]>;
  const list = arrayOf<UsersSummary["failures"][number]>(summary?.failures);
  if (list.length === 0) {
    const why = settings.judges === false ? "n/a: the judges did not run." : "None found.";
    return `<h2 id="failures">Unique failures</h2>\n<p class="muted">${why}</p>`;
  }
  const cards = list.map((failure) => {
    const occurrences = arrayOf<Record<string, unknown>>(failure?.occurrences)
      .map(
        (o) =>
          `<li><a href="#${turnAnchor(o?.runId, o?.turn)}">${esc(o?.runId)}, turn ${esc(o?.turn)}</a> <span class="muted">(${esc(o?.dimension)})</span></li>`,
      )
      .join("");
    return `<div class="failure" id="${failureAnchor(failure?.id)}">
<h3>${esc(truncate(String(failure?.title ?? ""), 500))}</h3>
<p><span class="tag">${esc(failure?.type)}</span><span class="tag bad">${esc(failure?.severity)}</span> <span class="muted">${esc(failure?.id)}</span></p>
<p>${esc(truncate(String(failure?.description ?? ""), limits.message))}</p>
<ul>${occurrences}</ul>
</div>`;
  });
  return `<h2 id="failures">Unique failures (${list.length})</h2>\n${cards.join("\n")}`;
}
