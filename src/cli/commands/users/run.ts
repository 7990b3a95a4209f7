import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { TerrariumError } from "../../../core/errors.js";
import { loadConfig, type TerrariumConfig } from "../../../models/config.js";
import { Models } from "../../../models/hub.js";
import { openRedisQueue, type RedisJobQueue } from "../../../queue/index.js";
import { checkUsersThresholds, parseThresholds, type Threshold } from "../../../users/metrics/index.js";
import { renderUsersReport } from "../../../users/report/index.js";
import {
  checkMode,
  modelJudges,
  openUsersAgent,
  readTranscripts,
  runUsers,
  type UsersMode,
  usersRunVerdict,
} from "../../../users/run/index.js";
import { loadScenarios } from "../../../users/scenario/index.js";
import { userToolKindSummaries } from "../../../users/simulator/index.js";
import {
  type CliIo,
  collect,
  interruptOnSignals,
  Progress,
  parsePositiveInteger,
  parsePositiveSeconds,
  parseWholeNumber,
} from "../../io.js";
import { printTableRow } from "./shared.js";

/** The judge roles `--judge-model` sets (each falls back to roles.default otherwise). */
export const JUDGE_ROLES = ["realism", "failures", "consolidation", "checklist", "judge"] as const;

const MODES = ["api-only", "hybrid", "ui-only"] as const;

function parseMode(value: string): UsersMode {
  if (!(MODES as readonly string[]).includes(value))
    throw new InvalidArgumentError(`use one of ${MODES.join(", ")}`);
  return value as UsersMode;
}

interface UsersRunCliOptions {
  mode: UsersMode;
  queue?: string;
  maxSteps?: number;
  screenshots?: boolean;
  scenarios: string;
  agent: string;
  agentTools?: string[];
  httpConfig?: string;
  runs: number;
  concurrency: number;
  seed: string;
  out: string;
  resume?: boolean;
  failUnder?: string;
  judges: boolean;
  userModel?: string;
  judgeModel?: string;
  agentTimeout: number;
  maxErrors: number;
  json?: boolean;
}

/** The ledger in one line: the calls really made apart from the answers the cache gave. */
function usageLine(totals: {
  calls: number;
  cachedCalls: number;
  rejectedCalls: number;
  inputTokens: number;
  outputTokens: number;
}): string {
  return `${totals.calls - totals.cachedCalls} model calls made (${totals.cachedCalls} answered from the cache, ${totals.rejectedCalls} answers rejected), ${totals.inputTokens} in / ${totals.outputTokens} out tokens`;
}

/**
 * The roles of a users run: `--user-model` and `--judge-model` set theirs; a role the config leaves
 * unset (no role of its own, no roles.default) is served by a model given on the command line (the user's,
 * else the judges', else a planner agent's), so one model flag is enough.
 */
export function usersRunRoles(
  configured: Record<string, string>,
  options: { userModel?: string; judgeModel?: string; agent: string },
): Record<string, string> {
  const roles = { ...configured };
  if (options.userModel) roles.user = options.userModel;
  if (options.judgeModel) for (const role of JUDGE_ROLES) roles[role] = options.judgeModel;
  const planner = options.agent.startsWith("planner:") ? options.agent.slice("planner:".length) : undefined;
  const fromCommandLine = options.userModel ?? options.judgeModel ?? planner;
  if (fromCommandLine && !roles.default)
    for (const role of ["user", ...JUDGE_ROLES]) roles[role] ??= fromCommandLine;
  return roles;
}

/**
 * The models of a `users run` or `users test`: the config (the global --config) with the model flags' roles;
 * also the config as read and the roles, for what is handed to workers.
 */
export function usersModels(
  command: Command,
  options: { userModel?: string; judgeModel?: string; agent: string },
): { models: Models; config: TerrariumConfig; roles: Record<string, string> } {
  const configPath = command.optsWithGlobals().config as string | undefined;
  const { config } = loadConfig(configPath ? { path: configPath } : {});
  const roles = usersRunRoles(config.roles, options);
  const models = new Models({
    config: { ...config, roles },
    modelFlags: ["--user-model <provider:model>", "--judge-model <provider:model>"],
  });
  return { models, config, roles };
}

