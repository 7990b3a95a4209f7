import type { Catalog } from "../catalog/catalog.js";
import type { Models } from "../models/hub.js";
import { bootstrapSystemPrompt, bootstrapUserPrompt } from "./prompts/bootstrap.js";

/**
 * Builds an initial task state with a model from background information (a task description, a partial
 * state) and the tools (Gecko's state bootstrapper). What the background already states is kept: the
 * model's state is merged under it.
 */
export async function bootstrapState(
  models: Models,
  catalog: Catalog,
  background: { task?: string; state?: unknown },
  options: { role?: string; scope?: string } = {},
): Promise<Record<string, unknown>> {
  const result = await models.generateObject<{ state: Record<string, unknown> }>({
    role: options.role ?? "simulator",
    temperature: 0,
    ...(options.scope ? { scope: options.scope } : {}),
    schemaName: "initial_state",
    schema: {
      type: "object",
      properties: { state: { type: "object", properties: { runtime_state: { type: "object" } } } },
      required: ["state"],
      additionalProperties: false,
    },
    messages: [
      { role: "system", content: bootstrapSystemPrompt() },
      {
        role: "user",
        content: bootstrapUserPrompt({
          background,
          tools: catalog.tools.map((tool) => ({ name: tool.name, description: tool.description })),
        }),
      },
    ],
  });
  const given =
    background.state && typeof background.state === "object"
      ? (background.state as Record<string, unknown>)
      : {};
  return deepMerge(result.object.state, given);
}

/** `over` wins wherever both have a value; objects merge key by key. */
function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const existing = out[key];
    out[key] =
      value &&
      typeof value === "object" &&
      !Array.isArray(value) &&
      existing &&
      typeof existing === "object" &&
      !Array.isArray(existing)
        ? deepMerge(existing as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}
