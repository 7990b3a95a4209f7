import type {
  JSONSchema7,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Prompt,
} from "@ai-sdk/provider";
import type {
  BackendCapabilities,
  BackendRequest,
  BackendResponse,
  Message,
  ModelBackend,
  ModelToolCall,
} from "../types.js";

/**
 * Adapts an AI SDK v6 language model (OpenAI, OpenAI-compatible servers, Anthropic, Google) to terrarium's
 * backend interface. We call the provider's `doGenerate` directly: retries, timeouts, caching and output
 * validation belong to terrarium's layer, so the SDK's own retry loop is not involved.
 */
export class AiSdkBackend implements ModelBackend {
  constructor(
    readonly name: string,
    readonly provider: string,
    private readonly model: LanguageModelV3,
    readonly capabilities: BackendCapabilities,
    private readonly providerOptions: LanguageModelV3CallOptions["providerOptions"] = undefined,
  ) {}

  async generate(request: BackendRequest): Promise<BackendResponse> {
    const options: LanguageModelV3CallOptions = { prompt: toPrompt(request.messages) };
    if (request.temperature !== undefined) options.temperature = request.temperature;
    if (request.seed !== undefined && this.capabilities.seed) options.seed = request.seed;
    if (request.maxOutputTokens !== undefined) options.maxOutputTokens = request.maxOutputTokens;
    if (request.signal) options.abortSignal = request.signal;
    if (this.providerOptions) options.providerOptions = this.providerOptions;
    if (request.json) {
      options.responseFormat = {
        type: "json",
        ...(request.json.schema !== undefined && this.capabilities.structured === "native"
          ? { schema: request.json.schema as JSONSchema7 }
          : {}),
        ...(request.json.name ? { name: request.json.name } : {}),
      };
    }
    if (request.tools && request.tools.length > 0) {
      options.tools = request.tools.map((tool) => ({
        type: "function" as const,
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema as JSONSchema7,
      }));
      const choice = request.toolChoice ?? "auto";
      options.toolChoice =
        typeof choice === "string" ? { type: choice } : { type: "tool", toolName: choice.tool };
    }

    const result = await this.model.doGenerate(options);
    let text = "";
    const toolCalls: ModelToolCall[] = [];
    for (const part of result.content) {
      if (part.type === "text") text += part.text;
      else if (part.type === "tool-call") {
        toolCalls.push({ id: part.toolCallId, name: part.toolName, arguments: parseArguments(part.input) });
      }
    }
    const input = result.usage.inputTokens;
    return {
      text,
      toolCalls,
      finishReason: result.finishReason.unified,
      usage: {
        inputTokens: input.total ?? 0,
        outputTokens: result.usage.outputTokens.total ?? 0,
        cachedInputTokens: input.cacheRead ?? 0,
      },
    };
  }
}

function parseArguments(input: string): unknown {
  try {
    return JSON.parse(input === "" ? "{}" : input);
  } catch {
    return input;
  }
}

/** terrarium messages -> the AI SDK's provider-level prompt. */
export function toPrompt(messages: Message[]): LanguageModelV3Prompt {
  return messages.map((message): LanguageModelV3Prompt[number] => {
    switch (message.role) {
      case "system":
        return { role: "system", content: message.content };
      case "user":
        return { role: "user", content: [{ type: "text", text: message.content }] };
      case "assistant":
        return {
          role: "assistant",
          content: [
            ...(message.content ? [{ type: "text" as const, text: message.content }] : []),
            ...(message.toolCalls ?? []).map((call) => ({
              type: "tool-call" as const,
              toolCallId: call.id,
              toolName: call.name,
              input: call.arguments,
            })),
          ],
        };
      default:
        return {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: message.toolCallId,
              toolName: message.name,
              output: { type: "text", value: message.content },
            },
          ],
        };
    }
  });
}
