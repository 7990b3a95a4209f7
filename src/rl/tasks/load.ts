import { readFileSync, statSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { Environment } from "../../envs/types.js";
import type { Models } from "../../models/hub.js";
import type { Engine } from "../../sim/engine.js";
import type { Judge } from "../rewards/index.js";
import { bfclTaskSet, isBfclMultiTurnEntry } from "./bfcl.js";
import { gatsTaskSet, isGatsDatasetLine } from "./gats.js";
import { loadTasks, MAX_TASK_FILE_BYTES } from "./index.js";
import type { TaskSet } from "./task-set.js";
import { tau2TaskSet } from "./tau2-set.js";

/** What every task format may need to start and score its episodes. */
export interface TaskSetContext {
  /** The served engine and environment (tau2 and terrarium-format tasks without an environment run there). */
  engine: Engine;
  environment?: Environment;
  judge?: Judge;
  maxSteps?: number;
  /** A simulated user talks to the agent: the agent is not shown the user's instructions. */
  conversational?: boolean;
  /** BFCL's Python backend sources (BFCL multi-turn files). */
  backends?: string;
  /** The configuration's models (gats task files simulate and judge with them); made only when asked for. */
  models?: () => Models;
}

/** The first task of a file (JSON lines, a JSON array, `{"tasks": [...]}`, or YAML), or undefined. */
function firstRecord(file: string): unknown {
  let text: string;
  try {
    if (statSync(file).size > MAX_TASK_FILE_BYTES) return undefined; // the format's own loader says so
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const firstLine =
    text
      .split("\n")
      .find((line) => line.trim() !== "")
      ?.trim() ?? "";
  try {
    if (firstLine.startsWith("{") && firstLine.endsWith("}")) return JSON.parse(firstLine);
  } catch {
    // Not JSON lines: read as a whole below.
  }
  try {
    const document = parseYaml(text, { maxAliasCount: 100 }) as unknown;
    if (Array.isArray(document)) return document[0];
    if (
      document !== null &&
      typeof document === "object" &&
      Array.isArray((document as { tasks?: unknown }).tasks)
    )
      return (document as { tasks: unknown[] }).tasks[0];
    return document;
  } catch {
    return undefined;
  }
}

/**
 * Reads `serve --tasks` files, each into a task set; the format is decided by the file's first record:
 * BFCL multi-turn entries, `gats --dataset` lines, else tau2-bench task files as published or terrarium's
 * own format. Every file is read and checked before anything is served.
 */
export async function loadTaskSets(files: readonly string[], context: TaskSetContext): Promise<TaskSet[]> {
  const sets: TaskSet[] = [];
  for (const file of files) {
    const first = firstRecord(file);
    if (isBfclMultiTurnEntry(first)) {
      sets.push(
        await bfclTaskSet(file, {
          ...(context.backends !== undefined ? { backends: context.backends } : {}),
          ...(context.maxSteps !== undefined ? { maxSteps: context.maxSteps } : {}),
        }),
      );
      continue;
    }
    if (isGatsDatasetLine(first)) {
      sets.push(
        await gatsTaskSet(file, {
          ...(context.models ? { models: context.models() } : {}),
          ...(context.maxSteps !== undefined ? { maxSteps: context.maxSteps } : {}),
        }),
      );
      continue;
    }
    sets.push(
      await tau2TaskSet({
        label: file,
        tasks: loadTasks(file),
        engine: context.engine,
        ...(context.environment ? { environment: context.environment } : {}),
        ...(context.judge ? { judge: context.judge } : {}),
        ...(context.maxSteps !== undefined ? { maxSteps: context.maxSteps } : {}),
        ...(context.conversational ? { conversational: true } : {}),
      }),
    );
  }
  return sets;
}
