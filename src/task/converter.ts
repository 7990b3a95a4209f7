import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { toolsFromOpenApi } from "../catalog/formats/openapi.js";
import { TerrariumError } from "../core/errors.js";
import type { Models } from "../models/hub.js";
import type { Message } from "../models/types.js";
import { SchemaCompiler } from "../validate/ajv.js";
import { converterSystemPrompt, converterUserPrompt } from "./prompts/converter.js";

/** The shape every converted operation must have (checked by the model layer, repaired on failure). */
const OPERATION_SCHEMA = {
  type: "object",
  properties: {
    operationId: { type: "string", pattern: "^[A-Za-z_][A-Za-z0-9_.-]*$" },
    summary: { type: "string" },
    description: { type: "string" },
    requestBody: {
      type: "object",
      properties: {
        required: { type: "boolean" },
        content: {
          type: "object",
          properties: {
            "application/json": {
              type: "object",
              properties: {
                schema: { type: "object", properties: { type: { const: "object" } }, required: ["type"] },
              },
              required: ["schema"],
            },
          },
          required: ["application/json"],
        },
      },
      required: ["content"],
    },
    responses: {
      type: "object",
      properties: {
        "200": {
          type: "object",
          properties: {
            description: { type: "string" },
            content: {
              type: "object",
              properties: {
                "application/json": {
                  type: "object",
                  properties: {
                    schema: {
                      type: "object",
                      properties: { oneOf: { type: "array", minItems: 2, maxItems: 2 } },
                      required: ["oneOf"],
                    },
                  },
                  required: ["schema"],
                },
              },
              required: ["application/json"],
            },
          },
          required: ["description", "content"],
        },
      },
      required: ["200"],
    },
  },
  required: ["operationId", "summary", "description", "requestBody", "responses"],
};

export interface ConvertOptions {
  models: Models;
  role?: string;
  title?: string;
}

/** One tool to convert: how it is described to the converter. */
export interface ToolDescription {
  name?: string;
  text: string;
}

/**
 * Gecko's schema converter: a model writes an OpenAPI 3.1 operation for each tool description; the
 * result is checked as OpenAPI (terrarium reads it back as tools) and as JSON Schema (every schema
 * compiles), and repaired with the errors when it fails. Returns an OpenAPI document usable as a tool source.
 */
export async function convertToOpenApi(
  descriptions: ToolDescription[],
  options: ConvertOptions,
): Promise<Record<string, unknown>> {
  const paths: Record<string, unknown> = {};
  for (const description of descriptions) {
    for (const operation of await convertOne(description, options)) {
      paths[`/${operation.operationId as string}`] = { post: operation };
    }
  }
  const document = {
    openapi: "3.1.0",
    info: {
      title: options.title ?? "converted tools",
      version: "1.0.0",
      "x-terrarium": { schemaVersion: 1 },
    },
    paths,
  };
  toolsFromOpenApi(document); // a final structural check of the whole document
  return document;
}

async function convertOne(
  description: ToolDescription,
  options: ConvertOptions,
): Promise<Array<Record<string, unknown>>> {
  const compiler = new SchemaCompiler();
  let messages: Message[] = [
    { role: "system", content: converterSystemPrompt() },
    { role: "user", content: converterUserPrompt(description.text) },
  ];
  let problems: string[] = [];
  for (let round = 0; round < 3; round++) {
    const result = await options.models.generateObject<{ operations: Array<Record<string, unknown>> }>({
      role: options.role ?? "converter",
      temperature: 0,
      schemaName: "openapi_operations",
      schema: {
        type: "object",
        properties: { operations: { type: "array", minItems: 1, items: OPERATION_SCHEMA } },
        required: ["operations"],
      },
      messages,
    });
    problems = checkOperations(result.object.operations, compiler);
    if (problems.length === 0) return result.object.operations;
    messages = [
      ...messages,
      { role: "assistant", content: result.text },
      {
        role: "user",
        content: `These operations are not usable:\n${problems.map((p) => `- ${p}`).join("\n")}\nReturn the corrected {"operations": [...]}.`,
      },
    ];
  }
  throw new TerrariumError(
    "MODEL_OUTPUT_INVALID",
    `the converter could not produce a usable operation${description.name ? ` for ${description.name}` : ""}: ${problems.join("; ")}`,
  );
}

/** Reads the operations back as tools and compiles every schema; returns what is wrong. */
function checkOperations(operations: Array<Record<string, unknown>>, compiler: SchemaCompiler): string[] {
  const problems: string[] = [];
  const paths = Object.fromEntries(
    operations.map((operation) => [`/${String(operation.operationId)}`, { post: operation }]),
  );
  try {
    const tools = toolsFromOpenApi({ openapi: "3.1.0", info: { title: "check", version: "1" }, paths });
    for (const tool of tools) {
      compiler.compile(tool.inputSchema, { tool: tool.name });
      if (tool.outputSchema !== undefined) compiler.compile(tool.outputSchema, { tool: tool.name });
    }
  } catch (error) {
    problems.push((error as Error).message);
  }
  if (JSON.stringify(operations).includes('"$ref"')) problems.push("schemas must be inlined: no $ref");
  return problems;
}

/** Tool descriptions from a file: a Python source (its public functions and methods) or free text. */
export function describeToolsInFile(file: string): ToolDescription[] {
  if (!existsSync(file))
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the file (no such file)", { where: { file } });
  if (extname(file).toLowerCase() !== ".py") return [{ text: readFileSync(file, "utf8") }];
  const script = join(dirname(fileURLToPath(import.meta.url)), "python-signatures.py");
  const located = existsSync(script)
    ? script
    : join(dirname(fileURLToPath(import.meta.url)), "..", "src", "task", "python-signatures.py");
  let listed: Array<{ name: string; class: string | null; signature: string; docstring: string }>;
  try {
    listed = JSON.parse(
      execFileSync(process.env.TERRARIUM_PYTHON ?? "python3", [located, file], { encoding: "utf8" }),
    );
  } catch (error) {
    throw new TerrariumError(
      "PARSE_ERROR",
      `cannot read the Python file: ${(error as Error).message.split("\n").slice(-2).join(" ")}`,
      { where: { file } },
    );
  }
  if (listed.length === 0)
    throw new TerrariumError("INVALID_INPUT", "the Python file has no public functions or methods", {
      where: { file },
    });
  return listed.map((fn) => ({
    name: fn.name,
    text: `${fn.class ? `Method of class ${fn.class}.\n` : ""}${fn.signature}\n${fn.docstring ? `"""${fn.docstring}"""` : "(no docstring)"}`,
  }));
}
