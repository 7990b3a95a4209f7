import { afterEach, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { ManualClock } from "../../src/core/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { Models, parseConfig } from "../../src/models/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";
import { chooseAttempt, gats } from "../../src/task/index.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

/**
 * GATS end to end against the scripted OpenAI-compatible server: the planner, checklist writer and judge
 * are real model calls over HTTP; tools run on the bank environment through the engine.
 */
const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;
let server: ScriptedLlmServer;
afterEach(() => server?.close());

type Role = "planner" | "checklist" | "judge";
/** A scripted model per role: each role replays its own queue. */
async function setup(queues: Record<Role, ScriptStep[]>) {
  const roleOf = (body: any): Role =>
    body?.tools
      ? "planner"
      : body?.response_format?.json_schema?.name === "checklist"
        ? "checklist"
        : "judge";
  server = await startScriptedLlmServer([], {
    respond: (body) =>
      queues[roleOf(body)].shift() ?? { status: 500, error: { message: `no ${roleOf(body)} reply left` } },
  });
  const models = new Models({
    config: parseConfig({
      providers: {
        scripted: { type: "openai-compatible", baseURL: server.baseURL, structuredOutputs: true },
      },
      roles: { default: "scripted:m" },
      retry: { retries: 0 },
    }),
    cache: null,
  });
  const engine = new Engine({
    catalog: new Catalog(bank.tools),
    simulators: [new CodeSimulator(bank, "g")],
    seed: 1,
    clock: new ManualClock(),
  });
  const start = await engine.createSession({ state: await bank.initialState() });
  return { models, engine, start };
}

const call = (name: string, args: unknown): ScriptStep => ({
  reply: { toolCalls: [{ name, arguments: args }] },
});
const answer = (text: string): ScriptStep => ({ reply: { content: text } });
const json = (value: unknown): ScriptStep => ({ reply: { content: JSON.stringify(value) } });
const checklist = (...items: string[]) => json({ items: items.map((description) => ({ description })) });
const verdict = (...statuses: Array<"success" | "failed" | "unknown">) =>
  json({
    items: statuses.map((status, i) => ({
      description: `item ${i}`,
      status,
      reasoning: status === "success" ? "done" : "not done",
    })),
  });
const transfer = (amount: number) =>
  call("transfer", { from_account: "ACC-1001", to_account: "ACC-1002", amount });
const balance = async (engine: Engine, session: string) =>
  ((await engine.state(session)) as any).accounts["ACC-1001"].balance;

describe("GATS", () => {
  it("retries after the judge's feedback, from the same starting state, and stops at success", async () => {
    const { models, engine, start } = await setup({
      checklist: [checklist("ACC-1001 sent 100 to ACC-1002")],
      planner: [transfer(10), answer("Sent 10."), transfer(100), answer("Sent 100.")],
      judge: [verdict("failed"), verdict("success")],
    });
    const result = await gats({
      engine,
      models,
      startSession: start.id,
      turns: ["Send 100 from ACC-1001 to ACC-1002"],
      maxRetries: 3,
    });
    const [turn] = result.turns;
    expect(turn?.attempts.map((a) => a.judgement.success)).toEqual([false, true]);
    expect(turn?.chosen).toBe(1);
    expect(result.success).toBe(true);
    expect(result.calls).toEqual([
      [{ name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 100 } }],
    ]);
    // Isolation: each attempt forked the start; neither touched it nor saw the other's transfer.
    expect(await balance(engine, turn?.attempts[0]?.session as string)).toBe(2490);
    expect(await balance(engine, turn?.attempts[1]?.session as string)).toBe(2400);
    expect(await balance(engine, start.id)).toBe(2500);
    // The retry carried the previous calls and the feedback to the planner, as data.
    const retryRequest = server.requests.filter((r) => r.body.tools)[2]?.body;
    expect(retryRequest.messages.at(-1).content).toMatch(
      /previous attempt[\s\S]*"amount": 10[\s\S]*item 0: failed \(not done\)/,
    );
    expect(turn?.attempts[1]?.usage.calls).toBe(3); // two planner turns and one judgement
  });

  it("chooses with the guards when every attempt fails", async () => {
    const { models, engine, start } = await setup({
      checklist: [checklist("a", "b")],
      planner: [answer("I cannot."), transfer(1), answer("done"), transfer(2), answer("done")],
      judge: [verdict("failed", "failed"), verdict("success", "failed"), verdict("success", "failed")],
    });
    const result = await gats({
      engine,
      models,
      startSession: start.id,
      turns: ["Do a and b"],
      maxRetries: 2,
    });
    const [turn] = result.turns;
    expect(turn?.attempts.map((a) => a.judgement.score)).toEqual([0, 0.5, 0.5]);
    expect(turn?.chosen).toBe(1); // the first of the best; attempt 0 is worse
    expect(result.success).toBe(false);
  });

  it("lets the planner recover from a validation error within an attempt", async () => {
    const { models, engine, start } = await setup({
      checklist: [checklist("transfer done")],
      planner: [call("transfr", { amount: 5 }), transfer(5), answer("Done.")],
      judge: [verdict("success")],
    });
    const result = await gats({ engine, models, startSession: start.id, turns: ["Send 5"], maxRetries: 1 });
    const attempt = result.turns[0]?.attempts[0];
    expect(attempt?.calls.map((c) => c.status)).toEqual(["invalid", "ok"]);
    const toolResult = server.requests.filter((r) => r.body.tools)[1]?.body.messages.at(-1);
    expect(toolResult.role).toBe("tool");
    expect(toolResult.content).toContain(
      'there is no tool named \\"transfr\\"; the closest tool is \\"transfer\\"',
    );
    expect(result.calls).toEqual([
      [{ name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 5 } }],
    ]);
  });

  it("carries the chosen attempt's state into the next turn of a multi-turn task", async () => {
    const { models, engine, start } = await setup({
      checklist: [checklist("sent 10"), checklist("frozen")],
      planner: [
        transfer(10),
        answer("Sent."),
        call("freeze_account", { account_id: "ACC-1002" }),
        answer("Frozen."),
      ],
      judge: [verdict("success"), verdict("success")],
    });
    const result = await gats({
      engine,
      models,
      startSession: start.id,
      turns: ["Send 10 to ACC-1002", "Now freeze it"],
      maxRetries: 0,
    });
    expect(result.turns).toHaveLength(2);
    const last = result.turns[1]?.session as string;
    const state = (await engine.state(last)) as any;
    expect([state.accounts["ACC-1001"].balance, state.accounts["ACC-1002"].status]).toEqual([2490, "frozen"]);
    // The second turn's checklist saw the first task as context.
    const checklistRequests = server.requests.filter(
      (r) => r.body.response_format?.json_schema?.name === "checklist",
    );
    expect(checklistRequests[1]?.body.messages[1].content).toContain(
      '"previousTasks": [\n  "Send 10 to ACC-1002"\n ]',
    );
  });
});

describe("chooseAttempt guards", () => {
  const attempt = (score: number, calls: number) => ({
    calls: Array.from({ length: calls }, () => ({}) as never),
    judgement: { score, success: score === 1 } as never,
  });
  it("prefers a success, then the best score, never an empty attempt over a non-empty tie, and attempt 0 when it is as good", () => {
    expect(chooseAttempt([attempt(0.5, 1), attempt(1, 1)])).toBe(1);
    expect(chooseAttempt([attempt(0.5, 0), attempt(0.5, 2)])).toBe(1);
    expect(chooseAttempt([attempt(0.5, 1), attempt(0.5, 2)])).toBe(0);
    expect(chooseAttempt([attempt(0, 1), attempt(0.5, 1), attempt(0.5, 0)])).toBe(1);
  });
});
