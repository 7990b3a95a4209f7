import { existsSync } from "node:fs";
import type { Command } from "commander";
import { TerrariumError } from "../../core/errors.js";
import { fetchSessionExport, readExportFile, scoreStoredEpisode } from "../../rl/rewards/stored.js";
import { loadTasks, type RlTask } from "../../rl/tasks/index.js";
import type { SessionExport } from "../../sim/engine.js";
import { type CliIo, collect } from "../io.js";

interface ScoreOptions {
  tasks?: string[];
  task?: string;
  env?: string;
  url?: string;
  token?: string;
  json?: boolean;
}

/** The version of `rl score --json`'s document. */
export const RL_SCORE_SCHEMA_VERSION = 1;

export function registerRlCommands(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  const rl = program.command("rl").description("reinforcement learning: score stored episodes of task sets");
  rl.command("score")
    .description(
      "score a stored episode (a session export file, or a session of a running server) against its task",
    )
    .argument("<episode>", "a session export file (GET /sessions/:id/export), or a session id with --url")
    .option(
      "--tasks <file>",
      "task file the episode's task is in (repeatable; tau2 or terrarium format)",
      collect,
    )
    .option("--task <id>", "the task to score against (default: the one the session's metadata names)")
    .option("--env <name>", "environment the task runs on, built-in name or file (default: the task's own)")
    .option("--url <server>", "fetch the session's export from this terrarium server")
    .option("--token <token>", "bearer token for --url")
    .option("--json", "print the result as one JSON document")
    .addHelpText(
      "after",
      `
The reward is the product of the task's checks that could be computed; a check that needs a model (NL
assertions) is null, left out, and listed with why. Exit status: 0 when the episode was scored (a reward
of 0 is still a score), 1 when no check could be computed (reward null) or the server could not be
reached, 2 when the input is unusable (no such file or session, unknown task, not an export).

--json prints {"schemaVersion", "session", "task", "environment", "reward", "breakdown", "skipped": [{"check",
"reason"}], "db"?: {"expected", "actual"}, "actions"?: [bool], "note"?}.

Examples:
  terrarium rl score examples/rl/episode.json --tasks examples/rl/tasks.json
  terrarium rl score examples/rl/episode.json --tasks examples/rl/tasks.json --json
A session of a running server: rl score <session-id> --url http://127.0.0.1:8080 --token $TOKEN --tasks tasks.json
`,
    )
    .action(async (episode: string, options: ScoreOptions) => {
      // Everything the command is told is checked before any work.
      if (!options.tasks || options.tasks.length === 0)
        throw new TerrariumError(
          "INVALID_INPUT",
          "--tasks <file> is required: the task file the episode's task is in",
        );
      const isFile = existsSync(episode);
      if (!isFile && options.url === undefined)
        throw new TerrariumError(
          "FILE_UNREADABLE",
          `"${episode.slice(0, 200)}" is not a file; to score a session of a running server give --url`,
        );
      if (options.token !== undefined && options.url === undefined)
        throw new TerrariumError("INVALID_INPUT", "--token is for --url");
      const tasks: RlTask[] = options.tasks.flatMap((file) => loadTasks(file));
      if (options.task !== undefined && !tasks.some((task) => task.id === options.task))
        throw new TerrariumError(
          "INVALID_INPUT",
          `task "${options.task.slice(0, 120)}" is not in the task files`,
        );

      let exported: SessionExport;
      if (isFile) exported = readExportFile(episode);
      else {
        try {
          exported = await fetchSessionExport(options.url as string, episode, {
            ...(options.token !== undefined ? { token: options.token } : {}),
          });
        } catch (error) {
          // An unreachable server is not bad input: the same command may work later.
          if (error instanceof TerrariumError && error.code === "STORE_UNAVAILABLE") {
            io.stderr.write(`terrarium: ${error.message}\n`);
            setExitCode(1);
            return;
          }
          throw error;
        }
      }
      const scored = await scoreStoredEpisode({
        exported,
        tasks,
        ...(options.task !== undefined ? { taskId: options.task } : {}),
        ...(options.env !== undefined ? { environment: options.env } : {}),
      });
      const { result } = scored;
      if (options.json) {
        io.stdout.write(
          `${JSON.stringify({
            schemaVersion: RL_SCORE_SCHEMA_VERSION,
            session: scored.sessionId,
            task: scored.taskId,
            environment: scored.environment,
            ...result,
          })}\n`,
        );
      } else {
        const why = new Map(result.skipped.map((entry) => [entry.check, entry.reason]));
        const lines = [
          `session ${scored.sessionId}, task ${scored.taskId} on ${scored.environment}`,
          `reward: ${result.reward === null ? "null (no check could be computed)" : result.reward}`,
        ];
        const width = Math.max(0, ...Object.keys(result.breakdown).map((check) => check.length));
        for (const [check, value] of Object.entries(result.breakdown)) {
          const reason = why.get(check as never);
          lines.push(
            `  ${check.padEnd(width)}  ${value === null ? `null (${reason ?? "not computed"})` : value}`,
          );
        }
        if (result.actions)
          lines.push(`  actions matched: ${result.actions.filter(Boolean).length}/${result.actions.length}`);
        if (result.note) lines.push(`  note: ${result.note}`);
        io.stdout.write(`${lines.join("\n")}\n`);
      }
      if (result.reward === null) setExitCode(1);
    });
}
