import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import { interruptible } from "../../core/interrupt.js";
import type { Models } from "../../models/hub.js";
import type { AgentTarget } from "../agents/types.js";
import { passHatKOfRuns } from "../metrics/index.js";
import { renderUsersReport } from "../report/index.js";
import {
  DEFAULT_AGENT_TIMEOUT_MS,
  type RunJudgement,
  readTranscript,
  runIdOf,
  summarizeRuns,
  TranscriptWriter,
  transcriptPath,
  USERS_RUN_SCHEMA_VERSION,
  type UsersRunSettings,
  type UsersSummary,
  withDeadline,
} from "../run/index.js";
import { loadScenarioFile, type Scenario } from "../scenario/index.js";
import { openScenarioTestAgent } from "../testing/agent.js";
import { runScenarioTest } from "../testing/run.js";
import type {
  AgentFunction,
  ScenarioTestAgent,
  ScenarioTestResult,
  ScenarioWithScript,
  StepResult,
} from "../testing/types.js";
import { discoverTestFiles } from "./discover.js";
import { type JUnitTestCase, type JUnitTestSuite, renderJUnitXml } from "./junit.js";

/** What `summary.json`'s `tests` part and `run.json` of a test folder are versioned by. */
export const USERS_TEST_SCHEMA_VERSION = 1;
/** `run.json`'s kind for a `users test` folder (a folder holding another kind is never overwritten). */
export const USERS_TEST_RUN_KIND = "terrarium.users.test";

/** A test loaded from its file. */
export interface LoadedScenarioTest {
  test: ScenarioWithScript;
  /** The file, absolute. */
  file: string;
}

export interface CollectedScenarioTests {
  tests: LoadedScenarioTest[];
  /** Files of the folders given that hold no test, each with why. */
  skipped: Array<{ file: string; reason: string }>;
}

function hasScript(scenario: Scenario): scenario is ScenarioWithScript {
  return Array.isArray((scenario as Partial<ScenarioWithScript>).script);
}

/**
 * The tests the paths name (files and folders, see `discoverTestFiles`). Every problem of every file is
 * collected and refused in one error, each with its file, place and line: a test file that does not
 * parse, a step that is not a step, a file named on the command line that holds no `script:`, two tests
 * with the same id. Nothing is run before this passes.
 */
export function collectScenarioTests(paths: readonly string[], cwd = process.cwd()): CollectedScenarioTests {
  const { candidates, skipped } = discoverTestFiles(paths, cwd);
  const tests: LoadedScenarioTest[] = [];
  const problems: TerrariumError[] = [];
  const seen = new Map<string, string>();
  for (const { file, given } of candidates) {
    let scenarios: Scenario[];
    try {
      scenarios = loadScenarioFile(file);
    } catch (error) {
      if (error instanceof TerrariumError) {
        problems.push(error.where.file ? error : error.locatedIn({ file }));
        continue;
      }
      throw error;
    }
    let found = 0;
    for (const scenario of scenarios) {
      if (!hasScript(scenario)) continue;
      found++;
      const first = seen.get(scenario.id);
      if (first !== undefined) {
        problems.push(
          new TerrariumError(
            "CONFIG_INVALID",
            `the test id "${scenario.id}" is also used in ${first}; test ids name transcripts and must be unique`,
            { where: { file, pointer: `${scenario.source.pointer}/id` } },
          ),
        );
        continue;
      }
      seen.set(scenario.id, file);
      tests.push({ test: scenario, file });
    }
    if (found === 0) {
      if (given)
        problems.push(
          new TerrariumError(
            "CONFIG_INVALID",
            "not a test: the scenario has no script: list (run scenarios without a script with `terrarium users run`)",
            { where: { file } },
          ),
        );
      else skipped.push({ file, reason: "no scenario with a script: list (not a test)" });
    }
  }
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1)
    throw new TerrariumError(
      "CONFIG_INVALID",
      `${problems.length} problems in the tests:\n${problems.map((p) => `  ${p.describe().replace(/ \[[A-Z_]+\]$/, "")}`).join("\n")}`,
    );
  if (tests.length === 0)
    throw new TerrariumError(
      "INVALID_INPUT",
      `no tests in ${paths.join(", ")}: a test is a scenario file with a script: list${skipped.length > 0 ? ` (${skipped.length} file${skipped.length === 1 ? "" : "s"} without one skipped)` : ""}`,
    );
  return { tests, skipped };
}

/** How one run of one test ended. */
export type TestRunStatus = "passed" | "failed" | "error";

