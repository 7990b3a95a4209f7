import type { Command } from "commander";
import { TerrariumError } from "../../core/errors.js";
import { createMcpServer } from "../../mcp/server.js";
import { DEFAULT_MAX_MESSAGE_BYTES, LineTransport } from "../../mcp/stdio.js";
import { buildEngine } from "../../sim/build-engine.js";
import { type CliIo, parsePositiveInteger } from "../io.js";
import { describeLoad } from "./tools.js";

/** Largest accepted --max-message-bytes: one line is held in memory whole. */
const MAX_MESSAGE_BYTES_LIMIT = 2 ** 30;

export function registerMcpCommand(program: Command, io: CliIo): void {
  program
    .command("mcp")
    .argument("<sources...>", "tool definition files, mcp+stdio:/mcp+http: servers, and/or one environment")
    .option("--state <file>", "initial state (JSON or YAML)")
    .option("--db <file|url>", "keep the session in this SQLite file, or in Postgres at a postgres:// URL")
    .option("--model <model>", "model of the llm simulator")
    .option("--seed <seed>", "seed the simulators")
    .option("--strict", "refuse to start when any operation of the tool files cannot be read")
    .option(
      "--max-message-bytes <n>",
      `largest message (one line) read from stdin; a longer one is answered with an error and skipped (default: ${DEFAULT_MAX_MESSAGE_BYTES}, as serve's body limit)`,
      parsePositiveInteger,
    )
    .description("serve simulated tools to an MCP client over stdio (one session for the connection)")
    .addHelpText(
      "after",
      `
Examples:
  terrarium mcp bank
  terrarium mcp petstore.openapi.yaml --seed 1
  # in an MCP client's configuration: {"command": "npx", "args": ["terrarium", "mcp", "tau2-retail"]}
`,
    )
    .action(
      async (
        sources: string[],
        options: {
          state?: string;
          db?: string;
          model?: string;
          seed?: string;
          strict?: boolean;
          maxMessageBytes?: number;
        },
        command: Command,
      ) => {
        const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
        if (maxMessageBytes > MAX_MESSAGE_BYTES_LIMIT)
          throw new TerrariumError(
            "INVALID_INPUT",
            `--max-message-bytes must be at most ${MAX_MESSAGE_BYTES_LIMIT} (1 GiB), got ${maxMessageBytes}`,
          );
        const config = command.optsWithGlobals().config as string | undefined;
        const { engine, models } = await buildEngine({
          sources,
          ...(options.state ? { state: options.state } : {}),
          ...(options.db ? { db: options.db } : {}),
          ...(options.model ? { model: options.model } : {}),
          ...(options.seed ? { seed: options.seed } : {}),
          ...(config ? { config } : {}),
          ...(options.strict ? { strict: true } : {}),
        });
        const session = await engine.createSession();
        // stdout carries the protocol; everything for people goes to stderr.
        const log = (line: string) => io.stderr.write(`${line}\n`);
        const server = createMcpServer(engine, async () => session.id, undefined, log);
        const transport = new LineTransport({
          input: io.stdin,
          output: io.stdout,
          maxMessageBytes,
          onRefused: (reason) => log(`terrarium mcp: a message was refused: ${reason}`),
        });
        io.stderr.write(describeLoad(engine.catalog));
        io.stderr.write(`terrarium mcp: ${engine.catalog.size} tools, session ${session.id}\n`);
        await server.connect(transport);
        // Until stdin ends and every request taken is answered (or the client's end of stdout is gone).
        await transport.closed;
        await server.close();
        await engine.close();
        await models?.close();
      },
    );
}
