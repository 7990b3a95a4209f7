import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
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

  it("the built package's terrarium/testing runs under node:test with no setup (dist/testing.js)", async () => {
    const root = join(import.meta.dirname, "..", "..");
    expect(existsSync(join(root, "dist", "testing.js")), "dist/ is stale: run `npm run build`").toBe(true);
    const script = [
      'import test from "node:test";',
      'import assert from "node:assert/strict";',
      'import { runScenarioTest } from "terrarium/testing";',
      'test("echo", async () => {',
      "  const result = await runScenarioTest(",
      '    { id: "echo", script: [{ user: "hi" }, { expect_reply: { matches: "^echo: hi$" } }] },',
      '    { agent: ({ message }) => "echo: " + message },',
      "  );",
      "  assert.equal(result.passed, true, result.failedStep?.message);",
      "});",
    ].join("\n");
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: root });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toContain("# pass 1");
  });
});
