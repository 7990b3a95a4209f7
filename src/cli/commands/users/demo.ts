import { type Command, InvalidArgumentError } from "commander";
import { startShopDemo } from "../../../users/demo/index.js";
import type { CliIo } from "../../io.js";

interface UsersDemoCliOptions {
  port: number;
  agentModel?: string;
  seed?: string;
}

/** A commander parser for a port: a whole number from 0 (any free port) to 65535. */
export function parsePort(value: string): number {
  const text = value.trim();
  if (!/^\d+$/.test(text) || Number(text) > 65535)
    throw new InvalidArgumentError(`expected a port from 0 to 65535 (0 picks a free one), got "${value}"`);
  return Number(text);
}

/** A commander parser for `provider:model`. */
export function parseModelName(value: string): string {
  const text = value.trim();
  if (!/^[A-Za-z0-9_.-]+:\S+$/.test(text))
    throw new InvalidArgumentError(
      `expected provider:model (for example openai:gpt-4.1-mini), got "${value}"`,
    );
  return text;
}

/**
 * `terrarium users demo`: the demo shop with its chat widget and agent on 127.0.0.1, until SIGINT or
 * SIGTERM. A browser target of `users run` can be pointed at it.
 */
export function registerUsersDemoCommand(users: Command, io: CliIo): void {
  users
    .command("demo")
    .description(
      "serve a demo shop whose chat widget (in an iframe) talks to an agent on tau2-retail, for browser runs",
    )
    .option("--port <port>", "port on 127.0.0.1 (0 picks a free one)", parsePort, 8090)
    .option(
      "--agent-model <model>",
      "the planner agent's model, provider:model (default: roles.agent, else roles.default; without any: scripted answers)",
      parseModelName,
    )
    .option("--seed <seed>", "seed of the engine's sessions and the agent's model calls")
    .addHelpText(
      "after",
      `
Examples:
  terrarium users demo                                        # scripted answers, no model or key needed
  terrarium users demo --port 9000 --agent-model openai:gpt-4.1-mini

The shop's pages are examples/shop: products (/), an order page (/order.html), a returns form
(/returns.html), and the chat widget (/chat.html) every page loads in <iframe id="chat">. The agent's
tool calls per chat session are at /terrarium/sessions/<id>/history (the widget's data-session-id).
Stop it with Ctrl-C.
`,
    )
    .action(async (options: UsersDemoCliOptions, command: Command) => {
      const config = command.optsWithGlobals().config as string | undefined;
      const demo = await startShopDemo({
        port: options.port,
        ...(options.agentModel !== undefined ? { agentModel: options.agentModel } : {}),
        ...(options.seed !== undefined ? { seed: options.seed } : {}),
        ...(config !== undefined ? { config } : {}),
      });
      io.stderr.write(`terrarium demo shop at ${demo.url}\n`);
      io.stderr.write(
        demo.mode === "scripted"
          ? "  agent: scripted answers (no model configured: pass --agent-model or set roles.agent / roles.default)\n"
          : `  agent: terrarium's planner with ${demo.agentModel} on tau2-retail\n`,
      );
      io.stderr.write(
        `  agent's tool calls: ${demo.url}terrarium/sessions/<data-session-id>/history   (Ctrl-C stops)\n`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          void demo.close().then(resolve, resolve);
        };
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
      io.stderr.write("demo shop stopped\n");
    });
}
