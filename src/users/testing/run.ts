/**
 * One scenario test: its script's steps in order against one agent session. Scripted messages and
 * `expect_*` steps touch no model; `simulate` reuses the simulated user of `users run` and `judge` the
 * checklist judge of `task/`, so a test that uses neither needs no configuration at all.
 */
import { jsonEqual } from "../../core/canonical-json.js";
import { TerrariumError } from "../../core/errors.js";
import { getAtPointer } from "../../core/json-pointer.js";
import { Models } from "../../models/hub.js";
import { judgeAttempt } from "../../task/feedback.js";
import type { AgentSession, AgentTarget } from "../agents/types.js";
import type { AgentToolCallRecord, ConversationMessage, EndReason, TurnRecord } from "../conversation.js";
import { clip, clipValue, JUDGE_LIMITS, transcriptText } from "../judges/shared.js";
import { DEFAULT_AGENT_TIMEOUT_MS, MAX_STORED_STATE_BYTES, withDeadline } from "../run/run-users.js";
import { type TranscriptLine, USERS_RUN_SCHEMA_VERSION } from "../run/transcript.js";
import { loadScenarios, parseScenario, type Scenario } from "../scenario/load.js";
import { guardedUserTurn } from "../simulator/conversation-loop.js";
import { UserToolFactory } from "../simulator/toolbox.js";
import { SimulatedUser, seedNumber } from "../simulator/user.js";
import { checkTurnBudget, RepetitionGuard } from "../turns/index.js";
import { isScenarioTestAgent, openScenarioTestAgent } from "./agent.js";
import { stepKind } from "./script.js";
import type {
  RunScenarioTestOptions,
  ScenarioTest,
  ScenarioTestResult,
  ScenarioTestTranscript,
  ScenarioWithScript,
  ScriptStep,
  StepResult,
} from "./types.js";

/** Characters of a reply or a value quoted in a step's message. */
const QUOTE_CHARS = 300;
/** Calls listed in a failed tool-call expectation's `actual`. */
const LISTED_CALLS = 20;

/**
 * A test object (the keys of a scenario file plus `script`) checked and normalised, with every problem
 * located (`CONFIG_INVALID`). `id` defaults to "test".
 */
export function parseScenarioTest(
  test: ScenarioTest,
  options: { file?: string; baseDir?: string } = {},
): ScenarioWithScript {
  if (test === null || typeof test !== "object" || Array.isArray(test))
    throw new TerrariumError("INVALID_INPUT", "a scenario test is an object with script (and id, …)");
  if (!Object.hasOwn(test, "script"))
    throw new TerrariumError("CONFIG_INVALID", "the scenario has no script: it is not a test", {
      where: { ...(options.file ? { file: options.file } : {}), pointer: "" },
    });
  const scenario = parseScenario(Object.hasOwn(test, "id") ? test : { id: "test", ...test }, options);
  return scenario as ScenarioWithScript;
}

/**
 * The tests of a file or a folder (its `.yaml`, `.yml` and `.json` files): the scenarios with a script.
 * Refused when none has one, so a wrong path does not pass as an empty suite.
 */
export function loadScenarioTests(pathOrDir: string): ScenarioWithScript[] {
  const tests = loadScenarios(pathOrDir).filter(isScenarioTest);
  if (tests.length === 0)
    throw new TerrariumError(
      "CONFIG_INVALID",
      "no scenario here has a script (a test is a scenario with script:)",
      {
        where: { file: pathOrDir },
      },
    );
  return tests;
}

/** Whether a loaded scenario is a test. */
export function isScenarioTest(scenario: Scenario): scenario is ScenarioWithScript {
  return Array.isArray(scenario.script);
}

function isLoaded(test: ScenarioTest | Scenario): test is Scenario {
  const value = test as Partial<Scenario>;
  return (
    value.schemaVersion === 1 &&
    typeof value.source === "object" &&
    Array.isArray(value.userTools) &&
    typeof value.maxTurns === "number"
  );
}

/**
 * Runs one test: opens a session with the agent (a fresh engine session when it has tools), plays the
 * steps in order, and stops checking at the first step that fails or errs (the later ones are
 * `not_run`). Bad input (the test, the agent spec, the options) throws `TerrariumError`; what goes wrong
 * while the test runs (the agent fails, no user or judge model is configured) is the result's `error`.
 */
