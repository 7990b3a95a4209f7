import { isPlainObject } from "../../catalog/json-schema.js";
import { type ToolNaming, toProviderNames } from "../../models/tool-calls.js";
import type { Engine } from "../../sim/engine.js";
import type { AgentReply, AgentToolCallRecord, TokenCount } from "../conversation.js";
import { callTool, toolResultText } from "./planner.js";
import {
  addUsage,
  agentError,
  capText,
  httpJson,
  numericSeed,
  recordsFromHistory,
  runSessionId,
  snippet,
} from "./shared.js";
import type { AgentSession, AgentSessionContext, AgentTarget } from "./types.js";

/** The environment variable whose value is sent as the agent endpoint's bearer token. */
export const AGENT_API_KEY_ENV = "TERRARIUM_AGENT_API_KEY";

export interface OpenAiCompatibleOptions {
  baseURL: string;
  model: string;
  /** The engine simulating the agent's tools (from --agent-tools); without it no tools are offered. */
  engine?: Engine;
  maxToolSteps: number;
  timeoutMs: number;
}

type WireMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: WireToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** `openai-compatible:<baseURL>#<model>`: the agent is a chat-completions endpoint. */
export class OpenAiCompatibleTarget implements AgentTarget {
  readonly kind = "openai-compatible" as const;
  readonly tools: string[];
  private readonly wireTools: unknown[];
  private readonly naming: ToolNaming;

  constructor(
    readonly spec: string,
    private readonly options: OpenAiCompatibleOptions,
  ) {
    const catalogTools = options.engine?.catalog.tools ?? [];
    this.tools = catalogTools.map((tool) => tool.name);
    // Names the endpoint accepts (^[A-Za-z0-9_-]{1,64}$); calls are mapped back to the catalog's names.
    this.naming = toProviderNames(
      catalogTools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
      })),
    );
    this.wireTools = this.naming.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
    }));
  }

  async open(context: AgentSessionContext): Promise<AgentSession> {
    const engine = this.options.engine;
    const sessionId = engine
      ? (
          await engine.createSession({
            seed: context.seed,
            metadata: { runId: context.runId, scenario: context.scenario.id },
          })
        ).id
      : runSessionId(context.runId);
    return new OpenAiCompatibleSession(sessionId, this.options, this.wireTools, this.naming, context);
  }

  async close(): Promise<void> {
    await this.options.engine?.close();
  }
}

class OpenAiCompatibleSession implements AgentSession {
  private readonly messages: WireMessage[] = [];
  private closed = false;

  constructor(
    readonly sessionId: string,
    private readonly options: OpenAiCompatibleOptions,
    private readonly tools: unknown[],
    private readonly naming: ToolNaming,
    private readonly context: AgentSessionContext,
  ) {}

  async send(userMessage: string): Promise<AgentReply> {
    if (this.closed) throw agentError(`the agent session ${this.sessionId} is closed`);
    const { engine } = this.options;
    const seen = engine ? (await engine.history(this.sessionId)).length : 0;
    this.messages.push({ role: "user", content: userMessage });
    const usage: TokenCount = { inputTokens: 0, outputTokens: 0 };
    let text = "";
    for (let step = 0; step < this.options.maxToolSteps; step++) {
      const answer = await this.complete();
      addUsage(usage, answer.usage);
      text = answer.content;
      this.messages.push({
        role: "assistant",
        content: answer.content === "" && answer.toolCalls.length > 0 ? null : answer.content,
        ...(answer.toolCalls.length > 0 ? { tool_calls: answer.toolCalls } : {}),
      });
      if (answer.toolCalls.length === 0) break;
      if (!engine)
        throw agentError(
          `the agent at ${this.options.baseURL} called the tool "${answer.toolCalls[0]?.function.name}", but no tools were given to simulate it (pass --agent-tools)`,
        );
      for (const call of answer.toolCalls) {
        const outcome = await callTool(
          engine,
          this.sessionId,
          this.naming.fromProvider(call.function.name),
          parseArguments(call),
        );
        this.messages.push({ role: "tool", tool_call_id: call.id, content: toolResultText(outcome) });
      }
    }
    const toolCalls: AgentToolCallRecord[] = engine
      ? recordsFromHistory((await engine.history(this.sessionId)).slice(seen))
      : [];
    return { message: capText(text), toolCalls, usage };
  }

  private async complete(): Promise<{ content: string; toolCalls: WireToolCall[]; usage: TokenCount }> {
    const url = `${this.options.baseURL}/chat/completions`;
    const key = process.env[AGENT_API_KEY_ENV];
    const { json, text } = await httpJson(
      "the agent's chat-completions endpoint",
      url,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
        body: JSON.stringify({
          model: this.options.model,
          messages: this.messages,
          ...(this.tools.length > 0 ? { tools: this.tools } : {}),
          // The run's seed, as the planner agent gets it (endpoints that do not sample by seed ignore it).
          seed: numericSeed(this.context.seed),
        }),
      },
      {
        timeoutMs: this.options.timeoutMs,
        ...(this.context.signal ? { signal: this.context.signal } : {}),
      },
    );
    const choice = isPlainObject(json) && Array.isArray(json.choices) ? json.choices[0] : undefined;
    const message = isPlainObject(choice) ? choice.message : undefined;
    if (!isPlainObject(message))
      throw agentError(`the agent at ${url} answered without choices[0].message: ${snippet(text)}`);
    const content = message.content;
    if (content !== null && content !== undefined && typeof content !== "string")
      throw agentError(`the agent at ${url} answered a message whose content is not text: ${snippet(text)}`);
    const rawCalls = message.tool_calls ?? [];
    if (!Array.isArray(rawCalls))
      throw agentError(`the agent at ${url} answered tool_calls that are not a list: ${snippet(text)}`);
    const toolCalls = rawCalls.map((call, index): WireToolCall => {
      const fn = isPlainObject(call) ? call.function : undefined;
      if (!isPlainObject(call) || !isPlainObject(fn) || typeof fn.name !== "string" || fn.name === "")
        throw agentError(
          `the agent at ${url} answered tool call ${index} without a function name: ${snippet(text)}`,
        );
      const args = typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? {});
      const id = typeof call.id === "string" && call.id !== "" ? call.id : `call_${index}`;
      return { id, type: "function", function: { name: fn.name, arguments: args } };
    });
    const reported = isPlainObject(json) && isPlainObject(json.usage) ? json.usage : {};
    return {
      content: content ?? "",
      toolCalls,
      usage: {
        inputTokens: typeof reported.prompt_tokens === "number" ? reported.prompt_tokens : 0,
        outputTokens: typeof reported.completion_tokens === "number" ? reported.completion_tokens : 0,
      },
    };
  }

  async finalState(): Promise<unknown> {
    return this.options.engine ? this.options.engine.state(this.sessionId) : undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** The arguments as JSON when they are JSON; the raw text otherwise (the engine then reports it invalid). */
function parseArguments(call: WireToolCall): unknown {
  const raw = call.function.arguments;
  if (raw.trim() === "") return {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