/** One run of one test, as printed, written to JUnit and kept in `summary.json`. */
export interface TestRunRecord {
  id: string;
  /** The test file, relative to the working directory when inside it. */
  file: string;
  /** 1-based run number. */
  run: number;
  /** The id, with "(run k)" when each test runs more than once. */
  name: string;
  status: TestRunStatus;
  durationMs: number;
  /** The step that failed (or errored), with what was expected and what happened. */
  failedStep?: {
    index: number;
    kind: string;
    message: string;
    expected?: unknown;
    actual?: unknown;
  };
  /** Why the test could not run (no model, the agent broke, …). */
  error?: string;
  /** The transcript, relative to the output folder. */
  transcript: string;
  steps: Array<{ index: number; kind: string; status: string; message: string }>;
}

/** The `tests` part of a test folder's `summary.json`. */
export interface TestsSummary {
  schemaVersion: number;
  total: number;
  passed: number;
  failed: number;
  errored: number;
  runs: number;
  durationMs: number;
  /**
   * Per test, pass^k for k = 1..runs over its runs that reached a verdict (errored runs left out, as
   * `users run` leaves them out); the mean over tests in `passHatK`.
   */
  passHatK: Record<string, number>;
  tests: Array<{
    id: string;
    file: string;
    passed: number;
    failed: number;
    errored: number;
    passHatK: Record<string, number>;
    runs: TestRunRecord[];
  }>;
}

export type UsersTestSummary = UsersSummary & { tests: TestsSummary };

export interface RunScenarioTestsOptions {
  /** An `--agent` spec, an in-process function, or an agent opened with `openScenarioTestAgent`. */
  agent: string | AgentFunction | ScenarioTestAgent;
  agentTools?: string[];
  httpConfig?: string;
  /** The models of `simulate` and `judge` steps (and `planner:` agents); none needed otherwise. */
  models?: Models;
  /** The run folder: run.json, transcripts/, summary.json, report.html. */
  outDir: string;
  /** JUnit XML file to write at the end (its folder is created). */
  junit?: string;
  /** Runs of each test (pass^k over them; default 1). */
  runs?: number;
  /** Tests at once (default 2). */
  concurrency?: number;
  /** Run k of test t uses `<seed>/<t>/<k>` (default "0"). */
  seed?: string;
  /** Longest wait for each agent answer, in ms (default 60 s). */
  agentTimeoutMs?: number;
  /** Relative paths (tests, module, tool files, --out) are resolved here. */
  cwd?: string;
  /**
   * Aborted on SIGINT/SIGTERM: no test starts after it, the unfinished ones stay as `.partial`
   * transcripts, no summary, report or JUnit file is written, and the call throws `INTERRUPTED`.
   */
  signal?: AbortSignal;
  /** Each finished run of a test, as it finishes. */
  onTest?: (record: TestRunRecord, progress: { done: number; total: number }) => void;
}

export interface RunScenarioTestsResult {
  summary: UsersTestSummary;
  records: TestRunRecord[];
  /** The `--out` folder, absolute. */
  outDir: string;
  /** The JUnit file written, absolute. */
  junit?: string;
  report: string;
  skipped: CollectedScenarioTests["skipped"];
  /** 0 when every run of every test passed, 1 otherwise. */
  exitCode: 0 | 1;
}

/** Largest final state kept in a transcript, as `users run` keeps it. */
const MAX_STORED_STATE_BYTES = 256 * 1024;

/**
 * `terrarium users test` as a library call: loads the tests (everything refused before any run), opens
 * the agent once, runs every test × `runs` with `concurrency` at a time (each with its own seed, agent
 * session and tools), writes each transcript as it goes (`.partial` until whole), then `summary.json`
 * (a users run summary plus `tests`), `report.html` and, when asked, the JUnit file.
 */
