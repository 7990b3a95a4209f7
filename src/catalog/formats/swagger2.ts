import { AsyncLocalStorage } from "node:async_hooks";
import { createRequire } from "node:module";
import { format } from "node:util";
import { TerrariumError } from "../../core/errors.js";
import { escapeToken } from "../../core/json-pointer.js";
import { isPlainObject } from "../json-schema.js";

/**
 * Swagger 2.0 input. The document is converted to OpenAPI 3.0 by swagger2openapi (a CommonJS package
 * without types) and then read like any other OpenAPI 3 document. Notes on how the converter behaves,
 * all from reading its source (swagger2openapi 7.0.8, index.js):
 *
 * - It keeps no state between calls except `componentNames`, which one synchronous pass sets and uses,
 *   so concurrent conversions cannot see each other's names.
 * - With `warnOnly` it writes what it could not convert into the object concerned, under
 *   `options.warnProperty`; with `patch` it repairs small mistakes and only counts them
 *   (`options.patches`), without saying where. That count also goes up once for every schema that
 *   ends up `nullable`, so it includes each `x-nullable` it turned into `nullable`.
 * - It prints with `console.warn` when its own code throws while converting; the error is then also
 *   the rejection, so that output is taken in here and not printed.
 * - It leaves `x-nullable` where it does not walk schemas: beside a `$ref`, on a form field and on
 *   a non-body parameter. Those are turned into `nullable` here so nullability is not lost.
 * - Loading it adds `String.prototype.toCamelCase` (its oas-kit-common dependency does that), so it
 *   is loaded the first time a Swagger 2.0 document is converted, not when terrarium starts.
 */

export interface Swagger2Conversion {
  /** The OpenAPI 3.0.0 document. */
  document: Record<string, unknown>;
  /**
   * What the conversion could not carry over exactly, or repaired. `pointer` is a JSON Pointer into
   * the converted document (the converter does not map places back to the Swagger 2.0 input); "" when
   * the converter gives no place.
   */
  warnings: Array<{ pointer: string; message: string }>;
}

/**
 * True for a plain object whose `swagger` is "2.0", the one value the Swagger 2.0 specification allows.
 * Also true for the number 2 (YAML reads an unquoted `swagger: 2.0` as a number, and the converter
 * accepts it) and for "2.0.0" (written by some hand-made documents; there never was a Swagger 2.0.x,
 * so it is taken as 2.0 with a warning).
 */
export function isSwagger2Document(document: unknown): boolean {
  if (!isPlainObject(document)) return false;
  const version = document.swagger;
  return version === "2.0" || version === "2.0.0" || version === 2;
}

/** Converts a parsed Swagger 2.0 document to OpenAPI 3.0 with swagger2openapi, without network access and without mutating the input. */
export async function convertSwagger2(
  document: unknown,
  options: { file?: string } = {},
): Promise<Swagger2Conversion> {
  const file = options.file;
  const fail = (message: string, pointer: string, cause?: unknown) =>
    new TerrariumError("INVALID_OPENAPI", message, { where: { file, pointer }, cause });

  if (!isPlainObject(document))
    throw fail("cannot convert to OpenAPI 3: a Swagger 2.0 document must be an object", "");
  if (!isSwagger2Document(document)) {
    const version = JSON.stringify(document.swagger) ?? "not set";
    throw fail(
      `cannot convert to OpenAPI 3: not a Swagger 2.0 document ("swagger" is ${version})`,
      "/swagger",
    );
  }
  const warnings: Swagger2Conversion["warnings"] = [];
  let input: Record<string, unknown>;
  try {
    input = structuredClone(document) as Record<string, unknown>;
  } catch (error) {
    throw fail(
      `Swagger 2.0 conversion failed: the document is not plain JSON data (${String(error)})`,
      "",
      error,
    );
  }
  if (input.swagger === "2.0.0") {
    input.swagger = "2.0";
    warnings.push({ pointer: "", message: 'read the document\'s "swagger": "2.0.0" as "2.0"' });
  }
  const shapeProblem = findShapeProblem(input);
  if (shapeProblem) {
    throw fail(`Swagger 2.0 conversion failed: ${shapeProblem.message}`, shapeProblem.pointer);
  }

  const converterOptions: ConverterOptions = {
    patch: true,
    warnOnly: true,
    warnProperty: WARN_PROPERTY,
    resolve: false,
    direct: true,
    anchors: true,
    refSiblings: "preserve",
    text: "(not used)",
  };
  const printed: string[] = [];
  let converted: unknown;
  try {
    converted = await withConsoleWarnCaptured(printed, () =>
      loadConverter().convertObj(input, converterOptions),
    );
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw fail(`Swagger 2.0 conversion failed: ${reason}`, "", error);
  }
  if (!isPlainObject(converted)) {
    throw fail("Swagger 2.0 conversion failed: the converter returned no document", "");
  }

  tidy(converted, "", warnings);
  const patches = converterOptions.patches ?? 0;
  if (patches > 0) {
    warnings.push({
      pointer: "",
      message:
        `swagger2openapi counted ${patches} repair(s) to the document without saying where ` +
        '(its count includes every "x-nullable" it turned into "nullable")',
    });
  }
  for (const line of printed) warnings.push({ pointer: "", message: `swagger2openapi: ${line}` });
  return { document: converted, warnings };
}

