import { existsSync } from "node:fs";
import { basename } from "node:path";
import { distance } from "fastest-levenshtein";
import { Catalog, loadCatalog } from "../catalog/catalog.js";
import { readDocument } from "../catalog/read-document.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import { BUILTIN_ENVIRONMENTS } from "../envs/corpus/index.js";
import { isEnvironmentReference, loadEnvironment } from "../envs/load.js";
import { checkSandboxSettings } from "../envs/sandbox/pool.js";
import type { Environment } from "../envs/types.js";
import { loadConfig } from "../models/config.js";
import { Models } from "../models/hub.js";
import { TimedLedger, type UsageLedger } from "../models/usage.js";
import { openStore } from "../sessions/open-store.js";
import { Engine, type SimulatorPolicy } from "./engine.js";
import { checkPolicyCovers, checkPolicyShape, usesSimulator } from "./policy.js";
import { type SemanticValidationStatus, SemanticValidator, semanticValidationOf } from "./semantic.js";
import { CodeSimulator } from "./simulators/code.js";
import { LlmSimulator } from "./simulators/llm.js";
import { ProxySimulator } from "./simulators/proxy.js";
import type { Simulator, SimulatorName } from "./types.js";

/** What an engine is built from: tool files and an environment, models, a store, a policy. */
export interface EngineSetup {
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
  /** Which simulator answers which tool: one for all, or by effect and by tool (`serve --policy`). */
  simulator?: SimulatorPolicy;
  /** Where sessions live: a SQLite file, a postgres:// URL, or memory when absent. */
  db?: string;
  seed?: string;
  /** Environment instances kept live (the code simulator's LRU; default 64). */
  liveInstances?: number;
  /** Refuse to start when any operation of the tool files had to be skipped. */
  strict?: boolean;
  /**
   * Models to use (their config and ledger) instead of ones built from `config`, so a caller's own model
   * calls and the simulator's are accounted together (gats).
   */
  models?: Models;
}

/** What `buildEngine` made: the engine, and what it is made of (a server's banner and /health say it). */
export interface BuiltEngine {
  engine: Engine;
  environment?: Environment;
  models?: Models;
  semantic?: SemanticValidator;
  /** Where the engine's model calls are accounted (a `TimedLedger` unless the caller gave models). */
  ledger: UsageLedger;
  /** The tool files among the sources (the rest named the environment). */
  files: string[];
  /** The simulators the policy can use (`schema` is always there). */
  simulators: SimulatorName[];
  policy: SimulatorPolicy;
  /** The llm simulator's model, when there is one. */
  simulatorModel?: string;
  semanticValidation: SemanticValidationStatus;
}

/**
 * Builds the engine for `terrarium serve` (and `mcp`, `gats`, tests): tools from files, an environment's
 * tools run as code, a model for the llm simulator, the proxy to a real API. The policy is checked against
 * what is available before anything is created: every tool it sends to a simulator must be one that
 * simulator can answer, or this refuses, naming the tools and what is missing.
 */