export async function runScenarioTests(
  paths: readonly string[] | CollectedScenarioTests,
  options: RunScenarioTestsOptions,
): Promise<RunScenarioTestsResult> {
  const cwd = options.cwd ?? process.cwd();
  const runs = options.runs ?? 1;
  const concurrency = options.concurrency ?? 2;
  const seed = options.seed ?? "0";
  if (!Number.isInteger(runs) || runs < 1)
    throw new TerrariumError("INVALID_INPUT", `runs must be a whole number >= 1, got ${runs}`);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new TerrariumError("INVALID_INPUT", `concurrency must be a whole number >= 1, got ${concurrency}`);
  const { tests, skipped } = isLoaded(paths) ? paths : collectScenarioTests(paths, cwd);
  const outDir = resolve(cwd, options.outDir);
  const junit = options.junit === undefined ? undefined : resolve(cwd, options.junit);
  checkOutputs(outDir, junit);

  const agentSpec = typeof options.agent === "string" ? options.agent : undefined;
  // The agent is opened once (a bad spec, module or --agent-tools is refused here, before any test).
  const agent: ScenarioTestAgent =
    typeof options.agent === "string" || typeof options.agent === "function"
      ? await openScenarioTestAgent(options.agent, {
          ...(options.agentTools ? { agentTools: options.agentTools } : {}),
          ...(options.models ? { models: options.models } : {}),
          ...(options.httpConfig ? { httpConfig: options.httpConfig } : {}),
          cwd,
          ...(options.agentTimeoutMs !== undefined
            ? { timeoutMs: Math.max(1, Math.ceil(options.agentTimeoutMs)) }
            : {}),
        })
      : options.agent;
  const ownsAgent = agent !== options.agent;
  const timed = withAgentDeadlines(agent, options.agentTimeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS);
  const started = performance.now();
  const startedAt = new Date().toISOString();
  try {
    const settings: UsersRunSettings = {
      schemaVersion: USERS_RUN_SCHEMA_VERSION,
      agent: agentSpec ?? agent.spec,
      agentTools: options.agentTools ?? [],
      agentToolNames: [...agent.target.tools].sort(),
      mode: "api-only",
      seed,
      runs,
      scenarios: tests.map(({ test }) => ({ id: test.id, goal: test.goal || test.description || test.id })),
      userModel: "",
      judges: false,
    };
    // A JUnit file from an earlier run must not pass for this one if it is interrupted or crashes.
    if (junit) rmSync(junit, { force: true });
    prepareFolder(outDir, {
      ...settings,
      kind: USERS_TEST_RUN_KIND,
      startedAt,
      tests: tests.map(fileOf(cwd)),
    });

    const pending = tests.flatMap((loaded) =>
      Array.from({ length: runs }, (_, i) => ({ ...loaded, index: i + 1 })),
    );
    const total = pending.length;
    const records: TestRunRecord[] = [];
    const signal = options.signal;
    const runOne = async (item: (typeof pending)[number]) => {
      const record = await runOneTest(item, { agent: timed, options, settings, outDir, cwd, runs });
      if (signal?.aborted) return;
      records.push(record);
      options.onTest?.(record, { done: records.length, total });
    };
    const queue = [...pending];
    const workers = Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
      for (let next = queue.shift(); next && !signal?.aborted; next = queue.shift()) await runOne(next);
    });
    await Promise.all(workers);
    if (signal?.aborted) {
      const unfinished = total - records.length;
      throw new TerrariumError(
        "INTERRUPTED",
        `interrupted: ${records.length} of ${total} test run${total === 1 ? "" : "s"} finished, ${unfinished} not; no summary, report or JUnit file written`,
        { details: { unfinished } },
      );
    }

    // Records in test order, then run order, whatever order they finished in.
    const order = new Map(pending.map((item, position) => [runIdOf(item.test.id, item.index), position]));
    records.sort((a, b) => (order.get(runIdOf(a.id, a.run)) ?? 0) - (order.get(runIdOf(b.id, b.run)) ?? 0));
    const stored = pending.map((item) =>
      readTranscript(transcriptPath(outDir, runIdOf(item.test.id, item.index))),
    );
    const summary: UsersTestSummary = {
      ...summarizeRuns(settings, stored, null),
      tests: testsSummary(records, tests.map(fileOf(cwd)), runs, performance.now() - started),
    };
    writeAtomically(join(outDir, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
    const report = join(outDir, "report.html");
    writeAtomically(
      report,
      renderUsersReport(summary, stored, {
        screenshotsRoot: outDir,
        title: `terrarium users test: ${settings.agent}`,
      }),
    );
    if (junit) {
      mkdirSync(dirname(junit), { recursive: true });
      writeAtomically(
        junit,
        junitXml(records, outDir, startedAt, performance.now() - started, summary.tests),
      );
    }
    const allPassed = records.every((record) => record.status === "passed");
    return {
      summary,
      records,
      outDir,
      ...(junit ? { junit } : {}),
      report,
      skipped,
      exitCode: allPassed ? 0 : 1,
    };
  } finally {
    if (ownsAgent) await agent.close().catch(() => undefined);
  }
}

