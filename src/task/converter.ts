import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { toolsFromOpenApi } from "../catalog/formats/openapi.js";
import { describeNote, LoadReport } from "../catalog/report.js";
import { TerrariumError } from "../core/errors.js";
import type { Models } from "../models/hub.js";
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
  /** The function's name: the operation's `operationId` must be exactly this (the paper's rule). */
  name?: string;
  text: string;
  /** Where the description comes from, for messages (`tools.py:12 Inventory.restock`). */
  source?: string;
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
  // Two functions of the same name would be one tool: refused before any model call, both named.
  const sources = new Map<string, string>();
  for (const [index, description] of descriptions.entries()) {
    if (!description.name) continue;
    claimName(sources, description.name, description.source ?? `description ${index + 1}`);
  }
  const paths: Record<string, unknown> = {};
  const claimed = new Map<string, string>();
  for (const [index, description] of descriptions.entries()) {
    const source = description.source ?? `description ${index + 1}`;
    for (const operation of await convertOne(description, options)) {
      const operationId = operation.operationId as string;
      claimName(claimed, operationId, source);
      paths[`/${operationId}`] = { post: operation };
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

/** Records that `source` defines the tool `name`; a second definition is an error naming both. */
function claimName(claimed: Map<string, string>, name: string, source: string): void {
  const first = claimed.get(name);
  if (first !== undefined) {
    throw new TerrariumError(
      "DUPLICATE_TOOL",
      `two tools would both be named "${name}": ${first} and ${source}; rename one (tool names must be unique)`,
    );
  }
  claimed.set(name, source);
}

async function convertOne(
  description: ToolDescription,
  options: ConvertOptions,
): Promise<Array<Record<string, unknown>>> {
  const compiler = new SchemaCompiler();
  type Answer = { operations: Array<Record<string, unknown>> };
  const operationsOf = (answer: Answer) =>
    description.name ? named(answer.operations, description.name) : answer.operations;
  try {
    // The checks are the call's acceptance: an answer with problems is repaired and never cached.
    const result = await options.models.generateObject<Answer>({
      role: options.role ?? "converter",
      temperature: 0,
      schemaName: "openapi_operations",
      schema: {
        type: "object",
        properties: { operations: { type: "array", minItems: 1, items: OPERATION_SCHEMA } },
        required: ["operations"],
      },
      messages: [
        { role: "system", content: converterSystemPrompt() },
        { role: "user", content: converterUserPrompt(description.text) },
      ],
      repairAttempts: 2,
      accept: (answer) => {
        const problems = checkOperations(operationsOf(answer), compiler);
        if (description.name && answer.operations.length !== 1)
          problems.unshift(
            `write exactly one operation for the function ${description.name} (got ${answer.operations.length})`,
          );
        return problems;
      },
      repairPrompt: (problems) =>
        `These operations are not usable:\n${problems.map((p) => `- ${p}`).join("\n")}\nReturn the corrected {"operations": [...]}.`,
    });
    return operationsOf(result.object);
  } catch (error) {
    if (!(error instanceof TerrariumError) || error.code !== "MODEL_OUTPUT_INVALID") throw error;
    const problems = (error.details as { problems?: string[] } | undefined)?.problems ?? [error.message];
    throw new TerrariumError(
      "MODEL_OUTPUT_INVALID",
      `the converter could not produce a usable operation${description.name ? ` for ${description.name}` : ""}: ${problems.join("; ")}`,
    );
  }
}

/** A function's operation takes the function's name as its operationId, whatever the model called it. */
function named(operations: Array<Record<string, unknown>>, name: string): Array<Record<string, unknown>> {
  return operations.map((operation, index) =>
    index === 0 ? { ...operation, operationId: name } : operation,
  );
}

/**
 * Reads the operations back as tools, with a load report, and compiles every schema. Returns what is
 * wrong, each problem once and naming the operation and the schema location it is about: anything the
 * loader would have to skip or normalise is a problem the model must fix, not one to hide.
 */
function checkOperations(operations: Array<Record<string, unknown>>, compiler: SchemaCompiler): string[] {
  const problems = new Set<string>();
  const paths = Object.fromEntries(
    operations.map((operation) => [`/${String(operation.operationId)}`, { post: operation }]),
  );
  const ids = operations.map((operation) => String(operation.operationId));
  for (const id of new Set(ids.filter((id, index) => ids.indexOf(id) !== index)))
    problems.add(`two operations are both named "${id}"; give each its own operationId`);
  try {
    const report = new LoadReport();
    const document = { openapi: "3.1.0", info: { title: "check", version: "1" }, paths };
    const tools = toolsFromOpenApi(document, { file: "converted", report });
    for (const note of [...report.skipped, ...report.warnings]) {
      if (!TOLERATED_NOTES.has(note.code)) problems.add(describeNote(note));
    }
    for (const tool of tools) {
      compiler.compile(tool.inputSchema, { tool: tool.name });
      if (tool.outputSchema !== undefined) compiler.compile(tool.outputSchema, { tool: tool.name });
    }
  } catch (error) {
    problems.add((error as Error).message);
  }
  if (JSON.stringify(operations).includes('"$ref"')) problems.add("schemas must be inlined: no $ref");
  return [...problems];
}

/** Load notes that describe a usable schema (an unknown format, a translated pattern): no repair asked. */
const TOLERATED_NOTES = new Set(["FORMAT_UNKNOWN", "PATTERN_TRANSLATED"]);

/** Tool descriptions from a file: a Python source (its public functions and methods) or free text. */
export function describeToolsInFile(file: string): ToolDescription[] {
  if (!existsSync(file))
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the file (no such file)", { where: { file } });
  if (extname(file).toLowerCase() !== ".py") return [{ text: readFileSync(file, "utf8") }];
  const script = join(dirname(fileURLToPath(import.meta.url)), "python-signatures.py");
  const located = existsSync(script)
    ? script
    : join(dirname(fileURLToPath(import.meta.url)), "..", "src", "task", "python-signatures.py");
  let listed: Array<{
    name: string;
    class: string | null;
    line?: number;
    signature: string;
    docstring: string;
  }>;
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
    source: `${file}${fn.line ? `:${fn.line}` : ""} ${fn.class ? `${fn.class}.` : ""}${fn.name}`,
    text: `${fn.class ? `Method of class ${fn.class}.\n` : ""}${fn.signature}\n${fn.docstring ? `"""${fn.docstring}"""` : "(no docstring)"}`,
  }));
}
