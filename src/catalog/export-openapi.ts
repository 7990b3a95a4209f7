import { setOwn } from "../core/immutable-json.js";
import { CATALOG_SCHEMA_VERSION, type Catalog } from "./catalog.js";
import { EXT } from "./formats/openapi.js";
import { SharedDefinitions } from "./shared-definitions.js";
import type { JsonObjectSchema, JsonSchema, Tool } from "./tool.js";

/** The error object every exported tool may answer with instead of its result. */
export const TOOL_ERROR_SCHEMA: JsonObjectSchema = {
  type: "object",
  description: "The call failed; nothing was changed.",
  properties: {
    error: {
      type: "object",
      description: "What went wrong.",
      properties: {
        code: { type: "string", description: "A short machine-readable error code." },
        message: { type: "string", description: "A sentence saying what went wrong." },
      },
      required: ["message"],
    },
  },
  required: ["error"],
  additionalProperties: false,
  [EXT.errorSchema]: true,
};

export interface ExportOpenApiOptions {
  title?: string;
  version?: string;
  description?: string;
}

/**
 * Writes a catalog as an OpenAPI 3.1 document in Gecko's shape: one `POST /<tool>` per tool whose request
 * body is the argument schema and whose 200 response is `oneOf` [result, error]. Effects and origins
 * travel as `x-terrarium-*` extensions, so reading the document back gives the same catalog.
 */
export function exportOpenApi(catalog: Catalog, options: ExportOpenApiOptions = {}): JsonObjectSchema {
  const paths: Record<string, unknown> = {};
  // In an OpenAPI document "#/$defs/..." would be read against the document, not the schema.
  const components = new SharedDefinitions("#/components/schemas/");
  for (const tool of catalog.tools) {
    const hoisted = {
      ...tool,
      inputSchema: components.hoist(tool.inputSchema) as JsonObjectSchema,
      ...(tool.outputSchema !== undefined ? { outputSchema: components.hoist(tool.outputSchema) } : {}),
    };
    setOwn(paths, `/${encodePathSegment(tool.name)}`, { post: operationFor(hoisted) });
  }
  return {
    openapi: "3.1.0",
    info: {
      title: options.title ?? "terrarium tools",
      version: options.version ?? "1.0.0",
      ...(options.description ? { description: options.description } : {}),
      [EXT.meta]: { schemaVersion: CATALOG_SCHEMA_VERSION },
    },
    paths,
    ...(components.size > 0 ? { components: { schemas: components.schemas } } : {}),
  };
}

function operationFor(tool: Tool): Record<string, unknown> {
  const success: JsonSchema = tool.outputSchema ?? {
    description: "The tool declares no result schema.",
    not: TOOL_ERROR_SCHEMA,
    [EXT.unspecified]: true,
  };
  const operation: Record<string, unknown> = {
    operationId: tool.name,
    ...(tool.title ? { summary: tool.title } : {}),
    description: tool.description,
    requestBody: { required: true, content: { "application/json": { schema: tool.inputSchema } } },
    responses: {
      "200": {
        description: "The tool's result, or an error object.",
        content: { "application/json": { schema: { oneOf: [success, TOOL_ERROR_SCHEMA] } } },
      },
    },
    [EXT.effect]: tool.effect,
    [EXT.origin]: { ...tool.origin, effectSource: tool.effectSource },
  };
  return operation;
}

/** Tool names become one path segment; characters that would split it are percent-encoded. */
function encodePathSegment(name: string): string {
  return name.replace(
    /[/?#%{}\s]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`,
  );
}