export async function runScenarioTest(
  test: ScenarioTest | Scenario,
  options: RunScenarioTestOptions,
): Promise<ScenarioTestResult> {
  const scenario = isLoaded(test) ? test : parseScenarioTest(test);
  if (!isScenarioTest(scenario))
    throw new TerrariumError("CONFIG_INVALID", `scenario "${scenario.id}" has no script: it is not a test`, {
      where: {
        ...(scenario.source.file ? { file: scenario.source.file } : {}),
        pointer: scenario.source.pointer,
      },
    });
  if (options === null || typeof options !== "object")
    throw new TerrariumError("INVALID_INPUT", "runScenarioTest needs options with an agent");
  if (options.seed !== undefined && (typeof options.seed !== "string" || options.seed === ""))
    throw new TerrariumError("INVALID_INPUT", "seed must be a non-empty string");
  if (options.timeoutMs !== undefined && (!Number.isInteger(options.timeoutMs) || options.timeoutMs < 1))
    throw new TerrariumError(
      "INVALID_INPUT",
      `timeoutMs must be a positive whole number (got ${options.timeoutMs})`,
    );
  const owned = !isScenarioTestAgent(options.agent);
  const agent = isScenarioTestAgent(options.agent)
    ? options.agent
    : await openScenarioTestAgent(options.agent, options);
  try {
    return await new TestRun(scenario, agent.spec, options).play(agent.target);
  } finally {
    if (owned) await agent.close();
  }
}

class TestRun {
  private readonly seed: string;
  private readonly runId: string;
  private readonly turns: TurnRecord[] = [];
  private readonly conversation: ConversationMessage[] = [];
  private readonly calls: AgentToolCallRecord[] = [];
  private readonly steps: StepResult[] = [];
  private readonly guard: RepetitionGuard;
  /** Bounds every wait on the agent, so a hung agent fails its test instead of holding the suite. */
  private readonly timeoutMs: number;
  private session: AgentSession | undefined;
  private ended: { reason: EndReason; why: string } | undefined;
  private agentFailure: string | undefined;
  private userModel = "";
  private user: SimulatedUser | undefined;
  private toolFactory: UserToolFactory | undefined;
  private ownModels: Models | undefined;

  constructor(
    private readonly scenario: ScenarioWithScript,
    private readonly agentSpec: string,
    private readonly options: RunScenarioTestOptions,
  ) {
    this.seed = options.seed ?? `terrarium/${scenario.id}/1`;
    this.runId = options.runId ?? `${scenario.id}.1`;
    this.guard = new RepetitionGuard({ maxRedirects: scenario.stop.onRepeat === "redirect" ? 1 : 0 });
    this.timeoutMs = options.timeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS;
  }

  /** The user's and the judge's models: the caller's, else made from `config` on first use, else none. */
  private models(): Models | undefined {
    if (this.options.models) return this.options.models;
    if (!this.options.config) return undefined;
    this.ownModels ??= new Models({ config: this.options.config });
    return this.ownModels;
  }

  private agentWait<T>(work: Promise<T>, what: string): Promise<T> {
    return withDeadline(work, this.timeoutMs, what);
  }

