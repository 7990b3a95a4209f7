import { TerrariumError } from "../core/errors.js";
import {
  detectFunctionFormat,
  type FunctionStyleFormat,
  toolFromFunction,
} from "./formats/function-style.js";
import { isOpenApiDocument, toolsFromOpenApi } from "./formats/openapi.js";
import { convertSwagger2, isSwagger2Document } from "./formats/swagger2.js";
import { isPlainObject } from "./json-schema.js";
import { readDocument } from "./read-document.js";
import type { LoadReport } from "./report.js";
import { withReachableDefinitions } from "./shared-definitions.js";
import type { Tool, ToolFormat } from "./tool.js";

export interface ToolsFromDocumentOptions {
  /** File the document came from, for origins and error messages. */
  file?: string;
  /** Read every definition as this format instead of detecting it. */
  format?: ToolFormat;
  /**
   * Where warnings and skipped definitions go. With a report, a definition or operation that cannot be
   * read is skipped and reported and the rest still load; without one, the first problem is an error.
   */
  report?: LoadReport;
}

/**
 * Reads tools from a parsed document, detecting the format: an OpenAPI document; one tool definition;
 * a list of them (formats may be mixed); `{tools: [...]}` (an MCP `tools/list` result, also inside a
 * JSON-RPC response); or a BFCL question line (`{function: [...]}`).
 */
export function toolsFromDocument(document: unknown, options: ToolsFromDocumentOptions = {}): Tool[] {
  const { file, report } = options;
  if (options.format === "openapi" || (options.format === undefined && isOpenApiDocument(document))) {
    return toolsFromOpenApi(document, { file, report });
  }
  const forced = options.format as FunctionStyleFormat | undefined;
  const readList = (list: unknown[], pointer: string) =>
    list.flatMap((definition, index) => {
      const at = `${pointer}/${index}`;
      try {
        return [readOne(definition, at, forced, file, report)];
      } catch (error) {
        if (!report || !(error instanceof TerrariumError)) throw error;
        report.skip({ code: error.code, message: error.message, file, pointer: error.where.pointer ?? at });
        return [];
      }
    });

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
    if (Array.isArray(document.tools)) {
      // A catalog listing (`tools list --json`, GET /tools) keeps shared definitions once, at its root.
      const shared = document.$defs;
      if (!isPlainObject(shared)) return readList(document.tools, "/tools");
      const direct = new Map<string, string[]>();
      const attach = (schema: unknown) => withReachableDefinitions(schema, shared, direct);
      return readList(
        document.tools.map((item) =>
          isPlainObject(item)
            ? {
                ...item,
                ...(item.inputSchema !== undefined ? { inputSchema: attach(item.inputSchema) } : {}),
                ...(item.outputSchema !== undefined ? { outputSchema: attach(item.outputSchema) } : {}),
              }
            : item,
        ),
        "/tools",
      );
    }
    if (Array.isArray(document.function)) return readList(document.function, "/function");
    return [readOne(document, "", forced, file, report)];
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
  file: string | undefined,
  report: LoadReport | undefined,
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
  return toolFromFunction(definition, format, { file, pointer, report });
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

/**
 * Brings a parsed document to a form `toolsFromDocument` reads: Swagger 2.0 documents (alone or as lines
 * of a JSON Lines file) are converted to OpenAPI 3 by swagger2openapi; the converter's own repairs are
 * reported as warnings.
 */
export async function prepareDocument(
  document: unknown,
  options: { file?: string; report?: LoadReport } = {},
): Promise<unknown> {
  const convert = async (item: unknown, pointer: string): Promise<unknown> => {
    if (!isSwagger2Document(item)) return item;
    const converted = await convertSwagger2(item, { file: options.file });
    for (const warning of converted.warnings) {
      options.report?.warn({
        code: "SWAGGER_REPAIRED",
        message: warning.message,
        file: options.file,
        pointer: pointer + warning.pointer,
      });
    }
    return converted.document;
  };
  if (Array.isArray(document) && document.some(isSwagger2Document)) {
    return Promise.all(document.map((item, index) => convert(item, `/${index}`)));
  }
  return convert(document, "");
}

/** Reads the tools of one file (JSON, JSON Lines or YAML; OpenAPI 3, Swagger 2.0 or function-style). */
export async function loadToolFile(
  file: string,
  options: Omit<ToolsFromDocumentOptions, "file"> = {},
): Promise<Tool[]> {
  try {
    const document = await prepareDocument(readDocument(file), { file, report: options.report });
    return toolsFromDocument(document, { ...options, file });
  } catch (error) {
    throw error instanceof TerrariumError ? error.locatedIn({ file }) : error;
  }
}
