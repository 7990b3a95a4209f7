import { readFileSync, statSync } from "node:fs";
import { Catalog } from "../../catalog/catalog.js";
import { parseDocument } from "../../catalog/read-document.js";
import { parseJsonText } from "../../core/checked-json.js";
import { TerrariumError } from "../../core/errors.js";
import { Models } from "../../models/hub.js";
import type { UsageTotals } from "../../models/usage.js";
import { ChecklistWriter, type JudgedCall, type Judgement, judgeAttempt } from "../../task/feedback.js";
import {
  BOOTSTRAP_MODES,
  type BootstrapMode,
  createTaskEngine,
  type TaskEngine,
} from "../../task/task-engine.js";
import type { EpisodeEnd, EpisodeScore, EpisodeStart } from "../openenv/types.js";
import { MAX_TASK_FILE_BYTES, MAX_TASK_JSON_DEPTH } from "./index.js";
import { FINISH_TOOL, type TaskSet } from "./task-set.js";

export interface GatsTaskSetOptions {
  /**
   * The configuration's models. A model for the simulator role (or roles.default) simulates the tools and
   * bootstraps each task's starting state, as `gats --dataset` does; models for the checklist and judge
   * roles score episodes. Without them: tools answer by schema synthesis, and rewards are null.
   */
  models?: Models;
  /** Gecko's bootstrap mode for the starting state (default `auto`, as `gats`); needs a simulator model. */
  bootstrap?: BootstrapMode;
  /** Steps an episode may take in all (default: the server's). */
  maxSteps?: number;
}

/** One line of a `gats --dataset` file, checked (its tools read). */
export interface GatsTask {
  id: string;
  turns: string[];
  state: unknown;
  catalog: Catalog;
}

/** The two checks of a gats task, both the judge's. */
const CHECKS = ["checklist", "success"] as const;

/** Whether a parsed record is a `gats --dataset` line (`id`, `tools`, `turns` as a list of texts). */
export function isGatsDatasetLine(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const line = value as Record<string, unknown>;
  return (
    (typeof line.id === "string" || typeof line.id === "number") &&
    Object.hasOwn(line, "tools") &&
    Array.isArray(line.turns) &&
    line.turns.every((turn) => typeof turn === "string")
  );
}

/**
 * `gats --dataset` lines as episodes. A task's world is its tools simulated as `gats --dataset` simulates
 * them (the same engine building: the llm simulator when a model serves the simulator role, with the
 * starting state bootstrapped from the task once per task; schema synthesis otherwise, which the reset's
 * metadata says). The agent gets the first turn; `finish` (its `answer` is the turn's reply) ends a turn and
 * answers the next one, until the last. The reward is the judge's: per turn, a checklist written for the
 * turn (once per task, cached) and the judge's verdict on each item from the turn's calls, the state after
 * it and the answer; `checklist` is the share of items met (averaged over the turns; a turn never reached
 * counts 0) and is the reward; `success` is 1 when every item of every turn was met (GATS's success).
 * Without models for the checklist and judge roles both are null, and so is the reward: nothing is guessed.
 * The turns are the user's, fixed: a served simulated user (conversational episodes) does not take part.
 */
