/**
 * Scenario tests: a scenario with a `script:` of steps, run against an agent with assertions on what it
 * said and did. These are the shapes the runner (`run.ts`), the `users test` command and the library
 * (`terrarium/testing`) share.
 */

import type { TerrariumConfig } from "../../models/config.js";
import type { Models } from "../../models/hub.js";
import type { HttpAgentConfig } from "../agents/http-config.js";
import type { ModuleAgentInput, ModuleAgentOutput } from "../agents/module.js";
import type { AgentTarget } from "../agents/types.js";
import type { AgentToolCallRecord, EndReason, TurnRecord } from "../conversation.js";
import type { Scenario } from "../scenario/load.js";

/** `expect_reply`: a regular expression (JavaScript syntax) the agent's last reply must (not) match. */
export type ExpectReplyStep = {
  expect_reply: { matches: string; flags?: string } | { not_matches: string; flags?: string };
};

/** One step of a script, as written in a file (normalised: `stop` is always `{stop: true}`). */
export type ScriptStep =
  /** A scripted user message; the agent answers it. */
  | { user: string }
  /** `n` turns of the simulated user, or turns until it stops (within `max_turns`). Needs a user model. */
  | { simulate: number | "until_stop" }
  | ExpectReplyStep
  /** The agent called this tool so far, with arguments that contain these (deep partial match). */
  | { expect_tool_call: { name: string; arguments?: unknown } }
  /** The agent has not called this tool so far. */
  | { expect_no_tool_call: string }
  /** The value at `pointer` (JSON Pointer) in the agent's tools' state equals `equals` (deep equality). */
  | { expect_state: { pointer: string; equals: unknown } }
  /** Each criterion judged on the conversation so far. Needs a judge model. */
  | { judge: string[] }
  /** Ends the conversation; later steps still run (assertions on what happened). */
  | { stop: true };

/** A step as it may be written: `- stop` is the bare string. */
export type ScriptStepInput = ScriptStep | "stop";

export type ScriptStepKind =
  | "user"
  | "simulate"
  | "expect_reply"
  | "expect_tool_call"
  | "expect_no_tool_call"
  | "expect_state"
  | "judge"
  | "stop";

/**
 * A test as an object: the keys of a scenario file plus `script`. With a script, only `id` and `script`
 * are required (`id` defaults to "test" in the library); `profile`, `goal` and `knowledge` are needed by
 * `simulate` steps, `max_turns` (default 20 in tests) bounds them.
 */
export interface ScenarioTest {
  id?: string;
  description?: string;
  tags?: string[];
  profile?: string | Record<string, unknown>;
  goal?: string;
  knowledge?: unknown;
  agent_context?: string;
  user_tools?: unknown[];
  max_turns?: number;
  stop?: { tokens?: string[]; when?: string[]; on_repeat?: "end" | "redirect" };
  expected?: { behaviour?: string; checklist?: unknown[] };
  script: ScriptStepInput[];
}

/** A loaded scenario that is a test. */
export type ScenarioWithScript = Scenario & { script: ScriptStep[] };

export type StepStatus = "passed" | "failed" | "not_run" | "error";

export interface StepResult {
  step: ScriptStep;
  kind: ScriptStepKind;
  /** 0-based position in the script. */
  index: number;
  passed: boolean;
  status: StepStatus;
  /** One line: what was checked and how it went (for failures: what was expected and what happened). */
  message: string;
  expected?: unknown;
  actual?: unknown;
  durationMs: number;
  /** `judge` steps: the verdict on each criterion. */
  criteria?: Array<{ criterion: string; passed: boolean; reasoning: string }>;
}

/** The conversation of one test, in the transcript shapes of `users run` (`run/transcript.ts`). */
export interface ScenarioTestTranscript {
  scenarioId: string;
  seed: string;
  /** The agent's spec (`module:…`, `planner:…`) or "function" for an in-process function. */
  agent: string;
  startedAt: string;
  /** Every user turn: scripted ones have no plan, no actions and zero user usage. */
  turns: TurnRecord[];
  /**
   * How the conversation ended: "stop" after a `stop` step, the script's end or the user's stop token;
   * what `simulate` ended with otherwise (max_turns, repetition, …); agent_error/user_error on failures.
   */
  endReason: EndReason;
  error?: string;
  /** Every tool call the agent made, in order (executed through its tools, or only reported). */
  agentToolCalls: AgentToolCallRecord[];
  /** The agent's tools' state at the end, when terrarium runs them. */
  finalState?: unknown;
  /** The user model's name, or "" when no step simulated the user. */
  userModel: string;
  durationMs: number;
}

