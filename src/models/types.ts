import type { JsonObjectSchema, JsonSchema } from "../catalog/tool.js";

/** A conversation turn in terrarium's own provider-neutral form. */
export type Message =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ModelToolCall[] }
  | { role: "tool"; toolCallId: string; name: string; content: string };

/** A tool offered to a model. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: JsonObjectSchema;
}

/** A tool call a model made; `arguments` is parsed JSON when the model wrote valid JSON, else the raw text. */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

/** How structured output was obtained. */
export type StructuredMode = "native" | "emulated" | "grammar";

/** What one backend call is asked to do. */
export interface BackendRequest {
  messages: Message[];
  temperature?: number;
  seed?: number;
  maxOutputTokens?: number;
  /** JSON output: with a schema when the backend enforces it natively or by grammar. */
  json?: { schema?: JsonSchema; name?: string };
  tools?: ToolSpec[];
  toolChoice?: "auto" | "required" | "none" | { tool: string };
  signal?: AbortSignal;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens the provider served from its own prompt cache. */
  cachedInputTokens: number;
}

/** What a backend returns. */
export interface BackendResponse {
  text: string;
  toolCalls: ModelToolCall[];
  finishReason: "stop" | "length" | "tool-calls" | "content-filter" | "error" | "other";
  usage: TokenUsage;
}

/** What a backend can do, so the layer can choose native paths or emulate them. */
export interface BackendCapabilities {
  /** Native schema-enforced output, JSON mode only (schema goes in the prompt), or grammar decoding. */
  structured: StructuredMode;
  /** Native tool calling. */
  tools: boolean;
  /** Whether a seed reaches the model. */
  seed: boolean;
}

/** One model behind a provider: the only thing provider code has to implement. */
export interface ModelBackend {
  /** `provider:model` as the user wrote it. */
  readonly name: string;
  readonly provider: string;
  readonly capabilities: BackendCapabilities;
  generate(request: BackendRequest): Promise<BackendResponse>;
  /** Releases native resources (local models). */
  dispose?(): Promise<void>;
}