export async function gatsTaskSet(file: string, options: GatsTaskSetOptions = {}): Promise<TaskSet> {
  const bootstrap = options.bootstrap ?? "auto";
  if (!BOOTSTRAP_MODES.includes(bootstrap))
    throw new TerrariumError(
      "CONFIG_INVALID",
      `bootstrap must be one of ${BOOTSTRAP_MODES.join(", ")} (got ${JSON.stringify(bootstrap)})`,
    );
  if (options.maxSteps !== undefined && (!Number.isInteger(options.maxSteps) || options.maxSteps < 1))
    throw new TerrariumError(
      "CONFIG_INVALID",
      `maxSteps must be a positive integer (got ${options.maxSteps})`,
    );
  const tasks = loadGatsTasks(file);
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const models = options.models ?? new Models({ cache: null });
  const roles = models.config.roles;
  const simulatorModel = roles.simulator ?? roles.default;
  const missingRoles = ["checklist", "judge"].filter((role) => !(roles[role] ?? roles.default));
  const checklists = checklistWriterFor(models);
  // One engine per task (its tools, its starting state, bootstrapped once); one session per episode.
  const worlds = new Map<string, Promise<TaskEngine>>();
  const worldOf = (task: GatsTask): Promise<TaskEngine> => {
    let world = worlds.get(task.id);
    if (!world) {
      world = createTaskEngine({
        catalog: task.catalog,
        models,
        turns: task.turns,
        state: task.state,
        seed: task.id,
        bootstrap,
      });
      world.catch(() => worlds.delete(task.id));
      worlds.set(task.id, world);
    }
    return world;
  };
  const simulator = simulatorModel
    ? { simulator: "llm", simulator_model: simulatorModel }
    : {
        simulator: "schema",
        simulator_note:
          "no model serves the simulator role (roles.simulator or roles.default): the tools answer with data synthesized from their output schemas and never change the state",
      };
  return {
    label: file,
    taskIds: tasks.map((task) => task.id),
    async start(taskId, reset): Promise<EpisodeStart> {
      const task = byId.get(taskId) as GatsTask;
      const world = await worldOf(task);
      const engine = world.engine;
      const record = await engine.createSession({
        state: await engine.state(world.sessionId),
        ...(reset.owner ? { owner: reset.owner } : {}),
        ...(reset.seed !== undefined ? { seed: `openenv/${reset.seed}` } : {}),
        metadata: { task: task.id, openenv: { episode_id: reset.episodeId } },
      });
      const sessionId = record.id;
      const turns = task.turns.length;
      // Per turn: where its calls start in the history, and (once it ended) its state and answer.
      const turnStarts = [0];
      const ends: Array<{ state: unknown; answer: string }> = [];
      const endTurn = async (finishArguments: unknown) => {
        const answer = (finishArguments as { answer?: unknown } | undefined)?.answer;
        ends.push({ state: await engine.state(sessionId), answer: typeof answer === "string" ? answer : "" });
      };
      return {
        sessionId,
        engine,
        tools: engine.catalog.tools,
        finishTool: FINISH_TOOL,
        observation: { instruction: task.turns[0], turn: 0, turns },
        metadata: {
          format: "gats_dataset",
          ...simulator,
          bootstrap: world.bootstrap.status,
          ...(world.bootstrap.error ? { bootstrap_error: world.bootstrap.error } : {}),
        },
        ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
        onFinish: async (finishArguments) => {
          await endTurn(finishArguments);
          if (ends.length >= turns) return { done: true };
          turnStarts.push((await engine.history(sessionId)).length);
          return { done: false, result: { instruction: task.turns[ends.length], turn: ends.length, turns } };
        },
        score: async (ended: EpisodeEnd): Promise<EpisodeScore> => {
          if (missingRoles.length > 0)
            return unscored(
              `no model is configured for the ${missingRoles.join(" and ")} role${missingRoles.length > 1 ? "s" : ""} (roles.${missingRoles[0]} or roles.default)`,
            );
          // The turn under way when the episode ended otherwise than by finish is judged as it stands.
          if (ends.length < turnStarts.length)
            ends.push({ state: await engine.state(sessionId), answer: "" });
          const history = await engine.history(sessionId);
          const run = models.forRun();
          const judgements: Array<{ turn: number; judgement: Judgement } | { turn: number; reached: false }> =
            [];
          try {
            for (let turn = 0; turn < turns; turn++) {
              const end = ends[turn];
              if (!end) {
                judgements.push({ turn, reached: false });
                continue;
              }
              const text = task.turns[turn] as string;
              const previousTasks = task.turns.slice(0, turn);
              const checklist = await checklists.write(text, previousTasks, `${task.id}/${turn}`);
              const calls: JudgedCall[] = history
                .slice(turnStarts[turn], turnStarts[turn + 1] ?? history.length)
                .map((entry) => ({
                  name: entry.request.name,
                  arguments: entry.request.arguments,
                  status: entry.result.status,
                  result: entry.result.observation,
                }));
              const judgement = await judgeAttempt(
                run,
                {
                  task: text,
                  checklist,
                  state: end.state,
                  calls,
                  agentMessage: end.answer,
                  previousTurns: previousTasks.map((previous, index) => ({
                    task: previous,
                    agentMessage: ends[index]?.answer ?? "",
                  })),
                  catalog: engine.catalog,
                },
                { scope: sessionId },
              );
              judgements.push({ turn, judgement });
            }
          } catch (error) {
            return unscored(`the checklist or judge model failed: ${(error as Error).message}`, usageOf(run));
          }
          const scores = judgements.map((entry) => ("judgement" in entry ? entry.judgement.score : 0));
          const checklist = scores.reduce((total, score) => total + score, 0) / turns;
          const success = judgements.every((entry) => "judgement" in entry && entry.judgement.success)
            ? 1
            : 0;
          return {
            reward: checklist,
            breakdown: { checklist, success },
            metadata: {
              judgements: judgements.map((entry) =>
                "judgement" in entry
                  ? {
                      turn: entry.turn,
                      score: entry.judgement.score,
                      success: entry.judgement.success,
                      items: entry.judgement.items,
                      feedback: entry.judgement.feedback,
                    }
                  : { turn: entry.turn, reached: false, score: 0 },
              ),
              ...(ended.reason !== "finish" ? { reward_note: `the episode ended by ${ended.reason}` } : {}),
              judge_usage: usageOf(run),
            },
          };
        },
      };
    },
  };
}

