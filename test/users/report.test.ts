import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TerrariumError } from "../../src/core/errors.js";
import type { TurnRecord } from "../../src/users/conversation.js";
import { checkThresholds, parseThresholds } from "../../src/users/metrics/index.js";
import {
  anchorPart,
  compareUsersRunFolders,
  compareUsersRuns,
  readUsersSummary,
  renderUsersReport,
  renderUsersReportFromFolder,
  runAnchor,
  truncate,
  turnAnchor,
} from "../../src/users/report/index.js";
import {
  type StoredRun,
  summarizeRuns,
  type TranscriptLine,
  type UniqueFailureRecord,
  USERS_RUN_SCHEMA_VERSION,
  type UsersRunSettings,
  type UsersSummary,
} from "../../src/users/run/index.js";

const HOSTILE = `I want to return it <script>alert(1)</script> "quoted" 'single' & more`;

const settings: UsersRunSettings = {
  schemaVersion: USERS_RUN_SCHEMA_VERSION,
  agent: "openai-compatible:http://127.0.0.1:9/v1#shop-bot",
  agentTools: [],
  agentToolNames: ["exchange_items", "find_order", "get_order", "return_items"],
  mode: "api-only",
  seed: "42",
  runs: 2,
  scenarios: [
    { id: "return-blender", goal: "Return the blender bought last week" },
    { id: "exchange.shoes", goal: "Exchange the shoes for a larger size" },
  ],
  userModel: "mock:user",
  judges: true,
};

function turn(n: number, user: string, extra: Partial<TurnRecord> = {}): TurnRecord {
  return {
    turn: n,
    plan: { known: ["order #W123"], needed: ["refund method"], nextStep: "ask for the return" },
    actions: [],
    user,
    userUsage: { inputTokens: 1000, outputTokens: 200, calls: 2 },
    timing: { userModelMs: 12, toolsMs: 3, agentMs: 40 },
    ...extra,
  };
}

function reply(
  message: string,
  toolCalls: Array<{ tool: string; arguments: unknown; result: unknown }> = [],
) {
  return {
    message,
    toolCalls: toolCalls.map((call) => ({ ...call, status: "ok" })),
    latencyMs: 40,
  };
}

const consistent = { consistent: true, reason: "fits" };
const scores = (low?: string) => ({
  helpfulness: { score: low === "helpfulness" ? 1 : 4, justification: "answered" },
  coherence: { score: 4, justification: "clear" },
  verbosity: { score: 3, justification: "fine" },
  relevance: { score: 4, justification: "on topic" },
  faithfulness: { score: 4, justification: "grounded" },
});

function header(runId: string, scenarioId: string, index: number) {
  return {
    runId,
    scenarioId,
    index,
    seed: `42/${scenarioId}/${index}`,
    agent: settings.agent,
    mode: "api-only",
    startedAt: "2026-01-01T00:00:00.000Z",
  };
}

const longResult = "x".repeat(5000);

