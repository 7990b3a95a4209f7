import { readFileSync, statSync } from "node:fs";
import { TerrariumError } from "../../core/errors.js";
import { loadEnvironment } from "../../envs/load.js";
import type { Environment } from "../../envs/types.js";
import type { SessionExport } from "../../sim/engine.js";
import type { RlTask } from "../tasks/index.js";
import { isSessionExport, type Judge, type RewardResult, scoreExport } from "./index.js";

/** The largest export read from a file or a server (the same bound as a task file). */
export const MAX_EXPORT_BYTES = 64 * 1024 * 1024;
/** How long fetching an export from a server may take. */
export const DEFAULT_EXPORT_FETCH_TIMEOUT_MS = 60_000;

/**
 * The task a stored episode ran, as its session's metadata names it: `task` (set by task episodes),
 * `task_id`, or `openenv.task_id`. Undefined when it names none.
 */
export function taskIdOfExport(exported: SessionExport): string | undefined {
  const metadata = exported?.session?.metadata;
  if (typeof metadata !== "object" || metadata === null) return undefined;
  const own = (source: unknown, key: string): unknown =>
    typeof source === "object" && source !== null && Object.hasOwn(source, key)
      ? (source as Record<string, unknown>)[key]
      : undefined;
  for (const value of [
    own(metadata, "task"),
    own(metadata, "task_id"),
    own(own(metadata, "openenv"), "task_id"),
  ])
    if (typeof value === "string" && value !== "") return value;
  return undefined;
}

/** Reads a session export file (`GET /sessions/:id/export` saved to disk). */
export function readExportFile(file: string): SessionExport {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    throw new TerrariumError("FILE_UNREADABLE", `cannot read ${file}`, { where: { file } });
  }
  if (size > MAX_EXPORT_BYTES)
    throw new TerrariumError("TOO_LARGE", `the export is ${size} bytes, over the ${MAX_EXPORT_BYTES} limit`, {
      where: { file },
    });
  let document: unknown;
  try {
    document = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new TerrariumError("PARSE_ERROR", `not JSON: ${(error as Error).message}`, { where: { file } });
  }
  return checkExport(document, file);
}

/** Fetches a session's export from a running terrarium server (`GET <url>/sessions/<id>/export`). */
export async function fetchSessionExport(
  url: string,
  sessionId: string,
  options: { token?: string; timeoutMs?: number } = {},
): Promise<SessionExport> {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new TerrariumError("INVALID_INPUT", `--url "${url.slice(0, 200)}" is not a URL`);
  }
  if (base.protocol !== "http:" && base.protocol !== "https:")
    throw new TerrariumError("INVALID_INPUT", `--url must be http(s), not ${base.protocol}`);
  const target = new URL(
    `${base.pathname.replace(/\/+$/, "")}/sessions/${encodeURIComponent(sessionId)}/export`,
    base,
  );
  let response: Response;
  try {
    response = await fetch(target, {
      headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_EXPORT_FETCH_TIMEOUT_MS),
    });
  } catch (error) {
    throw new TerrariumError("STORE_UNAVAILABLE", `cannot fetch ${target.href}: ${(error as Error).message}`);
  }
  const text = await readLimited(response);
  if (response.status === 404)
    throw new TerrariumError(
      "UNKNOWN_SESSION",
      `the server at ${base.href} has no session "${sessionId.slice(0, 120)}"`,
    );
  if (!response.ok) {
    let detail = "";
    try {
      const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
      if (body.error?.message) detail = `: ${body.error.message} [${body.error.code ?? "?"}]`;
    } catch {
      // not JSON: the status says enough
    }
    throw new TerrariumError(
      response.status === 401 || response.status === 403 ? "INVALID_INPUT" : "STORE_UNAVAILABLE",
      `${target.href} answered HTTP ${response.status}${detail}`,
    );
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new TerrariumError("PARSE_ERROR", `${target.href} did not answer JSON`);
  }
  return checkExport(document, target.href);
}

async function readLimited(response: Response): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > MAX_EXPORT_BYTES)
    throw new TerrariumError(
      "TOO_LARGE",
      `the export is ${declared} bytes, over the ${MAX_EXPORT_BYTES} limit`,
    );
  if (!response.body) return "";
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > MAX_EXPORT_BYTES)
      throw new TerrariumError("TOO_LARGE", `the export is over the ${MAX_EXPORT_BYTES} byte limit`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString("utf8");
}

function checkExport(document: unknown, file: string): SessionExport {
  if (!isSessionExport(document))
    throw new TerrariumError(
      "INVALID_INPUT",
      "not a session export: it needs session, snapshots (at least one) and history (GET /sessions/:id/export gives one)",
      { where: { file } },
    );
  return document;
}

export interface ScoreStoredEpisodeOptions {
  exported: SessionExport;
  /** The loaded task files. */
  tasks: readonly RlTask[];
  /** The task to score against (default: the one the session's metadata names). */
  taskId?: string;
  /** The environment's name or file (default: the task's own `environment`). */
  environment?: string | Environment;
  judge?: Judge;
}

export interface StoredEpisodeScore {
  taskId: string;
  environment: string;
  sessionId: string;
  result: RewardResult;
}

/**
 * Scores a stored episode apart from the environment that ran it: the task from `taskId` or the session's
 * metadata, the environment from the option or the task, then the export's history and last snapshot.
 */
export async function scoreStoredEpisode(options: ScoreStoredEpisodeOptions): Promise<StoredEpisodeScore> {
  const { exported, tasks } = options;
  const taskId = options.taskId ?? taskIdOfExport(exported);
  if (taskId === undefined)
    throw new TerrariumError(
      "INVALID_INPUT",
      "the session's metadata names no task (it was not started as a task episode): name one with --task",
    );
  const task = tasks.find((candidate) => candidate.id === taskId);
  if (!task)
    throw new TerrariumError(
      "INVALID_INPUT",
      `task "${taskId.slice(0, 120)}" is not in the task files (${tasks.length} tasks${tasks[0] ? `, e.g. "${tasks[0].id}"` : ""})`,
    );
  const reference = options.environment ?? task.environment;
  if (reference === undefined)
    throw new TerrariumError(
      "INVALID_INPUT",
      `task "${task.id}" names no environment (tau2 task files do not): name one with --env, e.g. --env tau2-retail`,
    );
  const environment = typeof reference === "string" ? await loadEnvironment(reference) : reference;
  const result = await scoreExport({
    exported,
    environment,
    task,
    ignoreTools: ["finish"],
    ...(options.judge ? { judge: options.judge } : {}),
  });
  return { taskId: task.id, environment: environment.name, sessionId: String(exported.session.id), result };
}
