import type { Command } from "commander";
import type { CliIo } from "../../io.js";
import { registerUsersDemoCommand } from "./demo.js";
import { registerUsersGenerateCommand } from "./generate.js";
import { registerUsersObserveCommand } from "./observe.js";
import { registerUsersReportCommands } from "./report.js";
import { registerUsersRunCommand } from "./run.js";
import { registerUsersTestCommand } from "./test.js";

/** `terrarium users`: simulated users talking to a chat agent (VISTA): generate, run, report, compare. */
export function registerUsersCommands(
  program: Command,
  io: CliIo,
  setExitCode: (code: number) => void,
): void {
  const users = program
    .command("users")
    .description(
      "simulate users talking to a chat agent and measure coverage, realism, cost and failures (VISTA)",
    );
  registerUsersGenerateCommand(users, io, setExitCode);
  registerUsersRunCommand(users, io, setExitCode);
  registerUsersTestCommand(users, io, setExitCode);
  registerUsersReportCommands(users, io);
  registerUsersDemoCommand(users, io);
  registerUsersObserveCommand(users, io);
}
