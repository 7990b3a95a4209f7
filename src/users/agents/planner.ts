import { TerrariumError } from "../../core/errors.js";
import type { Models } from "../../models/hub.js";
import type { Message, ToolSpec } from "../../models/types.js";
import type { Engine } from "../../sim/engine.js";
import type { TokenCount } from "../conversation.js";
import { addUsage, agentError, capText, numericSeed, recordsFromHistory } from "./shared.js";
import type { AgentSession, AgentSessionContext, AgentTarget } from "./types.js";

/** The planner agent's instructions (the scenario's agentContext is for the simulated user, not for it). */
export const PLANNER_AGENT_PROMPT = [
  "You are a customer support agent talking with a customer in a chat.",
  "Help the customer with their request using the tools you have: look things up before you answer, and",
  "only act on the customer's account once you know who they are and what they want.",
  "Do not invent facts, ids or results; if a tool fails or you cannot do something, say so plainly.",
  "Ask for missing information when you need it. Reply to the customer in plain, concise text.",
].join("\n");

export interface EngineToolsOptions {
  engine: Engine;
  models: Models;
  maxToolSteps: number;
  timeoutMs: number;
}

/** A tool result as the agent reads it: the observation, or the error and its details. */
export function toolResultText(outcome: { status: string; observation: unknown; errors: unknown[] }): string {
  const value =
    outcome.status === "ok"
      ? outcome.observation
      : {
          error: outcome.status,
          details: outcome.status === "invalid" ? outcome.errors : outcome.observation,
        };
  return JSON.stringify(value ?? null);
}

/** A call through the engine; the engine reports bad calls as data, so a throw here is a broken session. */
export async function callTool(engine: Engine, sessionId: string, name: string, args: unknown) {
  try {
    return await engine.call(sessionId, { name, arguments: args });
  } catch (error) {
    throw agentError(`the simulated tool ${name} could not run: ${(error as Error).message}`, error);
  }
}

/** `planner:<provider:model>`: terrarium's planner as a chat agent on the engine's tools. */
export class PlannerTarget implements AgentTarget {
  readonly kind = "planner" as const;
  readonly tools: string[];
  private readonly toolSpecs: ToolSpec[];

  constructor(
    readonly spec: string,
    private readonly model: string,
    private readonly options: EngineToolsOptions,
  ) {
    this.tools = options.engine.catalog.tools.map((tool) => tool.name);
    this.toolSpecs = options.engine.catalog.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
    }));
  }

  async open(context: AgentSessionContext): Promise<AgentSession> {
    // The run's seed seeds its session too, so its tools repeat whatever order runs start in.
    const record = await this.options.engine.createSession({
      seed: context.seed,
      metadata: { runId: context.runId, scenario: context.scenario.id },
    });
    return new PlannerSession(record.id, this.model, this.toolSpecs, this.options, context);
  }

  async close(): Promise<void> {
    await this.options.engine.close();
  }
}

class PlannerSession implements AgentSession {
  private readonly messages: Message[] = [{ role: "system", content: PLANNER_AGENT_PROMPT }];
  private closed = false;

  constructor(
    readonly sessionId: string,
    private readonly model: string,
    private readonly tools: ToolSpec[],
    private readonly options: EngineToolsOptions,
    private readonly context: AgentSessionContext,
  ) {}

  async send(userMessage: string) {
    if (this.closed) throw agentError(`the planner agent's session ${this.sessionId} is closed`);
    if (this.context.signal?.aborted) throw agentError("the run was cancelled");
    const { engine, models } = this.options;
    const seen = (await engine.history(this.sessionId)).length;
    this.messages.push({ role: "user", content: userMessage });
    const usage: TokenCount = { inputTokens: 0, outputTokens: 0 };
    let text = "";
    for (let step = 0; step < this.options.maxToolSteps; step++) {
      let turn: Awaited<ReturnType<Models["generateWithTools"]>>;
      try {
        turn = await models.generateWithTools({
          model: this.model,
          messages: this.messages,
          tools: this.tools,
          temperature: 0,
          // Each run's own seed: runs of one scenario are samples, not copies of one answer.
          seed: numericSeed(this.context.seed),
          scope: this.sessionId,
          timeoutMs: this.options.timeoutMs,
        });
      } catch (error) {
        const reason = error instanceof TerrariumError ? error.describe() : (error as Error).message;
        throw agentError(`the planner agent's model ${this.model} failed: ${reason}`, error);
      }
      addUsage(usage, turn.usage);
      text = turn.text;
      this.messages.push({
        role: "assistant",
        content: turn.text,
        ...(turn.toolCalls.length > 0 ? { toolCalls: turn.toolCalls } : {}),
      });
      if (turn.toolCalls.length === 0) break;
      for (const call of turn.toolCalls) {
        const outcome = await callTool(engine, this.sessionId, call.name, call.arguments);
        this.messages.push({
          role: "tool",
          toolCallId: call.id,
          name: call.name,
          content: toolResultText(outcome),
        });
      }
    }
    const history = await engine.history(this.sessionId);
    return {
      message: capText(text),
      toolCalls: recordsFromHistory(history.slice(seen)),
      usage,
    };
  }

  finalState(): Promise<unknown> {
    return this.options.engine.state(this.sessionId);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
