import { TerrariumError } from "../../core/errors.js";
import { effectFromName } from "../effect.js";
import {
  closeArgumentObject,
  emptyArgumentSchema,
  fromBfclSchema,
  isPlainObject,
  toJsonSchema2020,
  usesBfclTypes,
} from "../json-schema.js";
import { resolveLocalRefs } from "../refs.js";
import type { JsonObjectSchema, JsonSchema, Tool, ToolFormat } from "../tool.js";

/**
 * The function-style formats: one object per tool with a name, a description and an argument schema.
 * They differ only in where the schema sits and which dialect it is written in.
 */
export type FunctionStyleFormat = Exclude<ToolFormat, "openapi" | "environment">;

/** Says which function-style format one tool definition is in, or undefined when it is none of them. */
export function detectFunctionFormat(definition: unknown): FunctionStyleFormat | undefined {
  if (!isPlainObject(definition)) return undefined;
  if (definition.type === "function" && isPlainObject(definition.function)) return "openai";
  // The Responses API flattens the function: {type: "function", name, parameters}.
  if (definition.type === "function" && typeof definition.name === "string") return "openai";
  if (typeof definition.name !== "string") return undefined;
  if ("input_schema" in definition) return "anthropic";
  if ("inputSchema" in definition) return "mcp";
  if ("response" in definition || usesBfclTypes(definition.parameters)) return "bfcl";
  // A bare {name, description?, parameters?}: a tool that may take no arguments at all.
  return "function";
}

export interface FunctionToolContext {
  file?: string;
  pointer: string;
}

/** Reads one function-style tool definition in the given format. */
export function toolFromFunction(
  definition: unknown,
  format: FunctionStyleFormat,
  context: FunctionToolContext,
): Tool {
  const where = { file: context.file, pointer: context.pointer };
  const fail = (message: string, pointerSuffix = "") =>
    new TerrariumError("INVALID_TOOL", message, {
      where: { ...where, pointer: where.pointer + pointerSuffix },
    });
  if (!isPlainObject(definition)) throw fail("a tool definition must be an object");

  let body: Record<string, unknown> = definition;
  let bodyPointer = "";
  if (format === "openai" && isPlainObject(definition.function)) {
    body = definition.function;
    bodyPointer = "/function";
  }
  const name = body.name;
  if (typeof name !== "string" || name.trim() === "")
    throw fail('the tool needs a non-empty string "name"', `${bodyPointer}/name`);

  const schemaKey = format === "anthropic" ? "input_schema" : format === "mcp" ? "inputSchema" : "parameters";
  const rawSchema = body[schemaKey];
  const schemaPointer = `${where.pointer}${bodyPointer}/${schemaKey}`;
  let inputSchema: JsonSchema;
  if (rawSchema === undefined || rawSchema === null) {
    inputSchema = emptyArgumentSchema();
  } else {
    if (!isPlainObject(rawSchema))
      throw fail(`"${schemaKey}" must be a JSON Schema object`, `${bodyPointer}/${schemaKey}`);
    // $refs inside a function's schema are relative to the schema itself ($defs, definitions).
    inputSchema = resolveLocalRefs(rawSchema, rawSchema, { file: context.file }) as JsonSchema;
    inputSchema = format === "bfcl" ? fromBfclSchema(inputSchema) : toJsonSchema2020(inputSchema);
    inputSchema = withoutDefinitions(inputSchema as JsonObjectSchema);
    if (inputSchema.type === undefined && inputSchema.properties !== undefined)
      inputSchema = { type: "object", ...inputSchema };
    if (inputSchema.type !== "object") {
      throw new TerrariumError(
        "INVALID_TOOL",
        `the arguments of "${name}" must be described by an object schema, got type ${JSON.stringify(inputSchema.type)}`,
        { where: { file: context.file, pointer: `${schemaPointer}/type` } },
      );
    }
  }

  const tool: Tool = {
    name,
    description: typeof body.description === "string" ? body.description : "",
    inputSchema: closeArgumentObject(inputSchema as JsonObjectSchema),
    effect: "unknown",
    effectSource: "inferred",
    origin: { format, ...(context.file ? { file: context.file } : {}), pointer: context.pointer },
  };
  if (typeof body.title === "string" && body.title !== "") tool.title = body.title;

  const output = format === "mcp" ? body.outputSchema : format === "bfcl" ? body.response : undefined;
  if (isPlainObject(output)) {
    const resolved = resolveLocalRefs(output, output, { file: context.file }) as JsonSchema;
    tool.outputSchema = withoutDefinitions(
      (format === "bfcl" ? fromBfclSchema(resolved) : toJsonSchema2020(resolved)) as JsonObjectSchema,
    );
  }

  const annotations = format === "mcp" && isPlainObject(body.annotations) ? body.annotations : undefined;
  if (annotations?.readOnlyHint === true) {
    tool.effect = "read";
    tool.effectSource = "declared";
  } else if (annotations && (annotations.readOnlyHint === false || annotations.destructiveHint === true)) {
    tool.effect = "write";
    tool.effectSource = "declared";
  } else {
    tool.effect = effectFromName(name);
  }
  return tool;
}

/** After refs are inlined the definition sections are dead weight; drop them so schemas stay small. */
function withoutDefinitions(schema: JsonObjectSchema): JsonObjectSchema {
  if (!("$defs" in schema) && !("definitions" in schema)) return schema;
  const { $defs: _defs, definitions: _definitions, ...rest } = schema;
  return rest;
}
