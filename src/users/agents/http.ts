import { isPlainObject } from "../../catalog/json-schema.js";
import type { HistoryEntry } from "../../sessions/types.js";
import type { AgentReply, AgentToolCallRecord, TokenCount } from "../conversation.js";
import {
  fillText,
  type HttpAgentConfig,
  parseResponsePath,
  readPath,
  renderBody,
  type TemplateValues,
} from "./http-config.js";
import {
  agentError,
  capText,
  httpExchange,
  httpJson,
  recordsFromHistory,
  runSessionId,
  snippet,
} from "./shared.js";
import type { AgentSession, AgentSessionContext, AgentTarget } from "./types.js";

export interface HttpTargetOptions {
  url: string;
  config: HttpAgentConfig;
  /** The agent's tools, when known (from --agent-tools or the terrarium server's /tools). */
  tools: string[];
  timeoutMs: number;
}

/** `http:<url>`: any HTTP agent, one request per user message, shaped by the http config. */
export class HttpTarget implements AgentTarget {
  readonly kind = "http" as const;
  readonly tools: string[];

  constructor(
    readonly spec: string,
    private readonly options: HttpTargetOptions,
  ) {
    this.tools = options.tools;
  }

  async open(context: AgentSessionContext): Promise<AgentSession> {
    const server = this.options.config.terrariumServer;
    let sessionId = runSessionId(context.runId);
    if (server) {
      const terrarium = new TerrariumServerClient(server, this.options, context.signal);
      sessionId = await terrarium.createSession();
      return new HttpSession(sessionId, this.options, context, terrarium);
    }
    return new HttpSession(sessionId, this.options, context, undefined);
  }

  async close(): Promise<void> {}
}

/** The terrarium server that serves the agent's tools (its sessions, history and state). */
export class TerrariumServerClient {
  private readonly base: string;

  constructor(
    server: string,
    private readonly options: Pick<HttpTargetOptions, "config" | "timeoutMs">,
    private readonly signal?: AbortSignal,
  ) {
    this.base = server.replace(/\/+$/, "");
  }

  private headers(json: boolean): Record<string, string> {
    const token = this.options.config.terrariumToken;
    const filled = token === undefined ? undefined : fillText(token, {}, process.env);
    return {
      accept: "application/json",
      ...(json ? { "content-type": "application/json" } : {}),
      ...(filled ? { authorization: `Bearer ${filled}` } : {}),
    };
  }

  private request(method: string, path: string, body?: unknown) {
    return httpJson(
      "the terrarium server serving the agent's tools",
      `${this.base}${path}`,
      {
        method,
        headers: this.headers(body !== undefined),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      },
      { timeoutMs: this.options.timeoutMs, ...(this.signal ? { signal: this.signal } : {}) },
    );
  }

  async createSession(): Promise<string> {
    const { json, text } = await this.request("POST", "/sessions", {});
    if (!isPlainObject(json) || typeof json.id !== "string" || json.id === "")
      throw agentError(
        `the terrarium server at ${this.base} created a session without an id: ${snippet(text)}`,
      );
    return json.id;
  }

  async history(sessionId: string): Promise<HistoryEntry[]> {
    const { json, text } = await this.request("GET", `/sessions/${encodeURIComponent(sessionId)}/history`);
    if (!Array.isArray(json))
      throw agentError(
        `the terrarium server at ${this.base} answered a history that is not a list: ${snippet(text)}`,
      );
    return json.map((entry, index) => {
      const request = isPlainObject(entry) ? entry.request : undefined;
      const result = isPlainObject(entry) ? entry.result : undefined;
      if (!isPlainObject(request) || typeof request.name !== "string" || !isPlainObject(result))
        throw agentError(
          `the terrarium server at ${this.base} answered history entry ${index} without request.name and result`,
        );
      return entry as unknown as HistoryEntry;
    });
  }

  async state(sessionId: string): Promise<unknown> {
    return (await this.request("GET", `/sessions/${encodeURIComponent(sessionId)}/state`)).json;
  }

  /** The tool names the server serves (`GET /tools`). */
  async toolNames(): Promise<string[]> {
    const { json, text } = await this.request("GET", "/tools");
    const tools = isPlainObject(json) ? json.tools : undefined;
    if (!Array.isArray(tools))
      throw agentError(
        `the terrarium server at ${this.base} answered /tools without a tools list: ${snippet(text)}`,
      );
    return tools
      .map((tool) => (isPlainObject(tool) ? tool.name : undefined))
      .filter((name): name is string => typeof name === "string");
  }
}

class HttpSession implements AgentSession {
  private readonly history: TemplateValues["history"] = [];
  private seen = 0;
  private closed = false;
  private readonly messagePath: string[];
  private readonly toolCallsPath: string[] | undefined;
  private readonly usagePath: string[] | undefined;

