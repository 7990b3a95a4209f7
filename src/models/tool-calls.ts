import { embedSchema } from "../catalog/refs.js";
import type { JsonObjectSchema, JsonSchema } from "../catalog/tool.js";
import type { Message, ModelToolCall, ToolSpec } from "./types.js";

export { toolInstruction } from "./prompts/tool-calls.js";

/** Provider-safe tool names (`^[A-Za-z0-9_-]{1,64}$`) and the way back to the catalog's names. */
export interface ToolNaming {
  tools: ToolSpec[];
  toProvider(name: string): string;
  fromProvider(name: string): string;
  renameMessages(messages: Message[]): Message[];
}

export function toProviderNames(tools: ToolSpec[]): ToolNaming {
  const forward = new Map<string, string>();
  const backward = new Map<string, string>();
  for (const tool of tools) {
    const base = tool.name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "tool";
    let safe = base;
    for (let n = 2; backward.has(safe); n++) safe = `${base.slice(0, 60)}_${n}`;
    forward.set(tool.name, safe);
    backward.set(safe, tool.name);
  }
  const toProvider = (name: string) => forward.get(name) ?? name;
  return {
    tools: tools.map((tool) => ({ ...tool, name: toProvider(tool.name) })),
    toProvider,
    fromProvider: (name) => backward.get(name) ?? name,
    renameMessages: (messages) =>
      messages.map((message) => {
        if (message.role === "tool") return { ...message, name: toProvider(message.name) };
        if (message.role === "assistant" && message.toolCalls) {
          return {
            ...message,
            toolCalls: message.toolCalls.map((call) => ({ ...call, name: toProvider(call.name) })),
          };
        }
        return message;
      }),
  };
}

export function fromProviderNames(calls: ModelToolCall[], naming: ToolNaming): ModelToolCall[] {
  return calls.map((call) => ({ ...call, name: naming.fromProvider(call.name) }));
}

/** The answer schema of emulated tool calling: a text and a list of calls, each naming a known tool. */
export function emulatedToolSchema(tools: ToolSpec[]): JsonObjectSchema {
  // Recursive tool schemas bring their $defs; each tool's are renamed apart and gathered at the root.
  const definitions: Record<string, unknown> = {};
  const alternatives = tools.map((tool, index) => {
    const embedded = embedSchema(tool.inputSchema as JsonSchema, `t${index}_`);
    Object.assign(definitions, embedded.definitions);
    return {
      type: "object",
      properties: { name: { const: tool.name }, arguments: embedded.schema },
      required: ["name", "arguments"],
      additionalProperties: false,
    };
  });
  return {
    type: "object",
    properties: {
      content: { type: "string" },
      tool_calls: { type: "array", items: { anyOf: alternatives } },
    },
    required: ["content", "tool_calls"],
    additionalProperties: false,
    ...(Object.keys(definitions).length > 0 ? { $defs: definitions } : {}),
  };
}