export function registerUsersRunCommand(
  users: Command,
  io: CliIo,
  setExitCode: (code: number) => void,
): void {
  users
    .command("run")
    .description(
      "simulate users talking to an agent; write transcripts, every VISTA metric and an HTML report",
    )
    .requiredOption("--scenarios <path>", "a scenario file or a folder of them (.yaml, .yml, .json)")
    .requiredOption(
      "--agent <target>",
      "planner:<provider:model> | openai-compatible:<baseURL>#<model> | http:<url> | module:<file>#<export> | browser:<page url> | browser:demo (the demo shop)",
    )
    .option(
      "--agent-tools <source>",
      "the agent's tools: an environment (tau2-retail) or tool files (repeatable), run or simulated by terrarium for planner: and openai-compatible: agents, declared only (TDE's N counts them) for module: and http: agents; for browser: agents, terrarium:<url> of the server behind the page",
      collect,
    )
    .option(
      "--mode <mode>",
      "api-only (the agent's API), hybrid (its web page and the user's own tools, chosen per step) or ui-only (the page alone)",
      parseMode,
      "api-only",
    )
    .option("--screenshots", "browser modes: keep a PNG of the page per step under screenshots/<run>/")
    .option(
      "--max-steps <n>",
      "browser modes: most observe → act steps per run (default 8 × max_turns)",
      parsePositiveInteger,
    )
    .option("--http-config <file>", "for http: targets: request template, response paths, session header")
    .option(
      "--runs <k>",
      "conversations per scenario (mean ± std and pass^k over them)",
      parsePositiveInteger,
      1,
    )
    .option("--concurrency <n>", "conversations at once", parsePositiveInteger, 2)
    .option("--seed <seed>", "seed of every run (run k of scenario s uses <seed>/<s>/<k>)", "0")
    .requiredOption(
      "--out <dir>",
      "run folder: run.json, transcripts/, failures.json, summary.json, report.html",
    )
    .option("--resume", "keep the finished runs in --out and play the missing ones")
    .option(
      "--fail-under <thresholds>",
      "exit 1 when a metric is under its threshold, e.g. tde=0.5,realism.goal=95",
    )
    .option("--no-judges", "skip the judges (realism, failures, goal success): no judge model calls")
    .option("--user-model <model>", "the simulated user's model (default: roles.user, else roles.default)")
    .option("--judge-model <model>", "the judges' model (default: roles.judge etc., else roles.default)")
    .option(
      "--queue <url>",
      "api-only: redis://host:port[/db][?queue=<name>] plays the runs on `terrarium worker`s (they rebuild the agent with their own config); local, the default, plays them here",
    )
    .option(
      "--agent-timeout <seconds>",
      "longest wait for the agent (its session, page or each answer); a run that waits longer ends as agent_error",
      parsePositiveSeconds,
      60,
    )
    .option(
      "--max-errors <n>",
      "errored runs (agent_error, user_error, a judge that failed) allowed before the exit code is 1",
      parseWholeNumber,
      0,
    )
    .option("--json", "print summary.json to stdout instead of the table")
    .addHelpText(
      "after",
      `
Examples:
  terrarium users run --scenarios examples/users/scenarios --agent planner:openai:gpt-4.1-mini --agent-tools tau2-retail --runs 2 --out runs/retail
  terrarium users run --scenarios examples/users/scenarios --agent openai-compatible:$AGENT_URL#my-agent --agent-tools tau2-retail --out runs/mine --fail-under realism.goal=90
  terrarium users run --scenarios examples/users/scenarios --agent module:examples/users/rule-agent.mjs#reply --no-judges --concurrency 4 --out runs/quick
  terrarium users run --scenarios examples/users/scenarios --agent browser:demo --mode hybrid --screenshots --max-steps 12 --out runs/shop

$AGENT_URL is your agent's chat-completions base URL (e.g. http://127.0.0.1:8000/v1). browser:demo starts the
demo shop (terrarium users demo) for the run; for your own page give browser:<url> and, when a terrarium
server serves its agent's tools, --agent-tools terrarium:<server url>. Models: roles.user and
the judge roles (realism, failures, consolidation, checklist, judge) of terrarium.config.yaml, each falling
back to roles.default; --user-model and --judge-model override them, and a model given on the command line
(--user-model, else --judge-model, else a planner: agent's model) serves every role the config leaves unset.

Exit codes: 0 when every run played and (unless --no-judges) was judged and every --fail-under held; 1 when
more runs errored than --max-errors allows (one line per kind of error, with its count and first message) or
a threshold failed; 2 for bad input (nothing is spent); 130 when interrupted (the first Ctrl-C or SIGTERM
starts no new run and keeps unfinished ones for --resume).

The user's own tools (a scenario's user_tools, by kind; docs/users.md):
${Object.entries(userToolKindSummaries())
  .map(([kind, summary]) => `  ${kind.padEnd(13)}${summary}`)
  .join("\n")}
`,
    )
    .action(async (options: UsersRunCliOptions, command: Command) => {
      // Everything that can be refused is checked before the first model call.
      const thresholds: Threshold[] = options.failUnder ? parseThresholds(options.failUnder) : [];
      checkUsersThresholds(thresholds, { runs: options.runs, judges: options.judges });
      const scenarios = loadScenarios(options.scenarios);
      const onQueue = options.queue !== undefined && options.queue !== "local";
      checkMode(options.mode, options.agent.startsWith("browser:"), onQueue);
      const { models, config, roles } = usersModels(command, options);
      const interrupt = interruptOnSignals(io, "the runs");
      const agentTimeoutMs = options.agentTimeout * 1000;
      try {
        await models.backend(models.modelFor("user"));
        if (options.judges) for (const role of JUDGE_ROLES) await models.backend(models.modelFor(role));
        const agent = await openUsersAgent(options.agent, {
          models,
          seed: options.seed,
          timeoutMs: agentTimeoutMs,
          ...(options.agentTools ? { agentTools: options.agentTools } : {}),
          ...(options.httpConfig ? { httpConfig: options.httpConfig } : {}),
        });
        let queue: RedisJobQueue | undefined;
        try {
          queue = onQueue ? await openRedisQueue(options.queue as string) : undefined;
          if (queue)
            io.stderr.write(
              `playing the runs on ${queue.description}: start terrarium worker --queue … to work on them\n`,
            );
          const progress = new Progress(io.stderr, scenarios.length * options.runs, "runs");
          let result: Awaited<ReturnType<typeof runUsers>>;
          try {
            result = await runUsers({
              scenarios,
              agent,
              ...(options.agentTools ? { agentTools: options.agentTools } : {}),
              models,
              outDir: options.out,
              runs: options.runs,
              concurrency: options.concurrency,
              seed: options.seed,
              resume: options.resume === true,
              mode: options.mode,
              agentTimeoutMs,
              signal: interrupt.signal,
              ...(queue
                ? {
                    queue: {
                      queue,
                      agent: {
                        spec: options.agent,
                        ...(options.agentTools ? { agentTools: options.agentTools } : {}),
                        ...(options.httpConfig ? { httpConfig: options.httpConfig } : {}),
                      },
                      // What the command line decided; each worker reads its own config for the rest.
                      roles: Object.fromEntries(
                        Object.entries(roles).filter(([role, model]) => config.roles[role] !== model),
                      ),
                    },
                  }
                : {}),
              ...(options.screenshots ? { screenshots: true } : {}),
              ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
              thresholds,
              ...(options.judges ? { judges: modelJudges(models) } : {}),
              onRun: ({ run }) =>
                progress.tick(`${run.runId}: ${run.end?.endReason ?? "?"} after ${run.turns.length} turns`),
              onPhase: (phase) => {
                if (phase === "consolidating") io.stderr.write("consolidating the agent's failures…\n");
              },
            });
          } catch (error) {
            progress.done();
            if (!(error instanceof TerrariumError && error.code === "INTERRUPTED")) throw error;
            io.stderr.write(`${error.message}\n`);
            setExitCode(130);
            return;
          }
          const { summary, kept } = result;
          progress.done();
          if (kept > 0) io.stderr.write(`kept ${kept} finished run(s) from ${options.out}\n`);
          const stored = readTranscripts(options.out);
          writeFileSync(
            join(options.out, "report.html"),
            renderUsersReport(summary, stored, { screenshotsRoot: options.out }),
          );
          if (options.json) io.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
          else printTableRow(io, summary, options.out);
          io.stderr.write(`usage: ${usageLine(models.ledger.totals)}\n`);
          const verdict = usersRunVerdict(summary, stored, { maxErrors: options.maxErrors });
          for (const line of verdict.lines) io.stderr.write(`${line}\n`);
          if (verdict.exitCode !== 0) setExitCode(verdict.exitCode);
        } finally {
          await queue?.close();
          await agent.close();
        }
      } finally {
        interrupt.dispose();
        await models.close();
      }
    });
}