  constructor(
    readonly sessionId: string,
    private readonly options: HttpTargetOptions,
    private readonly context: AgentSessionContext,
    private readonly terrarium: TerrariumServerClient | undefined,
  ) {
    const { response } = options.config;
    this.messagePath = parseResponsePath(response.message);
    this.toolCallsPath = response.toolCalls === undefined ? undefined : parseResponsePath(response.toolCalls);
    this.usagePath = response.usage === undefined ? undefined : parseResponsePath(response.usage);
  }

  async send(userMessage: string): Promise<AgentReply> {
    if (this.closed) throw agentError(`the agent session ${this.sessionId} is closed`);
    const { config, url } = this.options;
    const values: TemplateValues = {
      message: userMessage,
      session_id: this.sessionId,
      run_id: this.context.runId,
      scenario_id: this.context.scenario.id,
      history: this.history,
    };
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json",
    };
    for (const [name, value] of Object.entries(config.headers ?? {}))
      headers[name.toLowerCase()] = fillText(value, values, process.env).replace(/[\r\n\0]/g, " ");
    if (config.sessionHeader) headers[config.sessionHeader.toLowerCase()] = this.sessionId;
    const body = renderBody(
      config.body === undefined ? { message: "{{message}}", session_id: "{{session_id}}" } : config.body,
      values,
    );
    const method = config.method ?? "POST";
    const signal = this.context.signal;
    const { status, text } = await httpExchange(
      "the agent",
      url,
      { method, headers, body: JSON.stringify(body) },
      { timeoutMs: this.options.timeoutMs, ...(signal ? { signal } : {}) },
    );
    if (status < 200 || status > 299)
      throw agentError(`the agent (${method} ${url}) answered HTTP ${status}: ${snippet(text)}`);
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      // A plain-text answer is the reply itself when response.message is "" (the whole body).
      if (this.messagePath.length > 0)
        throw agentError(
          `the agent (${method} ${url}) answered HTTP ${status} with a body that is not JSON: ${snippet(text)}`,
        );
      document = text;
    }
    const message = readPath(document, this.messagePath);
    if (typeof message !== "string")
      throw agentError(
        `the agent's response has ${describeValue(message)} at response.message "${config.response.message}" (expected the reply text): ${snippet(text)}`,
      );
    const reply = capText(message);
    const toolCalls = this.terrarium
      ? await this.serverCalls()
      : this.toolCallsPath
        ? reportedCalls(readPath(document, this.toolCallsPath), config.response.toolCalls as string, text)
        : [];
    const usage = this.usagePath ? reportedUsage(readPath(document, this.usagePath)) : undefined;
    this.history.push({ role: "user", content: userMessage }, { role: "assistant", content: reply });
    return { message: reply, toolCalls, ...(usage ? { usage } : {}) };
  }

  /** The calls the agent made on the terrarium server during this reply (history entries not seen yet). */
  private async serverCalls(): Promise<AgentToolCallRecord[]> {
    const entries = await (this.terrarium as TerrariumServerClient).history(this.sessionId);
    const fresh = entries.slice(this.seen);
    this.seen = entries.length;
    return recordsFromHistory(fresh);
  }

  async finalState(): Promise<unknown> {
    return this.terrarium ? this.terrarium.state(this.sessionId) : undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

function reportedCalls(value: unknown, path: string, text: string): AgentToolCallRecord[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value))
    throw agentError(`the agent's response has no list at response.toolCalls "${path}": ${snippet(text)}`);
  return value.map((call, index) => {
    const name = isPlainObject(call) ? (call.name ?? call.tool) : undefined;
    if (!isPlainObject(call) || typeof name !== "string" || name === "")
      throw agentError(
        `the agent's tool call ${index} at response.toolCalls "${path}" has no name (or tool): ${snippet(JSON.stringify(call) ?? "")}`,
      );
    let args = call.arguments ?? call.args ?? {};
    if (typeof args === "string") {
      try {
        args = JSON.parse(args);
      } catch {
        // kept as the text the agent reported
      }
    }
    return {
      tool: name,
      arguments: args,
      status: typeof call.status === "string" && call.status !== "" ? call.status : "ok",
      result: call.result ?? null,
    };
  });
}

function reportedUsage(value: unknown): TokenCount | undefined {
  if (!isPlainObject(value)) return undefined;
  const number = (...keys: string[]) => {
    for (const key of keys) {
      const found = value[key];
      if (typeof found === "number" && Number.isFinite(found) && found >= 0) return found;
    }
    return 0;
  };
  return {
    inputTokens: number("input_tokens", "inputTokens", "prompt_tokens"),
    outputTokens: number("output_tokens", "outputTokens", "completion_tokens"),
  };
}

function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}