/** Where the converter writes its warnings (`throwOrWarn`); a name no real document uses. */
const WARN_PROPERTY = "x-terrarium-swagger2openapi-warning";

interface ConverterOptions {
  /** Repair small mistakes instead of refusing the document. */
  patch: boolean;
  /** Write what cannot be converted into the document under `warnProperty` instead of refusing it. */
  warnOnly: boolean;
  warnProperty: string;
  /** Never fetch or read external `$ref`s. */
  resolve: boolean;
  /** Resolve with the converted document rather than with the options object. */
  direct: boolean;
  /** Copy objects used at two places (YAML anchors) instead of refusing the document. */
  anchors: boolean;
  /** Keep keywords beside a `$ref` ("remove" by default, which drops `x-nullable` and descriptions). */
  refSiblings: "preserve" | "allOf" | "remove";
  /** The source text; only used to count lines in validation, and stringified to YAML when empty. */
  text: string;
  /** Set by the converter: how many small mistakes it repaired. */
  patches?: number;
}

interface Swagger2OpenApi {
  convertObj(swagger: unknown, options: ConverterOptions): Promise<unknown>;
}

let converter: Swagger2OpenApi | undefined;

function loadConverter(): Swagger2OpenApi {
  converter ??= createRequire(import.meta.url)("swagger2openapi") as Swagger2OpenApi;
  return converter;
}

/**
 * While `run` is under way, `console.warn` calls made from it (including from promise callbacks it
 * set up) go to `sink` instead of the console; calls from anything else still print. The wrapper is
 * installed while at least one conversion runs and removed after the last one.
 */
async function withConsoleWarnCaptured<T>(sink: string[], run: () => Promise<T>): Promise<T> {
  if (capturing++ === 0) {
    originalWarn = console.warn;
    console.warn = divertingWarn;
  }
  try {
    return await warnSink.run(sink, run);
  } finally {
    // The converter's promise can settle before its own error handler has printed (it rejects, then
    // keeps going and may throw); that handler is queued as a microtask, so let all of them run first.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (--capturing === 0) {
      if (console.warn === divertingWarn && originalWarn) console.warn = originalWarn;
      originalWarn = undefined;
    }
  }
}

const warnSink = new AsyncLocalStorage<string[]>();
let capturing = 0;
let originalWarn: typeof console.warn | undefined;

function divertingWarn(...args: unknown[]): void {
  const sink = warnSink.getStore();
  if (sink) sink.push(format(...args));
  else originalWarn?.apply(console, args);
}

/** Keys that make an object left holding `x-nullable` a schema (a `$ref` beside it, a form field). */
const SCHEMA_MARKERS = ["$ref", "type", "allOf", "anyOf", "oneOf"];

const OPERATION_METHODS = ["get", "put", "post", "delete", "options", "head", "patch"];

/**
 * The converter passes many malformed shapes straight through (a string for `paths` comes out as a
 * string) or fails on them with a TypeError; these are the ones that would, found with their place.
 */
