import { type Command, InvalidArgumentError } from "commander";
import {
  canonicalHost,
  DEFAULT_CHAT_IDLE_MS,
  DEFAULT_MAX_CHAT_SESSIONS,
  LOOPBACK_HOSTS,
  startShopDemo,
} from "../../../users/demo/index.js";
import { readSecretsFile } from "../../environment.js";
import { type CliIo, collect, parsePositiveInteger } from "../../io.js";

interface UsersDemoCliOptions {
  port: number;
  host: string;
  allowedHost?: string[];
  token?: string[];
  tokenFile?: string;
  maxChats: number;
  chatIdleTimeout: number;
  agentModel?: string;
  seed?: string;
}

/** Longest chat idle timeout: a week, in seconds. */
const MAX_IDLE_SECONDS = 7 * 24 * 3600;

/** A commander parser for a chat idle timeout: seconds, more than 0 and at most a week. */
export function parseIdleSeconds(value: string): number {
  const text = value.trim();
  const seconds = /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!(seconds > 0) || seconds > MAX_IDLE_SECONDS)
    throw new InvalidArgumentError(
      `expected seconds, more than 0 and at most ${MAX_IDLE_SECONDS} (a week), got "${value}"`,
    );
  return seconds;
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
 * `terrarium users demo`: the demo shop with its chat widget and agent (on 127.0.0.1 by default), until
 * SIGINT or SIGTERM. A browser target of `users run` can be pointed at it.
 */
export function registerUsersDemoCommand(users: Command, io: CliIo): void {
  users
    .command("demo")
    .description(
      "serve a demo shop whose chat widget (in an iframe) talks to an agent on tau2-retail, for browser runs",
    )
    .option("--port <port>", "port to listen on (0 picks a free one)", parsePort, 8090)
    .option("--host <address>", "address to listen on", "127.0.0.1")
    .option(
      "--allowed-host <name>",
      `a host name the shop answers for besides ${LOOPBACK_HOSTS.join(", ")} and --host (repeatable; other Host headers get 403)`,
      collect,
    )
    .option(
      "--token <token>",
      "bearer token the /terrarium/ API requires (repeatable; default: open, as serve without --token)",
      collect,
    )
    .option(
      "--token-file <file>",
      "the /terrarium/ API's bearer tokens from this file, one per line (keeps them out of ps; adds to --token)",
    )
    .option(
      "--max-chats <n>",
      "live conversations at most; a new one past this is refused politely (503) until one ends",
      parsePositiveInteger,
      DEFAULT_MAX_CHAT_SESSIONS,
    )
    .option(
      "--chat-idle-timeout <seconds>",
      "a conversation without a message for this long is closed, with its engine session",
      parseIdleSeconds,
      DEFAULT_CHAT_IDLE_MS / 1000,
    )
    .option(
      "--agent-model <model>",
      "the planner agent's model, provider:model (default: roles.agent, else roles.default; without any: scripted answers)",
      parseModelName,
    )
    .option(
      "--seed <seed>",
      "seed of the simulation (the engine's sessions, the agent's model calls); chat ids stay random",
    )
    .addHelpText(
      "after",
      `
Examples:
  terrarium users demo                                        # scripted answers, no model or key needed
  terrarium users demo --port 9000 --agent-model openai:gpt-4.1-mini
  terrarium users demo --allowed-host shop.internal --token secret   # behind a proxy that sends Host: shop.internal

The shop's pages are examples/shop: products (/), an order page (/order.html), a returns form
(/returns.html), and the chat widget (/chat.html) every page loads in <iframe id="chat">. The agent's
tool calls per chat are at /terrarium/sessions/<id>/history and its store at .../state (the widget's
data-session-id, a random id); /terrarium/tools lists the tools. Nothing else of terrarium's API is
served. With --token those three need Authorization: Bearer <token>; the pages and /api/* never do (the
widget does not call /terrarium, so the token never reaches a browser). Stop it with Ctrl-C.
`,
    )
    .action(async (options: UsersDemoCliOptions, command: Command) => {
      const config = command.optsWithGlobals().config as string | undefined;
      const tokens = [
        ...(options.token ?? []),
        ...(options.tokenFile ? readSecretsFile(options.tokenFile, "--token-file") : []),
      ];
      const demo = await startShopDemo({
        port: options.port,
        host: options.host,
        ...(options.allowedHost ? { allowedHosts: options.allowedHost } : {}),
        ...(tokens.length > 0 ? { tokens } : {}),
        maxChatSessions: options.maxChats,
        chatIdleMs: options.chatIdleTimeout * 1000,
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
      io.stderr.write(`  answers for hosts: ${demo.allowedHosts.join(", ")} (more with --allowed-host)\n`);
      io.stderr.write(
        `  agent's tool calls: ${demo.url}terrarium/sessions/<data-session-id>/history${tokens.length > 0 ? " (bearer token required)" : ""}   (Ctrl-C stops)\n`,
      );
      const loopback = (LOOPBACK_HOSTS as readonly string[]).includes(canonicalHost(options.host) ?? "");
      if (tokens.length === 0 && !loopback)
        io.stderr.write(
          "  warning: listening beyond loopback without --token: anyone who reaches it can read every chat's tool calls\n",
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
