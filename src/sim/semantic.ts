import type { JsonObjectSchema, Tool } from "../catalog/tool.js";
import type { TerrariumConfig } from "../models/config.js";
import type { Models } from "../models/hub.js";
import { semanticSystemPrompt, semanticUserPrompt } from "./prompts/semantic-validation.js";

export type SemanticVerdict =
  | { status: "passed" }
  | { status: "failed"; problems: Array<{ path: string; rule: "semantic"; message: string }> }
  | { status: "skipped" }
  | { status: "error"; message: string };

const VERDICT_SCHEMA: JsonObjectSchema = {
  type: "object",
  properties: {
    valid: { type: "boolean" },
    problems: {
      type: "array",
      items: {
        type: "object",
        properties: { argument: { type: "string" }, message: { type: "string" } },
        required: ["argument", "message"],
        additionalProperties: false,
      },
    },
  },
  required: ["valid", "problems"],
  additionalProperties: false,
};

/**
 * Semantic argument validation with a model (Gecko's second validator). It fails open: a model error
 * never blocks a call (the verdict says so), and a "problem" about an argument the tool does not have is
 * ignored, since rules already checked the names.
 */
export class SemanticValidator {
  /**
   * The validator the configuration asks for: one when a model serves the validator role (`roles.validator`,
   * else `roles.default`, as for every role), otherwise none.
   */
  static fromConfig(models: Models, role = "validator"): SemanticValidator | undefined {
    return validatorModel(models.config, role) ? new SemanticValidator(models, role) : undefined;
  }

  constructor(
    private readonly models: Models,
    private readonly role = "validator",
  ) {}

  async check(tool: Tool, args: Record<string, unknown>, scope?: string): Promise<SemanticVerdict> {
    const properties = (tool.inputSchema.properties ?? {}) as Record<string, { description?: unknown }>;
    const parameters = Object.fromEntries(
      Object.entries(properties).map(([name, schema]) => [
        name,
        typeof schema.description === "string" ? schema.description : "",
      ]),
    );
    try {
      const result = await this.models.generateObject<{
        valid: boolean;
        problems: Array<{ argument: string; message: string }>;
      }>({
        role: this.role,
        temperature: 0,
        ...(scope ? { scope } : {}),
        schema: VERDICT_SCHEMA,
        schemaName: "semantic_verdict",
        messages: [
          { role: "system", content: semanticSystemPrompt() },
          {
            role: "user",
            content: semanticUserPrompt({
              tool: tool.name,
              description: tool.description,
              parameters,
              arguments: args,
            }),
          },
        ],
      });
      const problems = result.object.problems
        .filter((problem) => problem.argument in properties)
        .map((problem) => ({
          path: `/${problem.argument.replace(/~/g, "~0").replace(/\//g, "~1")}`,
          rule: "semantic" as const,
          message: `"${problem.argument}": ${problem.message}`,
        }));
      return result.object.valid || problems.length === 0
        ? { status: "passed" }
        : { status: "failed", problems };
    } catch (error) {
      return { status: "error", message: (error as Error).message };
    }
  }
}

/** The model that would serve semantic validation under a configuration, if any. */
export function validatorModel(config: TerrariumConfig, role = "validator"): string | undefined {
  return config.roles[role] ?? config.roles.default;
}

/** Whether calls are checked by a model for semantic fit, and which model does it. */
export interface SemanticValidationStatus {
  enabled: boolean;
  /** The model serving the validator role, or null. */
  model: string | null;
  /** Where the model comes from: `roles.validator`, or `roles.default` (which serves every role). */
  source: "roles.validator" | "roles.default" | null;
}

/**
 * The one place that decides whether semantic validation runs: the validator role is served like every
 * other role, by `roles.validator` or else `roles.default`. `serve` builds its validator from this, its
 * start-up banner prints it and /health reports it, so the three always agree.
 */
export function semanticValidationOf(config: TerrariumConfig): SemanticValidationStatus {
  const model = validatorModel(config) ?? null;
  if (!model) return { enabled: false, model: null, source: null };
  return { enabled: true, model, source: config.roles.validator ? "roles.validator" : "roles.default" };
}