function findShapeProblem(
  document: Record<string, unknown>,
): { message: string; pointer: string } | undefined {
  const kind = (value: unknown) =>
    value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
  const notObject = (value: unknown, what: string, pointer: string) =>
    isPlainObject(value) ? undefined : { message: `${what} must be an object, not ${kind(value)}`, pointer };
  const parameterList = (value: unknown, pointer: string) => {
    if (value === undefined) return undefined;
    if (!Array.isArray(value))
      return { message: `"parameters" must be an array, not ${kind(value)}`, pointer };
    for (const [index, parameter] of value.entries()) {
      const problem = notObject(parameter, "a parameter", `${pointer}/${index}`);
      if (problem) return problem;
    }
    return undefined;
  };

  for (const key of ["info", "paths", "definitions", "parameters", "responses", "securityDefinitions"]) {
    if (document[key] === undefined) continue;
    const problem = notObject(document[key], `"${key}"`, `/${key}`);
    if (problem) return problem;
  }
  for (const key of ["definitions", "parameters", "responses", "securityDefinitions"]) {
    for (const [name, entry] of Object.entries(
      (document[key] as Record<string, unknown> | undefined) ?? {},
    )) {
      const problem = notObject(entry, `${key} entry "${name}"`, `/${key}/${escapeToken(name)}`);
      if (problem) return problem;
    }
  }
  for (const [path, item] of Object.entries((document.paths as Record<string, unknown> | undefined) ?? {})) {
    const itemPointer = `/paths/${escapeToken(path)}`;
    if (path.startsWith("x-")) continue;
    const itemProblem = notObject(item, `path item "${path}"`, itemPointer);
    if (itemProblem) return itemProblem;
    const pathItem = item as Record<string, unknown>;
    const shared = parameterList(pathItem.parameters, `${itemPointer}/parameters`);
    if (shared) return shared;
    for (const method of OPERATION_METHODS) {
      const operation = pathItem[method];
      if (operation === undefined) continue;
      const pointer = `${itemPointer}/${method}`;
      const problem =
        notObject(operation, `operation ${method.toUpperCase()} ${path}`, pointer) ??
        parameterList((operation as Record<string, unknown>).parameters, `${pointer}/parameters`);
      if (problem) return problem;
      const responses = (operation as Record<string, unknown>).responses;
      if (responses === undefined) continue;
      const responsesProblem = notObject(responses, '"responses"', `${pointer}/responses`);
      if (responsesProblem) return responsesProblem;
      for (const [status, response] of Object.entries(responses as Record<string, unknown>)) {
        if (status.startsWith("x-")) continue;
        const problem = notObject(
          response,
          `response "${status}"`,
          `${pointer}/responses/${escapeToken(status)}`,
        );
        if (problem) return problem;
      }
    }
  }
  return undefined;
}

/**
 * One pass over the converted document: takes the converter's warnings out of it (with where they
 * were), notes external `$ref`s (left as they are: nothing is fetched or read), and turns the
 * `x-nullable`s the converter left behind into `nullable`.
 */
function tidy(value: unknown, pointer: string, warnings: Swagger2Conversion["warnings"]): void {
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      tidy(item, `${pointer}/${index}`, warnings);
    });
    return;
  }
  if (!isPlainObject(value)) return;
  const warning = value[WARN_PROPERTY];
  if (warning !== undefined) {
    warnings.push({ pointer, message: String(warning) });
    delete value[WARN_PROPERTY];
  }
  const ref = value.$ref;
  if (typeof ref === "string" && !ref.startsWith("#")) {
    warnings.push({
      pointer: `${pointer}/$ref`,
      message: `external $ref "${ref}" left as it is: other files and URLs are not read`,
    });
  }
  if (typeof value["x-nullable"] === "boolean") {
    const nullable = value["x-nullable"];
    const isParameter = typeof value.in === "string" && isPlainObject(value.schema);
    if (isParameter) {
      (value.schema as Record<string, unknown>).nullable ??= nullable;
      delete value["x-nullable"];
    } else if (SCHEMA_MARKERS.some((key) => key in value)) {
      value.nullable ??= nullable;
      delete value["x-nullable"];
    }
  }
  for (const [key, member] of Object.entries(value)) tidy(member, `${pointer}/${escapeToken(key)}`, warnings);
}