  async play(target: Pick<AgentTarget, "open">): Promise<ScenarioTestResult> {
    const started = performance.now();
    const startedAt = new Date().toISOString();
    let error: string | undefined;
    let finalState: unknown;
    try {
      try {
        this.session = await this.agentWait(
          target.open({
            runId: this.runId,
            seed: this.seed,
            scenario: this.scenario,
            ...(this.options.signal ? { signal: this.options.signal } : {}),
          }),
          "the agent's session did not open",
        );
      } catch (cause) {
        error = `the agent's session did not open: ${messageOf(cause)}`;
      }
      let stopped = error !== undefined;
      for (const [index, step] of this.scenario.script.entries()) {
        const kind = stepKind(step);
        if (stopped) {
          await this.record({
            step,
            kind,
            index,
            passed: false,
            status: "not_run",
            message: "not run",
            durationMs: 0,
          });
          continue;
        }
        const stepStarted = performance.now();
        let outcome: Omit<StepResult, "step" | "kind" | "index" | "durationMs">;
        if (this.options.signal?.aborted) outcome = errored("the test was cancelled");
        else {
          try {
            outcome = await this.run(step);
          } catch (cause) {
            outcome = errored(messageOf(cause));
          }
        }
        const result: StepResult = {
          step,
          kind,
          index,
          ...outcome,
          durationMs: Math.round(performance.now() - stepStarted),
        };
        await this.record(result);
        if (result.status !== "passed") {
          stopped = true;
          if (result.status === "error") error = `script[${index}] (${kind}): ${result.message}`;
        }
      }
      if (this.session) {
        try {
          finalState = await this.agentWait(
            this.session.finalState(),
            "the agent's tools gave no final state",
          );
        } catch {
          // the state is for the transcript; a test that asserted on it has read it already
        }
      }
    } finally {
      await this.session?.close().catch(() => undefined);
      await this.toolFactory?.close().catch(() => undefined);
      await this.ownModels?.close().catch(() => undefined);
    }
    const failedStep = this.steps.find((step) => step.status === "failed" || step.status === "error");
    const durationMs = Math.round(performance.now() - started);
    const transcript: ScenarioTestTranscript = {
      scenarioId: this.scenario.id,
      seed: this.seed,
      agent: this.agentSpec,
      startedAt,
      turns: this.turns,
      endReason: this.agentFailure ? "agent_error" : (this.ended?.reason ?? "stop"),
      ...(error ? { error } : {}),
      agentToolCalls: this.calls,
      ...(finalState !== undefined ? { finalState } : {}),
      userModel: this.userModel,
      durationMs,
    };
    return {
      passed: failedStep === undefined && error === undefined,
      scenarioId: this.scenario.id,
      steps: this.steps,
      ...(failedStep ? { failedStep } : {}),
      transcript,
      ...(error ? { error } : {}),
      durationMs,
    };
  }

  private async record(step: StepResult): Promise<void> {
    this.steps.push(step);
    await this.options.onStep?.(step);
  }

  private async run(step: ScriptStep): Promise<Omit<StepResult, "step" | "kind" | "index" | "durationMs">> {
    if ("user" in step) return this.say(step.user);
    if ("simulate" in step) return this.simulate(step.simulate);
    if ("expect_reply" in step) return this.expectReply(step.expect_reply);
    if ("expect_tool_call" in step) return this.expectToolCall(step.expect_tool_call);
    if ("expect_no_tool_call" in step) return this.expectNoToolCall(step.expect_no_tool_call);
    if ("expect_state" in step) return this.expectState(step.expect_state);
    if ("judge" in step) return this.judge(step.judge);
    this.ended ??= { reason: "stop", why: "the script stopped it" };
    return passed("the conversation ends");
  }

  // ---- conversation steps

  private async say(message: string) {
    if (this.ended) return errored(`nothing can be said: the conversation has ended (${this.ended.why})`);
    const turn: TurnRecord = {
      turn: this.turns.length + 1,
      actions: [],
      user: message,
      userUsage: { inputTokens: 0, outputTokens: 0, calls: 0 },
      timing: { userModelMs: 0, toolsMs: 0, agentMs: 0 },
    };
    const failure = await this.exchange(turn);
    if (failure) return errored(failure);
    const calls = turn.agent?.toolCalls.length ?? 0;
    return passed(`the agent answered${calls ? ` (${calls} tool call${calls === 1 ? "" : "s"})` : ""}`);
  }

  /** Sends the turn's message, records the turn; the agent's failure as text (the test cannot go on). */
  private async exchange(turn: TurnRecord): Promise<string | undefined> {
    const session = this.session as AgentSession;
    this.conversation.push({ role: "user", content: turn.user });
    const started = performance.now();
    try {
      const reply = await this.agentWait(session.send(turn.user), "the agent gave no answer");
      const latencyMs = Math.round((performance.now() - started) * 1000) / 1000;
      turn.agent = { ...reply, latencyMs };
      turn.timing.agentMs = latencyMs;
      this.conversation.push({ role: "agent", content: reply.message });
      this.calls.push(...reply.toolCalls);
      await this.finishTurn(turn);
      return undefined;
    } catch (cause) {
      turn.timing.agentMs = Math.round(performance.now() - started);
      turn.agentError = messageOf(cause);
      await this.finishTurn(turn);
      this.agentFailure = turn.agentError;
      this.ended = { reason: "agent_error", why: "the agent failed" };
      return `the agent failed: ${turn.agentError}`;
    }
  }

