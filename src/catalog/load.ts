import { TerrariumError } from "../core/errors.js";
import {
  detectFunctionFormat,
  type FunctionStyleFormat,
  toolFromFunction,
} from "./formats/function-style.js";
import { isOpenApiDocument, toolsFromOpenApi } from "./formats/openapi.js";
import { isPlainObject } from "./json-schema.js";
import { readDocument } from "./read-document.js";
import type { Tool, ToolFormat } from "./tool.js";

export interface ToolsFromDocumentOptions {
  /** File the document came from, for origins and error messages. */
  file?: string;
  /** Read every definition as this format instead of detecting it. */
  format?: ToolFormat;
}

/**
 * Reads tools from a parsed document, detecting the format: an OpenAPI document; one tool definition;
 * a list of them (formats may be mixed); `{tools: [...]}` (an MCP `tools/list` result, also inside a
 * JSON-RPC response); or a BFCL question line (`{function: [...]}`).
 */
export function toolsFromDocument(document: unknown, options: ToolsFromDocumentOptions = {}): Tool[] {
  const { file } = options;
  if (options.format === "openapi" || (options.format === undefined && isOpenApiDocument(document))) {
    return toolsFromOpenApi(document, file);
  }
  const forced = options.format as FunctionStyleFormat | undefined;
  const readList = (list: unknown[], pointer: string) =>
    list.map((definition, index) => readOne(definition, `${pointer}/${index}`, forced, file));

  if (Array.isArray(document)) {
    // A JSON Lines file of BFCL questions or of OpenAPI documents is a list of containers, not of tools.
    if (document.length > 0 && document.every((item) => isContainer(item))) {
      return document.flatMap((item, index) =>
        withPointerPrefix(toolsFromDocument(item, { ...options }), `/${index}`, file),
      );
    }
    return readList(document, "");
  }
  if (isPlainObject(document)) {
    if (isPlainObject(document.result) && Array.isArray(document.result.tools)) {
      return readList(document.result.tools, "/result/tools");
    }
    if (Array.isArray(document.tools)) return readList(document.tools, "/tools");
    if (Array.isArray(document.function)) return readList(document.function, "/function");
    return [readOne(document, "", forced, file)];
  }
  throw new TerrariumError(
    "UNKNOWN_FORMAT",
    "expected a tool definition, a list of them or an OpenAPI document",
    {
      where: { file, pointer: "" },
    },
  );
}

function readOne(
  definition: unknown,
  pointer: string,
  forced: FunctionStyleFormat | undefined,
  file?: string,
): Tool {
  const format = forced ?? detectFunctionFormat(definition);
  if (!format) {
    const keys = isPlainObject(definition)
      ? Object.keys(definition).slice(0, 6).join(", ")
      : typeof definition;
    throw new TerrariumError(
      "UNKNOWN_FORMAT",
      `not a tool definition in any supported format (found ${keys || "an empty object"}); expected OpenAI ` +
        '{type:"function", function:{...}}, {name, parameters}, Anthropic {name, input_schema}, MCP {name, inputSchema} or BFCL',
      { where: { file, pointer } },
    );
  }
  return toolFromFunction(definition, format, { file, pointer });
}

function isContainer(item: unknown): boolean {
  return (
    isOpenApiDocument(item) ||
    (isPlainObject(item) && (Array.isArray(item.function) || Array.isArray(item.tools)))
  );
}

function withPointerPrefix(tools: Tool[], prefix: string, file?: string): Tool[] {
  return tools.map((tool) =>
    tool.origin.file === file && tool.origin.pointer !== undefined
      ? { ...tool, origin: { ...tool.origin, pointer: prefix + tool.origin.pointer } }
      : tool,
  );
}

/** Reads the tools of one file (JSON, JSON Lines or YAML). */
export function loadToolFile(file: string, options: Omit<ToolsFromDocumentOptions, "file"> = {}): Tool[] {
  const document = readDocument(file);
  try {
    return toolsFromDocument(document, { ...options, file });
  } catch (error) {
    throw error instanceof TerrariumError ? error.locatedIn({ file }) : error;
  }
}
