import { schemaForPrompt } from "../../catalog/prompt-schema.js";
import type { ToolSpec } from "../types.js";

/**
 * Prompt of emulated tool calling, for models without native tool calls (local GGUF models). Inputs: the
 * tools (name, description, argument schema). Output the model must return: `{"content": "...",
 * "tool_calls": [{"name": "...", "arguments": {...}}]}` — an empty list when it answers without tools.
 */
export function toolInstruction(tools: ToolSpec[]): string {
  const list = tools
    .map(
      (tool) =>
        `- ${tool.name}: ${tool.description || "(no description)"}\n  arguments schema: ${JSON.stringify(schemaForPrompt(tool.inputSchema))}`,
    )
    .join("\n");
  return [
    "You can call these tools:",
    list,
    'Reply with a JSON object {"content": string, "tool_calls": [{"name": string, "arguments": object}]}.',
    "Put the calls you want to make in tool_calls; leave it empty when you answer the user directly in content.",
  ].join("\n");
}
