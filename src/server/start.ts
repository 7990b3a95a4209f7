import { existsSync } from "node:fs";
import type { Server } from "node:http";
import { basename } from "node:path";
import { serve } from "@hono/node-server";
import { distance } from "fastest-levenshtein";
import { Catalog, loadCatalog } from "../catalog/catalog.js";
import { isPlainObject } from "../catalog/json-schema.js";
import { readDocument } from "../catalog/read-document.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import { BUILTIN_ENVIRONMENTS } from "../envs/corpus/index.js";
import { isEnvironmentReference, loadEnvironment } from "../envs/load.js";
import { checkSandboxSettings } from "../envs/sandbox/pool.js";
import type { Environment } from "../envs/types.js";
import type { McpHttpOptions } from "../mcp/server.js";
import { loadConfig } from "../models/config.js";
import { Models } from "../models/hub.js";
import { UsageLedger, type UsageRecord } from "../models/usage.js";
import { type OpenEnvOptions, OpenEnvServer } from "../rl/openenv/server.js";
import type { EpisodeSource } from "../rl/openenv/types.js";
import { attachOpenEnvWebSocket } from "../rl/openenv/ws.js";
import { openEnvEpisodes, type RlServeOptions } from "../rl/serve.js";
import { openStore } from "../sessions/open-store.js";
import { bootstrapState } from "../sim/bootstrap.js";
import { Engine, type SimulatorPolicy } from "../sim/engine.js";
import { SemanticValidator } from "../sim/semantic.js";
import { CodeSimulator } from "../sim/simulators/code.js";
import { LlmSimulator } from "../sim/simulators/llm.js";
import { ProxySimulator } from "../sim/simulators/proxy.js";
import { type StateUpdateRequest, updateStateWithModel } from "../sim/state-updater.js";
import { isSimulatorName, SIMULATOR_NAMES, type Simulator, type SimulatorName } from "../sim/types.js";
import { createApp } from "./app.js";
import { withFastPath } from "./fast-path.js";
import type { UsageEvent } from "./gecko-routes.js";
import { ServerMetrics } from "./metrics.js";
import { describePolicy, type ServerProfile, semanticValidationOf } from "./profile.js";
import type { TokenQuotas } from "./quotas.js";
import {
  DEFAULT_DRAIN_TIMEOUT_SECONDS,
  DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS,
  Drain,
  HttpDrain,
  MAX_KEEP_ALIVE_TIMEOUT_SECONDS,
  type ShutdownProgress,
  type ShutdownReport,
  setKeepAlive,
} from "./shutdown.js";
import { defaultApiNames } from "./tool-routes.js";

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
  /** Which simulator answers which tool: one for all, or by effect and by tool (`serve --policy`). */
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
  /**
   * Models to use (their config and ledger) instead of ones built from `config`, so a caller's own model
   * calls and the simulator's are accounted together (gats).
   */
  models?: Models;
  /** How long `close` lets in-flight requests finish before closing their connections (default 10 s). */
  drainTimeoutMs?: number;
  /**
   * How long an idle keep-alive connection stays open, in ms (default 65 s: above load balancers' idle
   * timeouts, such as AWS ALB's 60 s); `headersTimeout` is set just above it.
   */
  keepAliveTimeoutMs?: number;
  /** Per-token caps on stored sessions and replays in flight (defaults in quotas.ts). */
  quotas?: Partial<TokenQuotas>;
  /** The MCP endpoint's limits: live sessions in all and per token, idle time. */
  mcp?: Omit<McpHttpOptions, "quotas" | "version">;
  /** OpenEnv at /openenv/ws: capacity, idle timeout, step limit, and where episodes come from (a plain world by default). */
  openenv?: Omit<OpenEnvOptions, "source" | "user"> & { source?: EpisodeSource } & Omit<
      RlServeOptions,
      "maxSteps"
    >;
}

/** What `buildEngine` made: the engine and what the server around it needs to know. */
export interface BuiltEngine {
  engine: Engine;
  environment?: Environment;
  models?: Models;
  semantic?: SemanticValidator;
  /** What the banner and /health report. */
  profile: ServerProfile;
  /** The API names each tool is also served under (`/<api>/...`): its document's title, its file name. */
  apiNames: (tool: Tool) => string[];
  /** Model calls by session, as Gecko's usage events. */
  usage: { forSession: (sessionId: string) => UsageEvent[]; count: () => number };
}

/** A usage ledger that also notes when each call was accounted. */
export class TimedLedger extends UsageLedger {
  readonly times: number[] = [];

  override add(record: UsageRecord): void {
    super.add(record);
    this.times.push(Date.now() / 1000);
  }
}

