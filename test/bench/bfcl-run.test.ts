import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BFCL_DIR } from "../helpers/bfcl.js";
import { cli } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

let server: ScriptedLlmServer;
afterEach(() => server?.close());

/**
 * `bench bfcl` end to end on simple_0 against the scripted server: the planner's first attempt gets a
 * value wrong, the judge says so, the retry gets it right; budget 0 scores 0%, budgets 1..3 score 100%.
 */
describe("terrarium bench bfcl", () => {
  it("scores the planner alone and with GATS, per retry budget", async () => {
    server = await startScriptedLlmServer([], {
      respond: (body) => {
        const schema = body?.response_format?.json_schema?.name;
        const text = JSON.stringify(body.messages);
        if (schema === "checklist")
          return {
            reply: {
              content: JSON.stringify({ items: [{ description: "area computed for base 10, height 5" }] }),
            },
          };
        if (schema === "simulated_call")
          return {
            reply: { content: JSON.stringify({ status: "ok", observation: { area: 25 }, changes: [] }) },
          };
        if (schema === "semantic_verdict")
          return { reply: { content: JSON.stringify({ valid: true, problems: [] }) } };
        if (schema === "initial_state")
          return { reply: { content: JSON.stringify({ state: { runtime_state: { unit: "cm" } } }) } };
        if (schema === "judgement") {
          const right =
            text.includes('\\"height\\": 5') || text.includes('"height":5') || /height\\\\?":\s*5/.test(text);
          return {
            reply: {
              content: JSON.stringify({
                items: [
                  {
                    description: "area",
                    status: right ? "success" : "failed",
                    reasoning: right ? "ok" : "height should be 5",
                  },
                ],
              }),
            },
          };
        }
        if (body.messages.at(-1).role === "tool") return { reply: { content: "The area is 25." } };
        const retry = text.includes("previous attempt");
        return {
          reply: {
            toolCalls: [{ name: "calculate_triangle_area", arguments: { base: 10, height: retry ? 5 : 6 } }],
          },
        };
      },
    });
    const config = writeScriptedConfig(mkdtempSync(join(tmpdir(), "terrarium-bfcl-run-")), server.baseURL, {
      default: "scripted:m",
    });
    const run = await cli([
      "--config",
      config,
      "bench",
      "bfcl",
      "--data",
      BFCL_DIR,
      "--categories",
      "simple",
      "--limit",
      "1",
      "--max-retries",
      "3",
      "--json",
    ]);
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout);
    expect(summary).toMatchObject({ schemaVersion: 2, items: 1, failedItems: 0, errored: 0, errorKinds: [] });
    expect(
      summary.budgets.map((b: { retries: number; overall: number; errored: number }) => [
        b.retries,
        b.overall,
        b.errored,
      ]),
    ).toEqual([
      [0, 0, 0],
      [1, 1, 0],
      [2, 1, 0],
      [3, 1, 0],
    ]);
    // One ledger: every model call of the run is counted. Budget 0: bootstrap, planner (2 calls), the
    // validator and the simulator; budget 1 adds the checklist, two judgements and the retry's four calls.
    const requests = server.requests.length;
    expect(summary.budgets[0].modelCalls).toBe(5);
    expect(summary.budgets[1].modelCalls).toBe(requests);
    expect(summary.budgets[0].label).toBe("0 (no GATS: planner + its tool calls)");
    // The scripted model has no price entry: its cost is unknown, not $0.
    expect(summary.budgets[1].unpricedCalls).toBe(requests);
    // More budget costs more tokens, until GATS stops at the first success.
    const tokens = summary.budgets.map((b: { tokens: number }) => b.tokens);
    expect(tokens[1]).toBeGreaterThan(tokens[0]);
    expect(tokens[3]).toBe(tokens[1]);
  }, 30_000);

  it("a simulated call that fails errors that budget: the checker's verdict on the calls made stands, the error is counted beside it and fails the run", async () => {
    server = await startScriptedLlmServer([], {
      respond: (body) => {
        const schema = body?.response_format?.json_schema?.name;
        if (schema === "checklist")
          return { reply: { content: JSON.stringify({ items: [{ description: "area computed" }] }) } };
        if (schema === "simulated_call") return { status: 400, error: { message: "the simulator broke" } };
        if (schema === "semantic_verdict")
          return { reply: { content: JSON.stringify({ valid: true, problems: [] }) } };
        if (schema === "initial_state") return { reply: { content: JSON.stringify({ state: {} }) } };
        if (schema === "judgement")
          return {
            reply: {
              content: JSON.stringify({
                items: [{ description: "area", status: "failed", reasoning: "the tool failed" }],
              }),
            },
          };
        if (body.messages.at(-1).role === "tool") return { reply: { content: "Sorry." } };
        return {
          reply: { toolCalls: [{ name: "calculate_triangle_area", arguments: { base: 10, height: 5 } }] },
        };
      },
    });
    const config = writeScriptedConfig(mkdtempSync(join(tmpdir(), "terrarium-bfcl-err-")), server.baseURL, {
      default: "scripted:m",
    });
    const run = await cli([
      "--config",
      config,
      "bench",
      "bfcl",
      "--data",
      BFCL_DIR,
      "--categories",
      "simple",
      "--limit",
      "1",
      "--max-retries",
      "1",
    ]);
    expect(run.code).toBe(1);
    // The planner's call was right (what BFCL scores), but its simulation failed: 100%, with 1 errored.
    expect(run.stdout).toMatch(
      /0 \(no GATS: planner \+ its tool calls\)\s+│\s+100\.0%\s+│\s+100\.0%\s+│\s+100\.0%\s+│\s+1\s/,
    );
    expect(run.stdout).toContain("price unknown");
    expect(run.stdout).toContain("1 items; accuracy over all 1, as BFCL computes it");
    expect(run.stderr).toMatch(
      /\nsimulator_error: 1 \(first, simple_0: budget 0: 1 simulated call\(s\) failed \(calculate_triangle_area: .*\)\)\n1 of 1 items errored; --max-errors allows 0\n$/,
    );
  }, 30_000);
});
