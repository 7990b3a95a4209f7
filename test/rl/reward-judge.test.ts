import { afterEach, describe, expect, it } from "vitest";
import type { Environment } from "../../src/envs/types.js";
import { Models, parseConfig } from "../../src/models/index.js";
import { type EpisodeMessage, scoreTrajectory } from "../../src/rl/rewards/index.js";
import { createRewardJudge } from "../../src/rl/rewards/judge.js";
import type { RlTask } from "../../src/rl/tasks/index.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

/** The nl_assertions judge against the scripted OpenAI-compatible server. */
let llm: ScriptedLlmServer | undefined;
afterEach(async () => {
  await llm?.close();
  llm = undefined;
});

async function judgeOn(steps: ScriptStep[]) {
  llm = await startScriptedLlmServer(steps);
  const models = new Models({
    config: parseConfig({
      providers: { scripted: { type: "openai-compatible", baseURL: llm.baseURL, structuredOutputs: true } },
      retry: { retries: 0 },
    }),
    cache: null,
  });
  const errors: unknown[] = [];
  return { judge: createRewardJudge(models, "scripted:judge", { onError: (e) => errors.push(e) }), errors };
}

const task: RlTask = {
  id: "t1",
  format: "tau2",
  instruction: "",
  expected: { actions: null },
  communicateInfo: [],
  nlAssertions: [
    "The agent tells the user the balance is 120 EUR.",
    "The agent does not ask for a password.",
  ],
  envAssertions: [],
  rewardBasis: ["nl_assertions"],
};
const messages: EpisodeMessage[] = [
  { role: "user", content: "What is my balance?" },
  { role: "assistant", content: "Your balance is 120 EUR." },
];
const verdicts = (...met: boolean[]): ScriptStep => ({
  reply: {
    content: JSON.stringify({
      verdicts: met.map((value, i) => ({ index: i + 1, met: value, reason: "seen" })),
    }),
  },
});

describe("createRewardJudge", () => {
  it("is 1 when every assertion holds, and the model saw the conversation and each assertion", async () => {
    const { judge } = await judgeOn([verdicts(true, true)]);
    expect(await judge("nl_assertions", task, messages)).toBe(1);
    const body = llm?.requests[0]?.body;
    expect(body.model).toBe("judge");
    expect(body.temperature).toBe(0);
    expect(body.response_format?.json_schema?.name).toBe("nl_assertion_verdicts");
    const prompt = body.messages.at(-1).content as string;
    expect(prompt).toContain("assistant: Your balance is 120 EUR.");
    expect(prompt).toContain("1. The agent tells the user the balance is 120 EUR.");
    expect(prompt).toContain("2. The agent does not ask for a password.");
  });

  it("is 0 when any assertion fails", async () => {
    const { judge } = await judgeOn([verdicts(true, false)]);
    expect(await judge("nl_assertions", task, messages)).toBe(0);
  });

  it("is null when the model fails, or leaves an assertion unanswered after its repair", async () => {
    const failed = await judgeOn([{ status: 500, error: { message: "down" } }]);
    expect(await failed.judge("nl_assertions", task, messages)).toBeNull();
    expect(failed.errors).toHaveLength(1);
    await llm?.close();

    // One verdict for two assertions, twice (the first answer and its repair): no verdict.
    const partial = await judgeOn([verdicts(true), verdicts(true), verdicts(true), verdicts(true)]);
    expect(await partial.judge("nl_assertions", task, messages)).toBeNull();
    expect(partial.errors).toHaveLength(1);
  });

  it("feeds scoreTrajectory's nl_assertions check (tau2's rule: all must hold)", async () => {
    const { judge } = await judgeOn([verdicts(false, true)]);
    const result = await scoreTrajectory({
      task,
      environment: {} as Environment,
      finalState: {},
      calls: [],
      messages,
      judge,
    });
    expect(result.breakdown.nl_assertions).toBe(0);
    expect(result.reward).toBe(0);
  });

  it("refuses a model name without a provider", () => {
    expect(() => createRewardJudge({} as Models, "judge")).toThrow(/provider:model/);
  });
});
