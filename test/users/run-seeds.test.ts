import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { numericSeed } from "../../src/users/agents/shared.js";
import { seedNumber } from "../../src/users/simulator/user.js";
import { cli } from "../helpers/cli.js";
import {
  type RecordedRequest,
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";

const SCENARIO = join(
  import.meta.dirname,
  "..",
  "..",
  "examples",
  "users",
  "scenarios",
  "retail-return.yaml",
);
const ID = "retail-return-headphones";

/**
 * Each run's seed reaches every model the run uses (issue 22): the planner and openai-compatible agents'
 * calls and every judge call of run k carry a seed made from run k's own `<seed>/<scenario>/<k>`, so two
 * runs of one scenario are two samples, not one answer repeated.
 */
describe("users run: each run's seed reaches every model it uses", () => {
  let server: ScriptedLlmServer;
  let agentServer: ScriptedLlmServer;
  let dir: string;
  let config: string;

  beforeAll(async () => {
    server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    agentServer = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    dir = mkdtempSync(join(tmpdir(), "users-seeds-"));
    config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:judge", user: "scripted:user" });
  });
  afterAll(async () => {
    await server.close();
    await agentServer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const runSeeds = (seed: string) => [1, 2].map((k) => `${seed}/${ID}/${k}`);
  /** The distinct `seed`s of the requests `pick` selects, sorted. */
  const seedsOf = (requests: RecordedRequest[], pick: (body: any) => boolean) =>
    [...new Set(requests.filter((r) => pick(r.body)).map((r) => r.body?.seed))].sort();
  const schemaOf = (body: any): string => String(body?.response_format?.json_schema?.name ?? "");
  const sorted = (values: number[]) => [...values].sort();

  it("gives the planner agent and every judge of run k that run's seed", async () => {
    const from = server.requests.length;
    const out = join(dir, "planner");
    const run = await cli([
      "--config",
      config,
      "users",
      "run",
      "--scenarios",
      SCENARIO,
      "--agent",
      "planner:scripted:agent",
      "--agent-tools",
      "tau2-retail",
      "--runs",
      "2",
      "--seed",
      "5",
      "--out",
      out,
    ]);
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    const requests = server.requests.slice(from);
    const agentSeeds = runSeeds("5").map(numericSeed);
    expect(agentSeeds[0]).not.toBe(agentSeeds[1]);
    // The planner: one seed per run, both runs' seeds.
    expect(seedsOf(requests, (body) => body?.model === "agent")).toEqual(sorted(agentSeeds));
    // Every judge (realism, failures, the goal judge): the same, from each run's seed.
    const judgeSeeds = sorted(runSeeds("5").map(seedNumber));
    for (const schema of ["realism_goal", "response_scores", "judgement"])
      expect(seedsOf(requests, (body) => schemaOf(body) === schema)).toEqual(judgeSeeds);
    // The user model had the runs' seeds already; it still does.
    expect(seedsOf(requests, (body) => body?.model === "user").length).toBe(2);
    // A run's seed is written in its transcript's header, where a reader can recompute these.
    const header = JSON.parse(
      readFileSync(join(out, "transcripts", `${ID}.2.jsonl`), "utf8").split("\n")[0] ?? "",
    );
    expect(header.seed).toBe(`5/${ID}/2`);

    // Another --seed gives other seeds: the agent's seed follows --seed, not only the run number.
    const again = await cli([
      "--config",
      config,
      "users",
      "run",
      "--scenarios",
      SCENARIO,
      "--agent",
      "planner:scripted:agent",
      "--agent-tools",
      "tau2-retail",
      "--runs",
      "2",
      "--seed",
      "6",
      "--no-judges",
      "--out",
      join(dir, "planner-6"),
    ]);
    expect(again.code).toBe(0);
    const later = server.requests.slice(from + requests.length);
    expect(seedsOf(later, (body) => body?.model === "agent")).toEqual(sorted(runSeeds("6").map(numericSeed)));
  });

  it("sends an openai-compatible agent the run's seed", async () => {
    const run = await cli([
      "--config",
      config,
      "users",
      "run",
      "--scenarios",
      SCENARIO,
      "--agent",
      `openai-compatible:${agentServer.baseURL}#my-agent`,
      "--agent-tools",
      "tau2-retail",
      "--runs",
      "2",
      "--seed",
      "5",
      "--no-judges",
      "--out",
      join(dir, "chat"),
    ]);
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    expect(seedsOf(agentServer.requests, () => true)).toEqual(sorted(runSeeds("5").map(numericSeed)));
  });
});