  private async finishTurn(turn: TurnRecord): Promise<void> {
    this.turns.push(turn);
    await this.options.onTurn?.(turn);
  }

  private async simulate(count: number | "until_stop") {
    if (this.ended)
      return errored(`nothing can be simulated: the conversation has ended (${this.ended.why})`);
    const user = await this.simulatedUser();
    if (typeof user === "string") return errored(user);
    let played = 0;
    for (;;) {
      if (count !== "until_stop" && played >= count) break;
      const budget = checkTurnBudget(this.turns.length, this.scenario.maxTurns);
      if (budget.done) {
        this.ended = { reason: "max_turns", why: `max_turns (${this.scenario.maxTurns}) was reached` };
        break;
      }
      if (this.options.signal?.aborted) return errored("the test was cancelled");
      const userStarted = performance.now();
      let output: Awaited<ReturnType<SimulatedUser["turn"]>>;
      let redirected = false;
      let repeated = false;
      try {
        ({ output, redirected, repeated } = await guardedUserTurn(
          user,
          this.conversation,
          budget,
          this.guard,
        ));
      } catch (cause) {
        this.ended = { reason: "user_error", why: "the user's model failed" };
        return errored(`the user's model failed: ${messageOf(cause)}`);
      }
      const userMs = performance.now() - userStarted;
      const turn: TurnRecord = {
        turn: budget.turn,
        plan: output.plan,
        actions: output.actions,
        user: output.parsed.message,
        userUsage: output.usage,
        timing: {
          userModelMs: Math.round(userMs - output.toolsMs),
          toolsMs: Math.round(output.toolsMs),
          agentMs: 0,
        },
        ...(output.parsed.stop ? { stop: output.parsed.stop } : {}),
        ...(redirected ? { redirected: true } : {}),
      };
      played += 1;
      if (output.parsed.empty) {
        await this.finishTurn(turn);
        this.ended = { reason: "empty_output", why: "the user's model kept answering nothing" };
        break;
      }
      if (repeated) {
        await this.finishTurn({ ...turn, repeated: true });
        this.ended = { reason: "repetition", why: "the simulated user repeated itself" };
        break;
      }
      if (output.parsed.stop) {
        await this.finishTurn(turn);
        this.ended = {
          reason: output.parsed.stop,
          why: `the simulated user ended it (${output.parsed.stop})`,
        };
        break;
      }
      const failure = await this.exchange(turn);
      if (failure) return errored(failure);
    }
    const how = this.ended ? `; ${this.ended.why}` : "";
    return passed(`${played} simulated turn${played === 1 ? "" : "s"}${how}`);
  }

  /** The simulated user, made on first use; a string says why there is none. */
  private async simulatedUser(): Promise<SimulatedUser | string> {
    if (this.user) return this.user;
    const models = this.models();
    const none =
      "simulate needs a user model: pass models (library) or configure roles.user or roles.default in terrarium.config.yaml (--user-model)";
    if (!models) return none;
    let model: string;
    try {
      model = models.modelFor("user");
    } catch (cause) {
      return `${none} (${messageOf(cause)})`;
    }
    this.toolFactory = new UserToolFactory({ models });
    this.toolFactory.check([this.scenario]);
    const toolbox = await this.toolFactory.toolbox(this.scenario, this.seed);
    this.userModel = model;
    this.user = new SimulatedUser({
      models,
      scenario: this.scenario,
      toolbox,
      seed: this.seed,
      model,
      scope: this.runId,
    });
    return this.user;
  }

  // ---- assertions

  private expectReply(expect: { matches: string; flags?: string } | { not_matches: string; flags?: string }) {
    const last = this.lastReply();
    const positive = "matches" in expect;
    const pattern = positive ? expect.matches : expect.not_matches;
    const shown = `/${pattern}/${expect.flags ?? ""}`;
    const expected = positive ? `a reply matching ${shown}` : `a reply not matching ${shown}`;
    if (last === undefined)
      return failed(`expected ${expected}, but the agent has not replied yet`, expected, null);
    const matched = new RegExp(pattern, expect.flags ?? "").test(last);
    const quote = clip(last, QUOTE_CHARS);
    if (matched === positive)
      return passed(`the last reply ${positive ? "matches" : "does not match"} ${shown}`);
    return failed(`expected ${expected}, got ${JSON.stringify(quote)}`, expected, quote);
  }