/**
 * A ledger's records as Gecko's usage events. A session's calls are those scoped to it; a scope
 * `<session>#<category>` (bootstrap, state_update) names its category, otherwise the role does
 * (validator: request_validation, simulator: response_generation). Times come from a `TimedLedger`; for
 * another ledger they are when a record was first listed.
 */
export function usageEvents(ledger: UsageLedger): BuiltEngine["usage"] {
  const seen: number[] = [];
  const timeOf = (index: number) => {
    if (ledger instanceof TimedLedger) return ledger.times[index] ?? 0;
    while (seen.length <= index) seen.push(Date.now() / 1000);
    return seen[index] as number;
  };
  return {
    count: () => ledger.all.length,
    forSession: (sessionId) => {
      const events: UsageEvent[] = [];
      ledger.all.forEach((record, index) => {
        const scope = record.scope ?? "";
        if (scope !== sessionId && !scope.startsWith(`${sessionId}#`)) return;
        const category =
          scope.length > sessionId.length
            ? scope.slice(sessionId.length + 1)
            : record.role === "validator"
              ? "request_validation"
              : record.role === "simulator"
                ? "response_generation"
                : (record.role ?? "other");
        events.push({
          id: index + 1,
          ts: timeOf(index),
          category,
          model: record.model,
          input_tokens: record.inputTokens,
          output_tokens: record.outputTokens,
          total_tokens: record.inputTokens + record.outputTokens,
          cost_usd: record.costUsd,
        });
      });
      return events;
    },
  };
}

/**
 * Builds the engine for `terrarium serve` (and `mcp`, `gats`, tests): tools from files, an environment's
 * tools run as code, a model for the llm simulator, the proxy to a real API. The policy is checked against
 * what is available before anything is created: every tool it sends to a simulator must be one that
 * simulator can answer, or this refuses, naming the tools and what is missing.
 */
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

export async function buildEngine(options: ServeOptions): Promise<BuiltEngine> {
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
  const profile: ServerProfile = {
    sources: options.sources,
    db: options.db ?? null,
    simulators: [...new Set([...simulators.map((simulator) => simulator.name), "schema"])],
    policy,
    proxy: options.proxy ?? null,
    models: { simulator: model ?? null, validator: semanticStatus.model },
    semanticValidation: semanticStatus,
  };
  return {
    engine,
    ...(environment ? { environment } : {}),
    ...(models ? { models } : {}),
    ...(semantic ? { semantic } : {}),
    profile,
    apiNames: apiNamesOf(files, environment?.name),
    usage: usageEvents(ledger),
  };
}

const POLICY_KEYS = ["read", "write", "unknown", "default", "tools"];

