import { existsSync, statSync } from "node:fs";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isPlainObject } from "../../catalog/json-schema.js";
import { TerrariumError } from "../../core/errors.js";
import { typeScriptLoader } from "../../core/typescript-loader.js";
import type { AgentReply, AgentToolCallRecord, ConversationMessage, TokenCount } from "../conversation.js";
import type { Scenario } from "../scenario/index.js";
import { agentError, capText, runSessionId } from "./shared.js";
import type { AgentSession, AgentSessionContext, AgentTarget } from "./types.js";

/** What a module agent receives for each user message. */
export interface ModuleAgentInput {
  message: string;
  /** The conversation before this message. */
  history: ConversationMessage[];
  sessionId: string;
  runId: string;
  scenario: Scenario;
}

/** What a module agent answers: the reply text, or the text with the calls it made and its usage. */
export type ModuleAgentOutput =
  | string
  | {
      message: string;
      toolCalls?: Array<{
        name?: string;
        tool?: string;
        arguments?: unknown;
        result?: unknown;
        status?: string;
      }>;
      usage?: Partial<TokenCount>;
    };

export type ModuleAgentFunction = (input: ModuleAgentInput) => ModuleAgentOutput | Promise<ModuleAgentOutput>;

const LOADABLE = [".js", ".mjs", ".cjs", ".ts", ".mts"];

/**
 * Loads `module:<path>#<export>`: a function (`ModuleAgentFunction`) or an object with a `respond` method
 * of the same shape. `.js`/`.mjs`/`.cjs` load with Node's import; `.ts`/`.mts` through tsx (as
 * environments do). Refused with the file and the export named when it is missing or not callable.
 */
export async function loadModuleAgent(
  path: string,
  exportName: string,
  cwd?: string,
): Promise<ModuleAgentFunction> {
  const file = resolve(cwd ?? process.cwd(), path);
  if (!existsSync(file) || !statSync(file).isFile())
    throw new TerrariumError("INVALID_INPUT", `the agent module ${file} does not exist`, { where: { file } });
  const extension = extname(file).toLowerCase();
  if (!LOADABLE.includes(extension))
    throw new TerrariumError(
      "INVALID_INPUT",
      `the agent module ${file} is not a JavaScript or TypeScript file (${LOADABLE.join(", ")})`,
      { where: { file } },
    );
  let module: Record<string, unknown>;
  try {
    const url = pathToFileURL(file).href;
    // Into the process's own module graph (see typeScriptLoader), as environments load.
    if (extension === ".ts" || extension === ".mts") await typeScriptLoader();
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new TerrariumError("INVALID_INPUT", `cannot load the agent module: ${(error as Error).message}`, {
      where: { file },
      cause: error,
    });
  }
  let exported = Object.hasOwn(module, exportName) ? module[exportName] : undefined;
  // A CommonJS (or tsx-compiled) module's named exports can arrive under `default`.
  if (exported === undefined && isPlainObject(module.default) && Object.hasOwn(module.default, exportName))
    exported = module.default[exportName];
  if (typeof exported === "function") {
    const fn = exported as ModuleAgentFunction;
    return (input) => fn(input);
  }
  if (
    exported !== null &&
    typeof exported === "object" &&
    typeof (exported as { respond?: unknown }).respond === "function"
  ) {
    const holder = exported as { respond: ModuleAgentFunction };
    return (input) => holder.respond(input);
  }
  const names = Object.keys(module).sort().join(", ") || "none";
  throw new TerrariumError(
    "INVALID_INPUT",
    exported === undefined
      ? `the agent module has no export "${exportName}" (its exports: ${names})`
      : `the agent module's export "${exportName}" is a ${typeof exported}, not a function (input) => reply or an object with respond(input)`,
    { where: { file } },
  );
}

/** `module:<path>#<export>`: an agent in this process. */
export class ModuleTarget implements AgentTarget {
  readonly kind = "module" as const;

  constructor(
    readonly spec: string,
    private readonly agent: ModuleAgentFunction,
    readonly tools: string[],
  ) {}

  async open(context: AgentSessionContext): Promise<AgentSession> {
    return new ModuleSession(runSessionId(context.runId), this.agent, context);
  }

  async close(): Promise<void> {}
}

class ModuleSession implements AgentSession {
  private readonly history: ConversationMessage[] = [];
  private closed = false;

  constructor(
    readonly sessionId: string,
    private readonly agent: ModuleAgentFunction,
    private readonly context: AgentSessionContext,
  ) {}

  async send(userMessage: string): Promise<AgentReply> {
    if (this.closed) throw agentError(`the agent session ${this.sessionId} is closed`);
    if (this.context.signal?.aborted) throw agentError("the run was cancelled");
    let output: ModuleAgentOutput;
    try {
      output = await this.agent({
        message: userMessage,
        history: this.history.map((entry) => ({ ...entry })),
        sessionId: this.sessionId,
        runId: this.context.runId,
        scenario: this.context.scenario,
      });
    } catch (error) {
      throw agentError(`the agent module threw: ${(error as Error)?.message ?? String(error)}`, error);
    }
    const reply = toReply(output);
    this.history.push({ role: "user", content: userMessage }, { role: "agent", content: reply.message });
    return reply;
  }

  async finalState(): Promise<unknown> {
    return undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

function toReply(output: unknown): AgentReply {
  if (typeof output === "string") return { message: capText(output), toolCalls: [] };
  if (!isPlainObject(output) || typeof output.message !== "string")
    throw agentError(
      `the agent module answered ${output === null ? "null" : Array.isArray(output) ? "a list" : typeof output}, not a string or {message: string, toolCalls?, usage?}`,
    );
  const rawCalls = output.toolCalls ?? [];
  if (!Array.isArray(rawCalls)) throw agentError("the agent module answered toolCalls that are not a list");
  const toolCalls: AgentToolCallRecord[] = rawCalls.map((call, index) => {
    const name = isPlainObject(call) ? (call.name ?? call.tool) : undefined;
    if (!isPlainObject(call) || typeof name !== "string" || name === "")
      throw agentError(`the agent module's tool call ${index} has no name (or tool)`);
    return {
      tool: name,
      arguments: call.arguments ?? {},
      status: typeof call.status === "string" && call.status !== "" ? call.status : "ok",
      result: call.result ?? null,
    };
  });
  const usage = isPlainObject(output.usage)
    ? {
        inputTokens: typeof output.usage.inputTokens === "number" ? output.usage.inputTokens : 0,
        outputTokens: typeof output.usage.outputTokens === "number" ? output.usage.outputTokens : 0,
      }
    : undefined;
  return { message: capText(output.message), toolCalls, ...(usage ? { usage } : {}) };
}