const runs: StoredRun[] = [
  {
    ...header("return-blender.1", "return-blender", 1),
    file: "transcripts/return-blender.1.jsonl",
    turns: [
      turn(1, HOSTILE, {
        actions: [
          {
            kind: "tool",
            tool: "lookup_order",
            arguments: { order: "W123" },
            status: "ok",
            message: "found order W123",
            data: { id: "W123" },
          },
        ],
        agent: reply(`Sure, <b>let me</b> check "that" & see`, [
          { tool: "find_order", arguments: { user: "ann" }, result: { orders: ["W123"] } },
          { tool: "get_order", arguments: { id: "W123" }, result: { blob: longResult } },
        ]),
      }),
      turn(2, "The blender, please.", {
        actions: [
          {
            kind: "tool",
            tool: "recall",
            arguments: { key: "refund" },
            status: "not_found",
            message: "nothing stored",
            data: null,
          },
        ],
        agent: reply("Return started.", [
          { tool: "return_items", arguments: { id: "W123", items: ["blender"] }, result: { ok: true } },
        ]),
      }),
      turn(3, "Thanks!", { stop: "stop" }),
    ],
    end: {
      type: "end",
      endReason: "stop",
      turns: 3,
      agentToolCalls: [
        { tool: "find_order", arguments: { user: "ann" }, status: "ok", result: {} },
        { tool: "get_order", arguments: { id: "W123" }, status: "ok", result: {} },
        { tool: "return_items", arguments: { id: "W123", items: ["blender"] }, status: "ok", result: {} },
      ],
      finalState: { orders: { W123: { status: "return requested" } } },
      userModel: "mock:user",
      durationMs: 900,
    },
    judgement: {
      realism: [
        { turn: 1, goal: consistent, profile: consistent, knowledge: consistent },
        {
          turn: 2,
          goal: consistent,
          profile: consistent,
          knowledge: { consistent: false, reason: "made up a <refund> rule" },
        },
        { turn: 3, goal: consistent, profile: consistent, knowledge: consistent },
      ],
      failures: [
        { turn: 1, scores: scores(), flagged: [] },
        { turn: 2, scores: scores("helpfulness"), flagged: ["helpfulness"] },
      ],
      goal: {
        success: true,
        score: 1,
        items: [
          { description: "return requested for the blender", status: "success", reasoning: "state shows it" },
        ],
        checklistSource: "scenario",
      },
      errors: {},
    },
  },
  {
    ...header("return-blender.2", "return-blender", 2),
    file: "transcripts/return-blender.2.jsonl",
    turns: [
      turn(1, "Return my blender.", {
        actions: [
          {
            kind: "tool",
            tool: "lookup_order",
            arguments: { order: "W123" },
            status: "ok",
            message: "found",
            data: {},
          },
        ],
        agent: reply("I cannot find that order.", [
          { tool: "find_order", arguments: { user: "bob" }, result: { orders: [] } },
        ]),
      }),
      turn(2, "OK, bye", { stop: "stop" }),
    ],
    end: {
      type: "end",
      endReason: "stop",
      turns: 2,
      agentToolCalls: [{ tool: "find_order", arguments: { user: "bob" }, status: "ok", result: {} }],
      userModel: "mock:user",
      durationMs: 500,
    },
    judgement: {
      failures: [{ turn: 1, scores: scores("helpfulness"), flagged: ["helpfulness"] }],
      goal: {
        success: false,
        score: 0,
        items: [
          { description: "return requested for the blender", status: "failed", reasoning: "no return" },
        ],
        checklistSource: "scenario",
      },
      errors: { realism: "realism judge: model timed out after 3 attempts <oops>" },
    },
  },
  {
    ...header("exchange.shoes.1", "exchange.shoes", 1),
    file: "transcripts/exchange.shoes.1.jsonl",
    turns: [
      turn(1, "I need a bigger size.", {
        agent: reply("Which order?", [{ tool: "find_order", arguments: { user: "cy" }, result: {} }]),
      }),
      turn(2, "Order W9.", { agentError: "HTTP 500 from the agent" }),
    ],
    end: {
      type: "end",
      endReason: "agent_error",
      error: "agent failed: HTTP 500",
      turns: 2,
      agentToolCalls: [{ tool: "find_order", arguments: { user: "cy" }, status: "ok", result: {} }],
      userModel: "mock:user",
      durationMs: 300,
    },
    judgement: {
      realism: [{ turn: 1, goal: consistent, profile: consistent, knowledge: consistent }],
      errors: {},
    },
  },
  {
    ...header("exchange.shoes.2", "exchange.shoes", 2),
    file: "transcripts/exchange.shoes.2.jsonl",
    turns: [
      turn(1, "Bigger shoes please.", {
        agent: reply("Done.", [
          { tool: "find_order", arguments: { user: "di" }, result: {} },
          { tool: "exchange_items", arguments: { id: "W9" }, result: {} },
        ]),
      }),
      turn(2, "Great.", { agent: reply("Anything else?") }),
    ],
    end: {
      type: "end",
      endReason: "max_turns",
      turns: 2,
      agentToolCalls: [
        { tool: "find_order", arguments: { user: "di" }, status: "ok", result: {} },
        { tool: "exchange_items", arguments: { id: "W9" }, status: "ok", result: {} },
      ],
      userModel: "mock:user",
      durationMs: 400,
    },
    judgement: {
      realism: [
        { turn: 1, goal: consistent, profile: consistent, knowledge: consistent },
        {
          turn: 2,
          goal: consistent,
          profile: { consistent: false, reason: "too formal" },
          knowledge: consistent,
        },
      ],
      failures: [
        { turn: 1, scores: scores(), flagged: [] },
        { turn: 2, scores: scores(), flagged: [] },
      ],
      goal: { success: true, score: 1, items: [], checklistSource: "scenario" },
      errors: {},
    },
  },
];

