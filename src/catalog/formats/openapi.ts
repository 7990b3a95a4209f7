import { TerrariumError } from "../../core/errors.js";
import { setOwn } from "../../core/immutable-json.js";
import { escapeToken } from "../../core/json-pointer.js";
import { effectFromHttp } from "../effect.js";
import { closeArgumentObject, isPlainObject } from "../json-schema.js";
import {
  dropUndeclaredRequired,
  type SchemaDirection,
  SchemaNormaliser,
  type SchemaWarn,
} from "../normalise.js";
import { RefResolver } from "../refs.js";
import type { LoadReport } from "../report.js";
import { repairSchema } from "../schema-check.js";
import type { HttpBinding, JsonObjectSchema, JsonSchema, Tool, ToolEffect, ToolOrigin } from "../tool.js";
import { TOOL_EFFECTS } from "../tool.js";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
/** Headers OpenAPI says are described elsewhere; they are not tool arguments. */
const IGNORED_HEADERS = new Set(["accept", "content-type", "authorization"]);

/** Extension keys terrarium writes into exported OpenAPI so nothing is lost on the way back. */
export const EXT = {
  effect: "x-terrarium-effect",
  origin: "x-terrarium-origin",
  errorSchema: "x-terrarium-error",
  unspecified: "x-terrarium-unspecified",
  meta: "x-terrarium",
} as const;

export function isOpenApiDocument(document: unknown): boolean {
  return isPlainObject(document) && ("openapi" in document || "swagger" in document);
}

export interface OpenApiReadOptions {
  /** File the document came from, for origins and notes. */
  file?: string;
  /**
   * Where warnings and skipped operations go. Without a report the reading is strict: the first
   * operation that cannot be read is an error, and warnings are not kept.
   */
  report?: LoadReport;
}

/**
 * Reads every operation of an OpenAPI 3.0 or 3.1 document (JSON already parsed) as a tool. With a
 * report, an operation that cannot be read is skipped and reported (file, JSON Pointer, why) and the
 * others still load; schema problems that have a clear reading are normalised with a warning.
 */
export function toolsFromOpenApi(document: unknown, options: OpenApiReadOptions | string = {}): Tool[] {
  const { file, report } = typeof options === "string" ? { file: options, report: undefined } : options;
  const fail = (message: string, pointer = "") =>
    new TerrariumError("INVALID_OPENAPI", message, { where: { file, pointer } });
  if (!isPlainObject(document)) throw fail("an OpenAPI document must be an object");
  if ("swagger" in document) {
    throw fail(
      `Swagger ${String(document.swagger)} must be converted to OpenAPI 3 first (loadToolFile and the CLI do this)`,
      "/swagger",
    );
  }
  const version = document.openapi;
  if (typeof version !== "string" || !/^3\.[01]\.\d+/.test(version)) {
    throw fail(
      `unsupported "openapi" version ${JSON.stringify(version)}; expected 3.0.x or 3.1.x`,
      "/openapi",
    );
  }
  const paths = document.paths ?? {};
  if (!isPlainObject(paths)) throw fail('"paths" must be an object', "/paths");
  if (Object.keys(paths).length === 0 && !isPlainObject(document.webhooks)) {
    if (!report) throw fail('the document has no operations ("paths" is empty)', "/paths");
    report.warn({
      code: "NO_OPERATIONS",
      message: 'the document has no operations ("paths" is empty)',
      file,
      pointer: "/paths",
    });
    return [];
  }
  const servers = Array.isArray(document.servers)
    ? document.servers.flatMap((server) =>
        isPlainObject(server) && typeof server.url === "string" ? [server.url] : [],
      )
    : [];

  let currentTool: string | undefined;
  const schemas: DocumentSchemas = {
    resolver: new RefResolver(document, { file, report }),
    normaliser: new SchemaNormaliser({
      dialect: version.startsWith("3.0") ? "openapi-3.0" : "openapi-3.1",
      warn: (code, message, pointer) => report?.warn({ code, message, file, pointer, tool: currentTool }),
    }),
    warn: (code, message, pointer) => report?.warn({ code, message, file, pointer, tool: currentTool }),
  };
  const skip = (error: unknown, pointer: string, tool?: string) => {
    if (!report) throw error;
    // Anything else that goes wrong in one operation (a stack exhausted by a hostile document, a bug)
    // costs that operation, not the file.
    const known = error instanceof TerrariumError;
    report.skip({
      code: known ? error.code : "INTERNAL",
      message: known
        ? error.message
        : `the operation could not be read: ${(error as Error)?.message ?? String(error)}`,
      file,
      pointer: (known ? error.where?.pointer : undefined) ?? pointer,
      ...(tool ? { tool } : {}),
    });
  };

  const tools: Tool[] = [];
  const seen = new Map<string, string>();
  for (const [path, rawItem] of Object.entries(paths)) {
    if (path.startsWith("x-")) continue; // a specification extension, not a path
    const itemPointer = `/paths/${escapeToken(path)}`;
    let item: Record<string, unknown>;
    try {
      if (!path.startsWith("/")) throw fail(`path "${path}" must start with "/"`, itemPointer);
      if (!isPlainObject(rawItem)) throw fail(`path item "${path}" must be an object`, itemPointer);
      const resolved = schemas.resolver.resolve(rawItem, itemPointer);
      if (!isPlainObject(resolved)) throw fail(`path item "${path}" must be an object`, itemPointer);
      item = resolved;
    } catch (error) {
      skip(error, itemPointer);
      continue;
    }
    for (const method of METHODS) {
      const operation = item[method];
      if (operation === undefined) continue;
      const pointer = `${itemPointer}/${method}`;
      try {
        if (!isPlainObject(operation))
          throw fail(`operation ${method.toUpperCase()} ${path} must be an object`, pointer);
        currentTool = operationName(operation, method, path);
        const tool = operationToTool({
          path,
          method,
          operation,
          pathItem: item,
          servers,
          file,
          pointer,
          fail,
          schemas,
        });
        const previous = seen.get(tool.name);
        if (previous) {
          if (!report) {
            throw new TerrariumError(
              "DUPLICATE_TOOL",
              `operationId "${tool.name}" is used twice (also at ${previous}); tool names must be unique`,
              { where: { file, pointer } },
            );
          }
          const renamed = uniqueName(tool.name, method, path, seen);
          report.warn({
            code: "DUPLICATE_OPERATION_ID",
            message: `operationId "${tool.name}" is also used at ${previous}; this operation is named "${renamed}"`,
            file,
            pointer: `${pointer}/operationId`,
            tool: renamed,
          });
          tool.name = renamed;
        }
        seen.set(tool.name, pointer);
        tools.push(tool);
      } catch (error) {
        skip(error, pointer, currentTool);
      } finally {
        currentTool = undefined;
      }
    }
  }
  return tools;
}

