import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readSamples, streamSamples } from "../../src/bench/envsim/sample-store.js";
import type { EnvSimSample } from "../../src/bench/envsim/types.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { cli } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

const TICKETS = join("test", "fixtures", "envsim-collect", "tickets.yaml");
const dir = () => mkdtempSync(join(tmpdir(), "terrarium-envsim-collect-"));
const records = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, any>);

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Scores samples with the code simulator in strict mode; returns [n, FM, CM]. */
async function codeScore(bench: string, out: string): Promise<number[]> {
  const run = await cli([
    "envsim",
    "eval",
    "--bench",
    bench,
    "--simulator",
    "code",
    "--mode",
    "strict",
    "--out",
    out,
    "--json",
  ]);
  expect(run.code, run.stderr).toBe(0);
  const overall = JSON.parse(run.stdout).simulators[0].summary.overall;
  return [overall.n, overall.fm.value, overall.cm.value];
}

describe("envsim collect: what it is asked", () => {
  it("refuses an unknown environment before any work, naming it and the built-ins", async () => {
    const out = join(dir(), "samples.jsonl");
    const run = await cli(["envsim", "collect", "--env", "bank", "--env", "bnak", "--out", out]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/unknown environment "bnak": not a built-in \(.*bank.*, or all\) nor a file/);
    expect(existsSync(out)).toBe(false);
    const none = await cli(["envsim", "collect", "--out", out]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/name the environments to collect from/);
    const notEnvironment = await cli(["envsim", "collect", "package.json", "--out", out]);
    expect(notEnvironment.stderr).toMatch(/"package.json" is not an environment/);
    expect(existsSync(out)).toBe(false);
  });

  it("refuses a bad --source, --calls without replay, and numbers that are not counts", async () => {
    const out = join(dir(), "samples.jsonl");
    const cases: Array<[string[], RegExp]> = [
      [["--source", "random"], /--source must be explore, agent or replay, not "random"/],
      [["--source", "replay"], /--source replay needs --calls/],
      [["--calls", "calls.jsonl"], /--calls goes with --source replay/],
      [["--steps", "abc"], /--steps.*expected a whole number of at least 1, got "abc"/],
      [["--trajectories", "-1"], /--trajectories.*expected a whole number of at least 1, got "-1"/],
      [["--trajectories", "0"], /expected a whole number of at least 1, got "0"/],
      [["--steps", "2.5"], /expected a whole number of at least 1, got "2.5"/],
    ];
    for (const [args, message] of cases) {
      const run = await cli(["envsim", "collect", "bank", "--out", out, ...args]);
      expect(run.code, args.join(" ")).not.toBe(0);
      expect(run.stderr, args.join(" ")).toMatch(message);
    }
    expect(existsSync(out)).toBe(false);
  });

  it("collects from every built-in with --env all, and from --env repeated beside positional names", async () => {
    const out = join(dir(), "all.jsonl");
    const all = await cli([
      "envsim",
      "collect",
      "--env",
      "all",
      "--out",
      out,
      "--trajectories",
      "1",
      "--steps",
      "2",
    ]);
    expect(all.code, all.stderr).toBe(0);
    const names = Object.keys(BUILTIN_ENVIRONMENTS);
    expect(names).toContain("tau2-retail");
    const samples = await readSamples(out);
    expect(samples).toHaveLength(names.length * 2);
    expect([...new Set(samples.map((s) => s.envId))].sort()).toEqual([...names].sort());
    expect(all.stderr).toMatch(new RegExp(`${names.length * 2} samples written to`));

    const some = join(dir(), "some.jsonl");
    const run = await cli([
      "envsim",
      "collect",
      "hotel",
      "--env",
      "bank",
      "--env",
      "airline",
      "--env",
      "bank",
      "--out",
      some,
      "--trajectories",
      "2",
      "--steps",
      "3",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const collected = await readSamples(some);
    expect([...new Set(collected.map((s) => s.envId))]).toEqual(["hotel", "bank", "airline"]);
    expect(collected).toHaveLength(18);
    // Progress goes to stderr as plain lines when it is not a terminal.
    expect(run.stderr).toMatch(/^6\/6 trajectories \(18 transitions\)$/m);
    expect(run.stderr).toMatch(/^bank: 6 transitions; tools succeeded \d+\/6/m);
  });

  it("numbers actions from 1: step 0 is the setup state, with no action, and the first action's before", async () => {
    const out = join(dir(), "samples.jsonl");
    const run = await cli(["envsim", "collect", "bank", "--out", out, "--trajectories", "2", "--steps", "4"]);
    expect(run.code, run.stderr).toBe(0);
    const samples = await readSamples(out);
    expect(samples.map((s) => `${s.taskId}/${s.step}`)).toEqual([
      "schema-0/1",
      "schema-0/2",
      "schema-0/3",
      "schema-0/4",
      "schema-1/1",
      "schema-1/2",
      "schema-1/3",
      "schema-1/4",
    ]);
    const bank = BUILTIN_ENVIRONMENTS.bank;
    if (!bank) throw new Error("bank");
    const initial = await bank.initialState();
    const trajectories = records(out).filter((r) => r.kind === "trajectory");
    expect(trajectories.map((t) => [t.taskId, t.seed])).toEqual([
      ["schema-0", "1/0"],
      ["schema-1", "1/1"],
    ]);
    for (const first of samples.filter((s) => s.step === 1)) expect(first.before).toEqual(initial);
    // Each action's seed is its own: trajectory/step.
    expect(samples.map((s) => s.seed)).toEqual(samples.map((s) => `1/${s.taskId.slice(7)}/${s.step}`));
  });

  it("--resume skips finished trajectories and appends the rest; other settings are refused", async () => {
    const out = join(dir(), "samples.jsonl");
    const args = ["envsim", "collect", "bank", "warehouse", "--out", out, "--steps", "3"];
    expect((await cli([...args, "--trajectories", "1"])).code).toBe(0);
    const resumed = await cli([...args, "--trajectories", "2", "--resume"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/6 samples written to .* \(2 trajectories already in the file skipped\)/);
    expect(resumed.stderr).toMatch(/^bank: 3 transitions; .* \(1 trajectories already collected\)$/m);
    const fresh = join(dir(), "fresh.jsonl");
    expect((await cli([...args.slice(0, 5), fresh, "--steps", "3", "--trajectories", "2"])).code).toBe(0);
    const ids = (samples: EnvSimSample[]) => samples.map((s) => `${s.id} ${JSON.stringify(s.after)}`).sort();
    expect(ids(await readSamples(out))).toEqual(ids(await readSamples(fresh)));
    const other = await cli([...args.slice(0, 6), "--steps", "4", "--trajectories", "2", "--resume"]);
    expect(other.code).not.toBe(0);
    expect(other.stderr).toMatch(/cannot resume: the file was collected with --steps 3, not --steps 4/);
  });
});

describe("envsim collect --source agent", () => {
  it("records a failed model call and goes on with the next trajectory", async () => {
    const folder = dir();
    server = await startScriptedLlmServer([
      // Trajectory 0: two calls, then the model fails (400: not retried).
      {
        reply: {
          toolCalls: [
            { name: "get_account", arguments: { account_id: "ACC-1001" } },
            { name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 5 } },
          ],
        },
      },
      { status: 400, error: { message: "the scripted model is down" } },
      // Trajectory 1: three calls fill its steps.
      {
        reply: {
          toolCalls: [
            { name: "open_account", arguments: { owner: "Ada", deposit: 10 } },
            { name: "freeze_account", arguments: { account_id: "ACC-2001" } },
            { name: "list_accounts", arguments: { owner: "Ada" } },
          ],
        },
      },
    ]);
    const config = writeScriptedConfig(folder, server.baseURL);
    const out = join(folder, "agent.jsonl");
    const run = await cli([
      "--config",
      config,
      "envsim",
      "collect",
      "bank",
      "--source",
      "agent",
      "--model",
      "scripted:explorer",
      "--out",
      out,
      "--trajectories",
      "2",
      "--steps",
      "3",
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /bank: 5 transitions from the agent; 1 agent calls failed \(first: .*scripted model is down/,
    );
    expect(run.stderr).toMatch(/5 samples written to .* \(1 failed agent calls recorded in the file\)/);
    const errors: Array<{ taskId: string; step: number; error: string }> = [];
    const samples: EnvSimSample[] = [];
    for await (const sample of streamSamples(out, { onError: (error) => errors.push(error) }))
      samples.push(sample);
    expect(samples.map((s) => `${s.taskId}/${s.step}/${s.call.name}`)).toEqual([
      "agent-0/1/get_account",
      "agent-0/2/transfer",
      "agent-1/1/open_account",
      "agent-1/2/freeze_account",
      "agent-1/3/list_accounts",
    ]);
    expect(errors).toMatchObject([{ taskId: "agent-0", step: 3, environment: "bank" }]);
    expect(errors[0]?.error).toMatch(/scripted model is down/);
    expect(samples.every((s) => s.seed !== undefined && s.task?.startsWith("Use this environment"))).toBe(
      true,
    );
    // Agent samples replay exactly too (open_account makes an id from the step's seed).
    expect(await codeScore(out, join(folder, "code"))).toEqual([5, 1, 1]);
  });

  it("--resume collects again the trajectories that ended with an agent error, and only those", async () => {
    const folder = dir();
    const fine = [
      // Trajectory 0: three calls fill its steps.
      {
        reply: {
          toolCalls: [
            { name: "get_account", arguments: { account_id: "ACC-1001" } },
            { name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 5 } },
            { name: "open_account", arguments: { owner: "Ada", deposit: 10 } },
          ],
        },
      },
    ];
    const second = {
      reply: {
        toolCalls: [
          { name: "open_account", arguments: { owner: "Bo", deposit: 7 } },
          { name: "list_accounts", arguments: { owner: "Bo" } },
          { name: "get_account", arguments: { account_id: "ACC-1002" } },
        ],
      },
    };
    const args = (out: string, config: string) => [
      "--config",
      config,
      "envsim",
      "collect",
      "bank",
      "--source",
      "agent",
      "--model",
      "scripted:explorer",
      "--out",
      out,
      "--trajectories",
      "2",
      "--steps",
      "3",
    ];
    // First run: trajectory 0 gets one call in, then the model fails; trajectory 1 is whole.
    server = await startScriptedLlmServer([
      { reply: { toolCalls: [{ name: "get_account", arguments: { account_id: "ACC-1001" } }] } },
      { status: 400, error: { message: "the scripted model is down" } },
      second,
    ]);
    const out = join(folder, "agent.jsonl");
    const first = await cli(args(out, writeScriptedConfig(folder, server.baseURL)));
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/4 samples written to .* \(1 failed agent calls recorded in the file\)/);
    await server.close();

    // Resumed: only trajectory 0 is run again (one model call), and the file loses its failed attempt.
    server = await startScriptedLlmServer(fine);
    const resumed = await cli([...args(out, writeScriptedConfig(folder, server.baseURL)), "--resume"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(server.requests).toHaveLength(1);
    expect(server.remaining()).toBe(0);
    expect(resumed.stderr).toMatch(
      /3 samples written to .* \(1 trajectories already in the file skipped; 1 trajectories that had ended with an agent error collected again\)/,
    );
    const errors: unknown[] = [];
    const samples: EnvSimSample[] = [];
    for await (const sample of streamSamples(out, { onError: (error) => errors.push(error) }))
      samples.push(sample);
    expect(errors).toEqual([]);
    expect(samples.map((s) => `${s.taskId}/${s.step}/${s.call.name}`)).toEqual([
      "agent-1/1/open_account",
      "agent-1/2/list_accounts",
      "agent-1/3/get_account",
      "agent-0/1/get_account",
      "agent-0/2/transfer",
      "agent-0/3/open_account",
    ]);
    expect(records(out).filter((r) => r.kind === "trajectory")).toHaveLength(2);

    // The same samples as a run in which the model never failed.
    await server.close();
    server = await startScriptedLlmServer([...fine, second]);
    const clean = join(folder, "clean.jsonl");
    const uninterrupted = await cli(args(clean, writeScriptedConfig(folder, server.baseURL)));
    expect(uninterrupted.code, uninterrupted.stderr).toBe(0);
    const byId = (list: EnvSimSample[]) =>
      Object.fromEntries(list.map((s) => [s.id, JSON.parse(JSON.stringify(s)) as unknown]));
    expect(byId(samples)).toEqual(byId(await readSamples(clean)));

    // A second resume has nothing left to do.
    const again = await cli([...args(out, writeScriptedConfig(folder, server.baseURL)), "--resume"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/0 samples written to .* \(2 trajectories already in the file skipped\)/);
  });

  it("fails before any work when the model cannot be reached by configuration", async () => {
    const folder = dir();
    const out = join(folder, "agent.jsonl");
    const config = join(folder, "terrarium.config.yaml");
    writeFileSync(config, "cache:\n  mode: off\n");
    const run = await cli([
      "--config",
      config,
      "envsim",
      "collect",
      "bank",
      "--source",
      "agent",
      "--out",
      out,
    ]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/no model is configured for the "explorer" role/);
    expect(existsSync(out)).toBe(false);
  });
});

describe("envsim collect: samples that can be re-run", () => {
  it("a Python descriptor's samples name the descriptor and their seeds: the code simulator repeats them exactly", async () => {
    const folder = dir();
    const out = join(folder, "tickets.jsonl");
    const run = await cli([
      "envsim",
      "collect",
      TICKETS,
      "--out",
      out,
      "--trajectories",
      "3",
      "--steps",
      "8",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const samples = await readSamples(out);
    expect(samples).toHaveLength(24);
    expect(samples.every((s) => s.envKind === "python" && s.seed !== undefined)).toBe(true);
    const reference = samples[0]?.environment as string;
    expect(isAbsolute(reference) && reference.endsWith(join("envsim-collect", "tickets.yaml"))).toBe(true);
    // Random ids were drawn (so only the right seed gives them back).
    expect(samples.some((s) => s.call.name === "open_ticket" && s.success)).toBe(true);
    expect(await codeScore(out, join(folder, "code"))).toEqual([24, 1, 1]);

    // Replayed calls, too.
    const calls = join(folder, "calls.jsonl");
    writeFileSync(
      calls,
      [
        [
          { name: "open_ticket", arguments: { title: "vpn down", priority: 3 } },
          { name: "assign", arguments: { ticket_id: "T-000001", agent: "bo" } },
          { name: "close", arguments: { ticket_id: "T-000001" } },
          { name: "open_ticket", arguments: { title: "" } },
        ],
        [{ name: "list_tickets", arguments: {} }],
      ]
        .map((line) => JSON.stringify(line))
        .join("\n"),
    );
    const replayed = join(folder, "replayed.jsonl");
    const replay = await cli([
      "envsim",
      "collect",
      TICKETS,
      "--source",
      "replay",
      "--calls",
      calls,
      "--out",
      replayed,
    ]);
    expect(replay.code, replay.stderr).toBe(0);
    const steps = await readSamples(replayed);
    expect(steps.map((s) => [s.step, s.success])).toEqual([
      [1, true],
      [2, true],
      [3, true],
      [4, false],
      [1, true],
    ]);
    expect(await codeScore(replayed, join(folder, "code-replay"))).toEqual([5, 1, 1]);
  }, 60_000);

  it("the whole pipeline on a Python descriptor: collect (explore and replay), build, eval code at 100% strict", async () => {
    const folder = dir();
    const explored = join(folder, "explored.jsonl");
    const collected = await cli([
      "envsim",
      "collect",
      TICKETS,
      "--out",
      explored,
      "--trajectories",
      "12",
      "--steps",
      "10",
    ]);
    expect(collected.code, collected.stderr).toBe(0);
    const calls = join(folder, "calls.jsonl");
    writeFileSync(
      calls,
      JSON.stringify([
        { name: "open_ticket", arguments: { title: "printer jam", priority: 2 } },
        { name: "assign", arguments: { ticket_id: "T-000001", agent: "al" } },
        { name: "close", arguments: { ticket_id: "T-000001" } },
      ]),
    );
    const replayed = join(folder, "replayed.jsonl");
    const replay = await cli([
      "envsim",
      "collect",
      TICKETS,
      "--source",
      "replay",
      "--calls",
      calls,
      "--out",
      replayed,
    ]);
    expect(replay.code, replay.stderr).toBe(0);
    // Small targets: the tickets environment is tiny; every stratum it can fill is filled.
    const bench = join(folder, "bench.jsonl");
    const built = await cli([
      "envsim",
      "build",
      "--transitions",
      explored,
      replayed,
      "--out",
      bench,
      "--targets",
      "2,2,2,2,1,0",
      "--json",
    ]);
    expect(built.code, built.stderr).toBe(0);
    const benchSamples = await readSamples(bench);
    expect(benchSamples.length).toBeGreaterThan(5);
    expect(benchSamples.every((sample) => sample.envKind === "python" && sample.seed !== undefined)).toBe(
      true,
    );
    const [n, fm, cm] = await codeScore(bench, join(folder, "code"));
    expect([n, fm, cm]).toEqual([benchSamples.length, 1, 1]);
  }, 90_000);

  it("replayed samples of a built-in keep their step seeds: generated ids come back under the exact simulator", async () => {
    const folder = dir();
    const calls = join(folder, "calls.jsonl");
    writeFileSync(
      calls,
      `${JSON.stringify([
        { name: "open_account", arguments: { owner: "Ada", deposit: 50 } },
        { name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 5 } },
        { name: "open_account", arguments: { owner: "Bo", deposit: 5, currency: "EUR" } },
        { name: "close_account", arguments: { account_id: "ACC-1001" } },
      ])}\n`,
    );
    const out = join(folder, "replayed.jsonl");
    const run = await cli([
      "envsim",
      "collect",
      "bank",
      "--source",
      "replay",
      "--calls",
      calls,
      "--out",
      out,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/bank: 4 transitions replayed/);
    const samples = await readSamples(out);
    expect(samples.map((s) => s.seed)).toEqual(["1/0/1", "1/0/2", "1/0/3", "1/0/4"]);
    expect(await codeScore(out, join(folder, "code"))).toEqual([4, 1, 1]);
  });
});
