import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { hashJson } from "../../core/canonical-json.js";
import { TerrariumError } from "../../core/errors.js";
import { interruptedError, interruptible } from "../../core/interrupt.js";
import type { Models } from "../../models/hub.js";
import type { JobQueue } from "../../queue/index.js";
import { createAgentTarget } from "../agents/index.js";
import { probeReachable } from "../agents/probe.js";
import { parseAgentSpec } from "../agents/spec.js";
import type { AgentReply, AgentToolCallRecord, TurnRecord } from "../conversation.js";
import { simulateBrowserConversation } from "../hybrid/browser-user.js";
import { type BrowserTarget, openBrowserTarget } from "../hybrid/target.js";
import { checkThresholds, type Threshold } from "../metrics/index.js";
import type { Scenario } from "../scenario/index.js";
import { type ConversationResult, simulateConversation } from "../simulator/conversation-loop.js";
import { UserToolFactory } from "../simulator/toolbox.js";
import { SimulatedUser } from "../simulator/user.js";
import type { UserToolbox } from "../tools/index.js";
import { USERS_RUN_JOB, type UsersJobContext, type UsersJobItem, type UsersJobResult } from "./job.js";
import {
  summarizeRuns,
  type UniqueFailureRecord,
  type UsersMode,
  type UsersRunSettings,
  type UsersSummary,
} from "./summary.js";
import {
  type RunJudgement,
  readTranscript,
  readTranscripts,
  runIdOf,
  type StoredRun,
  type TranscriptLine,
  TranscriptWriter,
  transcriptPath,
  USERS_RUN_SCHEMA_VERSION,
} from "./transcript.js";

/** What a run needs of the agent under test (an `AgentTarget` from `src/users/agents` fits). */
export interface UsersAgent {
  readonly spec: string;
  readonly tools: string[];
  open(context: { runId: string; seed: string; scenario: Scenario }): Promise<{
    readonly sessionId: string;
    send(userMessage: string): Promise<AgentReply>;
    finalState(): Promise<unknown>;
    close(): Promise<void>;
  }>;
}

/** A turn the failure judge flagged, to be consolidated with the others into unique failures. */
export interface FlaggedTurn {
  runId: string;
  scenarioId: string;
  turn: number;
  dimension: string;
  score: number;
  justification: string;
  userMessage: string;
  agentMessage: string;
}

/** The judges of a users run (see `modelJudges`); a judge that fails records an error, never throws. */
export interface UsersJudges {
  judgeRun(input: {
    runId: string;
    /** The run's seed (`<seed>/<scenario>/<k>`): every judge call of the run is seeded from it. */
    seed: string;
    scenario: Scenario;
    turns: TurnRecord[];
    agentToolCalls: AgentToolCallRecord[];
    finalState: unknown;
  }): Promise<RunJudgement>;
  consolidate(items: FlaggedTurn[]): Promise<UniqueFailureRecord[]>;
}

export interface UsersRunOptions {
  scenarios: Scenario[];
  /** The agent: through its API (api-only), or its web page (`browser:`, hybrid and ui-only). */
  agent: UsersAgent | BrowserTarget;
  /** How the user reaches the agent (default api-only; the browser modes need a browser target). */
  mode?: UsersMode;
  /** Keep a PNG of the page per step under `screenshots/<run>/` (browser modes). */
  screenshots?: boolean;
  /** Most observe → act steps per run in browser modes (default 8 per turn of the scenario's budget). */
  maxSteps?: number;
  /** The `--agent-tools` sources, recorded in `run.json`. */
  agentTools?: string[];
  models: Models;
  outDir: string;
  runs?: number;
  concurrency?: number;
  seed?: string;
  /** Continue a folder: finished runs are kept, unfinished ones start over. */
  resume?: boolean;
  /** The judges; without them the judged metrics are null. */
  judges?: UsersJudges;
  /** The user's model (default: `roles.user`, else `roles.default`). */
  userModel?: string;
  userTemperature?: number;
  toolFactory?: UserToolFactory;
  /** Called when a run finishes (done counts runs finished in this call, kept ones included). */
  onRun?: (event: { run: StoredRun; done: number; total: number; kept: boolean }) => void;
  /**
   * Play the runs on a job queue (`terrarium worker`s on Redis) instead of here: API modes only. The
   * workers rebuild the agent from its spec, with their own config and these role overrides; `judges`
   * here then only consolidates.
   */
  queue?: {
    queue: JobQueue;
    agent: { spec: string; agentTools?: string[]; httpConfig?: string };
    roles: Record<string, string>;
  };
  /** `--fail-under`: checked against the metrics and kept in the summary. */
  thresholds?: Threshold[];
  /** Called before the judges' consolidation call and the summary. */
  onPhase?: (phase: "consolidating" | "summarizing") => void;
  /**
   * Longest wait, in ms, for the agent: opening its session or page, each answer, its final state
   * (default 60 s). A wait that runs out ends that run as `agent_error`; the other runs go on.
   */
  agentTimeoutMs?: number;
  /**
   * Aborted on the first SIGINT/SIGTERM: no run starts after it, and every run not finished by then is
   * left as its `.partial` transcript (or not started) for `--resume`. `runUsers` then throws
   * `INTERRUPTED`, with `details.unfinished`, and writes no summary.
   */
  signal?: AbortSignal;
}

