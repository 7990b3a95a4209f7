import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { printTableRow } from "../../src/cli/commands/users/shared.js";
import type { AgentToolCallRecord, EndReason, TurnRecord } from "../../src/users/conversation.js";
import { renderUsersReport } from "../../src/users/report/index.js";
import {
  errorKindsOf,
  type RunJudgement,
  type StoredRun,
  summarizeRuns,
  USERS_RUN_SCHEMA_VERSION,
  type UsersRunSettings,
} from "../../src/users/run/index.js";

/**
 * What a users run folder's summary says when runs errored, when nothing happened, and how many runs or
 * scenarios each number stands for (issue 22: runs that never lie).
 */

const TOOLS = ["cancel_order", "find_order", "get_order", "return_items"];

function settings(overrides: Partial<UsersRunSettings> = {}): UsersRunSettings {
  return {
    schemaVersion: USERS_RUN_SCHEMA_VERSION,
    agent: "module:agent.mjs#reply",
    agentTools: ["tools.json"],
    agentToolNames: TOOLS,
    mode: "api-only",
    seed: "7",
    runs: 2,
    scenarios: [
      { id: "refund", goal: "Get a refund" },
      { id: "cancel", goal: "Cancel the order" },
    ],
    userModel: "mock:user",
    judges: true,
    ...overrides,
  };
}

const call = (tool: string, args: unknown = {}): AgentToolCallRecord => ({
  tool,
  arguments: args,
  status: "ok",
  result: null,
});

function turn(n: number, calls: AgentToolCallRecord[] | "agent failed"): TurnRecord {
  return {
    turn: n,
    actions: [],
    user: `message ${n}`,
    userUsage: { inputTokens: 100, outputTokens: 10, calls: 1 },
    timing: { userModelMs: 1, toolsMs: 0, agentMs: 1 },
    ...(calls === "agent failed"
      ? { agentError: "the agent gave no answer" }
      : { agent: { message: "ok", toolCalls: calls, latencyMs: 1 } }),
  };
}

const goal = (success: boolean): RunJudgement["goal"] => ({
  success,
  score: success ? 1 : 0,
  items: [],
  checklistSource: "scenario",
});

function run(
  scenarioId: string,
  index: number,
  options: {
    turns?: TurnRecord[];
    endReason?: EndReason;
    error?: string;
    judgement?: RunJudgement;
  } = {},
): StoredRun {
  const turns = options.turns ?? [];
  return {
    runId: `${scenarioId}.${index}`,
    scenarioId,
    index,
    seed: `7/${scenarioId}/${index}`,
    agent: "module:agent.mjs#reply",
    mode: "api-only",
    startedAt: "2025-01-01T00:00:00.000Z",
    turns,
    end: {
      type: "end",
      endReason: options.endReason ?? "stop",
      ...(options.error ? { error: options.error } : {}),
      turns: turns.length,
      agentToolCalls: turns.flatMap((t) => t.agent?.toolCalls ?? []),
      userModel: "mock:user",
      durationMs: 5,
    },
    ...(options.judgement ? { judgement: options.judgement } : {}),
    file: `transcripts/${scenarioId}.${index}.jsonl`,
  };
}

const refused = (scenarioId: string, index: number) =>
  run(scenarioId, index, {
    endReason: "agent_error",
    error: `the agent could not start: connection refused (${scenarioId}.${index})`,
  });

function tableOf(summary: ReturnType<typeof summarizeRuns>): string {
  const stdout = new PassThrough();
  const chunks: Buffer[] = [];
  stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
  printTableRow({ stdout, stderr: new PassThrough(), stdin: Readable.from([]) }, summary, "out");
  return Buffer.concat(chunks).toString("utf8");
}

