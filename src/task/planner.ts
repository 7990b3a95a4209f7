import type { Models } from "../models/hub.js";
import type { Message, ToolSpec } from "../models/types.js";
import type { CallOutcome, Engine } from "../sim/engine.js";
import { plannerSystemPrompt, retryPrompt } from "./prompts/planner.js";

export interface PlannedCall {
  name: string;
  arguments: unknown;
  outcome: CallOutcome;
}

export interface PlannerRun {
  calls: PlannedCall[];
  finalMessage: string;
  /** Why the run ended: the planner answered, or the step limit was reached. */
  stopped: "answered" | "step_limit";
  steps: number;
}

export interface PlannerOptions {
  models: Models;
  engine: Engine;
  sessionId: string;
  task: string;
  /** Earlier turns of a multi-turn task, as (task, answer) pairs. */
  history?: Array<{ task: string; answer: string }>;
  /** The previous attempt and the judge's feedback, on a retry. */
  retry?: { calls: PlannedCall[]; feedback: string };
  role?: string;
  model?: string;
  maxSteps?: number;
  temperature?: number;
}

/**
 * The planner agent: any model acts on the task with the catalog's tools through native tool calling,
 * against an engine session. Validation errors and simulated results go back to it as tool results; it
 * stops when it answers without a tool call or reaches the step limit.
 */
export async function runPlanner(options: PlannerOptions): Promise<PlannerRun> {
  const tools: ToolSpec[] = options.engine.catalog.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
  }));
  const messages: Message[] = [{ role: "system", content: plannerSystemPrompt() }];
  for (const turn of options.history ?? []) {
    messages.push({ role: "user", content: turn.task }, { role: "assistant", content: turn.answer });
  }
  messages.push({ role: "user", content: options.task });
  if (options.retry) {
    const previous = options.retry.calls.map((call) => ({
      name: call.name,
      arguments: call.arguments,
      status: call.outcome.status,
    }));
    messages.push({ role: "user", content: retryPrompt(previous, options.retry.feedback) });
  }
  const calls: PlannedCall[] = [];
  const maxSteps = options.maxSteps ?? 12;
  for (let step = 1; step <= maxSteps; step++) {
    const turn = await options.models.generateWithTools({
      ...(options.model ? { model: options.model } : { role: options.role ?? "planner" }),
      messages,
      tools,
      temperature: options.temperature ?? 0,
      scope: options.sessionId,
    });
    if (turn.toolCalls.length === 0)
      return { calls, finalMessage: turn.text, stopped: "answered", steps: step };
    messages.push({ role: "assistant", content: turn.text, toolCalls: turn.toolCalls });
    for (const toolCall of turn.toolCalls) {
      const outcome = await options.engine.call(options.sessionId, {
        name: toolCall.name,
        arguments: toolCall.arguments,
      });
      calls.push({ name: toolCall.name, arguments: toolCall.arguments, outcome });
      const content =
        outcome.status === "ok"
          ? JSON.stringify(outcome.observation)
          : JSON.stringify({
              error: outcome.status,
              details: outcome.status === "invalid" ? outcome.errors : outcome.observation,
            });
      messages.push({ role: "tool", toolCallId: toolCall.id, name: toolCall.name, content });
    }
  }
  return { calls, finalMessage: "", stopped: "step_limit", steps: maxSteps };
}
