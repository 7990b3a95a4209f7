import { existsSync } from "node:fs";
import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import { isPlainObject } from "../catalog/json-schema.js";
import { readDocument } from "../catalog/read-document.js";
import type { Tool } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";
import type { McpHttpOptions } from "../mcp/server.js";
import { loadConfig } from "../models/config.js";
import { Models } from "../models/hub.js";
import { TimedLedger, type UsageLedger } from "../models/usage.js";
import { type OpenEnvOptions, OpenEnvServer } from "../rl/openenv/server.js";
import type { EpisodeSource } from "../rl/openenv/types.js";
import { attachOpenEnvWebSocket } from "../rl/openenv/ws.js";
import { openEnvEpisodes, type RlServeOptions } from "../rl/serve.js";
import { bootstrapState } from "../sim/bootstrap.js";
import { type BuiltEngine, buildEngine, type EngineSetup } from "../sim/build-engine.js";
import type { Engine } from "../sim/engine.js";
import { type StateUpdateRequest, updateStateWithModel } from "../sim/state-updater.js";
import { createApp } from "./app.js";
import { withFastPath } from "./fast-path.js";
import type { UsageEvent } from "./gecko-routes.js";
import { ServerMetrics } from "./metrics.js";
import type { ServerProfile } from "./profile.js";
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

/** `terrarium serve`: an engine (`EngineSetup`) and the HTTP server around it. */
export interface ServeOptions extends EngineSetup {
  port?: number;
  host?: string;
  tokens?: string[];
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

/** Model calls by session, as Gecko's usage events. */
export interface SessionUsage {
  forSession: (sessionId: string) => UsageEvent[];
  count: () => number;
}

/**
 * A ledger's records as Gecko's usage events. A session's calls are those scoped to it; a scope
 * `<session>#<category>` (bootstrap, state_update) names its category, otherwise the role does
 * (validator: request_validation, simulator: response_generation). Times come from a `TimedLedger`; for
 * another ledger they are when a record was first listed.
 */
export function usageEvents(ledger: UsageLedger): SessionUsage {
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

/** What the banner and /health report of a server over `built`. */
function serverProfile(built: BuiltEngine, options: ServeOptions): ServerProfile {
  return {
    sources: options.sources,
    db: options.db ?? null,
    simulators: built.simulators,
    policy: built.policy,
    proxy: options.proxy ?? null,
    models: { simulator: built.simulatorModel ?? null, validator: built.semanticValidation.model },
    semanticValidation: built.semanticValidation,
  };
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
  const built = await buildEngine(options);
  const { engine, environment, models } = built;
  const profile = serverProfile(built, options);
  const apiNames = apiNamesOf(built.files, environment?.name);
  const usage = usageEvents(built.ledger);
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