const WRITERS = new WeakMap<Models, ChecklistWriter>();

/** One checklist writer per models: a task's turn gets the same checklist in every episode and set. */
function checklistWriterFor(models: Models): ChecklistWriter {
  let writer = WRITERS.get(models);
  if (!writer) {
    writer = new ChecklistWriter(models);
    WRITERS.set(models, writer);
  }
  return writer;
}

/** A score that could not be computed: every check null, the reward null, and why. */
function unscored(reason: string, usage?: Record<string, number>): EpisodeScore {
  return {
    reward: null,
    breakdown: Object.fromEntries(CHECKS.map((check) => [check, null])),
    metadata: {
      skipped_checks: CHECKS.map((check) => ({ check, reason })),
      ...(usage ? { judge_usage: usage } : {}),
    },
  };
}

function usageOf(models: Models): Record<string, number> {
  const totals: UsageTotals = models.ledger.totals;
  return {
    calls: totals.calls,
    input_tokens: totals.inputTokens,
    output_tokens: totals.outputTokens,
    cost_usd: totals.costUsd,
  };
}

/**
 * Reads a `gats --dataset` file: JSON lines (or a JSON/YAML list), each `{"id", "tools": [...], "turns":
 * ["…"], "state"?}`; the tools are read now, so a line that cannot be served fails the load, located.
 */
export function loadGatsTasks(file: string): GatsTask[] {
  let text: string;
  try {
    if (statSync(file).size > MAX_TASK_FILE_BYTES)
      throw new TerrariumError("TOO_LARGE", "the task file is larger than 64 MB", { where: { file } });
    text = readFileSync(file, "utf8");
  } catch (error) {
    if (error instanceof TerrariumError) throw error;
    throw new TerrariumError("FILE_UNREADABLE", `cannot read the task file: ${(error as Error).message}`, {
      where: { file },
    });
  }
  const entries: Array<{ value: unknown; where: { file: string; line?: number; pointer?: string } }> = [];
  const lines = text.split("\n");
  const jsonLines = lines.filter((line) => line.trim() !== "").every((line) => line.trim().startsWith("{"));
  if (jsonLines) {
    for (const [index, line] of lines.entries()) {
      if (line.trim() === "") continue;
      const where = { file, line: index + 1 };
      try {
        entries.push({ value: parseJsonText(line, MAX_TASK_JSON_DEPTH, `line ${index + 1}`), where });
      } catch (error) {
        if (error instanceof TerrariumError) throw error.locatedIn(where);
        throw error;
      }
    }
  } else {
    const document = parseDocument(text, file);
    if (!Array.isArray(document))
      throw new TerrariumError("INVALID_INPUT", "a gats dataset is JSON lines (or a list) of tasks", {
        where: { file },
      });
    for (const [index, value] of document.entries())
      entries.push({ value, where: { file, pointer: `/${index}` } });
  }
  if (entries.length === 0)
    throw new TerrariumError("INVALID_INPUT", "the task file holds no tasks", { where: { file } });
  const tasks: GatsTask[] = [];
  const seen = new Set<string>();
  for (const { value, where } of entries) {
    const fail = (message: string) => new TerrariumError("INVALID_INPUT", message, { where });
    if (!isGatsDatasetLine(value))
      throw fail('not a gats dataset line: expected {"id", "tools": [...], "turns": ["…"], "state"?}');
    const line = value as { id: string | number; tools: unknown; turns: string[]; state?: unknown };
    const id = String(line.id);
    if (seen.has(id)) throw fail(`task id "${id}" appears twice`);
    seen.add(id);
    if (line.turns.length === 0 || line.turns.some((turn) => turn.trim() === ""))
      throw fail(`task ${id}: turns must be a non-empty list of non-empty texts`);
    let catalog: Catalog;
    try {
      catalog = Catalog.fromDocument(line.tools);
    } catch (error) {
      if (error instanceof TerrariumError) throw error.locatedIn(where);
      throw error;
    }
    if (catalog.tools.length === 0) throw fail(`task ${id}: its tools hold no tool`);
    tasks.push({ id, turns: line.turns, state: line.state ?? {}, catalog });
  }
  return tasks;
}