/** How long the agent may take to answer (or to open its session) when the caller does not say. */
export const DEFAULT_AGENT_TIMEOUT_MS = 60_000;

export interface UsersRunResult {
  summary: UsersSummary;
  /** Runs taken from the folder (with `resume`) rather than run again. */
  kept: number;
}

/**
 * `users run` as a library call: every scenario × `runs` conversations between a simulated user and the
 * agent, `concurrency` at a time, each with its own seed (`<seed>/<scenario>/<k>`), tools and agent
 * session; one transcript per run written as it goes; the judges per run; one consolidation of the
 * flagged turns into unique failures; and `summary.json`. A run whose agent or user fails is recorded with
 * its error and the others go on.
 */
export async function runUsers(options: UsersRunOptions): Promise<UsersRunResult> {
  const runs = options.runs ?? 1;
  const concurrency = options.concurrency ?? 2;
  const seed = options.seed ?? "0";
  if (!Number.isInteger(runs) || runs < 1)
    throw new TerrariumError("INVALID_INPUT", `runs must be a whole number >= 1, got ${runs}`);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new TerrariumError("INVALID_INPUT", `concurrency must be a whole number >= 1, got ${concurrency}`);
  if (options.scenarios.length === 0) throw new TerrariumError("INVALID_INPUT", "no scenarios to run");
  const mode = options.mode ?? "api-only";
  checkMode(mode, isBrowserTarget(options.agent));
  if (options.queue && mode !== "api-only")
    throw new TerrariumError(
      "INVALID_INPUT",
      `--queue runs API users only; --mode ${mode} runs in this process`,
    );
  const toolFactory = options.toolFactory ?? new UserToolFactory({ models: options.models });
  toolFactory.check(options.scenarios);
  const userModel = options.userModel ?? options.models.modelFor("user");
  const settings: UsersRunSettings = {
    schemaVersion: USERS_RUN_SCHEMA_VERSION,
    agent: options.agent.spec,
    agentTools: options.agentTools ?? [],
    agentToolNames: [...options.agent.tools].sort(),
    mode,
    seed,
    runs,
    scenarios: options.scenarios.map((s) => ({ id: s.id, goal: s.goal })),
    userModel,
    judges: options.judges !== undefined,
  };
  prepareFolder(options.outDir, settings, options.resume === true);

  const pending: Array<{ scenario: Scenario; index: number }> = [];
  const finished: StoredRun[] = [];
  for (const scenario of options.scenarios) {
    for (let index = 1; index <= runs; index++) {
      const file = transcriptPath(options.outDir, runIdOf(scenario.id, index));
      rmSync(`${file}.partial`, { force: true });
      if (existsSync(file)) finished.push(readTranscript(file));
      else pending.push({ scenario, index });
    }
  }
  const total = finished.length + pending.length;
  let done = 0;
  for (const run of finished) options.onRun?.({ run, done: ++done, total, kept: true });

  const signal = options.signal;
  const playOne = async ({ scenario, index }: { scenario: Scenario; index: number }) => {
    const run = await playRun(options, settings, toolFactory, scenario, index);
    finished.push(run);
    options.onRun?.({ run, done: ++done, total, kept: false });
  };
  try {
    if (options.queue)
      await interruptible(
        playOnQueue(options, options.queue, settings, pending, (run) => {
          finished.push(run);
          options.onRun?.({ run, done: ++done, total, kept: false });
        }),
        signal,
      );
    else {
      const queue = [...pending];
      const workers = Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
        for (let next = queue.shift(); next && !signal?.aborted; next = queue.shift()) await playOne(next);
      });
      // Settled, not raced: on an interrupt every worker returns at once (its run is left behind).
      const outcomes = await Promise.allSettled(workers);
      const failed = outcomes.find((outcome) => outcome.status === "rejected");
      if (failed && !signal?.aborted) throw (failed as PromiseRejectedResult).reason;
    }
  } catch (error) {
    if (!signal?.aborted) throw error;
  } finally {
    if (!options.toolFactory) await toolFactory.close().catch(() => undefined);
  }
  if (signal?.aborted) {
    const unfinished = total - done;
    throw new TerrariumError(
      "INTERRUPTED",
      `interrupted: ${unfinished} run${unfinished === 1 ? "" : "s"} to resume; rerun with --resume`,
      { details: { unfinished } },
    );
  }

  const stored = readTranscripts(options.outDir).filter((run) =>
    settings.scenarios.some((s) => s.id === run.scenarioId && run.index <= runs),
  );
  let failures: UniqueFailureRecord[] | null = null;
  if (options.judges) {
    options.onPhase?.("consolidating");
    failures = await options.judges.consolidate(flaggedTurns(stored));
    writeJson(join(options.outDir, "failures.json"), { schemaVersion: USERS_RUN_SCHEMA_VERSION, failures });
  }
  options.onPhase?.("summarizing");
  const summarized = summarizeRuns(settings, stored, failures);
  const summary: UsersSummary = options.thresholds?.length
    ? { ...summarized, thresholds: checkThresholds(summarized.metrics, options.thresholds) }
    : summarized;
  writeJson(join(options.outDir, "summary.json"), summary);
  return { summary, kept: total - pending.length };
}

