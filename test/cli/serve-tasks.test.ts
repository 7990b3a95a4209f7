import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startServer } from "../../src/server/index.js";
import { cli, spawnCli, waitForStderr } from "../helpers/cli.js";
import { OpenEnvWsClient } from "../helpers/openenv-ws-client.js";
import { startScriptedLlmServer, writeScriptedConfig } from "../helpers/scripted-llm-server.js";

const TASKS = join(import.meta.dirname, "..", "fixtures", "tau2-retail", "tasks.json");

/** `terrarium serve … --tasks … --max-steps … --openenv-capacity … --openenv-idle-timeout …` as a user runs it. */
describe("serve --tasks", () => {
  it("serves the tasks as OpenEnv episodes with the step limit and capacity asked for", async () => {
    const run = spawnCli([
      "serve",
      "tau2-retail",
      "--tasks",
      TASKS,
      "--max-steps",
      "3",
      "--openenv-capacity",
      "1",
      "--openenv-idle-timeout",
      "600",
      "--port",
      "0",
    ]);
    try {
      await waitForStderr(run, /OpenEnv: \S+ \(114 tasks from/);
      const url = /OpenEnv: (\S+)\/openenv/.exec(run.stderr())?.[1] as string;
      const client = await OpenEnvWsClient.connect(url);
      const reset = await client.ask({ type: "reset", data: { task_id: "0" } });
      expect(reset.data.observation.metadata).toMatchObject({ task_id: "0", max_steps: 3 });
      expect(typeof reset.data.observation.instruction).toBe("string");
      // Capacity 1: a second connection is refused.
      const second = await OpenEnvWsClient.connect(url);
      const refused = await second.next();
      expect(refused).toMatchObject({ type: "error", data: { code: "CAPACITY_REACHED" } });
      expect(await second.closed).toBe(1013);
      const metadata = (await fetch(`${url}/openenv/metadata`).then((r) => r.json())) as {
        description: string;
      };
      expect(metadata.description).toContain("114 tasks");
      client.ws.close();
    } finally {
      run.child.kill("SIGTERM");
      expect(await run.exit).toBe(0);
    }
  }, 60_000);

  it("--user-model talks to the agent and --judge-model scores the NL assertions (tau2's dual control)", async () => {
    // The scripted model plays the user (a plan, then lines; the second reply stops) and the judge.
    const llm = await startScriptedLlmServer([], {
      respond: (body: any) => {
        const format = body?.response_format?.json_schema?.name;
        if (format === "user_turn_plan")
          return { reply: { content: JSON.stringify({ known: [], needed: [], nextStep: "ask" }) } };
        if (format === "nl_assertion_verdicts") {
          const count = (String(body.messages.at(-1).content).match(/^\d+\. /gm) ?? []).length;
          const verdicts = Array.from({ length: count }, (_, i) => ({
            index: i + 1,
            met: true,
            reason: "ok",
          }));
          return { reply: { content: JSON.stringify({ verdicts }) } };
        }
        const agentTurns = (body?.messages ?? []).filter((m: any) => String(m.content).startsWith("[agent]"));
        return {
          reply: {
            content: agentTurns.length === 0 ? "Hi, I need help with an order." : "Thanks! ###STOP###",
          },
        };
      },
    });
    const dir = mkdtempSync(join(tmpdir(), "serve-tasks-"));
    const config = writeScriptedConfig(dir, llm.baseURL);
    const run = spawnCli([
      "--config",
      config,
      "serve",
      "tau2-retail",
      "--tasks",
      TASKS,
      "--user-model",
      "scripted:user",
      "--user-temperature",
      "0",
      "--judge-model",
      "scripted:judge",
      "--port",
      "0",
    ]);
    try {
      await waitForStderr(run, /OpenEnv: \S+ \(114 tasks/);
      const url = /OpenEnv: (\S+)\/openenv/.exec(run.stderr())?.[1] as string;
      const client = await OpenEnvWsClient.connect(url);
      const reset = await client.ask({ type: "reset", data: { task_id: "2", seed: 7 } });
      // The user speaks first; the agent is not shown the user's instructions.
      expect(reset.data.observation.message).toEqual({
        role: "user",
        content: "Hi, I need help with an order.",
      });
      expect(reset.data.observation.instruction).toBeUndefined();
      expect(reset.data.observation.metadata.conversational).toBe(true);
      const reply = await client.ask({
        type: "step",
        data: { type: "message", content: "Sure, which order?" },
      });
      expect(reply.data.done).toBe(true);
      expect(reply.data.observation.metadata.end_reason).toBe("user_stop");
      // Judged: nl_assertions is a number now; db is tau2's check of an episode that wrote nothing.
      const breakdown = reply.data.observation.metadata.reward_breakdown;
      expect(breakdown.nl_assertions).toBe(1);
      expect(typeof breakdown.db).toBe("number");
      expect(reply.data.reward).toBe(breakdown.db);
      const judged = llm.requests.filter(
        (r: any) => r.body?.response_format?.json_schema?.name === "nl_assertion_verdicts",
      );
      expect(judged).toHaveLength(1);
      expect(String((judged[0] as any).body.messages.at(-1).content)).toContain("Sure, which order?");
      client.ws.close();
    } finally {
      run.child.kill("SIGTERM");
      expect(await run.exit).toBe(0);
      await llm.close();
    }
  }, 60_000);

  it("refuses bad values before anything starts, exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "serve-tasks-"));
    const broken = join(dir, "broken.json");
    writeFileSync(broken, JSON.stringify([{ id: "a", instruction: "x" }]));
    const cases: Array<[string[], RegExp]> = [
      [["--tasks", join(dir, "missing.json")], /--tasks .*missing\.json: no such file/],
      [["--tasks", TASKS, "--max-steps", "0"], /--max-steps.*at least 1/],
      [["--tasks", TASKS, "--openenv-capacity", "many"], /--openenv-capacity.*whole number/],
      [["--tasks", TASKS, "--openenv-idle-timeout", "-1"], /--openenv-idle-timeout.*seconds above 0/],
      [["--tasks", broken], /environment/],
      [["--user-model", "scripted:user"], /give --tasks too/],
      [["--tasks", TASKS, "--user-temperature", "3"], /--user-temperature.*from 0 to 2/],
      [["--tasks", TASKS, "--user-temperature", "0.5"], /--user-temperature needs --user-model/],
      [["--tasks", TASKS, "--backends", join(dir, "nowhere")], /--backends .*no such folder/],
      [["--tasks", TASKS, "--judge-model", "nosuchprovider:judge"], /nosuchprovider/],
    ];
    for (const [flags, message] of cases) {
      const result = await cli(["serve", "tau2-retail", "--port", "0", ...flags]);
      expect(result.code, flags.join(" ")).toBe(2);
      expect(result.stderr, flags.join(" ")).toMatch(message);
    }
  });
});

describe("serve --tasks dispatches on the file's first record", () => {
  it("a BFCL multi-turn file (with --backends) serves BFCL episodes scored by BFCL's checks", async () => {
    const dir = join(import.meta.dirname, "..", "fixtures", "bfcl-multi-turn");
    const server = await startServer({
      sources: ["bank"],
      port: 0,
      openenv: { tasks: [join(dir, "BFCL_v3_multi_turn_base.json")], backends: join(dir, "backends") },
    });
    const client = await OpenEnvWsClient.connect(server.url);
    try {
      const taskId = server.openenv.source.taskIds?.[0] as string;
      const reset = await client.ask({ type: "reset", data: { task_id: taskId } });
      expect(reset.type, JSON.stringify(reset)).toBe("observation");
      expect(reset.data.observation).toMatchObject({ turn: 0 });
      expect(reset.data.observation.metadata.format).toBe("bfcl_multi_turn");
      // Finishing every turn without a call fails BFCL's check (the ground truth expects calls).
      let last = reset;
      for (let turn = 0; turn < (reset.data.observation.turns as number) && !last.data.done; turn++)
        last = await client.ask({
          type: "step",
          data: { type: "call_tool", tool_name: "finish", arguments: {} },
        });
      expect(last.data.done).toBe(true);
      expect(last.data.reward).toBe(0);
      expect(Object.keys(last.data.observation.metadata.reward_breakdown).sort()).toEqual([
        "completed",
        "response",
        "state",
      ]);
    } finally {
      client.ws.close();
      await server.close();
    }
  }, 60_000);

  it("a BFCL file without --backends is refused before serving", async () => {
    const file = join(
      import.meta.dirname,
      "..",
      "fixtures",
      "bfcl-multi-turn",
      "BFCL_v3_multi_turn_base.json",
    );
    await expect(startServer({ sources: ["bank"], port: 0, openenv: { tasks: [file] } })).rejects.toThrow(
      /--backends/,
    );
  });
});
