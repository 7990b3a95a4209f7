import { afterEach, describe, expect, it } from "vitest";
import { MemoryResponseCache } from "../../src/models/cache.js";
import { parseConfig } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import { parseScenario } from "../../src/users/scenario/index.js";
import { SimulatedUser, UserToolFactory } from "../../src/users/simulator/index.js";
import { type ScriptedLlmServer, startScriptedLlmServer } from "../helpers/scripted-llm-server.js";

/** The simulated user's empty answers are retried, never cached: a rerun asks the model again. */

let server: ScriptedLlmServer;
afterEach(async () => {
  await server?.close();
});

const scenario = parseScenario({
  id: "refund",
  profile: "You are Ana, 30, direct.",
  goal: "Get a refund for order W1.",
  knowledge: "Order W1 was paid by card.",
  max_turns: 4,
});

describe("simulated user and the response cache", () => {
  it("an empty message is asked for again on a rerun, not replayed from the cache", async () => {
    const messages = ["", "I want a refund for W1.", "Refund W1, please."];
    const asked: string[] = [];
    server = await startScriptedLlmServer([], {
      respond: (body) => {
        if (body.response_format) {
          asked.push("plan");
          const plan = { known: ["order W1"], needed: ["refund"], nextStep: "ask" };
          return { reply: { content: JSON.stringify(plan) } };
        }
        asked.push("message");
        return { reply: { content: messages.shift() ?? "###STOP###" } };
      },
    });
    const cache = new MemoryResponseCache();
    const turn = async () => {
      const models = new Models({
        config: parseConfig({
          providers: { local: { type: "openai-compatible", baseURL: server.baseURL } },
          roles: { default: "local:user" },
          retry: { retries: 0 },
        }),
        env: {},
        cache,
      });
      const user = new SimulatedUser({
        models,
        scenario,
        toolbox: await new UserToolFactory().toolbox(scenario, "seed-1"),
        seed: "seed-1",
      });
      const output = await user.turn([], { turn: 1, last: false });
      return { message: output.parsed.message, ledger: models.ledger.totals };
    };

    const first = await turn();
    expect(first.message).toBe("I want a refund for W1.");
    expect(asked).toEqual(["plan", "message", "message"]);
    expect(first.ledger).toMatchObject({ calls: 3, cachedCalls: 0, rejectedCalls: 1 });

    // The same run again: the plan and nothing else comes from the cache; the first message attempt,
    // empty last time, is a real call, and its answer (now usable) is the message.
    const second = await turn();
    expect(second.message).toBe("Refund W1, please.");
    expect(asked).toEqual(["plan", "message", "message", "message"]);
    expect(second.ledger).toMatchObject({ calls: 2, cachedCalls: 1, rejectedCalls: 0 });
  });
});