/**
 * The agent with `--agent-timeout` on every wait: opening a session, each answer, its final state. An
 * in-process agent whose promise never settles then errors its test instead of holding the suite forever
 * (http, openai-compatible and planner agents also have their own per-request timeout).
 */
function withAgentDeadlines(agent: ScenarioTestAgent, ms: number): ScenarioTestAgent {
  const target = agent.target;
  const timedTarget: AgentTarget = {
    spec: target.spec,
    kind: target.kind,
    tools: target.tools,
    close: () => target.close(),
    open: async (context) => {
      const session = await withDeadline(target.open(context), ms, "the agent's session did not open");
      return {
        sessionId: session.sessionId,
        send: (message) => withDeadline(session.send(message), ms, "the agent gave no answer"),
        finalState: () => withDeadline(session.finalState(), ms, "the agent's tools gave no final state"),
        close: () => withDeadline(session.close(), ms, "the agent's session did not close"),
      };
    },
  };
  return { spec: agent.spec, target: timedTarget, close: () => agent.close() };
}

function isLoaded(value: readonly string[] | CollectedScenarioTests): value is CollectedScenarioTests {
  return !Array.isArray(value);
}

function fileOf(cwd: string): (loaded: LoadedScenarioTest) => { id: string; file: string } {
  return ({ test, file }) => ({ id: test.id, file: displayPath(file, cwd) });
}

/** A path relative to `cwd` when it is inside it (what CI shows and links), else absolute. */
function displayPath(file: string, cwd: string): string {
  const inside = relative(cwd, file);
  return inside !== "" && !inside.startsWith("..") && !isAbsolute(inside) ? inside : file;
}

interface RunContext {
  agent: ScenarioTestAgent;
  options: RunScenarioTestsOptions;
  settings: UsersRunSettings;
  outDir: string;
  cwd: string;
  runs: number;
}

/** One run of one test: its transcript written as it goes, and its record. */
async function runOneTest(
  item: LoadedScenarioTest & { index: number },
  context: RunContext,
): Promise<TestRunRecord> {
  const { test, file, index } = item;
  const { options, settings, outDir } = context;
  const runId = runIdOf(test.id, index);
  const runSeed = `${settings.seed}/${test.id}/${index}`;
  const path = transcriptPath(outDir, runId);
  const writer = new TranscriptWriter(path);
  const signal = options.signal;
  writer.write({
    type: "run",
    schemaVersion: USERS_RUN_SCHEMA_VERSION,
    runId,
    scenarioId: test.id,
    index,
    seed: runSeed,
    agent: settings.agent,
    mode: settings.mode,
    startedAt: new Date().toISOString(),
  });
  const started = performance.now();
  let result: ScenarioTestResult | undefined;
  let crash: string | undefined;
  try {
    // Abandoned at once on an interrupt (an agent call in flight is not waited for).
    result = await interruptible(
      runScenarioTest(test, {
        agent: context.agent,
        ...(options.models ? { models: options.models } : {}),
        seed: runSeed,
        runId,
        ...(signal ? { signal } : {}),
        onTurn: (turn) => {
          if (!signal?.aborted) writer.write({ type: "turn", ...turn });
        },
      }),
      signal,
    );
  } catch (error) {
    // The runner reports what it understands as the result's error; anything else is this test's error.
    crash = error instanceof Error ? error.message : String(error);
  }
  const durationMs = Math.round(performance.now() - started);
  // On an interrupt the transcript stays `.partial`: it is not a finished test.
  if (signal?.aborted)
    return {
      id: test.id,
      file,
      run: index,
      name: test.id,
      status: "error",
      durationMs,
      transcript: "",
      steps: [],
    };
  const transcript = result?.transcript;
  const error = result?.error ?? crash;
  const state = storedState(transcript?.finalState);
  // A test that errored for its own side (no model for simulate or judge, a step that cannot run) ends as
  // user_error: the script is the user. An agent that failed is agent_error, as in users run.
  const reported = transcript?.endReason ?? "agent_error";
  const endReason =
    error !== undefined && reported !== "agent_error" && reported !== "user_error" ? "user_error" : reported;
  writer.write({
    type: "end",
    endReason,
    ...(transcript?.error || error ? { error: transcript?.error ?? error } : {}),
    turns: transcript?.turns.length ?? 0,
    agentToolCalls: transcript?.agentToolCalls ?? [],
    ...state,
    userModel: transcript?.userModel ?? "",
    durationMs: transcript?.durationMs ?? durationMs,
  });
  if (result) writer.write({ type: "judgement", ...judgementOf(result) });
  writer.commit();

  const failed = result?.failedStep;
  const status: TestRunStatus =
    error !== undefined || failed?.status === "error" ? "error" : result?.passed ? "passed" : "failed";
  return {
    id: test.id,
    file: displayPath(file, context.cwd),
    run: index,
    name: context.runs > 1 ? `${test.id} (run ${index})` : test.id,
    status,
    durationMs: result?.durationMs ?? durationMs,
    ...(failed
      ? {
          failedStep: {
            index: failed.index,
            kind: failed.kind,
            message: failed.message,
            ...(failed.expected !== undefined ? { expected: failed.expected } : {}),
            ...(failed.actual !== undefined ? { actual: failed.actual } : {}),
          },
        }
      : {}),
    ...(error !== undefined ? { error } : {}),
    transcript: relative(outDir, path),
    steps: (result?.steps ?? []).map((step) => ({
      index: step.index,
      kind: step.kind,
      status: step.status,
      message: step.message,
    })),
  };
}