/** The cells of the CLI's box table, row by row (header first). */
function tableRows(text: string): string[][] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("│"))
    .map((line) =>
      line
        .split("│")
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

/** The report's Table 1 cells by metric key. */
function table1Cells(html: string): Record<string, string> {
  const table = html.slice(html.indexOf('<table class="table1">'));
  const body = table.slice(0, table.indexOf("</table>"));
  const cells: Record<string, string> = {};
  for (const match of body.matchAll(/<td class="num[^"]*" data-metric="([^"]+)">([^<]*)/g))
    cells[match[1] as string] = match[2] as string;
  return cells;
}

describe("a folder where no conversation happened", () => {
  const stored = [refused("refund", 1), refused("refund", 2), refused("cancel", 1), refused("cancel", 2)];
  const summary = summarizeRuns(settings(), stored, []);

  it("reports TE, TDE and TD as null, never 0, and says what they were computed over", () => {
    expect(summary.metrics.te).toBeNull();
    expect(summary.metrics.tde).toBeNull();
    expect(summary.metrics.td).toBeNull();
    expect(summary.metrics.coverage).toEqual({
      toolCount: 4,
      toolCountSource: "declared",
      declaredTools: 4,
      undeclaredCalled: [],
      conversations: 0,
      calls: 0,
      transitions: 0,
      tdGroups: 0,
    });
    expect(summary.metrics.success).toBeNull();
    expect(summary.metrics.successRuns).toBe(0);
    expect(summary.metrics.errored).toBe(4);
    expect(summary.metrics.passHatK).toEqual({});
    expect(summary.metrics.passHatKScenarios).toEqual({});
  });

  it("lists the kinds of error with their count and first message", () => {
    expect(summary.runs).toEqual({
      total: 4,
      completed: 0,
      errors: 4,
      endReasons: { agent_error: 4 },
      errorKinds: [
        {
          kind: "agent_error",
          count: 4,
          firstMessage: "the agent could not start: connection refused (refund.1)",
          firstRunId: "refund.1",
        },
      ],
    });
  });

  it("prints n/a in the CLI table, with the errored runs beside success", () => {
    const text = tableOf(summary);
    const [head, row] = tableRows(text);
    expect(head).toEqual([
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
    expect(row).toEqual(["n/a", "n/a", "n/a", "0", "n/a", "n/a", "n/a", "0", "0.00", "n/a", "4"]);
    expect(text).not.toContain("0.000");
    expect(text).toContain("\ncoverage: N = 4 tools (declared), 0 conversations, 0 agent tool calls\n");
  });

  it("shows n/a in the report, the error kinds and where N came from", () => {
    const html = renderUsersReport(summary, stored);
    const cells = table1Cells(html);
    expect(cells).toMatchObject({ te: "n/a", tde: "n/a", td: "n/a", success: "n/a", errored: "4" });
    expect(html).toContain(
      "N = 4 tools, from the agent&#39;s declared tools (--agent-tools tools.json); 0 conversations, 0 agent tool calls, 0 transitions; TD over 0 goals",
    );
    expect(html).toContain(
      '<span class="tag bad">agent_error</span> 4 runs; first, <a href="#run-refund-2e-1">refund.1</a>: the agent could not start: connection refused (refund.1)',
    );
  });
});

describe("coverage when conversations happened", () => {
  it("gives a real 0 for an agent that talked but called no tool; TE and TD stay null without anything to measure", () => {
    const summary = summarizeRuns(
      settings({ runs: 1 }),
      [
        run("refund", 1, { turns: [turn(1, [])], judgement: { goal: goal(true), errors: {} } }),
        run("cancel", 1, { turns: [turn(1, [])], judgement: { goal: goal(false), errors: {} } }),
      ],
      [],
    );
    expect(summary.metrics.tde).toBe(0);
    // No run with two consecutive calls: no outgoing transition to measure.
    expect(summary.metrics.te).toBeNull();
    // --runs 1: no goal has two runs to compare.
    expect(summary.metrics.td).toBeNull();
    expect(summary.metrics.coverage).toMatchObject({ conversations: 2, calls: 0, tdGroups: 0 });
    expect(summary.metrics.success).toBe(0.5);
    expect(summary.metrics.errored).toBe(0);
  });

  it("normalises by the declared tools, and counts tools called without being declared", () => {
    const stored = [
      run("refund", 1, { turns: [turn(1, [call("find_order"), call("return_items")])] }),
      run("refund", 2, { turns: [turn(1, [call("find_order"), call("lookup_faq")])] }),
    ];
    const declared = summarizeRuns(settings({ judges: false }), stored, null);
    // 5 tools (4 declared + lookup_faq); calls find_order×2, return_items, lookup_faq.
    expect(declared.metrics.coverage).toMatchObject({
      toolCount: 5,
      toolCountSource: "declared+called",
      declaredTools: 4,
      undeclaredCalled: ["lookup_faq"],
      conversations: 2,
      calls: 4,
      transitions: 2,
      tdGroups: 1,
    });
    expect(declared.metrics.tde).toBeCloseTo(1.5 / Math.log2(5), 12);
    // Row find_order: {return_items: 1, lookup_faq: 1} -> 1 bit / log2 5.
    expect(declared.metrics.te).toBeCloseTo(1 / Math.log2(5), 12);
    expect(declared.metrics.td).toBeCloseTo(0.5, 12);

    const undeclared = summarizeRuns(
      settings({ judges: false, agentTools: [], agentToolNames: [] }),
      stored,
      null,
    );
    expect(undeclared.metrics.coverage).toMatchObject({
      toolCount: 3,
      toolCountSource: "called",
      declaredTools: 0,
    });
    const html = renderUsersReport(undeclared, stored);
    expect(html).toContain(
      "N = 3 tools, from the tools seen called (none declared: pass --agent-tools for the full count)",
    );
  });

  it("leaves an errored run's truncated trajectory out of TD, and counts its calls in TE and TDE", () => {
    const summary = summarizeRuns(
      settings({ judges: false, runs: 3 }),
      [
        run("refund", 1, { turns: [turn(1, [call("find_order"), call("return_items")])] }),
        run("refund", 2, { turns: [turn(1, [call("find_order"), call("return_items")])] }),
        run("refund", 3, {
          turns: [turn(1, [call("get_order")]), turn(2, "agent failed")],
          endReason: "agent_error",
          error: "the agent gave no answer within 60 s (--agent-timeout)",
        }),
      ],
      null,
    );
    // The two played runs are identical: TD is a measured 0, not inflated by the cut-short third run.
    expect(summary.metrics.td).toBe(0);
    expect(summary.metrics.coverage).toMatchObject({ conversations: 3, calls: 5, tdGroups: 1 });
    // No judges: success is n/a, and the agent_error run is still counted as errored.
    expect(summary.metrics.success).toBeNull();
    expect(summary.metrics.errored).toBe(1);
  });
});

describe("success, errored runs and pass^k", () => {
  const stored = [
    run("refund", 1, { turns: [turn(1, [])], judgement: { goal: goal(true), errors: {} } }),
    run("refund", 2, { turns: [turn(1, [])], judgement: { goal: goal(false), errors: {} } }),
    run("cancel", 1, { turns: [turn(1, [])], judgement: { goal: goal(true), errors: {} } }),
    refused("cancel", 2),
  ];
  const summary = summarizeRuns(settings(), stored, []);

  it("puts success over played runs with the errored count beside it", () => {
    expect(summary.metrics.success).toBeCloseTo(2 / 3, 12);
    expect(summary.metrics.successRuns).toBe(3);
    expect(summary.metrics.errored).toBe(1);
    const [head, row] = tableRows(tableOf(summary));
    expect(head?.slice(-2)).toEqual(["Success", "Errored"]);
    expect(row?.slice(-2)).toEqual(["66.7% of 3", "1"]);
  });

  it("says over how many scenarios each pass^k is averaged", () => {
    // refund: 2 judged runs (pass^1 0.5, pass^2 0); cancel: 1 judged run (pass^1 1), no pass^2.
    expect(summary.metrics.passHatK).toEqual({ 1: 0.75, 2: 0 });
    expect(summary.metrics.passHatKScenarios).toEqual({ 1: 2, 2: 1 });
    const html = renderUsersReport(summary, stored);
    expect(html).toContain(
      "(pass^1 over 2 of 2 scenarios, pass^2 over 1 of 2 scenarios: a scenario counts for k when it has k judged runs)",
    );
    expect(table1Cells(html)).toMatchObject({ success: "0.67", errored: "1" });
  });
});

describe("error kinds", () => {
  it("counts runs per kind, judge failures included, with the first message and run of each", () => {
    const stored = [
      run("refund", 1, {
        turns: [turn(1, [])],
        judgement: {
          errors: { realism: "the judge model answered HTTP 500", goal: "no checklist" },
        },
      }),
      run("refund", 2, { turns: [turn(1, [])] }),
      run("cancel", 1, {
        turns: [turn(1, "agent failed")],
        endReason: "user_error",
        error: "the user model failed: HTTP 429",
      }),
      refused("cancel", 2),
    ];
    expect(errorKindsOf(stored, { judges: true })).toEqual([
      {
        kind: "agent_error",
        count: 1,
        firstMessage: "the agent could not start: connection refused (cancel.2)",
        firstRunId: "cancel.2",
      },
      {
        kind: "user_error",
        count: 1,
        firstMessage: "the user model failed: HTTP 429",
        firstRunId: "cancel.1",
      },
      // refund.1 (two judges failed) counts once; refund.2 was never judged; cancel.1 was not judged either.
      {
        kind: "judge_error",
        count: 3,
        firstMessage: "realism: the judge model answered HTTP 500",
        firstRunId: "refund.1",
      },
    ]);
    // Without the judges there is no judge error.
    expect(errorKindsOf(stored, { judges: false }).map((kind) => kind.kind)).toEqual([
      "agent_error",
      "user_error",
    ]);
    const summary = summarizeRuns(settings(), stored, []);
    expect(summary.runs.errorKinds).toEqual(errorKindsOf(stored, { judges: true }));
    // refund.1 and refund.2 have no goal verdict because of judge errors; cancel.* ended in errors.
    expect(summary.metrics.errored).toBe(4);
    expect(summary.metrics.success).toBeNull();
  });
});
