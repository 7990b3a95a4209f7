/**
 * The agent a scenario test talks to. `--agent` specs become the targets `users run` uses; a `module:`
 * agent and an in-process function are wrapped so that they get a handle on their tools (`tools.call`),
 * whose calls run on the test's own engine session and are recorded like a planner's.
 */
import { canonicalJson } from "../../core/canonical-json.js";
import { TerrariumError } from "../../core/errors.js";
import { parseConfig } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { buildEngine } from "../../sim/build-engine.js";
import type { Engine } from "../../sim/engine.js";
import { createAgentTarget } from "../agents/create.js";
import { loadModuleAgent } from "../agents/module.js";
import { OpenAiCompatibleTarget } from "../agents/openai-compatible.js";
import { PlannerTarget } from "../agents/planner.js";
import {
  agentError,
  capText,
  DEFAULT_MAX_TOOL_STEPS,
  DEFAULT_TIMEOUT_MS,
  recordsFromHistory,
  resolveSources,
  runSessionId,
} from "../agents/shared.js";
import { parseAgentSpec } from "../agents/spec.js";
import type { AgentSession, AgentSessionContext, AgentTarget } from "../agents/types.js";
import type { AgentReply, AgentToolCallRecord, ConversationMessage } from "../conversation.js";
import type {
  AgentFunction,
  AgentFunctionOutput,
  AgentToolCallOutcome,
  AgentToolsHandle,
  ScenarioTestAgent,
  ScenarioTestAgentOptions,
} from "./types.js";

/** What a function agent is called in results and transcripts. */
export const FUNCTION_AGENT_SPEC = "function";

/**
 * Opens the agent once, for any number of tests (each test gets its own session: a fresh engine session
 * when the agent has tools). Bad input (the spec, the module, the tool sources) is refused here, before
 * any test runs. Close it when the tests are done.
 */
export async function openScenarioTestAgent(
  agent: string | AgentFunction,
  options: ScenarioTestAgentOptions = {},
): Promise<ScenarioTestAgent> {
  if (options.agentTools !== undefined && !Array.isArray(options.agentTools))
    throw new TerrariumError("INVALID_INPUT", "agentTools must be a list of environment names or tool files");
  const sources =
    options.agentTools && options.agentTools.length > 0
      ? resolveSources(options.agentTools, options.cwd)
      : undefined;
  if (typeof agent === "function") {
    const engine = sources ? await engineFor(sources, options) : undefined;
    return wrap(new FunctionTarget(FUNCTION_AGENT_SPEC, agent, engine));
  }
  if (typeof agent !== "string")
    throw new TerrariumError(
      "INVALID_INPUT",
      "agent must be an --agent spec (module:, http:, planner:, openai-compatible:) or a function ({message, history, sessionId, tools}) => reply",
    );
  const parsed = parseAgentSpec(agent);
  if (parsed.kind === "module") {
    const fn = await loadModuleAgent(parsed.path, parsed.exportName, options.cwd);
    const engine = sources ? await engineFor(sources, options) : undefined;
    return wrap(new FunctionTarget(agent, fn as AgentFunction, engine));
  }
  const timeoutMs = positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, "timeoutMs");
  const maxToolSteps = positive(options.maxToolSteps, DEFAULT_MAX_TOOL_STEPS, "maxToolSteps");
  // The planner and openai-compatible targets are built here rather than by createAgentTarget so that
  // their tools' engine gets the test's models (no roles.default) while the planner keeps the caller's.
  if (parsed.kind === "planner") {
    if (!sources)
      throw new TerrariumError(
        "INVALID_INPUT",
        `agent "${agent}" needs agentTools (--agent-tools): the planner acts on tools terrarium runs`,
      );
    const models = options.models ?? new Models(options.config ? { config: options.config } : {});
    try {
      await models.backend(parsed.model); // the provider and its key, checked without a call
    } catch (error) {
      throw new TerrariumError(
        error instanceof TerrariumError ? error.code : "INVALID_INPUT",
        `agent "${agent}": ${(error as Error).message}`,
        { cause: error },
      );
    }
    const engine = await engineFor(sources, options);
    return wrap(new PlannerTarget(agent, parsed.model, { engine, models, maxToolSteps, timeoutMs }));
  }
  if (parsed.kind === "openai-compatible") {
    const engine = sources ? await engineFor(sources, options) : undefined;
    return wrap(
      new OpenAiCompatibleTarget(agent, {
        baseURL: parsed.baseURL,
        model: parsed.model,
        ...(engine ? { engine } : {}),
        maxToolSteps,
        timeoutMs,
      }),
    );
  }
  const target = await createAgentTarget(agent, {
    models: agentModels(options),
    ...(sources ? { agentTools: sources } : {}),
    ...(options.httpConfig !== undefined ? { httpConfig: options.httpConfig } : {}),
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.maxToolSteps !== undefined ? { maxToolSteps: options.maxToolSteps } : {}),
  });
  return wrap(target);
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1)
    throw new TerrariumError("INVALID_INPUT", `${name} must be a positive whole number (got ${value})`);
  return value;
}

