import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command, CommanderError } from "commander";
import { isTerrariumError } from "../core/errors.js";
import { registerBenchCommands } from "./commands/bench.js";
import { registerEnvCommands } from "./commands/env.js";
import { registerEnvsimCommands } from "./commands/envsim/index.js";
import { registerGatsCommand } from "./commands/gats.js";
import { registerMcpCommand } from "./commands/mcp.js";
import { registerModelsCommands } from "./commands/models.js";
import { registerRlCommands } from "./commands/rl.js";
import { registerServeCommand } from "./commands/serve.js";
import { registerToolsCommands } from "./commands/tools.js";
import { registerUsersCommands } from "./commands/users/index.js";
import { registerValidateCommand } from "./commands/validate.js";
import { registerWorkerCommand } from "./commands/worker.js";
import { flagsFromEnvironment } from "./environment.js";
import { type CliIo, processIo } from "./io.js";

export const VERSION = "0.1.0";

/**
 * Builds the terrarium program with every command registered, writing to `io`; `setExitCode` is how
 * commands report a non-zero exit code. Commander's exits are overridden (errors are thrown, not exited).
 */
export function buildProgram(io: CliIo, setExitCode: (code: number) => void): Command {
  const program = new Command("terrarium")
    .description("A simulated world for LLM agents: simulated tools, environments and users.")
    .version(VERSION)
    .option(
      "--config <file>",
      "terrarium.config.yaml to use (default: ./terrarium.config.yaml or $TERRARIUM_CONFIG)",
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError("(run with --help for usage)");
  registerToolsCommands(program, io);
  registerValidateCommand(program, io, setExitCode);
  registerModelsCommands(program, io, setExitCode);
  registerEnvCommands(program, io);
  registerServeCommand(program, io);
  registerMcpCommand(program, io);
  registerBenchCommands(program, io, setExitCode);
  registerGatsCommand(program, io, setExitCode);
  registerEnvsimCommands(program, io, setExitCode);
  registerUsersCommands(program, io, setExitCode);
  registerRlCommands(program, io, setExitCode);
  registerWorkerCommand(program, io);
  // The long-running commands take every flag from TERRARIUM_* variables too (containers, Kubernetes).
  for (const name of ["serve", "worker"]) {
    const command = program.commands.find((candidate) => candidate.name() === name);
    if (command) flagsFromEnvironment(command, io.env ?? process.env);
  }
  const overrideAll = (command: Command): void => {
    command.exitOverride();
    command.commands.forEach(overrideAll);
  };
  overrideAll(program);
  return program;
}

/**
 * Runs the terrarium CLI on `argv` (without the node and script entries) and resolves to the exit code.
 * Errors terrarium understands are printed as one line naming the file and place; exit code 2 means the
 * input was unusable, 1 that the command ran and found problems (e.g. --fail-on-invalid).
 */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  let exitCode = 0;
  const program = buildProgram(io, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(argv, { from: "user" });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are "errors" to commander; they are successes to the user.
      return error.exitCode === 0 || error.code === "commander.helpDisplayed" ? 0 : 2;
    }
    if (isTerrariumError(error)) {
      io.stderr.write(`terrarium: ${error.describe()}\n`);
      return 2;
    }
    // Not an input problem terrarium recognised: one line says what failed; the stack is for a bug report.
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const debug = process.env.TERRARIUM_DEBUG && error instanceof Error ? `\n${error.stack}` : "";
    io.stderr.write(
      `terrarium: unexpected error: ${message.split("\n")[0]}${debug ? debug : " (TERRARIUM_DEBUG=1 shows where)"}\n`,
    );
    return 1;
  }
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

/**
 * The CLI as a process's whole job (bin/terrarium.js and `tsx src/cli/main.ts`): the exit code is the
 * command's, and it never lies. A command left waiting on a promise nothing will settle would otherwise end
 * with exit 0 and no word once the event loop empties; that says so and exits 1 instead.
 */
export function runCliProcess(argv: string[] = process.argv.slice(2)): void {
  let settled = false;
  process.on("exit", (code) => {
    if (settled || code !== 0) return;
    process.stderr.write(
      "terrarium: the command stopped before it finished (its work was left waiting on nothing)\n",
    );
    process.exitCode = 1;
  });
  runCli(argv).then((code) => {
    settled = true;
    process.exitCode = code;
    // Interrupted work may still hold sockets or timers; what was kept is on disk, so leave now.
    if (code === 130) process.exit(code);
  });
}

if (isMain()) runCliProcess();
