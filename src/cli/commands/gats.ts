import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Command, Option } from "commander";
import { readDocument } from "../../catalog/read-document.js";
import { hashJson } from "../../core/canonical-json.js";
import { ErrorTally, errorVerdict } from "../../core/error-tally.js";
import { TerrariumError } from "../../core/errors.js";
import { loadConfig, withCommandLineModel } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { formatCost, type UsageTotals } from "../../models/usage.js";
import { describeWaiting, openRedisQueue } from "../../queue/index.js";
import { buildEngine } from "../../sim/build-engine.js";
import {
  type DatasetTaskOptions,
  type DatasetTaskResult,
  GATS_TASK_JOB,
  runDatasetTask,
} from "../../task/dataset-job.js";
import { type GatsResult, gats } from "../../task/gats.js";
import type { TaskLine } from "../../task/run-task.js";
import { BOOTSTRAP_MODES, type BootstrapMode, bootstrapTaskState } from "../../task/task-engine.js";
import { type CliIo, collect, Progress, parsePositiveInteger, parseWholeNumber } from "../io.js";
import { describeLoad } from "./tools.js";

interface GatsCliOptions {
  tools?: string[];
  task?: string[];
  state?: string;
  planner?: string;
  maxRetries: number;
  json?: boolean;
  dataset?: string;
  out?: string;
  concurrency: number;
  resume?: boolean;
  strict?: boolean;
  bootstrap: BootstrapMode;
  queue?: string;
  maxErrors: number;
}

/** The flag of `gats` that names a model (for the message of a role with no model). */
const MODEL_FLAGS = ["--planner <provider:model>"] as const;

export function registerGatsCommand(program: Command, io: CliIo, setExitCode: (code: number) => void): void {
  program
    .command("gats")
    .description("refine an agent's tool calls against simulated tools with judge feedback (GATS)")
    .option("--tools <source>", "tool definitions, an MCP server, or an environment (repeatable)", collect)
    .option("--task <text>", "the task; repeat for the turns of a multi-turn task", collect)
    .option("--state <file>", "starting state (JSON or YAML)")
    .option("--strict", "fail when any operation of the tool files cannot be read")
    .option(
      "--planner <model>",
      "the planner's model (default: roles.planner or roles.default); it also serves every role the configuration leaves unset",
    )
    .option("--max-retries <n>", "retries after the first attempt", parseWholeNumber, 3)
    .option("--json", "print everything as JSON")
    .option("--dataset <file>", 'JSONL of tasks: {"id", "tools": [...], "turns": ["…"], "state"?}')
    .option("--out <file>", "results JSONL for --dataset")
    .option("--concurrency <n>", "tasks at once for --dataset", parsePositiveInteger, 2)
    .option("--resume", "skip dataset tasks already in --out with a verdict (errored ones run again)")
    .option(
      "--max-errors <n>",
      "with --dataset: errored tasks (a model call or simulated call that failed) allowed before the exit code is 1",
      parseWholeNumber,
      0,
    )
    .option(
      "--queue <url>",
      "with --dataset: redis://host:port[/db][?queue=<name>&prefix=<prefix>] enqueues the tasks for `terrarium worker`s (local, the default, runs them here)",
    )
    .addOption(
      new Option(
        "--bootstrap <mode>",
        "bootstrap the starting state from the task with the simulator's model",
      )
        .choices([...BOOTSTRAP_MODES])
        .default("auto"),
    )
    .addHelpText(
      "after",
      `
Needs models for the planner, checklist and judge roles (roles.default covers them), and uses one for the
simulator, validator and bootstrap roles when the configuration names one. A model given with --planner
serves every role the configuration leaves unset, so --planner alone is enough without a configuration.

With --dataset, a task errors when it could not run (a model call failed or timed out) or a simulated call
of its chosen attempts failed; errored tasks are counted apart (left out of the solved rate), listed by
kind with their first message, and make the exit code 1 unless --max-errors allows them. --json prints the
run's summary (counts, errorKinds) as JSON.

Examples:
  terrarium gats --tools bank --task "Move 100 from ACC-1001 to ACC-1002" --planner openai:gpt-4.1-mini
  terrarium gats --dataset tasks.jsonl --out results.jsonl --concurrency 4 --resume
`,
    )
    .action(async (options: GatsCliOptions, command: Command) => {
      const configPath = command.optsWithGlobals().config as string | undefined;
      const { config } = loadConfig(configPath ? { path: configPath } : {});
      const models = new Models({
        config: withCommandLineModel(config, options.planner),
        modelFlags: MODEL_FLAGS,
      });
      try {
        // Every role a task needs has a model before anything is spent (workers read their own configuration).
        const onQueue = options.dataset && options.queue !== undefined && options.queue !== "local";
        if (!onQueue)
          for (const role of ["checklist", "judge", ...(options.planner ? [] : ["planner"])])
            models.modelFor(role);
        if (options.dataset) await runDataset(options, models, io, setExitCode);
        else await runOne(options, models, io, setExitCode, configPath);
      } finally {
        await models.close();
      }
    });
}

