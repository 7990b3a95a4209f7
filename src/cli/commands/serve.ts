import { existsSync } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { TerrariumError } from "../../core/errors.js";
import {
  DEFAULT_MAX_MCP_SESSIONS,
  DEFAULT_MAX_MCP_SESSIONS_PER_TOKEN,
  DEFAULT_MCP_IDLE_MS,
} from "../../mcp/server.js";
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_EPISODES } from "../../rl/openenv/server.js";
import { describeProfile } from "../../server/profile.js";
import { DEFAULT_TOKEN_QUOTAS } from "../../server/quotas.js";
import {
  DEFAULT_DRAIN_TIMEOUT_SECONDS,
  DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS,
  MAX_KEEP_ALIVE_TIMEOUT_SECONDS,
  type ShutdownProgress,
} from "../../server/shutdown.js";
import { startServer } from "../../server/start.js";
import type { SimulatorPolicy } from "../../sim/engine.js";
import { DEFAULT_MAX_LIVE_INSTANCES } from "../../sim/simulators/code.js";
import { isSimulatorName, SIMULATOR_NAMES } from "../../sim/types.js";
import { readPasswordFile, readSecretsFile } from "../environment.js";
import { type CliIo, collect, parsePositiveInteger, parsePositiveSeconds, wholeNumber } from "../io.js";
import { describeLoad } from "./tools.js";

const SIMULATORS: string[] = ["auto", ...SIMULATOR_NAMES];
const EFFECT_KEYS = ["read", "write", "unknown", "default"] as const;
const LLM_MODES = ["merged", "gecko"];

interface ServeCliOptions {
  state?: string;
  simulator: string;
  port: number;
  host: string;
  db?: string;
  token?: string[];
  tokenFile?: string;
  dbPasswordFile?: string;
  seed?: string;
  model?: string;
  llmMode: string;
  policy?: string;
  proxy?: string;
  liveInstances: number;
  strict?: boolean;
  drainTimeout: number;
  keepAliveTimeout: number;
  maxSessionsPerToken?: number;
  maxReplaysPerToken?: number;
  maxMcpSessionsPerToken?: number;
  mcpIdleTimeout?: number;
  tasks?: string[];
  maxSteps?: number;
  openenvCapacity?: number;
  openenvIdleTimeout?: number;
  userModel?: string;
  userTemperature?: number;
  judgeModel?: string;
  backends?: string;
}

/**
 * `read=proxy,write=llm,send_email=schema` -> a policy by effect and by tool. Keys are effects (read,
 * write, unknown; default for the rest) or tool names (checked against the catalog once it is loaded);
 * values are simulators (`auto` leaves the key to the automatic choice). Every mistake is refused with
 * the entry, what is wrong with it and what would be valid.
 */
export function parsePolicy(text: string): SimulatorPolicy {
  const shape = `entries look like <effect or tool>=<simulator>, separated by commas (effects: ${EFFECT_KEYS.join(", ")}; simulators: ${SIMULATOR_NAMES.join(", ")}, auto)`;
  if (text.trim() === "") throw new TerrariumError("INVALID_INPUT", `--policy is empty; ${shape}`);
  const policy: {
    read?: string;
    write?: string;
    unknown?: string;
    default?: string;
    tools: Record<string, string>;
  } = { tools: {} };
  const seen = new Set<string>();
  for (const part of text.split(",")) {
    const entry = part.trim();
    if (entry === "")
      throw new TerrariumError("INVALID_INPUT", `--policy "${text}" has an empty entry; ${shape}`);
    const at = entry.indexOf("=");
    const key = at < 0 ? entry : entry.slice(0, at).trim();
    const value = at < 0 ? "" : entry.slice(at + 1).trim();
    if (at < 0 || key === "" || value === "")
      throw new TerrariumError(
        "INVALID_INPUT",
        `--policy entry "${entry}" is not <key>=<simulator>; ${shape}`,
      );
    if (value !== "auto" && !isSimulatorName(value))
      throw new TerrariumError(
        "INVALID_INPUT",
        `--policy entry "${entry}": "${value}" is not a simulator (valid: ${SIMULATOR_NAMES.join(", ")}, auto)`,
      );
    if (seen.has(key)) throw new TerrariumError("INVALID_INPUT", `--policy names "${key}" twice ("${text}")`);
    seen.add(key);
    if (value === "auto") continue;
    if ((EFFECT_KEYS as readonly string[]).includes(key)) policy[key as (typeof EFFECT_KEYS)[number]] = value;
    else policy.tools[key] = value;
  }
  if (Object.keys(policy.tools).length === 0) delete (policy as { tools?: unknown }).tools;
  return policy as SimulatorPolicy;
}

