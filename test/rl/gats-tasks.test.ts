import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/catalog.js";
import { TerrariumError } from "../../src/core/errors.js";
import { Models, parseConfig } from "../../src/models/index.js";
import { type OpenEnvMessageOut, OpenEnvServer, type OpenEnvSession } from "../../src/rl/openenv/index.js";
import { gatsTaskSet } from "../../src/rl/tasks/gats.js";
import { type TaskSet, taskSetSource } from "../../src/rl/tasks/task-set.js";
import { Engine } from "../../src/sim/engine.js";
import { type ScriptedLlmServer, startScriptedLlmServer } from "../helpers/scripted-llm-server.js";

/**
 * `gats --dataset` lines as RL tasks: their tools simulated as `gats --dataset` simulates them, turns
 * advanced by `finish`, and the judge's checklist score as the reward, or null (never a guess) when no
 * model serves the checklist and judge roles. Models are a scripted OpenAI-compatible server.
 */
const TOOLS = [
  {
    name: "get_weather",
    description: "The weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
];
let dir: string;
let dataset: string;
const engine = new Engine({ catalog: new Catalog([]) });
const servers: OpenEnvServer[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "gats-tasks-"));
  dataset = join(dir, "tasks.jsonl");
  writeFileSync(
    dataset,
    [
      { id: "w1", tools: TOOLS, turns: ["What is the weather in Oslo?", "And in Bergen?"] },
      { id: 2, tools: TOOLS, turns: ["Weather in Rome?"], state: { runtime_state: {} } },
    ]
      .map((line) => JSON.stringify(line))
      .join("\n"),
  );
});
afterAll(async () => {
  for (const server of servers) await server.close();
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

function open(set: TaskSet): OpenEnvSession {
  const server = new OpenEnvServer(engine, { source: taskSetSource([set], () => []), idleTimeoutMs: 0 });
  servers.push(server);
  return server.open(undefined);
}
async function observation(session: OpenEnvSession, message: unknown) {
  const answer: OpenEnvMessageOut | undefined = await session.handleText(JSON.stringify(message));
  if (answer?.type !== "observation")
    throw new Error(`expected an observation, got ${JSON.stringify(answer)}`);
  return answer.data as { observation: Record<string, any>; reward: number | null; done: boolean };
}
const call = (tool: string, args: unknown) => ({
  type: "step",
  data: { type: "call_tool", tool_name: tool, arguments: args },
});
const finish = (answer: string) => call("finish", { answer });

describe("gatsTaskSet: loading", () => {
  it("reads the dataset's lines and refuses bad ones with their line", async () => {
    const set = await gatsTaskSet(dataset);
    expect(set.taskIds).toEqual(["w1", "2"]);
    const bad = join(dir, "bad.jsonl");
    for (const [lines, message, line] of [
      [
        [
          { id: "a", tools: TOOLS, turns: ["x"] },
          { id: "b", tools: TOOLS },
        ],
        /not a gats dataset line/,
        2,
      ],
      [
        [
          { id: "a", tools: TOOLS, turns: ["x"] },
          { id: "a", tools: TOOLS, turns: ["y"] },
        ],
        /appears twice/,
        2,
      ],
      [[{ id: "a", tools: TOOLS, turns: [] }], /non-empty list/, 1],
      [[{ id: "a", tools: [], turns: ["x"] }], /no tool/, 1],
    ] as const) {
      writeFileSync(bad, lines.map((value) => JSON.stringify(value)).join("\n"));
      const error = await gatsTaskSet(bad).catch((e) => e);
      expect(error).toBeInstanceOf(TerrariumError);
      expect(error.message).toMatch(message);
      expect(error.where).toMatchObject({ file: bad, line });
    }
    await expect(gatsTaskSet(dataset, { bootstrap: "sometimes" as never })).rejects.toThrow(/bootstrap/);
  });
});

describe("gatsTaskSet: episodes", () => {
  let llm: ScriptedLlmServer | undefined;
  afterEach(async () => {
    await llm?.close();
    llm = undefined;
  });

  it("without models: schema-synthesized tools (said in the metadata), turns advance, reward null", async () => {
    const session = open(await gatsTaskSet(dataset));
    const reset = await observation(session, { type: "reset", data: { task_id: "w1" } });
    expect(reset.observation).toMatchObject({
      instruction: "What is the weather in Oslo?",
      turn: 0,
      turns: 2,
    });
    expect(reset.observation.metadata).toMatchObject({
      format: "gats_dataset",
      simulator: "schema",
      simulator_note: expect.stringMatching(/no model serves the simulator role/),
      bootstrap: "skipped",
    });
    const weather = await observation(session, call("get_weather", { city: "Oslo" }));
    expect(weather.observation.error).toBeNull();
    expect(weather.observation.metadata.simulator).toBe("schema");
    const next = await observation(session, finish("Sunny."));
    expect(next.done).toBe(false);
    expect(next.observation.result).toEqual({
      finished: false,
      instruction: "And in Bergen?",
      turn: 1,
      turns: 2,
    });
    const last = await observation(session, finish("Rainy."));
    expect(last.done).toBe(true);
    expect(last.reward).toBeNull();
    expect(last.observation.metadata.reward_breakdown).toEqual({ checklist: null, success: null });
    expect(last.observation.metadata.skipped_checks).toEqual([
      {
        check: "checklist",
        reason: expect.stringMatching(/no model is configured for the checklist and judge roles/),
      },
      { check: "success", reason: expect.stringMatching(/checklist and judge/) },
    ]);
  });

  it("with checklist and judge models: per turn a checklist and the judge's verdict; the reward is the share met", async () => {
    const judged: string[] = [];
    let checklistsWritten = 0;
    // Turn 1 of w1: one of two items met; turn 2: both; the cut-short episode: none.
    const verdicts = [
      ["success", "failed"],
      ["success", "success"],
      ["failed", "failed"],
    ];
    llm = await startScriptedLlmServer([], {
      respond: (body) => {
        const name = body?.response_format?.json_schema?.name;
        if (name === "checklist") {
          checklistsWritten++;
          return {
            reply: {
              content: JSON.stringify({
                items: [{ description: "looks the weather up" }, { description: "tells it" }],
              }),
            },
          };
        }
        judged.push(JSON.stringify(body.messages));
        const statuses = verdicts.shift() ?? [];
        return {
          reply: {
            content: JSON.stringify({
              items: statuses.map((status, index) => ({
                description: index === 0 ? "looks the weather up" : "tells it",
                status,
                reasoning: `item ${index} ${status}`,
              })),
            }),
          },
        };
      },
    });
    const models = new Models({
      config: parseConfig({
        providers: { scripted: { type: "openai-compatible", baseURL: llm.baseURL, structuredOutputs: true } },
        roles: { checklist: "scripted:m", judge: "scripted:m" },
        retry: { retries: 0 },
      }),
      cache: null,
    });
    try {
      const session = open(await gatsTaskSet(dataset, { models }));
      const reset = await observation(session, { type: "reset", data: { task_id: "w1" } });
      // Only checklist and judge have a model: the tools stay schema-synthesized.
      expect(reset.observation.metadata.simulator).toBe("schema");
      await observation(session, call("get_weather", { city: "Oslo" }));
      await observation(session, finish("It is sunny in Oslo."));
      await observation(session, call("get_weather", { city: "Bergen" }));
      const last = await observation(session, finish("Rainy in Bergen."));
      expect(last.done).toBe(true);
      expect(last.reward).toBe(0.75);
      expect(last.observation.metadata.reward_breakdown).toEqual({ checklist: 0.75, success: 0 });
      const judgements = last.observation.metadata.judgements;
      expect(judgements.map((j: { score: number; success: boolean }) => [j.score, j.success])).toEqual([
        [0.5, false],
        [1, true],
      ]);
      expect(judgements[0].feedback).toMatch(/tells it: failed \(item 1 failed\)/);
      // The judge's calls of this episode (the checklists are written once per task turn, and cached).
      expect(last.observation.metadata.judge_usage.calls).toBe(2);
      // The judge saw each turn's own calls and answer.
      expect(judged[0]).toContain("Oslo");
      expect(judged[0]).toContain("It is sunny in Oslo.");
      expect(judged[0]).not.toContain("Bergen");
      expect(judged[1]).toContain("Rainy in Bergen.");

      // An episode cut short by its step limit: the turn under way is judged as it stands, the next counts 0.
      // The checklists are the same (cached by task): only the judge is asked.
      const short = open(await gatsTaskSet(dataset, { models, maxSteps: 1 }));
      await observation(short, { type: "reset", data: { task_id: "w1" } });
      const cut = await observation(short, call("get_weather", { city: "Oslo" }));
      expect(cut.done).toBe(true);
      expect(cut.reward).toBe(0);
      expect(cut.observation.metadata.judgements).toEqual([
        expect.objectContaining({ turn: 0, score: 0 }),
        { turn: 1, reached: false, score: 0 },
      ]);
      expect(cut.observation.metadata.reward_note).toBe("the episode ended by max_steps");
      expect(checklistsWritten).toBe(2);
    } finally {
      await models.close();
    }
  });

  it("with a simulator model: the tools are simulated by it, as gats --dataset simulates them", async () => {
    llm = await startScriptedLlmServer([], {
      respond: (body) =>
        body?.response_format?.json_schema?.name === "simulated_call"
          ? {
              reply: {
                content: JSON.stringify({ status: "ok", observation: { sky: "clear" }, changes: [] }),
              },
            }
          : { status: 500, error: { message: `unexpected ${body?.response_format?.json_schema?.name}` } },
    });
    const models = new Models({
      config: parseConfig({
        providers: { scripted: { type: "openai-compatible", baseURL: llm.baseURL, structuredOutputs: true } },
        roles: { simulator: "scripted:m" },
        retry: { retries: 0 },
      }),
      cache: null,
    });
    try {
      const session = open(await gatsTaskSet(dataset, { models }));
      // Task 2's state has a runtime_state already: the bootstrap (auto) leaves it, as gats does.
      const reset = await observation(session, { type: "reset", data: { task_id: "2" } });
      expect(reset.observation.metadata).toMatchObject({
        simulator: "llm",
        simulator_model: "scripted:m",
        bootstrap: "skipped",
      });
      const weather = await observation(session, call("get_weather", { city: "Rome" }));
      expect(weather.observation.result).toEqual({ sky: "clear" });
      expect(weather.observation.metadata.simulator).toBe("llm");
      const last = await observation(session, finish("Clear."));
      // No checklist or judge model (roles.default unset): no reward.
      expect(last.reward).toBeNull();
      expect(last.observation.metadata.skipped_checks[0].reason).toMatch(
        /roles\.checklist or roles\.default/,
      );
    } finally {
      await models.close();
    }
  });

  it("a judge model that fails leaves the reward null and says why", async () => {
    llm = await startScriptedLlmServer([], {
      respond: () => ({ status: 500, error: { message: "the judge is down" } }),
    });
    const models = new Models({
      config: parseConfig({
        providers: { scripted: { type: "openai-compatible", baseURL: llm.baseURL, structuredOutputs: true } },
        roles: { checklist: "scripted:m", judge: "scripted:m" },
        retry: { retries: 0 },
      }),
      cache: null,
    });
    try {
      const session = open(await gatsTaskSet(dataset, { models }));
      await observation(session, { type: "reset", data: { task_id: "2" } });
      const last = await observation(session, finish("Warm."));
      expect(last.done).toBe(true);
      expect(last.reward).toBeNull();
      expect(last.observation.metadata.reward_breakdown).toEqual({ checklist: null, success: null });
      expect(last.observation.metadata.skipped_checks[0].reason).toMatch(
        /the checklist or judge model failed/,
      );
    } finally {
      await models.close();
    }
  });
});