async function runOne(
  options: GatsCliOptions,
  models: Models,
  io: CliIo,
  setExitCode: (code: number) => void,
  configPath: string | undefined,
): Promise<void> {
  if (!options.tools?.length || !options.task?.length) {
    throw new TerrariumError("INVALID_INPUT", "give --tools and --task (or --dataset)");
  }
  // The same models (config and ledger) serve the simulator and validator as the planner and judge.
  const { engine, environment } = await buildEngine({
    sources: options.tools,
    models,
    ...(configPath ? { config: configPath } : {}),
    ...(options.state ? { state: options.state } : {}),
    ...(options.strict ? { strict: true } : {}),
  });
  io.stderr.write(describeLoad(engine.catalog));
  try {
    const start = await engine.createSession();
    // Tools simulated by a model start from a state bootstrapped from the task; an environment has its own.
    const bootstrap = await bootstrapTaskState(engine, start.id, models, {
      turns: options.task,
      state: await engine.state(start.id),
      mode: options.bootstrap,
      canBootstrap: !environment && Boolean(models.config.roles.simulator ?? models.config.roles.default),
    });
    if (bootstrap.status === "failed")
      io.stderr.write(`the state bootstrap failed (${bootstrap.error}); starting from the given state\n`);
    const result = await gats({
      engine,
      models,
      startSession: start.id,
      turns: options.task,
      maxRetries: options.maxRetries,
      ...(options.planner ? { planner: { model: options.planner } } : {}),
    });
    const usage = models.ledger.totals;
    if (options.json)
      io.stdout.write(`${JSON.stringify({ schemaVersion: 1, ...result, usage, bootstrap }, null, 2)}\n`);
    else io.stdout.write(summarise(result, usage));
    if (!result.success) setExitCode(1);
  } finally {
    await engine.close();
  }
}

function summarise(result: GatsResult, usage: UsageTotals): string {
  const lines: string[] = [];
  for (const [index, turn] of result.turns.entries()) {
    lines.push(`turn ${index + 1}: ${turn.task}`);
    for (const attempt of turn.attempts) {
      const mark = attempt.index === turn.chosen ? "*" : " ";
      lines.push(
        `  ${mark} attempt ${attempt.index}: ${attempt.judgement.success ? "success" : "not done"} (score ${attempt.judgement.score.toFixed(2)}), ` +
          `${attempt.calls.length} calls, ${Math.round(attempt.latencyMs)} ms, ${attempt.usage.inputTokens + attempt.usage.outputTokens} tokens, ${formatCost(attempt.usage)}`,
      );
    }
    for (const call of result.calls[index] ?? [])
      lines.push(`    ${call.name}(${JSON.stringify(call.arguments)})`);
  }
  lines.push(
    `${result.success ? "success" : "not solved"}; ${usage.calls} model calls (every role: planner, checklist, judge, simulator, validator, bootstrap), ${formatCost(usage)}, ${Math.round(result.latencyMs)} ms`,
  );
  return `${lines.join("\n")}\n`;
}

