import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { parseTasks, startTaskEpisode } from "../../src/rl/tasks/index.js";
import { startServer } from "../../src/server/index.js";
import { cli } from "../helpers/cli.js";

/** `terrarium rl score`: a stored episode scored apart from the environment, from a file or a server. */
const bank = BUILTIN_ENVIRONMENTS.bank;
const TASKS = [
  {
    id: "freeze-1001",
    instruction: "Freeze account ACC-1001.",
    environment: "bank",
    expected: { actions: [{ name: "freeze_account", arguments: { account_id: "ACC-1001" } }] },
    checks: ["db", "actions"],
  },
  {
    id: "judged",
    instruction: "Be polite.",
    environment: "bank",
    expected: { state: {} },
    assertions: ["The agent is polite."],
    checks: ["nl_assertions"],
  },
];

let server: Awaited<ReturnType<typeof startServer>>;
let dir: string;
let tasksFile: string;
let goodFile: string;
let goodSession: string;
let wrongFile: string;

beforeAll(async () => {
  if (!bank) throw new Error("no bank environment");
  server = await startServer({ sources: ["bank"], port: 0 });
  dir = mkdtempSync(join(tmpdir(), "rl-score-"));
  tasksFile = join(dir, "tasks.json");
  writeFileSync(tasksFile, JSON.stringify(TASKS));
  const [task] = parseTasks(JSON.stringify(TASKS));
  if (!task) throw new Error("no task");
  const run = async (account: string) => {
    const episode = await startTaskEpisode({ engine: server.engine, environment: bank, task });
    await server.engine.call(episode.sessionId, { name: "get_account", arguments: { account_id: account } });
    await server.engine.call(episode.sessionId, {
      name: "freeze_account",
      arguments: { account_id: account },
    });
    const response = await fetch(`${server.url}/sessions/${episode.sessionId}/export`);
    expect(response.status).toBe(200);
    const file = join(dir, `${account}.json`);
    writeFileSync(file, await response.text());
    return { sessionId: episode.sessionId, file };
  };
  const good = await run("ACC-1001");
  goodFile = good.file;
  goodSession = good.sessionId;
  wrongFile = (await run("ACC-1002")).file;
});
afterAll(async () => {
  await server?.close();
});

describe("terrarium rl score", () => {
  it("scores an export file: the task from the session's metadata, one line per check", async () => {
    const run = await cli(["rl", "score", goodFile, "--tasks", tasksFile]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("task freeze-1001 on bank");
    expect(run.stdout).toContain("reward: 1");
    expect(run.stdout).toMatch(/^ {2}db\s+1$/m);
    expect(run.stdout).toMatch(/^ {2}actions\s+1$/m);
  });

  it("a wrong episode scores 0 and still exits 0", async () => {
    const run = await cli(["rl", "score", wrongFile, "--tasks", tasksFile, "--json"]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      schemaVersion: 1,
      task: "freeze-1001",
      environment: "bank",
      reward: 0,
      breakdown: { db: 0, actions: 0 },
      actions: [false],
    });
  });

  it("fetches a session from a running server with --url", async () => {
    const run = await cli(["rl", "score", goodSession, "--url", server.url, "--tasks", tasksFile, "--json"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      session: goodSession,
      reward: 1,
      breakdown: { db: 1, actions: 1 },
    });
  });

  it("--task rescores with other checks; a check that needs a judge is null with why, and exit 1", async () => {
    const run = await cli(["rl", "score", goodFile, "--tasks", tasksFile, "--task", "judged"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("reward: null");
    expect(run.stdout).toMatch(/nl_assertions\s+null \(no judge model configured\)/);
  });

  it("unusable input exits 2 before any work", async () => {
    const notExport = join(dir, "not-export.json");
    writeFileSync(notExport, "{}");
    const cases: Array<[string[], RegExp]> = [
      [["rl", "score", join(dir, "missing.json"), "--tasks", tasksFile], /is not a file/],
      [["rl", "score", goodFile], /--tasks <file> is required/],
      [
        ["rl", "score", goodFile, "--tasks", tasksFile, "--task", "nope"],
        /task "nope" is not in the task files/,
      ],
      [["rl", "score", notExport, "--tasks", tasksFile], /not a session export/],
      [["rl", "score", "no-such-session", "--url", server.url, "--tasks", tasksFile], /has no session/],
      [["rl", "score", goodFile, "--tasks", join(dir, "missing-tasks.json")], /missing-tasks/],
    ];
    for (const [args, message] of cases) {
      const run = await cli(args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe("");
    }
  });

  it("an unreachable server exits 1", async () => {
    const run = await cli(["rl", "score", "s1", "--url", "http://127.0.0.1:1", "--tasks", tasksFile]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot fetch/);
  });
});