/** What reading one document's schemas needs: its references, its dialect, its warnings. */
interface DocumentSchemas {
  resolver: RefResolver;
  normaliser: SchemaNormaliser;
  warn: SchemaWarn;
}

interface OperationInput {
  path: string;
  method: string;
  operation: Record<string, unknown>;
  pathItem: Record<string, unknown>;
  servers: string[];
  file: string | undefined;
  pointer: string;
  fail: (message: string, pointer?: string) => TerrariumError;
  schemas: DocumentSchemas;
}

function operationName(operation: Record<string, unknown>, method: string, path: string): string {
  return typeof operation.operationId === "string" && operation.operationId.trim() !== ""
    ? operation.operationId
    : derivedName(method, path);
}

/** A name for the second operation that claims an operationId: method and path, else a number. */
function uniqueName(name: string, method: string, path: string, taken: Map<string, string>): string {
  const derived = derivedName(method, path);
  if (!taken.has(derived)) return derived;
  for (let suffix = 2; ; suffix++) if (!taken.has(`${name}_${suffix}`)) return `${name}_${suffix}`;
}

function operationToTool(input: OperationInput): Tool {
  const { path, method, operation, pathItem, file, pointer, fail, schemas } = input;
  const convert = (schema: unknown, at: string, direction: SchemaDirection): JsonSchema =>
    schemas.normaliser.normalise(schema, at, direction);
  const name = operationName(operation, method, path);

  // Parameters: path-level ones apply unless the operation redefines the same name and location.
  const parameters = new Map<string, Record<string, unknown>>();
  for (const [list, listPointer] of [
    [pathItem.parameters, `${pointer.slice(0, pointer.lastIndexOf("/"))}/parameters`],
    [operation.parameters, `${pointer}/parameters`],
  ] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw fail('"parameters" must be an array', listPointer);
    list.forEach((parameter, index) => {
      if (
        !isPlainObject(parameter) ||
        typeof parameter.name !== "string" ||
        typeof parameter.in !== "string"
      ) {
        const empty = isPlainObject(parameter) && Object.keys(parameter).length === 0;
        throw fail(
          `each parameter needs a string "name" and "in"${empty ? " (this one is empty: an unresolved $ref?)" : ""}`,
          `${listPointer}/${index}`,
        );
      }
      if (!["path", "query", "header", "cookie"].includes(parameter.in)) {
        throw fail(
          `parameter "${parameter.name}" has an invalid "in": "${parameter.in}"`,
          `${listPointer}/${index}/in`,
        );
      }
      parameters.set(`${parameter.in}:${parameter.name}`, parameter);
    });
  }

  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const binding: HttpBinding = { method: method.toUpperCase(), path, parameters: [], body: "none" };
  if (input.servers.length > 0) binding.servers = input.servers;
  for (const parameter of parameters.values()) {
    const where = parameter.in as HttpBinding["parameters"][number]["in"];
    const paramName = parameter.name as string;
    if (where === "header" && IGNORED_HEADERS.has(paramName.toLowerCase())) continue;
    let schema = convert(
      parameter.schema ?? contentSchema(parameter.content) ?? {},
      `/inputSchema/properties/${escapeToken(paramName)}`,
      "request",
    );
    if (typeof parameter.description === "string" && isPlainObject(schema) && !("description" in schema)) {
      schema = { ...schema, description: parameter.description };
    }
    if (parameter.deprecated === true && isPlainObject(schema)) schema = { ...schema, deprecated: true };
    setOwn(properties, paramName, schema);
    if (parameter.required === true || where === "path") required.push(paramName);
    binding.parameters.push({ name: paramName, in: where });
  }

  let inputSchema: JsonObjectSchema;
  const body = operation.requestBody;
  const bodyContent = isPlainObject(body) ? pickJsonContent(body.content) : undefined;
  if (bodyContent) {
    binding.contentType = bodyContent.type;
    const bodySchema = convert(schemas.resolver.unwrap(bodyContent.schema ?? {}), "/inputSchema", "request");
    const bodyRequired = isPlainObject(body) && body.required === true;
    const bodyIsObject =
      isPlainObject(bodySchema) && (bodySchema.type === "object" || isPlainObject(bodySchema.properties));
    if (binding.parameters.length === 0 && bodyIsObject) {
      // The common RPC shape (and Gecko's): the body is the argument object.
      inputSchema = bodySchema as JsonObjectSchema;
      binding.body = "merged";
    } else if (bodyIsObject && !hasComposition(bodySchema) && !overlaps(bodySchema, properties)) {
      const bodyProps = (isPlainObject(bodySchema.properties) ? bodySchema.properties : {}) as Record<
        string,
        JsonSchema
      >;
      Object.assign(properties, bodyProps);
      if (Array.isArray(bodySchema.required)) required.push(...(bodySchema.required as string[]));
      binding.body = "merged";
      inputSchema = objectSchema(properties, required);
    } else {
      const argument = properties.body === undefined ? "body" : "requestBody";
      properties[argument] = bodySchema;
      if (bodyRequired) required.push(argument);
      binding.body = "argument";
      binding.bodyArgument = argument;
      inputSchema = objectSchema(properties, required);
    }
  } else {
    inputSchema = objectSchema(properties, required);
  }

  const extensionOrigin = operation[EXT.origin];
  // A document terrarium exported carries the tool's first origin; keep it rather than this file's.
  let origin: ToolOrigin = { format: "openapi", ...(file ? { file } : {}), pointer, http: binding };
  let effectSource: Tool["effectSource"] | undefined;
  if (isPlainObject(extensionOrigin)) {
    const { effectSource: recorded, ...rest } = extensionOrigin;
    origin = rest as unknown as ToolOrigin;
    if (recorded === "declared" || recorded === "inferred") effectSource = recorded;
  }

  const declared = operation[EXT.effect];
  if (declared !== undefined && !TOOL_EFFECTS.includes(declared as ToolEffect)) {
    throw fail(`${EXT.effect} must be one of ${TOOL_EFFECTS.join(", ")}`, `${pointer}/${EXT.effect}`);
  }
  const tool: Tool = {
    name,
    description:
      typeof operation.description === "string" ? operation.description : (stringOr(operation.summary) ?? ""),
    inputSchema: finishInputSchema(inputSchema, schemas),
    effect: (declared as ToolEffect | undefined) ?? effectFromHttp(method, name),
    effectSource: effectSource ?? (declared === undefined ? "inferred" : "declared"),
    origin,
  };
  const summary = stringOr(operation.summary);
  if (summary && summary !== tool.description) tool.title = summary;
  const output = successSchema(operation.responses, (schema) =>
    convert(schemas.resolver.unwrap(schema), "/outputSchema", "response"),
  );
  if (output !== undefined) {
    const finished = finishSchema(output, "/outputSchema", "response", schemas);
    if (finished === undefined) {
      schemas.warn(
        "OUTPUT_SCHEMA_DROPPED",
        "the result schema is not usable JSON Schema; results are not checked",
        "/outputSchema",
      );
    } else tool.outputSchema = finished;
  }
  return tool;
}