  private lastReply(): string | undefined {
    for (let index = this.turns.length - 1; index >= 0; index--) {
      const reply = this.turns[index]?.agent;
      if (reply) return reply.message;
    }
    return undefined;
  }

  private expectToolCall(expect: { name: string; arguments?: unknown }) {
    const named = this.calls.filter((call) => call.tool === expect.name);
    const hasArguments = expect.arguments !== undefined;
    const expected = hasArguments
      ? { name: expect.name, arguments: expect.arguments }
      : { name: expect.name };
    const match = named.find(
      (call) => !hasArguments || containsDeep(argumentsOf(call.arguments), expect.arguments),
    );
    if (match)
      return passed(
        `${expect.name} was called${hasArguments ? ` with ${JSON.stringify(clipValue(match.arguments, QUOTE_CHARS))}` : ""}`,
      );
    const actual = this.callList();
    if (named.length === 0) {
      const others = this.calls.length
        ? `; the calls so far: ${[...new Set(this.calls.map((call) => call.tool))].join(", ")}`
        : "; the agent made no tool call";
      return failed(`expected a call of ${expect.name}, but there was none${others}`, expected, actual);
    }
    return failed(
      `expected a call of ${expect.name} with arguments containing ${JSON.stringify(clipValue(expect.arguments, QUOTE_CHARS))}, but its ${named.length} call${named.length === 1 ? " had" : "s had"} ${named
        .slice(0, 3)
        .map((call) => JSON.stringify(clipValue(call.arguments, QUOTE_CHARS)))
        .join(", ")}${named.length > 3 ? ", …" : ""}`,
      expected,
      actual,
    );
  }

  private expectNoToolCall(name: string) {
    const named = this.calls.filter((call) => call.tool === name);
    if (named.length === 0) return passed(`${name} was not called`);
    return failed(
      `expected no call of ${name}, but it was called ${named.length} time${named.length === 1 ? "" : "s"} (first with ${JSON.stringify(clipValue(named[0]?.arguments, QUOTE_CHARS))})`,
      `no call of ${name}`,
      named
        .slice(0, LISTED_CALLS)
        .map((call) => ({ tool: call.tool, arguments: call.arguments, status: call.status })),
    );
  }

  private callList() {
    return this.calls.slice(0, LISTED_CALLS).map((call) => ({ tool: call.tool, arguments: call.arguments }));
  }

  private async expectState(expect: { pointer: string; equals: unknown }) {
    const session = this.session as AgentSession;
    const state = await this.agentWait(session.finalState(), "the agent's tools gave no state");
    if (state === undefined)
      return errored(
        "expect_state needs the agent's tools' state: run the test with agentTools (--agent-tools <environment or tool files>) and an agent that acts on them",
      );
    const actual = getAtPointer(state, expect.pointer);
    const where = expect.pointer === "" ? "the state" : expect.pointer;
    if (actual === undefined)
      return failed(
        `expected ${where} to equal ${quoteValue(expect.equals)}, but there is nothing at ${where}`,
        expect.equals,
        null,
      );
    if (jsonEqual(actual, expect.equals)) return passed(`${where} equals ${quoteValue(expect.equals)}`);
    return failed(
      `expected ${where} to equal ${quoteValue(expect.equals)}, got ${quoteValue(actual)}`,
      expect.equals,
      clipValue(actual, 4_000),
    );
  }