async function playRun(
  options: UsersRunOptions,
  settings: UsersRunSettings,
  toolFactory: UserToolFactory,
  scenario: Scenario,
  index: number,
): Promise<StoredRun> {
  const file = transcriptPath(options.outDir, runIdOf(scenario.id, index));
  const writer = new TranscriptWriter(file);
  const signal = options.signal;
  try {
    // On an interrupt the run is left where it is: nothing more is written, its `.partial` stays.
    await interruptible(
      playRunLines(options, settings, toolFactory, scenario, index, (line) => {
        if (!signal?.aborted) writer.write(line);
      }),
      signal,
    );
    if (signal?.aborted) throw interruptedError();
    writer.commit();
  } catch (error) {
    if (!signal?.aborted) writer.discard();
    throw error;
  }
  return readTranscript(file);
}

/**
 * `work`, or an error saying what did not answer within `ms`. The timer is a real one (it keeps the
 * process alive): a promise that never settles must end as an error, never as a silent exit.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new TerrariumError("AGENT_ERROR", `${what} within ${formatSeconds(ms)} (--agent-timeout)`)),
      ms,
    );
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, "")} s`;
}

/**
 * The pending runs as work items for queue workers (`terrarium worker`): each comes back as its transcript
 * lines, written here as a whole file. A run whose every attempt failed is recorded as a transcript
 * ending with `user_error` and the error, so nothing is silently missing.
 */
async function playOnQueue(
  options: UsersRunOptions,
  on: NonNullable<UsersRunOptions["queue"]>,
  settings: UsersRunSettings,
  pending: ReadonlyArray<{ scenario: Scenario; index: number }>,
  finished: (run: StoredRun) => void,
): Promise<void> {
  if (pending.length === 0) return;
  const context: UsersJobContext = {
    settings,
    scenarios: options.scenarios,
    agent: on.agent,
    roles: on.roles,
    ...(options.userTemperature !== undefined ? { userTemperature: options.userTemperature } : {}),
    ...(options.agentTimeoutMs !== undefined ? { agentTimeoutMs: options.agentTimeoutMs } : {}),
  };
  await on.queue.submit<UsersJobContext, UsersJobItem, UsersJobResult>(
    {
      runId: `users:${hashJson({ settings, outDir: resolve(options.outDir) }).slice(0, 16)}`,
      kind: USERS_RUN_JOB,
      context,
      items: pending.map(({ scenario, index }) => ({
        id: runIdOf(scenario.id, index),
        payload: { scenarioId: scenario.id, index },
      })),
    },
    {
      onResult: (result) => {
        const file = transcriptPath(options.outDir, result.id);
        if (existsSync(file)) return; // written by an earlier submission of this run
        const writer = new TranscriptWriter(file);
        const item = pending.find(({ scenario, index }) => runIdOf(scenario.id, index) === result.id);
        const lines: TranscriptLine[] = result.ok
          ? result.value.lines
          : failedRunLines(
              settings,
              item?.scenario.id ?? result.id,
              item?.index ?? 0,
              result.id,
              result.error,
            );
        for (const line of lines) writer.write(line);
        writer.commit();
        finished(readTranscript(file));
      },
    },
  );
}

