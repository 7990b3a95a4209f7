import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Command } from "commander";
import { createMcpServer } from "../../mcp/server.js";
import { buildEngine } from "../../server/start.js";
import type { CliIo } from "../io.js";
import { describeLoad } from "./tools.js";

export function registerMcpCommand(program: Command, io: CliIo): void {
  program
    .command("mcp")
    .argument("<sources...>", "tool definition files, mcp+stdio:/mcp+http: servers, and/or one environment")
    .option("--state <file>", "initial state (JSON or YAML)")
    .option("--db <file|url>", "keep the session in this SQLite file, or in Postgres at a postgres:// URL")
    .option("--model <model>", "model of the llm simulator")
    .option("--seed <seed>", "seed the simulators")
    .option("--strict", "refuse to start when any operation of the tool files cannot be read")
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
        options: { state?: string; db?: string; model?: string; seed?: string; strict?: boolean },
        command: Command,
      ) => {
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
        const server = createMcpServer(engine, async () => session.id);
        const transport = new StdioServerTransport();
        // stdout carries the protocol; everything for people goes to stderr.
        io.stderr.write(describeLoad(engine.catalog));
        io.stderr.write(`terrarium mcp: ${engine.catalog.size} tools, session ${session.id}\n`);
        await server.connect(transport);
        await new Promise<void>((resolve) => {
          transport.onclose = () => resolve();
          process.stdin.once("end", () => resolve());
        });
        await engine.close();
        await models?.close();
      },
    );
}
