import type { Command } from "commander";
import { TerrariumError } from "../../core/errors.js";
import { startServer } from "../../server/start.js";
import type { SimulatorPolicy } from "../../sim/engine.js";
import { DEFAULT_MAX_LIVE_INSTANCES } from "../../sim/simulators/code.js";
import { isSimulatorName, SIMULATOR_NAMES } from "../../sim/types.js";
import { type CliIo, collect, wholeNumber } from "../io.js";
import { describeLoad } from "./tools.js";

const SIMULATORS: string[] = ["auto", ...SIMULATOR_NAMES];

interface ServeCliOptions {
  state?: string;
  simulator: string;
  port: number;
  host: string;
  db?: string;
  token?: string[];
  seed?: string;
  model?: string;
  llmMode: string;
  policy?: string;
  proxy?: string;
  liveInstances: number;
  strict?: boolean;
}

/** `read=proxy,write=llm` -> a policy by effect (tool names may be given too: `send_email=schema`). */
function parsePolicy(text: string): SimulatorPolicy {
  const policy: { read?: string; write?: string; unknown?: string; tools: Record<string, string> } = {
    tools: {},
  };
  for (const part of text.split(",")) {
    const [key, value] = part.split("=").map((piece) => piece.trim());
    if (!key || !isSimulatorName(value)) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `--policy "${part}" must look like read=proxy or <tool>=llm (simulators: ${SIMULATOR_NAMES.join(", ")})`,
      );
    }
    if (key === "read" || key === "write" || key === "unknown") policy[key] = value;
    else policy.tools[key] = value;
  }
  return policy as SimulatorPolicy;
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
    .option("--port <port>", "port to listen on", wholeNumber, 8080)
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--db <file>", "keep sessions in this SQLite file (default: in memory)")
    .option(
      "--token <token>",
      "accept this bearer token (repeatable); each token sees only its own sessions",
      collect,
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
      "--model <model>",
      "model of the llm simulator (default: roles.simulator or roles.default of the config)",
    )
    .option(
      "--llm-mode <mode>",
      "llm simulator: merged (one call per tool call) or gecko (response, then state update)",
      "merged",
    )
    .description(
      "serve simulated tools over HTTP (terrarium's API, Gecko-compatible endpoints, each tool at its path)",
    )
    .addHelpText(
      "after",
      `
Examples:
  terrarium serve bank                                  # a built-in environment, exact (code) simulation
  terrarium serve petstore.openapi.yaml --port 9000     # schema-valid answers, no model needed
  terrarium serve tau2-retail --db sessions.sqlite --token secret
  terrarium serve api.openapi.yaml --policy read=proxy,write=llm --proxy https://api.example.com --model openai:gpt-4.1-mini
`,
    )
    .action(async (sources: string[], options: ServeCliOptions, command: Command) => {
      if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
        throw new TerrariumError("INVALID_INPUT", "--port must be an integer from 0 to 65535");
      }
      if (!Number.isInteger(options.liveInstances) || options.liveInstances < 1) {
        throw new TerrariumError("INVALID_INPUT", "--live-instances must be an integer of at least 1");
      }
      if (!SIMULATORS.includes(options.simulator)) {
        throw new TerrariumError("INVALID_INPUT", `--simulator must be one of ${SIMULATORS.join(", ")}`);
      }
      const server = await startServer({
        sources,
        simulator: options.policy ? parsePolicy(options.policy) : (options.simulator as SimulatorPolicy),
        ...(options.proxy ? { proxy: options.proxy } : {}),
        port: options.port,
        host: options.host,
        liveInstances: options.liveInstances,
        ...(options.state ? { state: options.state } : {}),
        ...(options.db ? { db: options.db } : {}),
        ...(options.token ? { tokens: options.token } : {}),
        ...(options.seed ? { seed: options.seed } : {}),
        ...(options.model ? { model: options.model } : {}),
        ...(command.optsWithGlobals().config ? { config: command.optsWithGlobals().config as string } : {}),
        llmMode: options.llmMode === "gecko" ? "gecko" : "merged",
        ...(options.strict ? { strict: true } : {}),
      });
      io.stderr.write(describeLoad(server.engine.catalog));
      io.stderr.write(
        `terrarium serving ${server.engine.catalog.size} tools at ${server.url} ` +
          `(simulators: ${server.models ? "code, llm, schema" : "code, schema; no model configured"}; semantic validation: skipped)\n` +
          `  try: curl -s -X POST ${server.url}/sessions\n`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => void server.close().then(resolve);
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
    });
}
