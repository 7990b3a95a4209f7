import type { Command } from "commander";
import type { CliIo } from "../../io.js";
import { registerBuildCommands } from "./build.js";
import { registerCollectCommands } from "./collect.js";
import { registerEvalCommands } from "./eval.js";
import { registerRecordsCommands } from "./records.js";
import { registerSftCommands } from "./sft.js";

export { readJsonl } from "./shared.js";

/** `terrarium envsim`: one file per command (collect, build, import/export, sft, eval/report). */
export function registerEnvsimCommands(
  program: Command,
  io: CliIo,
  setExitCode: (code: number) => void,
): void {
  const envsim = program
    .command("envsim")
    .description("EnvSimBench: how faithfully a simulator predicts what an environment really does");
  registerCollectCommands(envsim, io);
  registerBuildCommands(envsim, io);
  registerRecordsCommands(envsim, io);
  registerSftCommands(envsim, io);
  registerEvalCommands(envsim, io, setExitCode);
}