/** A step as the report's checklist shows it. */
function stepLabel(step: StepResult): string {
  return `${step.index + 1}. ${step.kind}: ${JSON.stringify(Object.values(step.step)[0])}`;
}

/**
 * The test's verdict in the transcript's judgement line: the script is the checklist (one item per step,
 * `success`, `failed` or `not_run`), so the report shows each step with its message, and goal success and
 * pass^k in `summary.json` are the tests' pass rates.
 */
function judgementOf(result: ScenarioTestResult): RunJudgement {
  const judgement: RunJudgement = { errors: {} };
  if (result.error !== undefined) return judgement;
  const passedSteps = result.steps.filter((step) => step.status === "passed").length;
  judgement.goal = {
    success: result.passed,
    score: result.steps.length === 0 ? 1 : passedSteps / result.steps.length,
    items: result.steps.map((step) => ({
      description: stepLabel(step),
      status: step.status === "passed" ? "success" : step.status,
      reasoning: step.message,
    })),
    checklistSource: "script",
  };
  return judgement;
}

function storedState(state: unknown): { finalState?: unknown; finalStateBytes?: number } {
  if (state === undefined) return {};
  const bytes = Buffer.byteLength(JSON.stringify(state) ?? "");
  return bytes <= MAX_STORED_STATE_BYTES ? { finalState: state } : { finalStateBytes: bytes };
}

function testsSummary(
  records: readonly TestRunRecord[],
  tests: ReadonlyArray<{ id: string; file: string }>,
  runs: number,
  durationMs: number,
): TestsSummary {
  const count = (list: readonly TestRunRecord[], status: TestRunStatus) =>
    list.filter((record) => record.status === status).length;
  const perTest = tests.map(({ id, file }) => {
    const own = records.filter((record) => record.id === id);
    const verdicts = own.filter((record) => record.status !== "error").map((r) => r.status === "passed");
    const passHatK: Record<string, number> = {};
    for (let k = 1; k <= verdicts.length; k++) passHatK[k] = passHatKOfRuns(verdicts, k);
    return {
      id,
      file,
      passed: count(own, "passed"),
      failed: count(own, "failed"),
      errored: count(own, "error"),
      passHatK,
      runs: own,
    };
  });
  const passHatK: Record<string, number> = {};
  for (let k = 1; k <= runs; k++) {
    const values = perTest.map((test) => test.passHatK[k]).filter((v): v is number => v !== undefined);
    if (values.length > 0) passHatK[k] = values.reduce((a, b) => a + b, 0) / values.length;
  }
  return {
    schemaVersion: USERS_TEST_SCHEMA_VERSION,
    total: records.length,
    passed: count(records, "passed"),
    failed: count(records, "failed"),
    errored: count(records, "error"),
    runs,
    durationMs: Math.round(durationMs),
    passHatK,
    tests: perTest,
  };
}