export async function buildEngine(options: EngineSetup): Promise<BuiltEngine> {
  const environments = options.sources.filter(isEnvironmentReference);
  if (environments.length > 1)
    throw new TerrariumError(
      "INVALID_INPUT",
      `serve one environment at a time (got ${environments.join(", ")})`,
    );
  const policy = options.simulator ?? "auto";
  checkPolicyShape(policy);
  checkSandboxSettings();
  if (options.proxy !== undefined) checkProxyUrl(options.proxy);
  const files = options.sources.filter((source) => !environments.includes(source));
  checkSourcesExist(files);
  const environment = environments[0] ? await loadEnvironment(environments[0]) : undefined;
  const loaded =
    files.length > 0 ? await loadCatalog(files, { strict: options.strict === true }) : new Catalog();
  const tools: Tool[] = [...(environment?.tools ?? []), ...loaded.tools];
  if (tools.length === 0)
    throw new TerrariumError(
      "INVALID_INPUT",
      "nothing to serve: give tool definition files or an environment",
    );
  const catalog = new Catalog(tools, loaded.report);
  const simulators: Simulator[] = environment
    ? [
        new CodeSimulator(environment, options.seed, {
          ...(options.liveInstances !== undefined ? { maxLiveInstances: options.liveInstances } : {}),
        }),
      ]
    : [];
  // The llm simulator joins when a model is named or configured; without one, code and schema serve.
  const config = options.models?.config ?? loadConfig(options.config ? { path: options.config } : {}).config;
  const model = options.model ?? config.roles.simulator ?? config.roles.default;
  const semanticStatus = semanticValidationOf(config);
  if (usesSimulator(policy, "proxy") || options.proxy !== undefined)
    simulators.push(new ProxySimulator(options.proxy ? { baseUrl: options.proxy } : {}));
  // Refused here, before any model is contacted or any store opened.
  checkPolicyCovers(policy, catalog, simulators, model !== undefined);
  const ledger = options.models?.ledger ?? new TimedLedger();
  let models: Models | undefined =
    options.models && (!options.model || options.models.config.roles.simulator === options.model)
      ? options.models
      : undefined;
  if (model) {
    models ??= new Models({ config: { ...config, roles: { ...config.roles, simulator: model } }, ledger });
    await models.backend(model); // fail now, with what to set, rather than at the first call
    simulators.push(new LlmSimulator(models, { ...(options.llmMode ? { mode: options.llmMode } : {}) }));
  }
  const initialState =
    options.state !== undefined
      ? readDocument(options.state)
      : environment
        ? await environment.initialState()
        : {};
  // Semantic validation runs when a model serves the validator role (roles.validator, else roles.default).
  let semantic: SemanticValidator | undefined;
  if (semanticStatus.model) {
    models ??= new Models({ config, ledger });
    await models.backend(semanticStatus.model);
    semantic = new SemanticValidator(models, "validator");
  }
  const engine = new Engine({
    ...(semantic ? { semantic } : {}),
    catalog,
    // A postgres:// URL opens the shared Postgres store (connected and migrated here, before serving).
    store: await openStore(options.db),
    simulators,
    policy,
    initialState,
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  });
  return {
    engine,
    ...(environment ? { environment } : {}),
    ...(models ? { models } : {}),
    ...(semantic ? { semantic } : {}),
    ledger,
    files,
    simulators: [...new Set([...simulators.map((simulator) => simulator.name), "schema" as const])],
    policy,
    ...(model !== undefined ? { simulatorModel: model } : {}),
    semanticValidation: semanticStatus,
  };
}

/**
 * A source that is neither a file nor a built-in environment is most often a mistyped environment name:
 * say which names exist, with the closest first, instead of only that no file has that name.
 */
function checkSourcesExist(files: readonly string[]): void {
  const missing = files.filter((file) => !/^[a-z][a-z0-9+.-]+:/i.test(file) && !existsSync(file));
  if (missing.length === 0) return;
  const names = Object.keys(BUILTIN_ENVIRONMENTS);
  const problems = missing.map((file) => {
    const name = basename(file).replace(/\.[^.]*$/, "");
    const closest = [...names].sort((a, b) => distance(a, name) - distance(b, name))[0];
    const hint = closest && distance(closest, name) <= 3 ? ` (did you mean ${closest}?)` : "";
    return `${file} is neither a file nor a built-in environment${hint}`;
  });
  throw new TerrariumError(
    "INVALID_INPUT",
    `${problems.join("; ")}; the built-in environments are ${names.join(", ")}`,
  );
}

function checkProxyUrl(value: string): void {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
    throw new TerrariumError(
      "INVALID_INPUT",
      `--proxy "${value}" is not an http(s) base URL (for example https://api.example.com/v1)`,
    );
}