/** The argument schema as tools carry it: definitions attached, closed, checked against the meta-schema. */
function finishInputSchema(schema: JsonObjectSchema, schemas: DocumentSchemas): JsonObjectSchema {
  const closed = dropUndeclaredRequired({ ...closeArgumentObject(schema) }, "/inputSchema", schemas.warn);
  const finished = finishSchema(closed, "/inputSchema", "request", schemas);
  if (!isPlainObject(finished)) {
    throw new TerrariumError("SCHEMA_INVALID", "the argument schema is not usable JSON Schema");
  }
  return finished;
}

function finishSchema(
  schema: JsonSchema,
  pointer: string,
  direction: SchemaDirection,
  schemas: DocumentSchemas,
): JsonSchema | undefined {
  let rooted = schemas.resolver.withDefinitions(schema);
  if (isPlainObject(rooted) && isPlainObject(rooted.$defs)) {
    const $defs: Record<string, unknown> = {};
    for (const [name, body] of Object.entries(rooted.$defs))
      setOwn(
        $defs,
        name,
        schemas.normaliser.normalise(body, `${pointer}/$defs/${escapeToken(name)}`, direction),
      );
    rooted = { ...rooted, $defs };
  }
  // Inputs are small and decide whether a tool loads: check them whole against the meta-schema too.
  // Results can expand to megabytes; the normaliser's per-node checks cover them.
  return direction === "request" ? repairSchema(rooted, schemas.warn, pointer) : rooted;
}

