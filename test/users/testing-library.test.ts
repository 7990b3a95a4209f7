import { type AgentFunction, runScenarioTest } from "terrarium/testing";
import { describe, expect, it } from "vitest";

/**
 * The library as a test suite uses it: `terrarium/testing` imported by its package name (vitest's alias
 * points it at the source), an in-process agent function, plain `expect`s on the result. The example
 * suite of examples/testing/ runs here too, so `npm test` keeps it working.
 */
import "../../examples/testing/support-agent.test.js";

/** A tiny agent that remembers the user's name across turns (it reads the history it is given). */
const greeter: AgentFunction = ({ message, history }) => {
  const name = /my name is (\w+)/i.exec(message)?.[1];
  if (name) return `Nice to meet you, ${name}.`;
  const earlier = history.map((entry) => /my name is (\w+)/i.exec(entry.content)?.[1]).find(Boolean);
  return earlier ? `You are ${earlier}.` : "I do not know your name yet.";
};

describe("terrarium/testing from a vitest file", () => {
  it("passes a scripted conversation with an in-process agent", async () => {
    const result = await runScenarioTest(
      {
        id: "remembers-name",
        script: [
          { user: "Who am I?" },
          { expect_reply: { matches: "do not know" } },
          { user: "My name is Ada." },
          { user: "Who am I?" },
          { expect_reply: { matches: "^You are Ada\\.$" } },
          { expect_no_tool_call: "anything" },
          "stop",
        ],
      },
      { agent: greeter },
    );
    expect(result.passed, result.failedStep?.message).toBe(true);
    expect(result.steps.every((step) => step.status === "passed")).toBe(true);
    expect(result.transcript.turns.map((turn) => turn.agent?.message)).toEqual([
      "I do not know your name yet.",
      "Nice to meet you, Ada.",
      "You are Ada.",
    ]);
  });

  it("reports the failing step with what was expected and what happened", async () => {
    const result = await runScenarioTest(
      {
        id: "forgets",
        script: [{ user: "Who am I?" }, { expect_reply: { matches: "Ada" } }, { user: "never sent" }],
      },
      { agent: greeter },
    );
    expect(result.passed).toBe(false);
    expect(result.steps.map((step) => step.status)).toEqual(["passed", "failed", "not_run"]);
    expect(result.failedStep).toMatchObject({
      index: 1,
      expected: "a reply matching /Ada/",
      actual: "I do not know your name yet.",
    });
  });
});
