import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { hashJson } from "../../core/canonical-json.js";
import { TerrariumError } from "../../core/errors.js";
import type { TerrariumConfig } from "../config.js";
import type { BackendRequest, BackendResponse, Message, ModelBackend } from "../types.js";

// node-llama-cpp is an optional dependency: its types are used only in this file, and the module is
// imported when the first `llama:` model is opened.
type NodeLlamaCpp = typeof import("node-llama-cpp");
type Llama = Awaited<ReturnType<NodeLlamaCpp["getLlama"]>>;
type LlamaModel = Awaited<ReturnType<Llama["loadModel"]>>;
type LlamaContext = Awaited<ReturnType<LlamaModel["createContext"]>>;
type LlamaGrammar = Awaited<ReturnType<Llama["getGrammarFor"]>>;
type ChatHistoryItem = import("node-llama-cpp").ChatHistoryItem;

let runtime: Promise<{ lib: NodeLlamaCpp; llama: Llama }> | undefined;

/** Loads node-llama-cpp's CPU build once per process (never compiles: that would try to download llama.cpp). */
function loadRuntime(gpu: boolean): Promise<{ lib: NodeLlamaCpp; llama: Llama }> {
  runtime ??= (async () => {
    let lib: NodeLlamaCpp;
    try {
      lib = await import("node-llama-cpp");
    } catch (error) {
      runtime = undefined;
      throw new TerrariumError(
        "MODEL_UNAVAILABLE",
        "llama: models need the optional package node-llama-cpp; install it with `npm install node-llama-cpp@3.22.1`",
        { cause: error },
      );
    }
    const llama = await lib.getLlama({
      gpu: gpu ? "auto" : false,
      build: "never",
      logLevel: lib.LlamaLogLevel.error,
      // The library's default thread count oversubscribes small machines (about 100x slower on 2 cores).
      maxThreads: availableParallelism(),
    });
    return { lib, llama };
  })();
  return runtime;
}

/**
 * `llama:<path.gguf>`: a local model run in-process. Structured output is grammar-constrained (a GBNF
 * grammar compiled from the JSON Schema), which guarantees JSON syntax; the model layer still validates
 * the result, since grammars cannot express every schema keyword. Calls are serialised (one sequence).
 */
export class LlamaBackend implements ModelBackend {
  readonly provider = "llama";
  readonly capabilities = { structured: "grammar" as const, tools: false, seed: true };
  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();

  private constructor(
    readonly name: string,
    private readonly lib: NodeLlamaCpp,
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
  ) {}

  static async open(
    name: string,
    path: string,
    settings: TerrariumConfig["llama"] = {},
  ): Promise<LlamaBackend> {
    if (!existsSync(path)) {
      throw new TerrariumError(
        "FILE_UNREADABLE",
        `no GGUF model at this path (${name}); download one first, see docs/models.md`,
        { where: { file: path } },
      );
    }
    const { lib, llama } = await loadRuntime(settings.gpu ?? false);
    const model = await llama.loadModel({ modelPath: path });
    const context = await model.createContext({
      contextSize: settings.contextSize ?? Math.min(4096, model.trainContextSize),
      threads: settings.threads ?? availableParallelism(),
    });
    return new LlamaBackend(name, lib, llama, model, context);
  }

  async generate(request: BackendRequest): Promise<BackendResponse> {
    const { history, prompt } = toChatHistory(request.messages);
    const sequence = this.context.getSequence();
    const session = new this.lib.LlamaChatSession({ contextSequence: sequence, autoDisposeSequence: true });
    try {
      session.setChatHistory(history);
      const grammar = request.json ? await this.grammarFor(request.json.schema) : undefined;
      const result = await session.promptWithMeta(prompt, {
        ...(grammar ? { grammar } : {}),
        ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        ...(request.seed !== undefined ? { seed: request.seed } : {}),
        maxTokens: request.maxOutputTokens ?? 512,
        ...(request.signal ? { signal: request.signal, stopOnAbortSignal: false } : {}),
      });
      const text = result.responseText;
      return {
        text,
        toolCalls: [],
        finishReason: result.stopReason === "maxTokens" ? "length" : "stop",
        usage: {
          // Counted with the model's own tokenizer over the message texts (chat-template tokens aside).
          inputTokens: request.messages.reduce(
            (sum, message) => sum + this.model.tokenize(message.content).length,
            0,
          ),
          outputTokens: this.model.tokenize(text).length,
          cachedInputTokens: 0,
        },
      };
    } finally {
      session.dispose();
    }
  }

  private grammarFor(schema: unknown): Promise<LlamaGrammar> {
    const key = schema === undefined ? "json" : hashJson(schema);
    let grammar = this.grammars.get(key);
    if (!grammar) {
      grammar =
        schema === undefined
          ? this.llama.getGrammarFor("json")
          : // Some schemas use keywords the grammar compiler rejects; plain JSON plus validation then does.
            this.llama
              .createGrammarForJsonSchema(schema as never)
              .catch(() => this.llama.getGrammarFor("json"));
      this.grammars.set(key, grammar);
    }
    return grammar;
  }

  async dispose(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }
}

/** terrarium messages -> node-llama-cpp chat history plus the prompt of this turn (the last user text). */
function toChatHistory(messages: Message[]): { history: ChatHistoryItem[]; prompt: string } {
  const history: ChatHistoryItem[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "system":
        history.push({ type: "system", text: message.content });
        break;
      case "user":
        history.push({ type: "user", text: message.content });
        break;
      case "assistant": {
        const calls = (message.toolCalls ?? []).map(
          (call) => `\n[called ${call.name} with ${JSON.stringify(call.arguments)}]`,
        );
        history.push({ type: "model", response: [message.content + calls.join("")] });
        break;
      }
      case "tool":
        // No native tool role here: tool results reach the model as user text.
        history.push({ type: "user", text: `Result of ${message.name}: ${message.content}` });
        break;
    }
  }
  const last = history[history.length - 1];
  if (last?.type === "user") {
    history.pop();
    return { history, prompt: last.text };
  }
  return { history, prompt: "" };
}
