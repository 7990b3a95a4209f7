import { TerrariumError } from "../../core/errors.js";
import { setOwn } from "../../core/immutable-json.js";
import { effectFromName } from "../effect.js";
import {
  closeArgumentObject,
  emptyArgumentSchema,
  fromBfclSchema,
  isPlainObject,
  usesBfclTypes,
} from "../json-schema.js";
import { dropUndeclaredRequired, SchemaNormaliser, type SchemaWarn } from "../normalise.js";
import { RefResolver } from "../refs.js";
import type { LoadReport } from "../report.js";
import { repairSchema } from "../schema-check.js";
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
  /** Where schema warnings go (normalised keywords, translated patterns, unresolvable refs). */
  report?: LoadReport;
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
    inputSchema = canonicalSchema(rawSchema, format, context, name, "/inputSchema");
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

  const closed = repairSchema(
    dropUndeclaredRequired(
      { ...closeArgumentObject(inputSchema as JsonObjectSchema) },
      "/inputSchema",
      warnFor(context, name),
    ),
    warnFor(context, name),
    "/inputSchema",
  );
  if (!isPlainObject(closed)) {
    throw new TerrariumError("SCHEMA_INVALID", `the arguments of "${name}" are not usable JSON Schema`, {
      where: { file: context.file, pointer: schemaPointer },
    });
  }
  const tool: Tool = {
    name,
    description: typeof body.description === "string" ? body.description : "",
    inputSchema: closed,
    effect: "unknown",
    effectSource: "inferred",
    origin: { format, ...(context.file ? { file: context.file } : {}), pointer: context.pointer },
  };
  if (typeof body.title === "string" && body.title !== "") tool.title = body.title;

  const output = format === "mcp" ? body.outputSchema : format === "bfcl" ? body.response : undefined;
  if (isPlainObject(output)) {
    const schema = repairSchema(
      canonicalSchema(output, format, context, name, "/outputSchema"),
      warnFor(context, name),
      "/outputSchema",
    );
    if (schema !== undefined) tool.outputSchema = schema;
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

/**
 * A function's schema in canonical form. `$ref`s inside it are relative to the schema itself (`$defs`,
 * `definitions`): non-recursive ones are inlined and the source's definition sections dropped; recursive
 * ones stay as references into the `$defs` terrarium attaches.
 */
function canonicalSchema(
  raw: Record<string, unknown>,
  format: FunctionStyleFormat,
  context: FunctionToolContext,
  tool: string,
  pointer: string,
): JsonObjectSchema {
  const warn = warnFor(context, tool);
  const resolver = new RefResolver(raw, { file: context.file, report: context.report });
  const resolved = resolver.resolve(raw) as JsonObjectSchema;
  const { $defs: _defs, definitions: _definitions, ...body } = resolved;
  const normaliser = new SchemaNormaliser({ dialect: "json-schema", warn });
  const normalise = (schema: unknown, at: string) =>
    normaliser.normalise(format === "bfcl" ? fromBfclSchema(schema as JsonSchema) : schema, at);
  const rooted = resolver.withDefinitions(normalise(body, pointer)) as JsonObjectSchema;
  if (!isPlainObject(rooted.$defs)) return rooted;
  const $defs: Record<string, unknown> = {};
  for (const [name, definition] of Object.entries(rooted.$defs))
    setOwn($defs, name, normalise(definition, `${pointer}/$defs/${name}`));
  return { ...rooted, $defs };
}

function warnFor(context: FunctionToolContext, tool: string): SchemaWarn {
  return (code, message, pointer) =>
    context.report?.warn({ code, message, ...(context.file ? { file: context.file } : {}), pointer, tool });
}
