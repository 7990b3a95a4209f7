import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Models, parseConfig } from "../../src/models/index.js";
import {
  type EpisodeSource,
  type OpenEnvMessageOut,
  OpenEnvServer,
  type OpenEnvSession,
  plainWorldSource,
} from "../../src/rl/openenv/index.js";
import { MAX_AGENT_MESSAGE_CHARS } from "../../src/rl/openenv/server.js";
import type { EpisodeEnd } from "../../src/rl/openenv/types.js";
import { createEpisodeUser, type EpisodeUserFactory } from "../../src/rl/openenv/user.js";
import type { Engine } from "../../src/sim/engine.js";
import { buildEngine } from "../../src/sim/index.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

/** Conversational episodes: the agent's `message` actions go to terrarium's simulated user on a scripted model. */
let engine: Engine;
beforeAll(async () => {
  engine = (await buildEngine({ sources: ["bank"], seed: "1" })).engine;
});
afterAll(() => engine.close());

let llm: ScriptedLlmServer | undefined;
const servers: OpenEnvServer[] = [];
afterEach(async () => {
  for (const made of servers.splice(0)) await made.close();
  await llm?.close();
  llm = undefined;
});

const INSTRUCTIONS = "You want to know the balance of account A-1. Your name is Ana.";

/** The simulated user's script: a plan, then one line per agent message so far, the last one with the stop token. */
function userResponder(lines: string[]) {
  return (body: any): ScriptStep => {
    if (body?.response_format?.json_schema?.name === "user_turn_plan")
      return {
        reply: { content: JSON.stringify({ known: ["account A-1"], needed: ["balance"], nextStep: "ask" }) },
      };
    const agentMessages = (body?.messages ?? []).filter(
      (m: any) => m.role === "user" && String(m.content).startsWith("[agent]"),
    ).length;
    return { reply: { content: lines[Math.min(agentMessages, lines.length - 1)] ?? "###STOP###" } };
  };
}

async function userFactory(lines: string[]): Promise<EpisodeUserFactory> {
  llm = await startScriptedLlmServer([], { respond: userResponder(lines) });
  const models = new Models({
    config: parseConfig({
      providers: { scripted: { type: "openai-compatible", baseURL: llm.baseURL, structuredOutputs: true } },
      retry: { retries: 0 },
    }),
    cache: null,
  });
  return createEpisodeUser(models, "scripted:user");
}

/** Plain-world episodes with user instructions (unless `instructions` is null), scored from what ended them. */
function conversationalSource(
  ended: EpisodeEnd[],
  instructions: string | null = INSTRUCTIONS,
): EpisodeSource {
  const plain = plainWorldSource(engine);
  return {
    defaultTools: plain.defaultTools,
    async reset(options) {
      const start = await plain.reset(options);
      return {
        ...start,
        ...(instructions !== null ? { userInstructions: instructions } : {}),
        async score(end) {
          ended.push(end);
          return { reward: end.reason === "user_stop" ? 1 : 0, breakdown: { communicate: 1 } };
        },
      };
    },
  };
}

function open(options: Partial<ConstructorParameters<typeof OpenEnvServer>[1]> & { source: EpisodeSource }) {
  const made = new OpenEnvServer(engine, { idleTimeoutMs: 0, ...options });
  servers.push(made);
  return made.open(undefined);
}

async function send(session: OpenEnvSession, message: unknown): Promise<OpenEnvMessageOut | undefined> {
  return session.handleText(JSON.stringify(message));
}
async function observation(session: OpenEnvSession, message: unknown) {
  const answer = await send(session, message);
  if (answer?.type !== "observation")
    throw new Error(`expected an observation, got ${JSON.stringify(answer)}`);
  return answer.data as { observation: Record<string, any>; reward: number | null; done: boolean };
}
const say = (content: string) => ({ type: "step", data: { type: "message", content } });