/** `--user-temperature`: a number from 0 to 2. */
export function parseTemperature(value: string): number {
  const temperature = Number(value.trim());
  if (value.trim() === "" || !Number.isFinite(temperature) || temperature < 0 || temperature > 2)
    throw new InvalidArgumentError(`expected a temperature from 0 to 2, got "${value}"`);
  return temperature;
}

/** `--keep-alive-timeout`: seconds above 0, at most an hour. */
export function parseKeepAliveSeconds(value: string): number {
  const seconds = parsePositiveSeconds(value);
  if (seconds > MAX_KEEP_ALIVE_TIMEOUT_SECONDS)
    throw new InvalidArgumentError(
      `expected at most ${MAX_KEEP_ALIVE_TIMEOUT_SECONDS} seconds (keep it a little above the load balancer's idle timeout), got "${value}"`,
    );
  return seconds;
}

/** --db with the password of --db-password-file put into its postgres:// URL. */
export function withPasswordFile(
  db: string | undefined,
  passwordFile: string | undefined,
): string | undefined {
  if (passwordFile === undefined) return db;
  if (!db || !/^postgres(ql)?:\/\//i.test(db))
    throw new TerrariumError("INVALID_INPUT", "--db-password-file needs --db with a postgres:// URL");
  const url = new URL(db);
  if (url.password !== "")
    throw new TerrariumError(
      "INVALID_INPUT",
      "--db already has a password in its URL; give it in one place (--db-password-file)",
    );
  url.password = encodeURIComponent(readPasswordFile(passwordFile, "--db-password-file"));
  return url.toString();
}

/** --simulator and --policy together: the simulator is the policy's default (unless it names its own). */
function servePolicy(options: ServeCliOptions, simulatorGiven: boolean): SimulatorPolicy {
  if (!SIMULATORS.includes(options.simulator))
    throw new TerrariumError(
      "INVALID_INPUT",
      `--simulator "${options.simulator}" is not a simulator (valid: ${SIMULATORS.join(", ")})`,
    );
  if (options.policy === undefined) return options.simulator as SimulatorPolicy;
  const policy = parsePolicy(options.policy) as Exclude<SimulatorPolicy, string>;
  if (simulatorGiven && options.simulator !== "auto") {
    if (policy.default)
      throw new TerrariumError(
        "INVALID_INPUT",
        `--simulator ${options.simulator} and --policy default=${policy.default} both name the default simulator; give one`,
      );
    policy.default = options.simulator as Exclude<SimulatorPolicy, string>["default"];
  }
  return policy;
}

export function registerServeCommand(program: Command, io: CliIo): void {
  program
    .command("serve")
    .argument(
      "<sources...>",
      "tool definition files and/or one environment (built-in name, module, descriptor)",
    )
    .option("--state <file>", "initial state of new sessions (JSON or YAML)")
    .option("--simulator <name>", `simulator for every tool: ${SIMULATORS.join(", ")}`, "auto")
    .option(
      "--policy <entries>",
      `simulator by effect or tool, e.g. read=proxy,write=llm,send_email=schema (effects: ${EFFECT_KEYS.join(", ")}; simulators: ${SIMULATOR_NAMES.join(", ")}); --simulator then sets the default`,
    )
    .option(
      "--proxy <baseURL>",
      "the real API the proxy simulator forwards calls to (hybrid mode; default: each tool's first server)",
    )
    .option("--port <port>", "port to listen on (0: any free port)", wholeNumber, 8080)
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option(
      "--db <file|url>",
      "keep sessions in this SQLite file, or in Postgres at a postgres:// URL shared by replicas (default: in memory)",
    )
    .option(
      "--token <token>",
      "accept this bearer token (repeatable); each token sees only its own sessions",
      collect,
    )
    .option(
      "--token-file <file>",
      "accept the bearer tokens in this file, one per line (keeps them out of ps; adds to --token)",
    )
    .option(
      "--db-password-file <file>",
      "the Postgres password of --db, read from this file (keeps it out of ps and of the URL)",
    )
    .option("--seed <seed>", "seed session ids and simulators, so a run repeats exactly")
    .option("--strict", "refuse to start when any operation of the tool files cannot be read")
    .option(
      "--live-instances <n>",
      "environment instances kept live (least recently used closed first, rebuilt on demand)",
      wholeNumber,
      DEFAULT_MAX_LIVE_INSTANCES,
    )
    .option(
      "--drain-timeout <seconds>",
      "on SIGTERM/SIGINT, how long in-flight calls may finish before their connections are closed (a second signal stops waiting)",
      Number,
      DEFAULT_DRAIN_TIMEOUT_SECONDS,
    )
    .option(
      "--keep-alive-timeout <seconds>",
      `how long an idle keep-alive connection stays open (keep it above your load balancer's idle timeout, e.g. AWS ALB's 60 s; at most ${MAX_KEEP_ALIVE_TIMEOUT_SECONDS})`,
      parseKeepAliveSeconds,
      DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS,
    )
    .option(
      "--max-sessions-per-token <n>",
      `stored sessions one token may hold, MCP's included (default ${DEFAULT_TOKEN_QUOTAS.sessions}); more get 429 QUOTA_EXCEEDED`,
      parsePositiveInteger,
    )
    .option(
      "--max-replays-per-token <n>",
      `replays one token may run at once (default ${DEFAULT_TOKEN_QUOTAS.replays})`,
      parsePositiveInteger,
    )
    .option(
      "--max-mcp-sessions-per-token <n>",
      `live MCP sessions one token may hold (default ${DEFAULT_MAX_MCP_SESSIONS_PER_TOKEN}; ${DEFAULT_MAX_MCP_SESSIONS} in all)`,
      parsePositiveInteger,
    )
    .option(
      "--mcp-idle-timeout <seconds>",
      `an MCP session unused this long is closed with its engine session (default ${DEFAULT_MCP_IDLE_MS / 1000})`,
      parsePositiveSeconds,
    )
    .option(
      "--tasks <file>",
      "serve these tasks as OpenEnv episodes at /openenv (repeatable): tau2-bench task files, terrarium task files; reset(task_id=…) starts one, the finish tool ends it with a reward",
      collect,
    )
    .option(
      "--max-steps <n>",
      "an OpenEnv episode ends (done) after this many steps; a task episode ended so scores 0, as tau2 scores a premature end",
      parsePositiveInteger,
    )
    .option(
      "--user-model <model>",
      "with --tasks: a simulated user (provider:model) talks to the agent in task episodes ({type: message} actions; the user speaks first and its stop token ends the episode)",
    )
    .option(
      "--user-temperature <t>",
      "the simulated user's temperature, 0 to 2 (default 0.7)",
      parseTemperature,
    )
    .option(
      "--judge-model <model>",
      "with --tasks: a model (provider:model) scores the checks that need one (tau2's NL assertions); without it they are null and left out of the reward",
    )
    .option("--backends <dir>", "BFCL's Python backend sources, for BFCL multi-turn --tasks files")
    .option(
      "--openenv-capacity <n>",
      `OpenEnv episodes (WebSocket connections and HTTP episodes) at once; more get CAPACITY_REACHED (default ${DEFAULT_MAX_EPISODES})`,
      parsePositiveInteger,
    )
    .option(
      "--openenv-idle-timeout <seconds>",
      `an OpenEnv episode without a message this long is closed and its engine session deleted (default ${DEFAULT_IDLE_TIMEOUT_MS / 1000})`,
      parsePositiveSeconds,
    )
    .option(
      "--model <model>",
      "model of the llm simulator, the bootstrap and the state updater (default: roles.simulator or roles.default of the config)",
    )
    .option(
      "--llm-mode <mode>",
      "llm simulator: merged (one call per tool call) or gecko (response, then state update)",
      "merged",
    )
    .description(
      "serve simulated tools over HTTP (terrarium's API, Gecko's API, MCP at /mcp, each tool at its routes; route list at /docs)",
    )
    .addHelpText(
      "after",
      `
Examples:
  terrarium serve bank                                  # a built-in environment, exact (code) simulation
  terrarium serve petstore.openapi.yaml --port 9000     # schema-valid answers, no model needed
  terrarium serve tau2-retail --db sessions.sqlite --token secret
  terrarium serve tau2-retail --tasks tasks.json --max-steps 30   # RL: OpenEnv at http://127.0.0.1:8080/openenv
  terrarium serve api.openapi.yaml --policy read=proxy,write=llm --proxy https://api.example.com --model openai:gpt-4.1-mini

Metrics: GET /metrics (Prometheus text; needs a token when --token is given). Tracing: register an
OpenTelemetry SDK in the process (see docs/deployment.md). SIGTERM/SIGINT drain in-flight calls.

Semantic validation runs when a model serves the validator role (roles.validator, else roles.default);
the start-up lines and GET /health say whether it is on and with which model.
`,
    )
    .action(async (sources: string[], options: ServeCliOptions, command: Command) => {
      // Every value is checked before anything loads or listens.
      if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
        throw new TerrariumError("INVALID_INPUT", "--port must be an integer from 0 to 65535");
      }
      if (!Number.isInteger(options.liveInstances) || options.liveInstances < 1) {
        throw new TerrariumError("INVALID_INPUT", "--live-instances must be an integer of at least 1");
      }
      if (!LLM_MODES.includes(options.llmMode)) {
        throw new TerrariumError(
          "INVALID_INPUT",
          `--llm-mode "${options.llmMode}" is not a mode (valid: ${LLM_MODES.join(", ")})`,
        );
      }
      if (!Number.isFinite(options.drainTimeout) || options.drainTimeout < 0) {
        throw new TerrariumError("INVALID_INPUT", "--drain-timeout must be a number of seconds, 0 or more");
      }
      const policy = servePolicy(options, command.getOptionValueSource("simulator") !== "default");
      const tokens = [
        ...(options.token ?? []),
        ...(options.tokenFile ? readSecretsFile(options.tokenFile, "--token-file") : []),
      ];
      const db = withPasswordFile(options.db, options.dbPasswordFile);
      for (const file of options.tasks ?? [])
        if (!existsSync(file)) throw new TerrariumError("INVALID_INPUT", `--tasks ${file}: no such file`);
      if (!options.tasks && (options.userModel ?? options.judgeModel ?? options.backends) !== undefined)
        throw new TerrariumError(
          "INVALID_INPUT",
          "--user-model, --judge-model and --backends are for task episodes: give --tasks too",
        );
      if (options.userTemperature !== undefined && options.userModel === undefined)
        throw new TerrariumError("INVALID_INPUT", "--user-temperature needs --user-model");
      if (options.backends !== undefined && !existsSync(options.backends))
        throw new TerrariumError("INVALID_INPUT", `--backends ${options.backends}: no such folder`);
      const server = await startServer({
        sources,
        simulator: policy,
        ...(options.proxy !== undefined ? { proxy: options.proxy } : {}),
        port: options.port,
        host: options.host,
        liveInstances: options.liveInstances,
        ...(options.state ? { state: options.state } : {}),
        ...(db ? { db } : {}),
        ...(tokens.length > 0 ? { tokens } : {}),
        ...(options.seed ? { seed: options.seed } : {}),
        ...(options.model ? { model: options.model } : {}),
        ...(command.optsWithGlobals().config ? { config: command.optsWithGlobals().config as string } : {}),
        llmMode: options.llmMode as "merged" | "gecko",
        keepAliveTimeoutMs: options.keepAliveTimeout * 1000,
        ...(options.strict ? { strict: true } : {}),
        quotas: {
          ...(options.maxSessionsPerToken !== undefined ? { sessions: options.maxSessionsPerToken } : {}),
          ...(options.maxReplaysPerToken !== undefined ? { replays: options.maxReplaysPerToken } : {}),
        },
        mcp: {
          ...(options.maxMcpSessionsPerToken !== undefined
            ? { maxSessionsPerToken: options.maxMcpSessionsPerToken }
            : {}),
          ...(options.mcpIdleTimeout !== undefined ? { idleMs: options.mcpIdleTimeout * 1000 } : {}),
        },
        openenv: {
          ...(options.tasks ? { tasks: options.tasks } : {}),
          ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
          ...(options.openenvCapacity !== undefined ? { maxEpisodes: options.openenvCapacity } : {}),
          ...(options.openenvIdleTimeout !== undefined
            ? { idleTimeoutMs: options.openenvIdleTimeout * 1000 }
            : {}),
          ...(options.userModel !== undefined ? { userModel: options.userModel } : {}),
          ...(options.userTemperature !== undefined ? { userTemperature: options.userTemperature } : {}),
          ...(options.judgeModel !== undefined ? { judgeModel: options.judgeModel } : {}),
          ...(options.backends !== undefined ? { backends: options.backends } : {}),
        },
      });
      io.stderr.write(describeLoad(server.engine.catalog));
      io.stderr.write(describeProfile(server.profile, server.url, server.engine.catalog.size));
      const taskIds = server.openenv.source.taskIds;
      if (taskIds)
        io.stderr.write(
          `  OpenEnv: ${server.url}/openenv (${taskIds.length} tasks from ${(options.tasks ?? []).join(", ")}; reset with task_id, end with the finish tool)\n`,
        );
      await new Promise<void>((resolve) => {
        const drainTimeoutMs = options.drainTimeout * 1000;
        let stopping = false;
        const stop = (signal: NodeJS.Signals) => {
          if (stopping) {
            io.stderr.write(`terrarium: ${signal} again: closing without waiting\n`);
            void server.close({ drainTimeoutMs: 0 });
            return;
          }
          stopping = true;
          const started = (progress: ShutdownProgress) => {
            if (progress.stage !== "listening-stopped") return;
            const unread =
              progress.arriving > 0
                ? `; ${progress.arriving} request(s) that arrived meanwhile get 503 SHUTTING_DOWN`
                : "";
            io.stderr.write(
              `terrarium: ${signal}: no new connections; ${progress.inFlight} request(s) in flight, waiting up to ${options.drainTimeout}s${unread}\n`,
            );
          };
          let summary = "";
          void server
            .close({
              drainTimeoutMs,
              progress: (progress) => {
                started(progress);
                if (progress.stage === "drained")
                  summary = `terrarium: drained: ${progress.answered} request(s) answered, ${progress.refused} refused with 503 SHUTTING_DOWN, ${progress.cutOff} cut off at the drain timeout, ${progress.lost} lost by their clients; ${progress.closedIdle} idle connection(s) closed\n`;
              },
            })
            .then((report) => {
              process.off("SIGINT", stop);
              process.off("SIGTERM", stop);
              io.stderr.write(summary);
              io.stderr.write(
                report.abandoned > 0
                  ? `terrarium: stopped; ${report.abandoned} request(s) were still running and were cut off\n`
                  : "terrarium: stopped\n",
              );
              resolve();
            });
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
    });
}
