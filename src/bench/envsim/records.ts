import { TerrariumError } from "../../core/errors.js";
import { diffEnvSim, type EnvSimChange } from "../../core/json-diff.js";
import { ENVSIM_SCHEMA_VERSION, type EnvSimSample } from "./types.js";

/** The published EnvSimBench record (one JSON object per sample). */
export interface EnvSimBenchRecord {
  task_info: { env_id: string; task_id: string; task?: string; step: number };
  step_detail: {
    action: { name: string; arguments: Record<string, unknown> };
    observation: unknown;
    config_before: unknown;
    config_after: unknown;
    config_change: { changes: EnvSimChange[]; change_count: number };
  };
  env_code: string;
}

/** Reads a published EnvSimBench record; success and Δ are recomputed, as the benchmark's loader does. */
export function fromEnvSimBenchRecord(record: EnvSimBenchRecord, line?: number): EnvSimSample {
  const info = record?.task_info;
  const detail = record?.step_detail;
  if (!info || !detail?.action) {
    throw new TerrariumError(
      "INVALID_INPUT",
      "not an EnvSimBench record (task_info and step_detail.action are required)",
      line ? { where: { line } } : {},
    );
  }
  const changes = Array.isArray(detail.config_change?.changes)
    ? detail.config_change.changes
    : diffEnvSim(detail.config_before, detail.config_after);
  const observationText =
    typeof detail.observation === "string" ? detail.observation : JSON.stringify(detail.observation);
  const args = detail.action.arguments ?? {};
  return {
    schemaVersion: ENVSIM_SCHEMA_VERSION,
    id: `${info.env_id}/${info.task_id}/${info.step}`,
    envId: String(info.env_id),
    taskId: String(info.task_id),
    ...(info.task ? { task: info.task } : {}),
    step: Number(info.step),
    call: { name: detail.action.name, arguments: args },
    observation: detail.observation,
    observationText,
    before: detail.config_before,
    after: detail.config_after,
    changes,
    delta: changes.length,
    success: !looksLikeFailure(observationText),
    argCount: Object.keys(args).length,
    envCode: record.env_code ?? "",
    envKind: "python",
  };
}

export function toEnvSimBenchRecord(sample: EnvSimSample): EnvSimBenchRecord {
  return {
    task_info: {
      env_id: sample.envId,
      task_id: sample.taskId,
      ...(sample.task ? { task: sample.task } : {}),
      step: sample.step,
    },
    step_detail: {
      action: { name: sample.call.name, arguments: sample.call.arguments },
      observation: sample.observationText,
      config_before: sample.before,
      config_after: sample.after,
      config_change: { changes: sample.changes, change_count: sample.delta },
    },
    env_code: sample.envCode,
  };
}

/** EnvSimBench environments report a rejected call as an error dict or `success: False` in the result. */
function looksLikeFailure(observation: string): boolean {
  return (
    /['"]success['"]\s*:\s*(False|false)\b/.test(observation) ||
    /^\s*\{\s*['"]error['"]\s*:/.test(observation)
  );
}