/** The JUnit document: one suite per test file, one case per test and run. */
function junitXml(
  records: readonly TestRunRecord[],
  outDir: string,
  startedAt: string,
  durationMs: number,
  summary: TestsSummary,
): string {
  const suites = new Map<string, JUnitTestSuite>();
  for (const record of records) {
    const suite = suites.get(record.file) ?? {
      name: record.file,
      file: record.file,
      timestamp: startedAt,
      cases: [],
    };
    suites.set(record.file, suite);
    const transcript = join(outDir, record.transcript);
    const testCase: JUnitTestCase = {
      name: record.name,
      classname: record.file,
      file: record.file,
      seconds: record.durationMs / 1000,
      outcome: outcomeOf(record),
      systemOut: [
        `transcript: ${transcript}`,
        `report: ${join(outDir, "report.html")}#${encodeURIComponent(runIdOf(record.id, record.run))}`,
        ...record.steps.map((step) => `${step.index + 1}. [${step.status}] ${step.kind}: ${step.message}`),
      ].join("\n"),
    };
    suite.cases.push(testCase);
  }
  for (const test of summary.tests) {
    const suite = suites.get(test.file);
    if (!suite || summary.runs < 2) continue;
    suite.properties = [
      ...(suite.properties ?? []),
      ...Object.entries(test.passHatK).map(([k, value]) => ({
        name: `${test.id}.passHatK.${k}`,
        value: String(value),
      })),
    ];
  }
  return renderJUnitXml({
    name: "terrarium users test",
    timestamp: startedAt,
    seconds: durationMs / 1000,
    suites: [...suites.values()],
  });
}

function outcomeOf(record: TestRunRecord): JUnitTestCase["outcome"] {
  const step = record.failedStep;
  const where = step ? `step ${step.index + 1} ${step.kind}: ` : "";
  const details = step
    ? [
        `${where}${step.message}`,
        ...(step.expected !== undefined ? [`expected: ${show(step.expected)}`] : []),
        ...(step.actual !== undefined ? [`actual: ${show(step.actual)}`] : []),
      ].join("\n")
    : undefined;
  if (record.status === "error")
    return {
      status: "error",
      type: step?.kind ?? "error",
      // The failing step's own words when a step errored; the run's error otherwise.
      message: step ? `${where}${step.message}` : (record.error ?? "the test could not run"),
      ...(details ? { details } : {}),
    };
  if (record.status === "failed")
    return {
      status: "failed",
      type: step?.kind ?? "failure",
      message: `${where}${step?.message ?? "the test failed"}`,
      ...(details ? { details } : {}),
    };
  return { status: "passed" };
}

function show(value: unknown): string {
  return typeof value === "string" ? value : (JSON.stringify(value, null, 2) ?? String(value));
}

/** The files a test folder holds; only these are removed when the folder is used again. */
const OWN_ENTRIES = ["run.json", "summary.json", "report.html", "transcripts"];

/**
 * `--out` and `--junit` are checked before anything runs: a folder that holds anything but an earlier
 * `users test` run is refused (never overwritten), and so is a JUnit path that is a folder.
 */
function checkOutputs(outDir: string, junit: string | undefined): void {
  if (existsSync(outDir)) {
    let entries: string[];
    try {
      entries = readdirSync(outDir);
    } catch {
      throw new TerrariumError("INVALID_INPUT", `--out ${outDir} is not a folder`);
    }
    if (entries.length > 0) {
      const kind = readKind(join(outDir, "run.json"));
      if (kind !== USERS_TEST_RUN_KIND)
        throw new TerrariumError(
          "INVALID_INPUT",
          kind === undefined
            ? `--out ${outDir} is not empty and holds no earlier users test run; choose another folder`
            : `--out ${outDir} holds a users run, not a users test run; choose another folder`,
        );
    }
  }
  if (junit && readdirSafe(junit))
    throw new TerrariumError("INVALID_INPUT", `--junit ${junit} is a folder; give a file such as junit.xml`);
}

function readdirSafe(path: string): boolean {
  try {
    readdirSync(path);
    return true;
  } catch {
    return false;
  }
}

function readKind(file: string): string | undefined {
  try {
    const value = JSON.parse(readFileSync(file, "utf8")) as { kind?: unknown };
    return typeof value.kind === "string" ? value.kind : "terrarium.users.run";
  } catch {
    return undefined;
  }
}

/** An earlier test run's files go (a summary from before must never pass for this run's). */
function prepareFolder(outDir: string, runJson: Record<string, unknown>): void {
  mkdirSync(outDir, { recursive: true });
  for (const entry of OWN_ENTRIES) rmSync(join(outDir, entry), { recursive: true, force: true });
  mkdirSync(join(outDir, "transcripts"), { recursive: true });
  writeAtomically(
    join(outDir, "run.json"),
    `${JSON.stringify({ ...runJson, schemaVersion: USERS_TEST_SCHEMA_VERSION }, null, 2)}\n`,
  );
}

function writeAtomically(file: string, text: string): void {
  const partial = `${file}.partial`;
  writeFileSync(partial, text);
  renameSync(partial, file);
}
