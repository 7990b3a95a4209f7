import { existsSync } from "node:fs";
import { extname } from "node:path";
import { serve } from "@hono/node-server";
import { Catalog, loadCatalog } from "../catalog/catalog.js";
import { isPlainObject } from "../catalog/json-schema.js";
import { readDocument } from "../catalog/read-document.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import { BUILTIN_ENVIRONMENTS } from "../envs/corpus/index.js";
import { loadEnvironment } from "../envs/load.js";
import type { Environment } from "../envs/types.js";
import { loadConfig } from "../models/config.js";
import { Models } from "../models/hub.js";
import { MemoryStore } from "../sessions/memory-store.js";
import { SqliteStore } from "../sessions/sqlite-store.js";
import { bootstrapState } from "../sim/bootstrap.js";
import { Engine, type SimulatorPolicy } from "../sim/engine.js";
import { SemanticValidator } from "../sim/semantic.js";
import { CodeSimulator } from "../sim/simulators/code.js";
import { LlmSimulator } from "../sim/simulators/llm.js";
import { ProxySimulator } from "../sim/simulators/proxy.js";
import type { Simulator } from "../sim/types.js";
import { createApp } from "./app.js";

export interface ServeOptions {
  sources: string[];
  /** Model for the llm simulator (otherwise roles.simulator / roles.default of the config, if any). */
  model?: string;
  /** terrarium.config.yaml to use. */
  config?: string;
  /** Base URL of the real API for the proxy simulator (hybrid mode); tools' own servers otherwise. */
  proxy?: string;
  /** `merged` (one call) or `gecko` (two calls) for the llm simulator. */
  llmMode?: "merged" | "gecko";
  state?: string;
  simulator?: SimulatorPolicy;
  port?: number;
  host?: string;
  db?: string;
  tokens?: string[];
  seed?: string;
  /** Environment instances kept live (the code simulator's LRU; default 64). */
  liveInstances?: number;
  /** Refuse to start when any operation of the tool files had to be skipped. */
  strict?: boolean;
}

/** Whether a source names an environment rather than a file of tool definitions. */
export function isEnvironmentReference(source: string): boolean {
  if (source in BUILTIN_ENVIRONMENTS) return true;
  if (!existsSync(source)) return false;
  if ([".ts", ".mts", ".js", ".mjs"].includes(extname(source).toLowerCase())) return true;
  try {
    const document = readDocument(source);
    return isPlainObject(document) && (document.kind === "python" || document.kind === "quickjs");
  } catch {
    return false;
  }
}

/** Builds the engine for `terrarium serve` (and for tests): tools from files, an environment's tools run as code. */
export async function buildEngine(
  options: ServeOptions,
): Promise<{ engine: Engine; environment?: Environment; models?: Models; semantic?: SemanticValidator }> {
  const environments = options.sources.filter(isEnvironmentReference);
  if (environments.length > 1)
    throw new TerrariumError(
      "INVALID_INPUT",
      `serve one environment at a time (got ${environments.join(", ")})`,
    );
  const files = options.sources.filter((source) => !environments.includes(source));
  const environment = environments[0] ? await loadEnvironment(environments[0]) : undefined;
  const loaded =
    files.length > 0 ? await loadCatalog(files, { strict: options.strict === true }) : new Catalog();
  const tools: Tool[] = [...(environment?.tools ?? []), ...loaded.tools];
  if (tools.length === 0)
    throw new TerrariumError(
      "INVALID_INPUT",
      "nothing to serve: give tool definition files or an environment",
    );
  const simulators: Simulator[] = environment
    ? [
        new CodeSimulator(environment, options.seed, {
          ...(options.liveInstances !== undefined ? { maxLiveInstances: options.liveInstances } : {}),
        }),
      ]
    : [];
  // The llm simulator joins when a model is named or configured; without one, code and schema serve.
  const { config } = loadConfig(options.config ? { path: options.config } : {});
  const model = options.model ?? config.roles.simulator ?? config.roles.default;
  let models: Models | undefined;
  if (model) {
    models = new Models({ config: { ...config, roles: { ...config.roles, simulator: model } } });
    await models.backend(model); // fail now, with what to set, rather than at the first call
    simulators.push(new LlmSimulator(models, { ...(options.llmMode ? { mode: options.llmMode } : {}) }));
  }
  const initialState =
    options.state !== undefined
      ? readDocument(options.state)
      : environment
        ? await environment.initialState()
        : {};
  if (options.proxy !== undefined || options.simulator === "proxy" || typeof options.simulator === "object") {
    simulators.push(new ProxySimulator(options.proxy ? { baseUrl: options.proxy } : {}));
  }
  // Semantic validation runs when a model serves the validator role; otherwise outcomes say "skipped".
  let semantic: SemanticValidator | undefined;
  if (config.roles.validator) {
    models ??= new Models({ config });
    await models.backend(config.roles.validator);
    semantic = new SemanticValidator(models, "validator");
  }
  const engine = new Engine({
    ...(semantic ? { semantic } : {}),
    catalog: new Catalog(tools, loaded.report),
    store: options.db ? new SqliteStore(options.db) : new MemoryStore(),
    simulators,
    policy: options.simulator ?? "auto",
    initialState,
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  });
  return {
    engine,
    ...(environment ? { environment } : {}),
    ...(models ? { models } : {}),
    ...(semantic ? { semantic } : {}),
  };
}

/** Starts the HTTP server; resolves once it listens, with a function that stops it. */
export async function startServer(
  options: ServeOptions,
): Promise<{ url: string; engine: Engine; models?: Models; close: () => Promise<void> }> {
  const { engine, models, semantic } = await buildEngine(options);
  const app = createApp(engine, {
    semanticValidation: semantic ? "on" : "skipped",
    ...(options.tokens ? { tokens: options.tokens } : {}),
    ...(models
      ? {
          usageOf: (sessionId: string) => models.ledger.all.filter((record) => record.scope === sessionId),
          bootstrap: (background: { task?: string; state?: unknown }, sessionId: string) =>
            bootstrapState(models, engine.catalog, background, { scope: sessionId }),
        }
      : {}),
  });
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    await engine.close();
    throw new TerrariumError("INVALID_INPUT", `the port must be an integer from 0 to 65535, got ${port}`);
  }
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info) => {
      server.off("error", failed);
      resolve({
        url: `http://${host}:${info.port}`,
        engine,
        ...(models ? { models } : {}),
        close: () =>
          new Promise<void>((done) => {
            server.close(
              () =>
                void engine
                  .close()
                  .then(() => models?.close())
                  .then(done),
            );
          }),
      });
    });
    // Listening can fail (port taken, no permission, unknown address): one sentence, and nothing left open.
    const failed = (error: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      const reason =
        error.code === "EADDRINUSE"
          ? `port ${port} on ${host} is already in use; stop what holds it or choose another with --port`
          : error.code === "EACCES"
            ? `no permission to listen on ${where}; choose a port above 1023 with --port`
            : error.code === "EADDRNOTAVAIL" || error.code === "ENOTFOUND"
              ? `cannot listen on ${where}: ${host} is not an address of this machine (--host)`
              : `cannot listen on ${where}: ${error.message}`;
      void engine
        .close()
        .then(() => models?.close())
        .finally(() => reject(new TerrariumError("INVALID_INPUT", reason, { cause: error })));
    };
    server.once("error", failed);
  });
}