/** A policy given as data (by a library caller) names simulators that exist. */
function checkPolicyShape(policy: SimulatorPolicy): void {
  const valid = `valid simulators: ${SIMULATOR_NAMES.join(", ")}`;
  if (typeof policy === "string") {
    if (policy !== "auto" && !isSimulatorName(policy))
      throw new TerrariumError("INVALID_INPUT", `unknown simulator "${policy}" (${valid}, or auto)`);
    return;
  }
  for (const [key, value] of Object.entries(policy)) {
    if (!POLICY_KEYS.includes(key))
      throw new TerrariumError(
        "INVALID_INPUT",
        `the policy has an unknown key "${key}" (valid keys: ${POLICY_KEYS.join(", ")})`,
      );
    const entries = key === "tools" ? Object.entries((value ?? {}) as object) : [[key, value]];
    for (const [name, simulator] of entries)
      if (!isSimulatorName(simulator))
        throw new TerrariumError("INVALID_INPUT", `the policy sends ${name} to "${simulator}" (${valid})`);
  }
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

function usesSimulator(policy: SimulatorPolicy, name: SimulatorName): boolean {
  if (typeof policy === "string") return policy === name;
  return (
    [policy.read, policy.write, policy.unknown, policy.default].includes(name) ||
    Object.values(policy.tools ?? {}).includes(name)
  );
}

/** The simulator the policy names for a tool (as `Engine.simulatorFor` reads it), or auto. */
function wantedSimulator(policy: SimulatorPolicy, tool: Tool): SimulatorName | "auto" {
  if (typeof policy === "string") return policy;
  return policy.tools?.[tool.name] ?? policy[tool.effect] ?? policy.default ?? "auto";
}

/** Every tool the policy sends somewhere can be answered there; otherwise one sentence per problem. */
function checkPolicyCovers(
  policy: SimulatorPolicy,
  catalog: Catalog,
  simulators: Simulator[],
  hasModel: boolean,
): void {
  if (typeof policy === "object") {
    const unknown = Object.keys(policy.tools ?? {}).filter((name) => !catalog.get(name));
    if (unknown.length > 0) {
      const name = unknown[0] as string;
      const closest = catalog.closest(name);
      throw new TerrariumError(
        "INVALID_INPUT",
        `the policy names "${name}", which is neither an effect (read, write, unknown, default) nor a tool${closest.length ? ` (closest tools: ${closest.join(", ")})` : ""}`,
      );
    }
  }
  const byName = new Map(simulators.map((simulator) => [simulator.name, simulator]));
  const refused = new Map<SimulatorName, string[]>();
  for (const tool of catalog.tools) {
    const wanted = wantedSimulator(policy, tool);
    if (wanted === "auto" || wanted === "schema") continue;
    const ok = wanted === "llm" ? hasModel : (byName.get(wanted)?.handles(tool) ?? false);
    if (!ok) refused.set(wanted, [...(refused.get(wanted) ?? []), tool.name]);
  }
  const problems: string[] = [];
  for (const [name, toolNames] of refused) {
    const listed =
      toolNames.length > 4
        ? `${toolNames.slice(0, 4).join(", ")} and ${toolNames.length - 4} more`
        : toolNames.join(", ");
    const why =
      name === "llm"
        ? "needs a model: pass --model, or set roles.simulator or roles.default in terrarium.config.yaml"
        : name === "code"
          ? "answers only the tools of an environment (serve a built-in name, a module or a descriptor)"
          : "forwards only OpenAPI operations to a server: give --proxy <baseURL>, or tools whose document lists servers";
    problems.push(`the policy sends ${listed} to the ${name} simulator, which ${why}`);
  }
  if (problems.length > 0)
    throw new TerrariumError("INVALID_INPUT", `${problems.join("; ")} (policy: ${describePolicy(policy)})`);
}

/** API names by tool: the document's `info.title` and file name for files, the environment's name. */
function apiNamesOf(files: string[], environmentName: string | undefined): (tool: Tool) => string[] {
  const titles = new Map<string, string>();
  for (const file of files) {
    if (!existsSync(file)) continue;
    try {
      const document = readDocument(file);
      const title = isPlainObject(document) && isPlainObject(document.info) ? document.info.title : undefined;
      if (typeof title === "string" && title.trim() !== "" && !title.includes("/"))
        titles.set(file, title.trim());
    } catch {
      // unreadable here means it was read some other way (a remote MCP server): no title
    }
  }
  return (tool) => {
    const file = tool.origin.file;
    if (!file) return tool.origin.format === "environment" && environmentName ? [environmentName] : [];
    const names = [titles.get(file), ...defaultApiNames(tool)].filter((name): name is string => !!name);
    return [...new Set(names)];
  };
}

/**
 * Starts the HTTP server; resolves once it listens, with a function that stops it gracefully: it stops
 * accepting connections, refuses new requests on open ones (503), lets the requests in flight finish (up
 * to the drain timeout, then their connections are closed), and closes the engine and the models.
 */
export async function startServer(options: ServeOptions): Promise<{
  url: string;
  engine: Engine;
  models?: Models;
  profile: ServerProfile;
  /** This server's Prometheus metrics (GET /metrics). */
  metrics: ServerMetrics;
  /** Requests being answered now. */
  inFlight: () => number;
  /** The OpenEnv episodes (WebSocket /openenv/ws). */
  openenv: OpenEnvServer;
  /**
   * Graceful shutdown; called again while draining with `drainTimeoutMs: 0`, it stops waiting. `progress`
   * is told once the listener is closed and once the drain is over (see `HttpDrain`).
   */
  close: (options?: {
    drainTimeoutMs?: number;
    progress?: (progress: ShutdownProgress) => void;
  }) => Promise<ShutdownReport>;
}> {
  const { engine, environment, models, profile, apiNames, usage } = await buildEngine(options);
  // Bootstrapping and state updates use the simulator's model; their usage is filed under the session.
  const simulatorModels = profile.models.simulator ? models : undefined;
  const metrics = new ServerMetrics({ processMetrics: true });
  const inFlight = new Drain();
  const { tasks, userModel, userTemperature, judgeModel, backends, source, ...openenvOptions } =
    options.openenv ?? {};
  // The user and judge models share the simulator's hub when there is one, else get one of their own.
  let rlModels: Models | undefined;
  const episodes = await openEnvEpisodes(
    { engine, ...(environment ? { environment } : {}) },
    {
      ...(tasks ? { tasks } : {}),
      ...(userModel !== undefined ? { userModel } : {}),
      ...(userTemperature !== undefined ? { userTemperature } : {}),
      ...(judgeModel !== undefined ? { judgeModel } : {}),
      ...(backends !== undefined ? { backends } : {}),
      ...(openenvOptions.maxSteps !== undefined ? { maxSteps: openenvOptions.maxSteps } : {}),
    },
    () => {
      rlModels ??=
        models ??
        new Models({
          config: loadConfig(options.config ? { path: options.config } : {}).config,
          ledger: new TimedLedger(),
        });
      return rlModels;
    },
    (line) => process.stderr.write(`${line}\n`),
  ).catch(async (error) => {
    await engine.close();
    throw error;
  });
  // Models passed in belong to the caller, who closes them.
  const closeModels = async () => {
    if (models && models !== options.models) await models.close();
    if (rlModels && rlModels !== models) await rlModels.close();
  };
  const openenv = new OpenEnvServer(engine, {
    ...openenvOptions,
    source: source ?? episodes.source,
    ...(episodes.user ? { user: episodes.user } : {}),
  });
  const app = createApp(engine, {
    profile,
    apiNames,
    usage,
    metrics,
    drain: inFlight,
    openenv,
    ...(options.quotas ? { quotas: options.quotas } : {}),
    ...(options.mcp ? { mcp: options.mcp } : {}),
    ...(models ? { ledger: models.ledger } : {}),
    ...(options.tokens ? { tokens: options.tokens } : {}),
    ...(simulatorModels
      ? {
          bootstrap: (background: { task?: string; state?: unknown }, sessionId: string) =>
            bootstrapState(simulatorModels, engine.catalog, background, { scope: `${sessionId}#bootstrap` }),
          updateState: (request: StateUpdateRequest, sessionId: string) =>
            updateStateWithModel(simulatorModels, request, {
              catalog: engine.catalog,
              scope: `${sessionId}#state_update`,
            }),
        }
      : {}),
  });
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 8080;
  const keepAliveTimeoutMs = options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS * 1000;
  if (
    !Number.isFinite(keepAliveTimeoutMs) ||
    keepAliveTimeoutMs <= 0 ||
    keepAliveTimeoutMs > MAX_KEEP_ALIVE_TIMEOUT_SECONDS * 1000
  ) {
    await engine.close();
    throw new TerrariumError(
      "INVALID_INPUT",
      `the keep-alive timeout must be above 0 and at most ${MAX_KEEP_ALIVE_TIMEOUT_SECONDS} s, got ${keepAliveTimeoutMs / 1000} s`,
    );
  }
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    await engine.close();
    throw new TerrariumError("INVALID_INPUT", `the port must be an integer from 0 to 65535, got ${port}`);
  }
  return new Promise((resolve, reject) => {
    // POST /sessions/{id}/calls is answered on Node's request itself, the rest by Hono (fast-path.ts).
    const listen = { fetch: app.fetch, port, hostname: host, createServer: withFastPath(app) };
    const server = serve(listen, (info) => {
      server.off("error", failed);
      let closing: Promise<ShutdownReport> | undefined;
      const shutdown = async (
        drainTimeoutMs: number,
        progress?: (progress: ShutdownProgress) => void,
      ): Promise<ShutdownReport> => {
        await detachOpenEnv();
        await openenv.close();
        const { drained, atStart, progress: done } = await http.shutdown(drainTimeoutMs, progress);
        progress?.(done);
        metrics.dispose();
        await engine.close();
        await closeModels();
        return { inFlight: atStart, abandoned: drained ? 0 : done.cutOff };
      };
      resolve({
        url: `http://${host}:${info.port}`,
        engine,
        ...(models ? { models } : {}),
        profile,
        metrics,
        inFlight: () => inFlight.inFlight,
        openenv,
        close: (closeOptions = {}) => {
          const timeout =
            closeOptions.drainTimeoutMs ?? options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_SECONDS * 1000;
          if (closing) {
            if (timeout === 0) inFlight.cutShort();
            return closing;
          }
          closing = shutdown(timeout, closeOptions.progress);
          return closing;
        },
      });
    });
    // Connections and requests are counted from the start (see HttpDrain); idle connections outlive a load
    // balancer's own idle timeout.
    const http = new HttpDrain(server as Server, inFlight);
    const detachOpenEnv = attachOpenEnvWebSocket(server as Server, openenv, {
      ...(options.tokens ? { tokens: options.tokens } : {}),
    });
    setKeepAlive(server as Server, keepAliveTimeoutMs);
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
        .then(closeModels)
        .finally(() => reject(new TerrariumError("INVALID_INPUT", reason, { cause: error })));
    };
    server.once("error", failed);
  });
}