describe("conversational episodes", () => {
  it("the user speaks first, answers each message, and its stop token ends the episode scored with the conversation", async () => {
    const ended: EpisodeEnd[] = [];
    const user = await userFactory([
      "Hi, what is the balance of account A-1?",
      "It is A-1, my name is Ana.",
      "Thanks, that is all. ###STOP###",
    ]);
    const session = open({ source: conversationalSource(ended), user });
    const reset = await observation(session, { type: "reset", data: { seed: 3 } });
    expect(reset.done).toBe(false);
    expect(reset.observation.message).toEqual({
      role: "user",
      content: "Hi, what is the balance of account A-1?",
    });
    expect(reset.observation.metadata.conversational).toBe(true);
    // The task's instructions reached the simulated user's prompt (as its goal).
    const system = llm?.requests[0]?.body.messages.find((m: any) => m.role === "system").content;
    expect(system).toContain(INSTRUCTIONS);
    expect(llm?.requests.every((r) => r.body.model === "user")).toBe(true);

    const reply = await observation(session, say("Which account, and your name?"));
    expect(reply.done).toBe(false);
    expect(reply.observation.message).toEqual({ role: "user", content: "It is A-1, my name is Ana." });
    expect(reply.observation.metadata.step_count).toBe(1);
    // The user model saw the agent's message.
    expect(JSON.stringify(llm?.requests.at(-1)?.body.messages)).toContain(
      "[agent] Which account, and your name?",
    );

    // Dual control: a tool call between messages is a step of the same episode and does not reach the user.
    const before = llm?.requests.length;
    const call = await observation(session, {
      type: "step",
      data: { type: "call_tool", tool_name: "get_account", arguments: { account_id: "A-1" } },
    });
    expect(call.done).toBe(false);
    expect(llm?.requests.length).toBe(before);

    const last = await observation(session, say("Your balance is 120 EUR."));
    expect(last).toMatchObject({ done: true, reward: 1 });
    expect(last.observation.message).toEqual({ role: "user", content: "Thanks, that is all." });
    expect(last.observation.metadata).toMatchObject({
      end_reason: "user_stop",
      stop_reason: "stop",
      step_count: 3,
    });
    expect(ended).toEqual([
      {
        reason: "user_stop",
        messages: [
          { role: "user", content: "Hi, what is the balance of account A-1?" },
          { role: "assistant", content: "Which account, and your name?" },
          { role: "user", content: "It is A-1, my name is Ana." },
          { role: "assistant", content: "Your balance is 120 EUR." },
          { role: "user", content: "Thanks, that is all." },
        ],
      },
    ]);
    const after = await send(session, say("anything else?"));
    expect(after).toMatchObject({ type: "error", data: { code: "EXECUTION_ERROR" } });
  });

  it("an episode ended by its step limit is scored with the conversation so far", async () => {
    const ended: EpisodeEnd[] = [];
    const user = await userFactory(["Hello, I need help.", "With my balance."]);
    const session = open({ source: conversationalSource(ended), user, maxSteps: 2 });
    await observation(session, { type: "reset" });
    await observation(session, say("How can I help?"));
    const done = await observation(session, { type: "step", data: { type: "list_tools" } });
    expect(done).toMatchObject({ done: true, reward: 0 });
    expect(ended).toEqual([
      {
        reason: "max_steps",
        messages: [
          { role: "user", content: "Hello, I need help." },
          { role: "assistant", content: "How can I help?" },
          { role: "user", content: "With my balance." },
        ],
      },
    ]);
  });

  it("the same seed gives the same user requests; another seed another", async () => {
    const user = await userFactory(["Hello.", "Bye ###STOP###"]);
    const session = open({ source: conversationalSource([]), user });
    const seeds: unknown[] = [];
    for (const seed of [5, 5, 6]) {
      const start = llm?.requests.length ?? 0;
      const reset = await observation(session, { type: "reset", data: { seed } });
      expect(reset.observation.message.content).toBe("Hello.");
      seeds.push(llm?.requests.slice(start).map((r) => r.body.seed));
    }
    expect(seeds[0]).toEqual(seeds[1]);
    expect(seeds[0]).not.toEqual(seeds[2]);
  });

  it("a message without a simulated user is a VALIDATION_ERROR naming what is missing", async () => {
    const noModel = open({ source: conversationalSource([]) });
    const reset = await observation(noModel, { type: "reset" });
    expect(reset.observation.message).toBeUndefined();
    const refused = await send(noModel, say("hello"));
    expect(refused).toMatchObject({
      type: "error",
      data: { code: "VALIDATION_ERROR", message: expect.stringMatching(/user model/) },
    });

    const user = await userFactory(["unused"]);
    const noUser = open({ source: conversationalSource([], null), user });
    await observation(noUser, { type: "reset" });
    const refusedToo = await send(noUser, say("hello"));
    expect(refusedToo).toMatchObject({
      type: "error",
      data: { code: "VALIDATION_ERROR", message: expect.stringMatching(/no simulated user/) },
    });
    expect(llm?.requests).toHaveLength(0);

    // A malformed message action is refused before anything else.
    const empty = await send(noUser, { type: "step", data: { type: "message", content: "  " } });
    expect(empty).toMatchObject({ type: "error", data: { code: "VALIDATION_ERROR" } });
    const extra = await send(noUser, { type: "step", data: { type: "message", content: "hi", to: "x" } });
    expect(extra).toMatchObject({ type: "error", data: { code: "VALIDATION_ERROR" } });
    const long = await send(noUser, say("x".repeat(MAX_AGENT_MESSAGE_CHARS + 1)));
    expect(long).toMatchObject({
      type: "error",
      data: { code: "VALIDATION_ERROR", message: expect.stringMatching(/longer than/) },
    });
  });

  it("the schema lists the message action", () => {
    const made = new OpenEnvServer(engine, { source: plainWorldSource(engine), idleTimeoutMs: 0 });
    servers.push(made);
    const titles = (made.schema().action as { oneOf: Array<{ title: string }> }).oneOf.map((a) => a.title);
    expect(titles).toContain("MessageAction");
  });
});