/** The schema of the 200 (else first 2xx) response; Gecko-shaped success/error unions give the success branch. */
function successSchema(responses: unknown, convert: (schema: unknown) => JsonSchema): JsonSchema | undefined {
  if (!isPlainObject(responses)) return undefined;
  const code = [
    "200",
    "201",
    "202",
    "2XX",
    ...Object.keys(responses).filter((key) => /^2\d\d$/.test(key)),
  ].find((key) => isPlainObject(responses[key]));
  if (!code) return undefined;
  const response = responses[code] as Record<string, unknown>;
  const content = pickJsonContent(response.content);
  if (!content || content.schema === undefined) return undefined;
  const schema = convert(content.schema);
  if (isPlainObject(schema) && Array.isArray(schema.oneOf) && schema.oneOf.length === 2) {
    const [success, error] = schema.oneOf as JsonSchema[];
    if (isPlainObject(error) && error[EXT.errorSchema] === true) {
      if (isPlainObject(success) && success[EXT.unspecified] === true) return undefined;
      return success;
    }
  }
  return schema;
}

function pickJsonContent(content: unknown): { type: string; schema: unknown } | undefined {
  if (!isPlainObject(content)) return undefined;
  const types = Object.keys(content);
  const type =
    types.find((t) => t === "application/json") ??
    types.find((t) => /[/+]json\b/.test(t)) ??
    types.find((t) => t === "application/x-www-form-urlencoded" || t === "multipart/form-data") ??
    types[0];
  if (type === undefined) return undefined;
  const media = content[type];
  return { type, schema: isPlainObject(media) ? media.schema : undefined };
}

function contentSchema(content: unknown): unknown {
  return pickJsonContent(content)?.schema;
}

function objectSchema(properties: Record<string, JsonSchema>, required: string[]): JsonObjectSchema {
  const schema: JsonObjectSchema = { type: "object", properties };
  const unique = [...new Set(required)];
  if (unique.length > 0) schema.required = unique;
  return schema;
}

function hasComposition(schema: JsonSchema): boolean {
  return isPlainObject(schema) && ["allOf", "anyOf", "oneOf", "if", "not"].some((key) => key in schema);
}

function overlaps(bodySchema: JsonSchema, properties: Record<string, JsonSchema>): boolean {
  if (!isPlainObject(bodySchema) || !isPlainObject(bodySchema.properties)) return false;
  return Object.keys(bodySchema.properties).some((key) => key in properties);
}

function derivedName(method: string, path: string): string {
  const slug = path
    .replace(/\{([^}]+)\}/g, "by_$1")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .join("_");
  return `${method.toLowerCase()}_${slug || "root"}`;
}

function stringOr(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}
