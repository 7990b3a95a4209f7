/**
 * One RL rollout against terrarium's OpenEnv interface, with the library's client (`terrarium/openenv`).
 *
 *   terrarium serve tau2-retail --tasks tasks.json          # OpenEnv at http://127.0.0.1:8080/openenv
 *   npx tsx examples/rl/rollout.ts --url http://127.0.0.1:8080/openenv --task 0 --replay tasks.json
 *
 * The policy here replays the task's ground-truth actions (from --replay) so the loop can be run without a
 * model; put your model where `policy` is. The last line printed is JSON: {"reward", "reward_breakdown", ...}.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { OpenEnvClient, type OpenEnvToolInfo } from "terrarium/openenv";

interface TaskEntry {
  id?: unknown;
  evaluation_criteria?: { actions?: ToolCall[] | null } | null;
  expected?: { actions?: ToolCall[] | null };
}

interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:8080/openenv" },
    task: { type: "string" },
    replay: { type: "string" },
    token: { type: "string", default: process.env.TERRARIUM_TOKEN },
    "max-turns": { type: "string", default: "50" },
  },
});

/** A stand-in for a model: the task's ground-truth calls from a tau2 or terrarium task file, then finish. */
function replayPolicy(taskId: string | undefined, file: string | undefined): () => ToolCall {
  const calls: ToolCall[] = [];
  if (file && taskId !== undefined) {
    const document = JSON.parse(readFileSync(file, "utf8")) as TaskEntry[] | { tasks: TaskEntry[] };
    const tasks = Array.isArray(document) ? document : document.tasks;
    const task = tasks.find((candidate) => String(candidate.id) === taskId);
    const actions = task?.evaluation_criteria?.actions ?? task?.expected?.actions ?? [];
    for (const action of actions) calls.push({ name: action.name, arguments: action.arguments ?? {} });
  }
  return () => calls.shift() ?? { name: "finish", arguments: { answer: "done" } };
}

async function main(): Promise<void> {
  const env = await OpenEnvClient.connect(values.url as string, {
    ...(values.token ? { token: values.token } : {}),
  });
  try {
    // reset(task_id) starts the task's world: the observation has the instruction and the tools.
    const reset = await env.reset(values.task !== undefined ? { taskId: values.task } : {});
    console.log(`instruction: ${String(reset.observation.instruction ?? "(none)").slice(0, 200)}`);
    const tools: OpenEnvToolInfo[] = await env.listTools();
    console.log(`tools: ${tools.map((tool) => tool.name).join(", ")}`);

    const policy = replayPolicy(values.task, values.replay);
    let last = reset;
    for (let turn = 0; turn < Number(values["max-turns"]) && !last.done; turn++) {
      const call = policy();
      last = await env.callTool(call.name, call.arguments);
      const error = last.observation.error as { message?: string } | null;
      console.log(`${call.name} -> ${error ? `error: ${error.message}` : "ok"}`);
    }
    const metadata = (last.observation.metadata ?? {}) as Record<string, unknown>;
    console.log(
      JSON.stringify({
        reward: last.reward,
        done: last.done,
        reward_breakdown: metadata.reward_breakdown ?? null,
        session_id: metadata.session_id ?? null,
        state: await env.state(),
      }),
    );
  } finally {
    await env.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