/** Whether `value` is an agent opened by `openScenarioTestAgent`. */
export function isScenarioTestAgent(value: unknown): value is ScenarioTestAgent {
  return (
    value !== null &&
    typeof value === "object" &&
    typeof (value as ScenarioTestAgent).close === "function" &&
    typeof (value as ScenarioTestAgent).target?.open === "function"
  );
}

function wrap(target: AgentTarget): ScenarioTestAgent {
  let closed: Promise<void> | undefined;
  return {
    spec: target.spec,
    target,
    close: () => {
      closed ??= target.close();
      return closed;
    },
  };
}

/**
 * The models the agent's side may use. `roles.default` is dropped: in a test it must not quietly turn on
 * the llm simulator or semantic validation of the agent's tool calls (a scripted test calls no model).
 * `roles.simulator` and `roles.validator` set on purpose are kept; a `planner:` agent names its own model.
 * Usage is accounted in the caller's ledger. The configuration in the working directory is not read.
 */
function agentModels(options: ScenarioTestAgentOptions): Models {
  const config = options.models?.config ?? options.config ?? parseConfig({});
  const roles: Record<string, string> = {};
  for (const role of ["simulator", "validator"]) {
    const model = config.roles[role];
    if (model) roles[role] = model;
  }
  return new Models({
    config: { ...config, roles },
    ...(options.models ? { ledger: options.models.ledger } : {}),
  });
}

async function engineFor(sources: string[], options: ScenarioTestAgentOptions): Promise<Engine> {
  try {
    const built = await buildEngine({ sources, models: agentModels(options) });
    return built.engine;
  } catch (error) {
    if (error instanceof TerrariumError)
      throw new TerrariumError(error.code, `agentTools (--agent-tools): ${error.message}`, {
        where: error.where,
        cause: error,
      });
    throw error;
  }
}

/** An in-process agent (a function or a `module:` export) with its tools on an engine. */
export class FunctionTarget implements AgentTarget {
  readonly kind = "module" as const;
  readonly tools: string[];

  constructor(
    readonly spec: string,
    private readonly agent: AgentFunction,
    private readonly engine: Engine | undefined,
  ) {
    this.tools = engine ? engine.catalog.tools.map((tool) => tool.name) : [];
  }

  async open(context: AgentSessionContext): Promise<AgentSession> {
    if (!this.engine) return new FunctionSession(runSessionId(context.runId), this.agent, undefined, context);
    // The test's seed seeds its session, so the tools answer the same on every run of the test.
    const record = await this.engine.createSession({
      seed: context.seed,
      metadata: { runId: context.runId, scenario: context.scenario.id },
    });
    return new FunctionSession(record.id, this.agent, this.engine, context);
  }

  async close(): Promise<void> {
    await this.engine?.close();
  }
}

class FunctionSession implements AgentSession {
  private readonly history: ConversationMessage[] = [];
  private readonly handle: AgentToolsHandle;
  private closed = false;

  constructor(
    readonly sessionId: string,
    private readonly agent: AgentFunction,
    private readonly engine: Engine | undefined,
    private readonly context: AgentSessionContext,
  ) {
    this.handle = toolsHandle(this);
  }

