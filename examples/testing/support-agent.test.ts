/**
 * Scenario tests of `support-agent.ts` with vitest: each test is a scripted conversation with assertions
 * on the replies, the tool calls and the store's state. No model is called and nothing is configured.
 *
 *   npx vitest run examples/testing/support-agent.test.ts
 */
import { type RunScenarioTestOptions, runScenarioTest, type ScenarioTestResult } from "terrarium/testing";
import { describe, expect, it } from "vitest";
import { supportAgent } from "./support-agent.js";

const options: RunScenarioTestOptions = { agent: supportAgent, agentTools: ["tau2-retail"] };

/** The failing step's message, so that a failure reads as what went wrong. */
function failure(result: ScenarioTestResult): string {
  return result.error ?? result.failedStep?.message ?? "";
}

describe("support agent", () => {
  it("cancels a pending order", async () => {
    const result = await runScenarioTest(
      {
        id: "cancel-pending",
        script: [
          { user: "Hi, please cancel order #W2974929, I no longer need it." },
          {
            expect_tool_call: {
              name: "cancel_pending_order",
              arguments: { order_id: "#W2974929", reason: "no longer needed" },
            },
          },
          { expect_state: { pointer: "/orders/#W2974929/status", equals: "cancelled" } },
          { expect_reply: { matches: "cancelled", flags: "i" } },
          "stop",
        ],
      },
      options,
    );
    expect(result.passed, failure(result)).toBe(true);
  });

  it("refuses to cancel an order that has shipped, and leaves it alone", async () => {
    const result = await runScenarioTest(
      {
        id: "cancel-processed",
        script: [
          { user: "Cancel #W2611340 please." },
          { expect_reply: { matches: "could not cancel" } },
          { expect_state: { pointer: "/orders/#W2611340/status", equals: "processed" } },
        ],
      },
      options,
    );
    expect(result.passed, failure(result)).toBe(true);
  });

  it("asks for the order number before acting", async () => {
    const result = await runScenarioTest(
      {
        id: "no-order-number",
        script: [
          { user: "I want to cancel my order." },
          { expect_reply: { matches: "which order", flags: "i" } },
          { expect_no_tool_call: "cancel_pending_order" },
        ],
      },
      options,
    );
    expect(result.passed, failure(result)).toBe(true);
  });
});