async function runDataset(
  options: GatsCliOptions,
  models: Models,
  io: CliIo,
  setExitCode: (code: number) => void,
): Promise<void> {
  if (!options.out) throw new TerrariumError("INVALID_INPUT", "--dataset needs --out <results.jsonl>");
  const lines = readDocument(options.dataset as string);
  const tasks = (Array.isArray(lines) ? lines : [lines]) as TaskLine[];
  // Resumed: tasks with a verdict are kept; errored ones are dropped from the file and run again.
  const done = options.resume && existsSync(options.out) ? keepFinishedTasks(options.out) : new Set<string>();
  const pending = tasks.filter((task) => !done.has(String(task.id)));
  let solved = 0;
  let unsolved = 0;
  const errors = new ErrorTally();
  const progress = new Progress(io.stderr, pending.length, "tasks");
  // On a queue the models run in the workers: the cost is what the tasks' lines report.
  const reported = { costUsd: 0, unpricedCalls: 0 };
  const finish = ({ record, outcome }: DatasetTaskResult) => {
    const usage = record.usage as Partial<UsageTotals> | undefined;
    reported.costUsd += usage?.costUsd ?? 0;
    reported.unpricedCalls += usage?.unpricedCalls ?? 0;
    if (outcome === "solved") solved++;
    else if (outcome === "unsolved") unsolved++;
    else
      errors.add(
        String(record.id),
        typeof record.errorKind === "string" ? record.errorKind : "task_error",
        String(record.error ?? outcome),
      );
    // One line per task as it finishes, so an interrupted run can resume.
    appendFileSync(options.out as string, `${JSON.stringify(record)}\n`);
    progress.tick(`${solved} solved, ${errors.errored} errored`);
  };
  const taskOptions: DatasetTaskOptions = {
    maxRetries: options.maxRetries,
    bootstrap: options.bootstrap,
    ...(options.planner ? { plannerModel: options.planner } : {}),
  };
  const onQueue = options.queue !== undefined && options.queue !== "local";
  if (onQueue) {
    // The planner's model serves the roles a worker's configuration leaves unset, as it does here.
    const queued: DatasetTaskOptions = {
      ...taskOptions,
      ...(options.planner ? { defaultModel: options.planner } : {}),
    };
    await runDatasetOnQueue(options, models, pending, queued, finish, io);
  } else {
    let next = 0;
    const worker = async () => {
      while (next < pending.length)
        finish(await runDatasetTask(pending[next++] as TaskLine, models.forRun(), taskOptions));
    };
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  }
  progress.done();
  const scored = solved + unsolved;
  const verdict = errorVerdict(errors.counts(), {
    total: pending.length,
    maxErrors: options.maxErrors,
    noun: "tasks",
  });
  const cost = onQueue ? reported : models.ledger.totals;
  if (options.json) {
    const summary = {
      schemaVersion: 1,
      kind: "terrarium.gats.dataset-summary",
      tasks: pending.length,
      skipped: done.size,
      solved,
      unsolved,
      // Tasks with a verdict: the solved rate's denominator (errored tasks are left out of it).
      scored,
      successRate: scored > 0 ? solved / scored : null,
      errored: errors.errored,
      errorKinds: errors.kinds(),
      maxErrors: options.maxErrors,
      maxRetries: options.maxRetries,
      costUsd: cost.costUsd,
      unpricedCalls: cost.unpricedCalls,
    };
    io.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  }
  io.stderr.write(
    `${solved}/${scored} solved (over the ${scored} tasks with a verdict; max retries ${options.maxRetries}); ${errors.errored} errored (left out); ${done.size} skipped as already done; ${formatCost(cost)}\n`,
  );
  for (const line of verdict.lines) io.stderr.write(`${line}\n`);
  if (verdict.failed) setExitCode(1);
}

/**
 * For `--resume`: keeps the results file's tasks that have a verdict (the last line of each) and drops
 * the errored ones, which run again; returns the ids kept.
 */
function keepFinishedTasks(file: string): Set<string> {
  const kept = new Map<string, string>();
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, index) => {
      if (!line.trim()) return;
      let record: { id?: unknown; error?: unknown };
      try {
        record = JSON.parse(line) as { id?: unknown; error?: unknown };
      } catch (error) {
        throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
          where: { file, line: index + 1 },
        });
      }
      if (record === null || typeof record !== "object" || record.id === undefined)
        throw new TerrariumError(
          "INVALID_INPUT",
          "not a gats results file (a line has no id): --resume continues what gats --dataset wrote in --out",
          { where: { file, line: index + 1 } },
        );
      const id = String(record.id);
      if (record.error !== undefined) kept.delete(id);
      else kept.set(id, line);
    });
  writeFileSync(file, [...kept.values()].map((line) => `${line}\n`).join(""));
  return new Set(kept.keys());
}

/**
 * The dataset's pending tasks as work items for `terrarium worker`s: one run per dataset, results file and
 * options (the same run when resumed); each task's line is written as it arrives from any worker.
 */
async function runDatasetOnQueue(
  options: GatsCliOptions,
  models: Models,
  pending: TaskLine[],
  taskOptions: DatasetTaskOptions,
  finish: (result: DatasetTaskResult) => void,
  io: CliIo,
): Promise<void> {
  const queue = await openRedisQueue(options.queue as string);
  try {
    const runId = `gats-${hashJson({
      dataset: readFileSync(options.dataset as string, "utf8"),
      out: resolve(options.out as string),
      taskOptions,
    }).slice(0, 24)}`;
    if (!options.resume) await queue.discard(runId);
    io.stderr.write(`${pending.length} tasks to run on ${queue.description}\n`);
    const byId = new Map(pending.map((task) => [String(task.id), task]));
    const outcome = await queue.submit<DatasetTaskOptions, TaskLine, DatasetTaskResult>(
      {
        runId,
        kind: GATS_TASK_JOB,
        context: taskOptions,
        items: [...byId].map(([id, payload]) => ({ id, payload })),
        // The configuration's budget holds for the whole run, over every worker.
        ...(models.config.budgetUsd !== undefined ? { budgetUsd: models.config.budgetUsd } : {}),
      },
      {
        onWaiting: (info) => io.stderr.write(`${describeWaiting(info, queue.description)}\n`),
        onResult: (result) =>
          finish(
            result.ok
              ? result.value
              : {
                  record: {
                    schemaVersion: 1,
                    id: byId.get(result.id)?.id ?? result.id,
                    error: result.error,
                    errorKind: "worker_error",
                  },
                  outcome: "failed",
                },
          ),
      },
    );
    if (outcome.earlier > 0) io.stderr.write(`${outcome.earlier} tasks were run by an earlier submission\n`);
  } finally {
    await queue.close();
  }
}