  private async judge(criteria: string[]) {
    const models = this.models();
    const none =
      "judge needs a judge model: pass models (library) or configure roles.judge or roles.default in terrarium.config.yaml";
    if (!models) return errored(none);
    try {
      models.modelFor("judge");
    } catch (cause) {
      return errored(`${none} (${messageOf(cause)})`);
    }
    if (this.turns.length === 0) return errored("judge has no conversation to judge yet");
    const session = this.session as AgentSession;
    const state = await this.agentWait(session.finalState(), "the agent's tools gave no state").catch(
      () => undefined,
    );
    const judgement = await judgeAttempt(
      models,
      {
        task: this.scenario.goal
          ? clip(this.scenario.goal, JUDGE_LIMITS.scenarioFieldChars)
          : "Hold a conversation with the user that meets every checklist item.",
        checklist: criteria.map((description) => ({ description })),
        state: clipValue(state ?? null, JUDGE_LIMITS.stateChars),
        calls: this.calls.slice(-100).map((call) => ({
          name: call.tool,
          arguments: clipValue(call.arguments, JUDGE_LIMITS.toolValueChars),
          status: call.status,
          result: clipValue(call.result, JUDGE_LIMITS.toolValueChars),
        })),
        agentMessage: transcriptText(this.turns),
      },
      { role: "judge", scope: this.runId, seed: seedNumber(`${this.seed}/judge`) },
    );
    // The judge answers one item per criterion, in order.
    const verdicts = criteria.map((criterion, index) => {
      const item = judgement.items[index];
      return {
        criterion,
        passed: item?.status === "success",
        reasoning: item ? `${item.status}: ${item.reasoning}` : "the judge gave no verdict",
      };
    });
    const unmet = verdicts.filter((verdict) => !verdict.passed);
    if (unmet.length === 0)
      return {
        ...passed(
          `the judge found ${criteria.length === 1 ? "the criterion" : `all ${criteria.length} criteria`} met`,
        ),
        criteria: verdicts,
      };
    return {
      ...failed(
        `the judge found ${unmet.length} of ${criteria.length} criteria unmet: ${unmet
          .map((verdict) => `"${clip(verdict.criterion, 120)}" (${clip(verdict.reasoning, 300)})`)
          .join("; ")}`,
        criteria,
        unmet.map((verdict) => ({ criterion: verdict.criterion, reasoning: verdict.reasoning })),
      ),
      criteria: verdicts,
    };
  }
}

function passed(message: string) {
  return { passed: true, status: "passed" as const, message };
}

function failed(message: string, expected: unknown, actual: unknown) {
  return { passed: false, status: "failed" as const, message, expected, actual };
}

function errored(message: string) {
  return { passed: false, status: "error" as const, message };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function quoteValue(value: unknown): string {
  const json = JSON.stringify(value) ?? "undefined";
  return json.length > QUOTE_CHARS ? `${json.slice(0, QUOTE_CHARS)}…` : json;
}

/** Arguments as an agent may report them: an object, or the object's JSON text. */
function argumentsOf(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const text = value.trim();
  if (!text.startsWith("{") && !text.startsWith("[")) return value;
  try {
    return JSON.parse(text);
  } catch {
    return value;
  }
}

/**
 * Whether `actual` contains `expected`: objects need each expected key (own keys only) with a value that
 * contains the expected one, lists the same length with each item containing its counterpart, anything
 * else equal as JSON.
 */
export function containsDeep(actual: unknown, expected: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return false;
    return expected.every((item, index) => containsDeep(actual[index], item, depth + 1));
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return false;
    return Object.keys(expected).every(
      (key) =>
        Object.hasOwn(actual, key) &&
        containsDeep(
          (actual as Record<string, unknown>)[key],
          (expected as Record<string, unknown>)[key],
          depth + 1,
        ),
    );
  }
  return jsonEqual(actual, expected);
}

/**
 * The transcript lines of one test result, as `users run` writes them (`run/transcript.ts`): the header,
 * each turn, the end. `index` is the 1-based run of the test (with `--runs`).
 */
export function scenarioTestTranscriptLines(
  result: ScenarioTestResult,
  header: { runId: string; index: number; mode?: string },
): TranscriptLine[] {
  const transcript = result.transcript;
  const stateBytes =
    transcript.finalState === undefined ? 0 : Buffer.byteLength(JSON.stringify(transcript.finalState) ?? "");
  return [
    {
      type: "run",
      schemaVersion: USERS_RUN_SCHEMA_VERSION,
      runId: header.runId,
      scenarioId: transcript.scenarioId,
      index: header.index,
      seed: transcript.seed,
      agent: transcript.agent,
      mode: header.mode ?? "test",
      startedAt: transcript.startedAt,
    },
    ...transcript.turns.map((turn): TranscriptLine => ({ type: "turn", ...turn })),
    {
      type: "end",
      endReason: transcript.endReason,
      ...(transcript.error ? { error: transcript.error } : {}),
      turns: transcript.turns.length,
      agentToolCalls: transcript.agentToolCalls,
      ...(transcript.finalState === undefined
        ? {}
        : stateBytes <= MAX_STORED_STATE_BYTES
          ? { finalState: transcript.finalState }
          : { finalStateBytes: stateBytes }),
      userModel: transcript.userModel,
      durationMs: transcript.durationMs,
    },
  ];
}
