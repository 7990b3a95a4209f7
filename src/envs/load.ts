import { existsSync } from "node:fs";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isPlainObject } from "../catalog/json-schema.js";
import { readDocument } from "../catalog/read-document.js";
import { TerrariumError } from "../core/errors.js";
import { typeScriptLoader } from "../core/typescript-loader.js";
import { BUILTIN_ENVIRONMENTS } from "./corpus/index.js";
import { loadPythonEnvironment } from "./python/environment.js";
import type { Environment } from "./types.js";

/** Whether a source names an environment (a built-in, a module, a descriptor) rather than tool definitions. */
export function isEnvironmentReference(source: string): boolean {
  if (Object.hasOwn(BUILTIN_ENVIRONMENTS, source)) return true;
  if (!existsSync(source)) return false;
  if ([".ts", ".mts", ".js", ".mjs"].includes(extname(source).toLowerCase())) return true;
  try {
    const document = readDocument(source);
    return isPlainObject(document) && (document.kind === "python" || document.kind === "quickjs");
  } catch {
    return false;
  }
}

/**
 * Finds an environment by reference: a built-in name; a TypeScript or JavaScript module whose default
 * (or only) export is an environment; or a descriptor file (YAML/JSON) of `kind: python` or `kind: quickjs`.
 */
export async function loadEnvironment(reference: string): Promise<Environment> {
  const builtin = BUILTIN_ENVIRONMENTS[reference];
  if (builtin) return builtin;
  if (!existsSync(reference)) {
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `"${reference}" is neither a built-in environment (${Object.keys(BUILTIN_ENVIRONMENTS).join(", ")}) nor a file`,
    );
  }
  const extension = extname(reference).toLowerCase();
  if ([".ts", ".mts", ".js", ".mjs"].includes(extension)) return loadModule(reference);
  const descriptor = readDocument(reference);
  const kind = isPlainObject(descriptor) ? descriptor.kind : undefined;
  if (kind === "python") return loadPythonEnvironment(reference);
  if (kind === "quickjs") {
    // Loaded on demand: the WebAssembly sandbox is only needed by runs that use it.
    const { defineSandboxedEnvironment } = await import("./sandbox/quickjs.js");
    return defineSandboxedEnvironment(descriptor as never, { file: reference });
  }
  throw new TerrariumError(
    "CONFIG_INVALID",
    'an environment descriptor needs "kind: python" or "kind: quickjs"',
    {
      where: { file: reference, pointer: "/kind" },
    },
  );
}

async function loadModule(file: string): Promise<Environment> {
  const url = pathToFileURL(resolve(file)).href;
  let module: Record<string, unknown>;
  try {
    if (/\.m?ts$/.test(file)) await typeScriptLoader();
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new TerrariumError("INVALID_INPUT", `cannot load the module: ${(error as Error).message}`, {
      where: { file },
      cause: error,
    });
  }
  // A TypeScript file outside an ESM package loads as CommonJS through tsx: its exports arrive one level
  // down, under `default`.
  const nested = isPlainObject(module.default) ? Object.values(module.default) : [];
  const candidates = [module.default, ...Object.values(module), ...nested].filter(isEnvironment);
  const environment = candidates[0];
  if (!environment) {
    throw new TerrariumError(
      "INVALID_INPUT",
      "the module exports no environment (make one with defineEnvironment and export it)",
      {
        where: { file },
      },
    );
  }
  return environment;
}

function isEnvironment(value: unknown): value is Environment {
  return (
    isPlainObject(value) &&
    typeof value.create === "function" &&
    Array.isArray(value.tools) &&
    typeof value.name === "string"
  );
}
