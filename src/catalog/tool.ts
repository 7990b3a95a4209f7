/** A JSON Schema (2020-12) as plain data. Tool schemas stay raw JSON; terrarium never rewrites their meaning. */
export type JsonSchema = { [keyword: string]: unknown } | boolean;
export type JsonObjectSchema = { [keyword: string]: unknown };

/** Whether calling a tool changes the world (`write`) or only reads it. */
export type ToolEffect = "read" | "write" | "unknown";
export const TOOL_EFFECTS: readonly ToolEffect[] = ["read", "write", "unknown"];

/** The tool-definition formats the catalog reads, and `environment` for tools defined in code. */
export type ToolFormat = "openapi" | "openai" | "function" | "anthropic" | "mcp" | "bfcl" | "environment";
/** The formats a tool source file can be read as. */
export const TOOL_FORMATS: readonly ToolFormat[] = [
  "openapi",
  "openai",
  "function",
  "anthropic",
  "mcp",
  "bfcl",
];

/** How an OpenAPI operation's HTTP request is rebuilt from a tool call's flat arguments. */
export interface HttpBinding {
  method: string;
  path: string;
  /** Arguments that travel as path, query, header or cookie parameters. */
  parameters: Array<{ name: string; in: "path" | "query" | "header" | "cookie" }>;
  /**
   * Where the request body comes from: `none`; `merged` (the body's properties are top-level arguments
   * next to the parameters); or `argument` (the whole body is the argument named `bodyArgument`).
   */
  body: "none" | "merged" | "argument";
  bodyArgument?: string;
  contentType?: string;
  servers?: string[];
}

/** Where a tool came from: enough to find the definition again and, for OpenAPI, to call the real API. */
export interface ToolOrigin {
  format: ToolFormat;
  file?: string;
  /** JSON Pointer to the definition inside its file. */
  pointer?: string;
  http?: HttpBinding;
}

/** terrarium's one canonical tool model; every format is read into it. */
export interface Tool {
  name: string;
  description: string;
  /** Short human title when the source has one (OpenAPI summary, MCP title). */
  title?: string;
  /** The arguments, as a JSON Schema 2020-12 object schema with all local `$ref`s resolved. */
  inputSchema: JsonObjectSchema;
  /** The successful result, when the source declares one. */
  outputSchema?: JsonSchema;
  effect: ToolEffect;
  /** Whether `effect` was declared (by the source or an override) or inferred from the method or name. */
  effectSource: "declared" | "inferred";
  origin: ToolOrigin;
}

/** A tool call as agents and datasets write it. */
export interface ToolCall {
  name: string;
  arguments: unknown;
}