function failedRunLines(
  settings: UsersRunSettings,
  scenarioId: string,
  index: number,
  runId: string,
  error: string,
): TranscriptLine[] {
  return [
    {
      type: "run",
      schemaVersion: USERS_RUN_SCHEMA_VERSION,
      runId,
      scenarioId,
      index,
      seed: `${settings.seed}/${scenarioId}/${index}`,
      agent: settings.agent,
      mode: settings.mode,
      startedAt: new Date().toISOString(),
    },
    {
      type: "end",
      endReason: "user_error",
      error: `the run failed on every worker that tried it: ${error}`,
      turns: 0,
      agentToolCalls: [],
      userModel: settings.userModel,
      durationMs: 0,
    },
  ];
}

/** What playing one run needs: the models, the agent, the judges and the user's settings. */
export type RunPlayer = Pick<
  UsersRunOptions,
  | "models"
  | "agent"
  | "judges"
  | "userTemperature"
  | "screenshots"
  | "maxSteps"
  | "outDir"
  | "agentTimeoutMs"
  | "signal"
>;

/**
 * Plays run `index` of a scenario and hands out its transcript's lines as they come: the header, each
 * turn, the end, the judgement. Used in process (lines to the transcript file) and by queue workers
 * (lines back to the submitter).
 */
export async function playRunLines(
  player: RunPlayer,
  settings: UsersRunSettings,
  toolFactory: UserToolFactory,
  scenario: Scenario,
  index: number,
  emit: (line: TranscriptLine) => void,
): Promise<void> {
  const runId = runIdOf(scenario.id, index);
  const runSeed = `${settings.seed}/${scenario.id}/${index}`;
  const started = performance.now();
  emit({
    type: "run",
    schemaVersion: USERS_RUN_SCHEMA_VERSION,
    runId,
    scenarioId: scenario.id,
    index,
    seed: runSeed,
    agent: settings.agent,
    mode: settings.mode,
    startedAt: new Date().toISOString(),
  });
  const models = player.models.forRun();
  const toolbox = await toolFactory.toolbox(scenario, runSeed);
  const run = { scenario, runId, runSeed, models, toolbox };
  const { result, finalState } = isBrowserTarget(player.agent)
    ? await playInBrowser(player, player.agent, settings, run)
    : await playThroughApi(player, player.agent, settings, run, (turn) => emit({ type: "turn", ...turn }));
  if (isBrowserTarget(player.agent)) for (const turn of result.turns) emit({ type: "turn", ...turn });
  const agentToolCalls = result.turns.flatMap((turn) => turn.agent?.toolCalls ?? []);
  emit({
    type: "end",
    endReason: result.endReason,
    ...(result.error ? { error: result.error } : {}),
    turns: result.turns.length,
    agentToolCalls,
    ...storedState(finalState),
    userModel: settings.userModel,
    durationMs: Math.round(performance.now() - started),
  });
  if (player.judges && result.turns.length > 0) {
    const judgement = await player.judges.judgeRun({
      runId,
      seed: runSeed,
      scenario,
      turns: result.turns,
      agentToolCalls,
      finalState,
    });
    emit({ type: "judgement", ...judgement });
  }
}

interface RunContext {
  scenario: Scenario;
  runId: string;
  runSeed: string;
  models: Models;
  toolbox: UserToolbox;
}

type PlayedRun = { result: ConversationResult; finalState: unknown };