  get tools(): Engine | undefined {
    return this.closed ? undefined : this.engine;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async send(userMessage: string): Promise<AgentReply> {
    if (this.closed) throw agentError(`the agent session ${this.sessionId} is closed`);
    if (this.context.signal?.aborted) throw agentError("the test was cancelled");
    // The calls made through the handle while answering are the engine history's new entries (counted from
    // the last entry, and only the new ones read: never the whole history per message).
    const seen = this.engine ? await this.engine.callCount(this.sessionId) : 0;
    let output: AgentFunctionOutput;
    try {
      output = await this.agent({
        message: userMessage,
        history: this.history.map((entry) => ({ ...entry })),
        sessionId: this.sessionId,
        runId: this.context.runId,
        scenario: this.context.scenario,
        tools: this.handle,
      });
    } catch (error) {
      throw agentError(`the agent threw: ${(error as Error)?.message ?? String(error)}`, error);
    }
    const made = this.engine ? (await this.engine.callCount(this.sessionId)) - seen : 0;
    const executed =
      this.engine && made > 0
        ? recordsFromHistory(await this.engine.store.history(this.sessionId, made))
        : [];
    const reply = replyOf(output, executed);
    this.history.push({ role: "user", content: userMessage }, { role: "agent", content: reply.message });
    return reply;
  }

  async finalState(): Promise<unknown> {
    return this.engine ? this.engine.state(this.sessionId) : undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A test's session is not needed after its result: free it (a long suite opens many).
    await this.engine?.deleteSession(this.sessionId).catch(() => undefined);
  }
}

function toolsHandle(session: FunctionSession): AgentToolsHandle {
  const engine = session.tools;
  const noTools = () =>
    new TerrariumError(
      "INVALID_INPUT",
      "the agent has no tools: give agentTools (--agent-tools <environment or tool files>) to run its calls",
    );
  return {
    names: engine ? engine.catalog.tools.map((tool) => tool.name) : [],
    list: () =>
      (engine?.catalog.tools ?? []).map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
      })),
    async call(name: string, args?: unknown): Promise<AgentToolCallOutcome> {
      const current = session.tools;
      if (!current) throw session.isClosed ? agentError("the agent's tools session is closed") : noTools();
      if (typeof name !== "string" || name === "") throw agentError("tools.call needs a tool name");
      const outcome = await current.call(session.sessionId, { name, arguments: args ?? {} });
      return { status: outcome.status, observation: outcome.observation, errors: outcome.errors };
    },
    async state(): Promise<unknown> {
      const current = session.tools;
      if (!current) throw session.isClosed ? agentError("the agent's tools session is closed") : noTools();
      return current.state(session.sessionId);
    },
  };
}

/**
 * The reply from what the agent answered: the calls it ran through its tools first, then the ones it only
 * reported (a reported call that repeats one it ran, same tool and arguments, is not counted twice).
 */
function replyOf(output: unknown, executed: AgentToolCallRecord[]): AgentReply {
  if (typeof output === "string") return { message: capText(output), toolCalls: executed };
  if (
    output === null ||
    typeof output !== "object" ||
    Array.isArray(output) ||
    typeof (output as { message?: unknown }).message !== "string"
  )
    throw agentError(
      `the agent answered ${output === null ? "null" : Array.isArray(output) ? "a list" : typeof output}, not a string or {message: string, toolCalls?, usage?}`,
    );
  const answer = output as Exclude<AgentFunctionOutput, string>;
  const raw = answer.toolCalls ?? [];
  if (!Array.isArray(raw)) throw agentError("the agent answered toolCalls that are not a list");
  const ran = new Set(executed.map((call) => `${call.tool}\u0000${safeCanonical(call.arguments ?? {})}`));
  const reported: AgentToolCallRecord[] = [];
  raw.forEach((call, index) => {
    const name = call && typeof call === "object" ? (call.name ?? call.tool) : undefined;
    if (typeof name !== "string" || name === "")
      throw agentError(`the agent's tool call ${index} has no name (or tool)`);
    const args = call.arguments ?? {};
    const key = `${name}\u0000${safeCanonical(args)}`;
    if (ran.delete(key)) return;
    reported.push({
      tool: name,
      arguments: args,
      status: typeof call.status === "string" && call.status !== "" ? call.status : "ok",
      result: call.result ?? null,
    });
  });
  const usage =
    answer.usage && typeof answer.usage === "object"
      ? {
          inputTokens: Number.isFinite(answer.usage.inputTokens) ? (answer.usage.inputTokens as number) : 0,
          outputTokens: Number.isFinite(answer.usage.outputTokens)
            ? (answer.usage.outputTokens as number)
            : 0,
        }
      : undefined;
  return {
    message: capText(answer.message),
    toolCalls: [...executed, ...reported],
    ...(usage ? { usage } : {}),
  };
}

function safeCanonical(value: unknown): string {
  try {
    return canonicalJson(value);
  } catch {
    return String(value);
  }
}
