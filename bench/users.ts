/**
 * Time per simulated-user turn, split into the user's model calls, the user's tools and the agent (a
 * planner on tau2-retail whose tool calls tau2-retail's code answers), with every model played by the
 * scripted OpenAI-compatible server on 127.0.0.1. The baseline, measured in the same run, is the bare
 * HTTP round trips a turn needs (5 model calls: plan, tool round, message; agent tool call, answer): what
 * is left is terrarium's own overhead per turn.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Models, parseConfig } from "../src/models/index.js";
import { createAgentTarget } from "../src/users/agents/index.js";
import { readTranscripts, runUsers } from "../src/users/run/index.js";
import { loadScenarios } from "../src/users/scenario/index.js";
import { startScriptedLlmServer } from "../test/helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../test/helpers/scripted-users.js";
import { type BenchResult, median } from "./report.js";

/** Model calls of one turn of the scripted conversation: the user's plan, tool round and message, the agent's two. */
const CALLS_PER_TURN = 5;
/** terrarium's own work per turn must stay under this (beyond the bare model round trips). */
const TARGET_OVERHEAD_MS = 25;

export async function benchUsers(): Promise<BenchResult> {
  const server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
  const out = mkdtempSync(join(tmpdir(), "terrarium-bench-users-"));
  try {
    const config = parseConfig({
      providers: {
        scripted: { type: "openai-compatible", baseURL: server.baseURL, structuredOutputs: true },
      },
      // No roles.default: no semantic validation of the agent's calls (judges are off too).
      roles: { user: "scripted:user" },
    });
    const models = new Models({ config, cache: null });
    const scenarios = loadScenarios(join(import.meta.dirname, "..", "examples", "users", "scenarios"));
    const agent = await createAgentTarget("planner:scripted:agent", {
      models,
      agentTools: ["tau2-retail"],
      seed: "1",
    });

    // Baseline: the bare round trip to the same server, as a user or agent call would make it.
    const body = JSON.stringify({ model: "my-agent", messages: [{ role: "user", content: "hi" }] });
    const roundTrip = async () => {
      const response = await fetch(`${server.baseURL}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      await response.json();
    };
    for (let i = 0; i < 50; i++) await roundTrip();
    const trips: number[] = [];
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      await roundTrip();
      trips.push(performance.now() - started);
    }
    const bareMs = median(trips);

    const started = performance.now();
    const { summary } = await runUsers({
      scenarios,
      agent,
      models,
      outDir: out,
      runs: 10,
      concurrency: 1,
      seed: "bench",
    });
    const wallMs = performance.now() - started;
    await agent.close();
    await models.close();

    const turns = readTranscripts(out).flatMap((run) => run.turns);
    const part = (pick: (t: (typeof turns)[number]) => number) => median(turns.map(pick));
    const userMs = part((t) => t.timing.userModelMs);
    // The user calls its tools on its first turn only: their time is the median over turns with actions.
    const toolsMs = median(turns.filter((t) => t.actions.length > 0).map((t) => t.timing.toolsMs));
    const agentMs = part((t) => t.timing.agentMs);
    const turnMs = part((t) => t.timing.userModelMs + t.timing.toolsMs + t.timing.agentMs);
    const baselineMs = CALLS_PER_TURN * bareMs;
    const overheadMs = turnMs - baselineMs;
    const pass = overheadMs <= TARGET_OVERHEAD_MS;
    const row = (name: string, ms: number, note = "") => `| ${name} | ${ms.toFixed(3)} ms | ${note} |`;
    return {
      name: "users: time per simulated-user turn (scripted models, planner agent on tau2-retail)",
      lines: [
        `${summary.runs.total} runs, ${turns.length} turns in ${(wallMs / 1000).toFixed(1)} s (judges off)`,
        "| part (median per turn) | time | |",
        "|---|---|---|",
        row("user model (plan, tool round, message)", userMs, "3 model calls"),
        row("user tools (BM25 search, mocked tool)", toolsMs, "turns with actions"),
        row("agent (planner: 2 model calls + tau2-retail code)", agentMs),
        row("whole turn", turnMs),
        row(`baseline: ${CALLS_PER_TURN} bare HTTP round trips`, baselineMs, `${bareMs.toFixed(2)} ms each`),
        row(
          "terrarium's overhead per turn",
          overheadMs,
          `target ≤ ${TARGET_OVERHEAD_MS} ms: ${pass ? "met" : "MISSED"}`,
        ),
      ],
      report: {
        runs: summary.runs.total,
        turns: turns.length,
        userModelMs: userMs,
        userToolsMs: toolsMs,
        agentMs,
        turnMs,
        baselineMs,
        overheadMs,
        targetOverheadMs: TARGET_OVERHEAD_MS,
      },
      pass,
    };
  } finally {
    await server.close();
    rmSync(out, { recursive: true, force: true });
  }
}