/** API mode: the simulated user and the agent's API, turn by turn (each turn written as it ends). */
async function playThroughApi(
  options: RunPlayer,
  target: UsersAgent,
  settings: UsersRunSettings,
  run: RunContext,
  onTurn: (turn: TurnRecord) => void,
): Promise<PlayedRun> {
  const user = new SimulatedUser({
    models: run.models,
    scenario: run.scenario,
    toolbox: run.toolbox,
    seed: run.runSeed,
    model: settings.userModel,
    scope: run.runId,
    ...(options.userTemperature !== undefined ? { temperature: options.userTemperature } : {}),
  });
  const timeoutMs = options.agentTimeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS;
  let session: Awaited<ReturnType<UsersAgent["open"]>> | undefined;
  try {
    session = await withDeadline(
      target.open({ runId: run.runId, seed: run.runSeed, scenario: run.scenario }),
      timeoutMs,
      "the agent's session did not open",
    );
    const opened = session;
    const agent = {
      send: (message: string) => withDeadline(opened.send(message), timeoutMs, "the agent gave no answer"),
    };
    const result = await simulateConversation({ scenario: run.scenario, user, agent, onTurn });
    const finalState = await withDeadline(
      opened.finalState(),
      timeoutMs,
      "the agent's tools gave no final state",
    ).catch(() => undefined);
    return { result, finalState };
  } catch (error) {
    return {
      result: {
        turns: [],
        endReason: "agent_error",
        error: `the agent could not start: ${messageOf(error)}`,
      },
      finalState: undefined,
    };
  } finally {
    if (session)
      await withDeadline(session.close(), timeoutMs, "the agent's session did not close").catch(
        () => undefined,
      );
  }
}