export interface ScenarioTestResult {
  /** Every step passed (none failed, none errored). */
  passed: boolean;
  scenarioId: string;
  steps: StepResult[];
  /** The first step that failed or errored. */
  failedStep?: StepResult;
  transcript: ScenarioTestTranscript;
  /** Set when the test could not run as written (no user/judge model, no agent tools, the agent broke). */
  error?: string;
  durationMs: number;
}

/** The agent's tools, for an in-process agent: calls run on the test's own engine session and are recorded. */
export interface AgentToolsHandle {
  /** The tools' names ([] without agent tools). */
  readonly names: string[];
  /** The tools' descriptions and JSON Schemas, for an agent that hands them to a model. */
  list(): Array<{ name: string; description: string; inputSchema: unknown }>;
  /**
   * Runs one call on the session. Bad arguments and tool errors are results (`status` not "ok"), not
   * throws; it throws only when no agent tools were given or the session is closed.
   */
  call(name: string, args?: unknown): Promise<AgentToolCallOutcome>;
  /** The session's current state. */
  state(): Promise<unknown>;
}

export interface AgentToolCallOutcome {
  status: "ok" | "invalid" | "tool_error" | "error";
  /** What the tool returned (or the error's details). */
  observation: unknown;
  errors: unknown[];
}

/** What an in-process agent is given: a module agent's input and the handle on its tools. */
export interface AgentFunctionInput extends ModuleAgentInput {
  tools: AgentToolsHandle;
}

/**
 * What an in-process agent answers: the same as a module agent (`module:`), the reply text or the text with
 * the calls it made outside `tools.call` (they count, as for coverage) and its usage. Calls made through
 * `tools.call` are recorded already and need not be repeated.
 */
export type AgentFunctionOutput = ModuleAgentOutput;

/** An agent in this process. */
export type AgentFunction = (input: AgentFunctionInput) => AgentFunctionOutput | Promise<AgentFunctionOutput>;

/** An agent opened once and shared by many tests (see `openScenarioTestAgent`); close it when done. */
export interface ScenarioTestAgent {
  readonly spec: string;
  /** The target behind it (module and function agents are wrapped). */
  readonly target: AgentTarget;
  close(): Promise<void>;
}

export interface ScenarioTestAgentOptions {
  /** Environment names (tau2-retail) or tool definition files the agent acts on (`--agent-tools`). */
  agentTools?: string[];
  /** Models for `planner:` agents and LLM-simulated agent tools; created from `config` when absent. */
  models?: Models;
  config?: TerrariumConfig;
  /** An http agent's config file or object (`--http-config`). */
  httpConfig?: string | HttpAgentConfig;
  /** Where relative paths are resolved (module, tool files); the process's by default. */
  cwd?: string;
  /** Milliseconds for each agent request, and for each wait on the agent in a test (default 60 s). */
  timeoutMs?: number;
  maxToolSteps?: number;
}

export interface RunScenarioTestOptions extends ScenarioTestAgentOptions {
  /** An `--agent` spec (module:, http:, planner:, openai-compatible:), a function, or an opened agent. */
  agent: string | AgentFunction | ScenarioTestAgent;
  /**
   * The user and judge models (else made from `config` when a step needs them). A test that only scripts
   * and asserts needs none (and none is created); `simulate` needs the `user` role and `judge` the `judge`
   * role (each falls back to `roles.default`).
   */
  models?: Models;
  /** Seed of the test (default "terrarium"); it reaches the user, the judge, the agent and its tools. */
  seed?: string;
  /** The run's id (default `<id>.1`): names the agent session and the usage scope. */
  runId?: string;
  /** Aborting it stops the test before its next step with an error. */
  signal?: AbortSignal;
  /** Called with each finished turn (e.g. to write a transcript as the test goes). */
  onTurn?: (turn: TurnRecord) => void | Promise<void>;
  /** Called with each finished step. */
  onStep?: (step: StepResult) => void | Promise<void>;
}
