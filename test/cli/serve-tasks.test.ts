import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, spawnCli, waitForStderr } from "../helpers/cli.js";
import { OpenEnvWsClient } from "../helpers/openenv-ws-client.js";

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
    ];
    for (const [flags, message] of cases) {
      const result = await cli(["serve", "tau2-retail", "--port", "0", ...flags]);
      expect(result.code, flags.join(" ")).toBe(2);
      expect(result.stderr, flags.join(" ")).toMatch(message);
    }
  });
});