const failures: UniqueFailureRecord[] = [
  {
    id: "F1",
    type: "order_lookup",
    title: "Agent cannot find existing orders",
    description: `Says the order does not exist <img src=x onerror=alert(1)>`,
    severity: "high",
    occurrences: [
      { runId: "return-blender.1", scenarioId: "return-blender", turn: 2, dimension: "helpfulness" },
      { runId: "return-blender.2", scenarioId: "return-blender", turn: 1, dimension: "helpfulness" },
    ],
  },
];

function makeSummary(): UsersSummary {
  const summary = summarizeRuns(settings, runs, failures);
  summary.thresholds = checkThresholds(
    summary.metrics,
    parseThresholds("tde=0.5,realism.goal=99,success=0.9"),
  );
  return summary;
}

/** The cells of the report's Table 1, by metric key. */
function table1Cells(html: string): Record<string, string> {
  const table = html.slice(html.indexOf('<table class="table1">'));
  const body = table.slice(0, table.indexOf("</table>"));
  const cells: Record<string, string> = {};
  for (const match of body.matchAll(/<td class="num[^"]*" data-metric="([^"]+)">(?:<b>)?([^<]*)/g)) {
    cells[match[1] as string] = match[2] as string;
  }
  return cells;
}

const folders: string[] = [];
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

function writeFolder(summary: unknown, stored: StoredRun[] = runs): string {
  const dir = mkdtempSync(join(tmpdir(), "terrarium-users-report-"));
  folders.push(dir);
  mkdirSync(join(dir, "transcripts"));
  for (const run of stored) {
    const { turns, end, judgement, file: _file, ...head } = run;
    const lines: TranscriptLine[] = [
      { type: "run", schemaVersion: USERS_RUN_SCHEMA_VERSION, ...head },
      ...turns.map((t) => ({ type: "turn" as const, ...t })),
      ...(end ? [end] : []),
      ...(judgement ? [{ type: "judgement" as const, ...judgement }] : []),
    ];
    writeFileSync(
      join(dir, "transcripts", `${run.runId}.jsonl`),
      `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`,
    );
  }
  if (summary !== undefined) {
    writeFileSync(
      join(dir, "summary.json"),
      typeof summary === "string" ? summary : JSON.stringify(summary, null, 2),
    );
  }
  return dir;
}

describe("renderUsersReport", () => {
  const summary = makeSummary();
  const html = renderUsersReport(summary, runs);

  it("shows Table 1 with the paper's columns, goal success and pass^k", () => {
    const cells = table1Cells(html);
    expect(Object.keys(cells)).toEqual([
      "te",
      "tde",
      "td",
      "failures",
      "realism.goal",
      "realism.profile",
      "realism.knowledge",
      "tokensPerTurn",
      "actionsPerTurn",
      "success",
      "errored",
      "passHatK.1",
      "passHatK.2",
    ]);
    expect(cells.te).toBe(summary.metrics.te?.toFixed(2));
    expect(cells.tde).toBe(summary.metrics.tde?.toFixed(2));
    expect(cells.td).toBe(summary.metrics.td?.toFixed(2));
    expect(cells.failures).toBe("1");
    // 6 judged utterances: goal 6/6, profile 5/6, knowledge 5/6.
    expect(cells["realism.goal"]).toBe("100.00");
    expect(cells["realism.profile"]).toBe("83.33");
    expect(cells["realism.knowledge"]).toBe("83.33");
    // Every one of the 9 turns used 1000 + 200 tokens; 3 user actions over 9 turns.
    expect(cells.tokensPerTurn).toBe("1.2k");
    expect(cells.actionsPerTurn).toBe("0.33");
    // Judged runs without an error: success, failure, success.
    expect(cells.success).toBe("0.67");
    // pass^1: mean of 0.5 (return) and 1 (exchange, its agent_error run left out); pass^2: return only.
    expect(cells["passHatK.1"]).toBe("0.75");
    expect(cells["passHatK.2"]).toBe("0.00");
    for (const header of ["Coverage (0-1)", "Realism (%)", "Cost (per turn)", "# Failures", "Knowledge"]) {
      expect(html).toContain(header);
    }
  });

  it("has the run's header: agent, mode, seed, runs, user model, counts and end reasons", () => {
    expect(html).toContain("<dt>Agent</dt><dd>openai-compatible:http://127.0.0.1:9/v1#shop-bot</dd>");
    expect(html).toContain("<dt>Mode</dt><dd>api-only</dd>");
    expect(html).toContain("<dt>Seed</dt><dd>42</dd>");
    expect(html).toContain("<dt>Runs per scenario</dt><dd>2</dd>");
    expect(html).toContain("<dt>User model</dt><dd>mock:user</dd>");
    expect(html).toContain("4 total, 3 completed, 1 ended by an error");
    expect(html).toContain('<span class="tag">stop: 2</span>');
    expect(html).toContain('<span class="tag bad">agent_error: 1</span>');
    expect(html).toContain('<span class="tag">max_turns: 1</span>');
  });

  it("shows the --fail-under results", () => {
    expect(html).toContain('<h2 id="thresholds">--fail-under</h2>');
    expect(html).toContain("Some thresholds failed.");
    expect(html).toMatch(
      /<td>success<\/td><td class="num">0.9<\/td><td class="num">0.666[0-9]*<\/td><td><span class="fail">fail/,
    );
    expect(html).toMatch(
      /<td>realism.goal<\/td><td class="num">99<\/td><td class="num">100<\/td><td><span class="pass">pass/,
    );
  });

  it("has per-scenario sections with success mean ± std and pass^k", () => {
    expect(html).toContain(
      `<section class="scenario" id="scenario-return_2d_blender">`.replace(/_2d_/g, "-2d-"),
    );
    expect(html).toContain("<strong>Success:</strong> 0.50 ± 0.71 (n=2)");
    expect(html).toContain("pass^1 0.50, pass^2 0.00");
    expect(html).toContain(`id="scenario-exchange-2e-shoes"`);
    // The agent_error run is left out of the exchange scenario's success.
    expect(html).toContain("<strong>Success:</strong> 1.00 ± 0.00 (n=1)");
  });

  it("renders each run as an expandable chat with anchors per run and turn", () => {
    for (const run of runs) {
      expect(html).toContain(`<details class="run" id="${runAnchor(run.runId)}">`);
      for (const t of run.turns) expect(html).toContain(`id="${turnAnchor(run.runId, t.turn)}"`);
    }
    expect(runAnchor("return-blender.1")).toBe("run-return-2d-blender-2e-1");
    expect(turnAnchor("return-blender.1", 2)).toBe("run-return-2d-blender-2e-1-turn-2");
    expect(html).toContain('<div class="bubble user">The blender, please.</div>');
    expect(html).toContain('<div class="bubble agent">Return started.</div>');
    // Plans, user actions (with a non-ok status), agent tool calls with arguments and results.
    expect(html).toContain("<summary>Plan: ask for the return</summary>");
    expect(html).toContain('<strong>lookup_order</strong> <span class="tag">ok</span> found order W123');
    expect(html).toContain('<strong>recall</strong> <span class="tag bad">not_found</span>');
    expect(html).toContain("<strong>return_items</strong>");
    expect(html).toContain("&quot;items&quot;: [\n    &quot;blender&quot;\n  ]");
    // The long tool result is cut with a marker.
    expect(html).toMatch(/x{100}… \(\d+ more chars\)/);
    expect(html).not.toContain("x".repeat(2100));
    // End reasons, the agent error, stop flags.
    expect(html).toContain('<span class="tag bad">agent_error</span> agent failed: HTTP 500');
    expect(html).toContain("agent error: HTTP 500 from the agent");
    expect(html).toContain('<span class="tag">ended: stop</span>');
    expect(html).toContain('<span class="tag">max_turns</span>');
  });

  it("shows the judges' verdicts: realism, failure scores, goal checklist and judge errors", () => {
    expect(html).toContain(
      '<li class="flagged"><span class="fail">✗</span> knowledge — made up a &lt;refund&gt; rule</li>',
    );
    expect(html).toContain('<li><span class="pass">✓</span> goal — fits</li>');
    expect(html).toContain('<tr class="flagged"><td>⚑ helpfulness</td><td class="num">1</td>');
    expect(html).toContain('<span class="tag bad">flagged: helpfulness</span>');
    expect(html).toContain("return requested for the blender");
    expect(html).toContain("checklist from scenario");
    expect(html).toContain(
      '<li class="flagged"><strong>realism</strong>: realism judge: model timed out after 3 attempts &lt;oops&gt;</li>',
    );
    // Run 2's realism judge failed: its utterances have no verdict.
    expect(html).toContain("Realism: not judged for this utterance");
    // The agent_error run was not goal-judged.
    expect(html).toContain("n/a (not judged)");
  });

  it("lists the unique failures with links to the turns where they happened", () => {
    expect(html).toContain('<h2 id="failures">Unique failures (1)</h2>');
    expect(html).toContain('<div class="failure" id="failure-F1">');
    expect(html).toContain('<span class="tag">order_lookup</span><span class="tag bad">high</span>');
    expect(html).toContain(`<a href="#${turnAnchor("return-blender.1", 2)}">return-blender.1, turn 2</a>`);
    expect(html).toContain(`<a href="#${turnAnchor("return-blender.2", 1)}">return-blender.2, turn 1</a>`);
    expect(html).toContain("Says the order does not exist &lt;img src=x onerror=alert(1)&gt;");
  });

  it("escapes every text from the transcripts and keeps scripts out", () => {
    expect(html).toContain(
      "I want to return it &lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &#39;single&#39; &amp; more",
    );
    expect(html).toContain("Sure, &lt;b&gt;let me&lt;/b&gt; check &quot;that&quot; &amp; see");
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("<img src=x");
    // One script only: the static one, allowed by its hash; no external resource.
    expect(html.match(/<script/g)?.length).toBe(1);
    expect(html).toMatch(
      /Content-Security-Policy" content="default-src 'none'; [^"]*script-src 'sha256-[A-Za-z0-9+/=]+'/,
    );
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it("sanitises anchors derived from hostile run ids", () => {
    const evil = `x" onmouseover="alert(1)`;
    const base = runs[0] as StoredRun;
    const hostileRun: StoredRun = { ...base, runId: evil, scenarioId: "return-blender" };
    const hostileSummary = summarizeRuns(settings, [hostileRun], null);
    const page = renderUsersReport(hostileSummary, [hostileRun]);
    expect(anchorPart(evil)).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(anchorPart("a.b")).not.toBe(anchorPart("a_b"));
    expect(anchorPart("a-b")).not.toBe(anchorPart("a-2d-b".replace(/-/g, "")));
    expect(page).toContain(`id="${runAnchor(evil)}"`);
    expect(page).not.toContain(`" onmouseover="`);
    expect(page).toContain("x&quot; onmouseover=&quot;alert(1)");
  });

  it("shows n/a where judges did not run", () => {
    const plain = runs.map(({ judgement: _judgement, ...run }) => run as StoredRun);
    const unjudged = summarizeRuns({ ...settings, judges: false }, plain, null);
    const page = renderUsersReport(unjudged, plain, { title: "No judges <here>" });
    const cells = table1Cells(page);
    expect(cells.failures).toBe("n/a");
    expect(cells["realism.goal"]).toBe("n/a");
    expect(cells["realism.profile"]).toBe("n/a");
    expect(cells["realism.knowledge"]).toBe("n/a");
    expect(cells.success).toBe("n/a");
    expect(cells.tokensPerTurn).toBe("1.2k");
    expect(page).toContain("<title>No judges &lt;here&gt;</title>");
    expect(page).toContain("<strong>Success:</strong> n/a");
    expect(page).toContain("Realism: n/a");
    expect(page).toContain("n/a: the judges did not run.");
    expect(page).not.toContain('id="thresholds"');
  });

  it("says so when a run of the summary has no transcript, and shows transcripts the summary lacks", () => {
    const page = renderUsersReport(makeSummary(), [
      ...runs.slice(1),
      { ...(runs[0] as StoredRun), runId: "stray.9", scenarioId: "stray" },
    ]);
    expect(page).toContain(
      `<details class="run" id="${runAnchor("return-blender.1")}"><summary>return-blender.1 — transcript not found</summary>`,
    );
    expect(page).toContain("transcripts/return-blender.1.jsonl is not in the folder.");
    expect(page).toContain('<h2 id="other-transcripts">Transcripts not in the summary</h2>');
    expect(page).toContain(`id="${runAnchor("stray.9")}"`);
  });

  it("keeps the file bounded with long messages", () => {
    const huge = "y".repeat(200_000);
    const base = runs[0] as StoredRun;
    const big: StoredRun = {
      ...base,
      turns: [
        turn(1, huge, { agent: reply(huge, [{ tool: "get_order", arguments: { huge }, result: huge }]) }),
      ],
    };
    const page = renderUsersReport(summarizeRuns(settings, [big], null), [big]);
    expect(page.length).toBeLessThan(40_000);
    expect(page).toContain(`… (${200_000 - 4000} more chars)`);
    expect(truncate("abcdef", 3)).toBe("abc… (3 more chars)");
    expect(truncate("abc", 3)).toBe("abc");
  });
});

describe("renderUsersReportFromFolder", () => {
  it("reads summary.json and the transcripts", () => {
    const summary = makeSummary();
    const dir = writeFolder(summary);
    const result = renderUsersReportFromFolder(dir);
    expect(result.summary).toEqual(JSON.parse(JSON.stringify(summary)));
    expect(result.html).toContain(`id="${turnAnchor("exchange.shoes.1", 2)}"`);
    expect(result.html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(table1Cells(result.html)["realism.profile"]).toBe("83.33");
  });

  it("names the file when summary.json is missing, not JSON, or of another schema version", () => {
    const missing = writeFolder(undefined);
    expect(() => renderUsersReportFromFolder(missing)).toThrow(TerrariumError);
    expect(() => renderUsersReportFromFolder(missing)).toThrow(join(missing, "summary.json"));
    expect(() => renderUsersReportFromFolder(missing)).toThrow(/no summary\.json/);

    const broken = writeFolder("{ not json");
    expect(() => readUsersSummary(broken)).toThrow(`${join(broken, "summary.json")}: not valid JSON`);

    const future = writeFolder({ ...makeSummary(), schemaVersion: USERS_RUN_SCHEMA_VERSION + 1 });
    expect(() => readUsersSummary(future)).toThrow(
      `${join(future, "summary.json")}: summary schemaVersion ${USERS_RUN_SCHEMA_VERSION + 1}, this terrarium reads ${USERS_RUN_SCHEMA_VERSION}`,
    );

    const other = writeFolder({ schemaVersion: 1, kind: "terrarium.something" });
    expect(() => readUsersSummary(other)).toThrow(/not a users run summary/);

    const partial = writeFolder({ schemaVersion: 1, kind: "terrarium.users.summary", settings: {} });
    expect(() => readUsersSummary(partial)).toThrow(/"metrics" is missing/);
  });
});

describe("compareUsersRuns", () => {
  const hybrid = makeSummary();
  const other: UsersSummary = structuredClone(hybrid);
  other.settings.userModel = "mock:other-user";
  other.metrics.te = (hybrid.metrics.te ?? 0) + 0.2;
  other.metrics.failures = 3;
  other.metrics.realism = { goal: null, profile: null, knowledge: null };
  other.metrics.tokensPerTurn = 950;
  other.metrics.success = 0.5;
  other.metrics.passHatK = { "1": 0.75 };
  other.scenarios = [
    { ...(hybrid.scenarios[0] as UsersSummary["scenarios"][number]), success: { n: 2, mean: 1, std: 0 } },
    { ...(hybrid.scenarios[1] as UsersSummary["scenarios"][number]), id: "only-here" },
  ];

  it("puts the runs side by side in Table 1's shape and marks the better value per column", () => {
    const result = compareUsersRuns([
      { label: "hybrid", summary: hybrid },
      { label: "ui-only", summary: other },
    ]);
    expect(result.rows.map((row) => row.label)).toEqual(["hybrid", "ui-only"]);
    const [a, b] = result.rows as [(typeof result.rows)[number], (typeof result.rows)[number]];
    // Higher is better for coverage, failures, realism, success; lower for tokens.
    expect(b.best).toContain("te");
    expect(a.best).not.toContain("te");
    expect(b.best).toContain("failures");
    expect(a.best).toContain("realism.goal");
    expect(b.best).not.toContain("realism.goal");
    expect(b.cells["realism.goal"]).toBe("n/a");
    expect(b.best).toContain("tokensPerTurn");
    expect(b.cells.tokensPerTurn).toBe("950.0");
    expect(a.best).toContain("success");
    // Same value: both marked.
    expect(a.best).toContain("actionsPerTurn");
    expect(b.best).toContain("actionsPerTurn");
    expect(a.best).toContain("passHatK.1");
    expect(b.best).toContain("passHatK.1");
    // pass^2 only the first run reports.
    expect(b.cells["passHatK.2"]).toBe("n/a");
    expect(a.best).toContain("passHatK.2");

    // Shared scenarios only, success side by side.
    expect(result.scenarios.map((s) => s.scenarioId)).toEqual(["return-blender"]);
    expect(result.scenarios[0]?.cells).toEqual(["0.50 ± 0.71 (n=2)", "1.00 ± 0.00 (n=2)"]);
    expect(result.scenarios[0]?.best).toEqual([false, true]);
    expect(result.notes.some((note) => note.includes("user model"))).toBe(true);

    // The terminal table: fixed width, `*` on the better values.
    const lines = result.text.split("\n");
    const head = lines.find((line) => line.startsWith("Run "));
    const rowA = lines.find((line) => line.startsWith("hybrid "));
    const rowB = lines.find((line) => line.startsWith("ui-only "));
    expect(head).toBeDefined();
    expect(head).toContain("# Failures");
    expect(head).toContain("Tokens ↓");
    expect(rowA).toContain("100.00*");
    expect(rowB).toContain("n/a ");
    expect(rowB).toContain("950.0*");
    expect(rowA).toContain("1.2k ");
    expect(rowB).toMatch(/\b3\*/);
    expect(rowA?.length).toBe(rowB?.length);
    const column = (head as string).indexOf("TDE");
    expect(column).toBeGreaterThan(0);
    expect(result.text).toContain("1.00 ± 0.00 (n=2)*");

    // HTML: bold best values, escaped labels.
    expect(result.html).toContain('<td class="num best" data-metric="tokensPerTurn"><b>950.0</b></td>');
    expect(result.html).toContain('<td class="num" data-metric="tokensPerTurn">1.2k</td>');
    expect(result.html).toContain('<td class="num best"><b>1.00 ± 0.00 (n=2)</b></td>');
    expect(result.html).not.toContain("<script");
  });

  it("escapes labels and keeps control characters out of the terminal table", () => {
    const result = compareUsersRuns([
      { label: "<b>x</b>\u001b[31m", summary: hybrid },
      { label: "<b>x</b>\u001b[31m", summary: hybrid },
    ]);
    expect(result.rows.map((row) => row.label)).toEqual(["<b>x</b>\u001b[31m", "<b>x</b>\u001b[31m (2)"]);
    expect(result.html).toContain("&lt;b&gt;x&lt;/b&gt;");
    expect(result.text).not.toContain("\u001b");
    // Identical runs: every measured value is a tie, so both rows are marked.
    expect(result.rows[0]?.best).toEqual(result.rows[1]?.best);
  });

  it("refuses fewer than two runs", () => {
    expect(() => compareUsersRuns([{ label: "one", summary: hybrid }])).toThrow(/at least 2 runs/);
    expect(() => compareUsersRuns([])).toThrow(TerrariumError);
  });

  it("compares run folders labelled by their names", () => {
    const first = writeFolder(hybrid);
    const second = writeFolder(other);
    const result = compareUsersRunFolders([first, second]);
    expect(result.rows[0]?.label).toBe(first.split("/").pop());
    expect(result.rows[1]?.best).toContain("te");
    expect(() => compareUsersRunFolders([first])).toThrow(/at least 2 run folders/);
  });
});