/** Browser modes: the UI-only or hybrid user on the agent's page, in a browser context of its own. */
async function playInBrowser(
  options: RunPlayer,
  target: BrowserTarget,
  settings: UsersRunSettings,
  run: RunContext,
): Promise<PlayedRun> {
  let page: Awaited<ReturnType<BrowserTarget["openPage"]>> | undefined;
  try {
    page = await withDeadline(
      target.openPage({
        runId: run.runId,
        ...(options.screenshots ? { screenshotsDir: join(options.outDir, "screenshots", run.runId) } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      }),
      options.agentTimeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS,
      "the agent's page did not open",
    );
    const played = await simulateBrowserConversation({
      models: run.models,
      scenario: run.scenario,
      page,
      mode: settings.mode === "ui-only" ? "ui-only" : "hybrid",
      toolbox: run.toolbox,
      seed: run.runSeed,
      model: settings.userModel,
      scope: run.runId,
      ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
      ...(target.chat ? { chat: target.chat } : {}),
      ...(target.agentCalls
        ? { agentCalls: (id: string) => target.agentCalls?.(id) ?? Promise.resolve([]) }
        : {}),
      ...(options.userTemperature !== undefined ? { temperature: options.userTemperature } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    // Screenshots are named relative to the run folder, so the folder can move.
    for (const turn of played.turns)
      for (const action of turn.actions)
        if (action.screenshot) action.screenshot = relative(options.outDir, action.screenshot);
    const finalState =
      played.sessionId && target.finalState
        ? await target.finalState(played.sessionId).catch(() => undefined)
        : undefined;
    return { result: played, finalState };
  } catch (error) {
    if (error instanceof TerrariumError && error.code === "INTERRUPTED") throw error;
    return {
      result: {
        turns: [],
        endReason: "agent_error",
        error: `the page could not be opened: ${messageOf(error)}`,
      },
      finalState: undefined,
    };
  } finally {
    await page?.close().catch(() => undefined);
  }
}

/**
 * The browser modes need a `browser:` agent and api-only an API agent, and only API runs go on a queue;
 * refused before any work.
 */
export function checkMode(mode: UsersMode, browserAgent: boolean, queued = false): void {
  if (queued && mode !== "api-only")
    throw new TerrariumError(
      "INVALID_INPUT",
      `--queue runs API users only; --mode ${mode} runs in this process`,
    );
  if ((mode === "api-only") !== browserAgent) return;
  throw new TerrariumError(
    "INVALID_INPUT",
    mode === "api-only"
      ? "--mode api-only talks to the agent's API; a browser: agent needs --mode hybrid or ui-only"
      : `--mode ${mode} acts on the agent's web page: give --agent browser:<page url>`,
  );
}

/**
 * The agent of an `--agent` spec: a page for `browser:` (Chromium launched, `browser:demo` started),
 * else an API target (`planner:`, `openai-compatible:`, `http:`, `module:`).
 */
export async function openUsersAgent(
  spec: string,
  options: {
    models: Models;
    seed: string;
    agentTools?: string[];
    httpConfig?: string;
    /** The agent's timeout (each request of http, openai-compatible and planner agents), in ms. */
    timeoutMs?: number;
  },
): Promise<(UsersAgent & { close(): Promise<void> }) | BrowserTarget> {
  // One connection to the agent's address first: an agent that is not running costs no model call.
  const address = agentAddress(spec);
  if (address) await probeReachable(`--agent ${spec}`, address);
  for (const source of options.agentTools ?? [])
    if (source.startsWith("terrarium:"))
      await probeReachable("--agent-tools", source.slice("terrarium:".length));
  if (spec.startsWith("browser:")) {
    return openBrowserTarget(spec, {
      models: options.models,
      seed: options.seed,
      ...(options.agentTools ? { agentTools: options.agentTools } : {}),
    });
  }
  return createAgentTarget(spec, {
    models: options.models,
    seed: options.seed,
    ...(options.agentTools ? { agentTools: options.agentTools } : {}),
    ...(options.httpConfig ? { httpConfig: options.httpConfig } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: Math.max(1, Math.ceil(options.timeoutMs)) } : {}),
  });
}

/** The network address an `--agent` spec talks to (none for planner:, module: and browser:demo). */
function agentAddress(spec: string): string | undefined {
  if (spec.startsWith("browser:")) {
    const url = spec.slice("browser:".length);
    return /^https?:\/\//.test(url) ? url : undefined;
  }
  if (!/^(openai-compatible|https?):/.test(spec)) return undefined;
  const parsed = parseAgentSpec(spec);
  if (parsed.kind === "openai-compatible") return parsed.baseURL;
  if (parsed.kind === "http") return parsed.url;
  return undefined;
}

function isBrowserTarget(agent: UsersAgent | BrowserTarget): agent is BrowserTarget {
  return (agent as BrowserTarget).kind === "browser";
}

/** Largest final state kept in a transcript (tau2-retail's whole database is 1.2 MB); the judge sees it whole. */
export const MAX_STORED_STATE_BYTES = 256 * 1024;

function storedState(state: unknown): { finalState?: unknown; finalStateBytes?: number } {
  if (state === undefined) return {};
  const bytes = Buffer.byteLength(JSON.stringify(state) ?? "");
  return bytes <= MAX_STORED_STATE_BYTES ? { finalState: state } : { finalStateBytes: bytes };
}

/** Every turn a failure judge flagged, in run order. */
export function flaggedTurns(runs: readonly StoredRun[]): FlaggedTurn[] {
  const items: FlaggedTurn[] = [];
  for (const run of runs) {
    for (const verdict of run.judgement?.failures ?? []) {
      const turn = run.turns.find((t) => t.turn === verdict.turn);
      for (const dimension of verdict.flagged) {
        const score = verdict.scores[dimension];
        items.push({
          runId: run.runId,
          scenarioId: run.scenarioId,
          turn: verdict.turn,
          dimension,
          score: score?.score ?? 0,
          justification: score?.justification ?? "",
          userMessage: turn?.user ?? "",
          agentMessage: turn?.agent?.message ?? "",
        });
      }
    }
  }
  return items;
}

/** `run.json` says what the folder holds; a second run into it must be `--resume` with the same settings. */
function prepareFolder(outDir: string, settings: UsersRunSettings, resume: boolean): void {
  const file = join(outDir, "run.json");
  if (existsSync(file)) {
    if (!resume) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `${outDir} already holds a users run; pass --resume to continue it, or choose another --out`,
      );
    }
    const before = JSON.parse(readFileSync(file, "utf8")) as UsersRunSettings;
    for (const key of ["agent", "seed", "runs", "mode", "userModel"] as const) {
      if (JSON.stringify(before[key]) !== JSON.stringify(settings[key])) {
        throw new TerrariumError(
          "INVALID_INPUT",
          `--resume: ${key} was ${JSON.stringify(before[key])} in ${file}, now ${JSON.stringify(settings[key])}; resume with the same settings or choose another --out`,
        );
      }
    }
    const ids = (list: UsersRunSettings["scenarios"]) => JSON.stringify(list.map((s) => s.id));
    if (ids(before.scenarios) !== ids(settings.scenarios)) {
      throw new TerrariumError("INVALID_INPUT", `--resume: the scenarios differ from those in ${file}`);
    }
  } else if (resume && existsSync(join(outDir, "transcripts"))) {
    throw new TerrariumError("INVALID_INPUT", `--resume: ${outDir} has transcripts but no run.json`);
  }
  mkdirSync(join(outDir, "transcripts"), { recursive: true });
  writeJson(file, settings);
}

function writeJson(file: string, value: unknown): void {
  const partial = `${file}.partial`;
  writeFileSync(partial, `${JSON.stringify(value, null, 2)}\n`);
  // Renamed into place so a reader never sees half a file.
  renameSync(partial, file);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
