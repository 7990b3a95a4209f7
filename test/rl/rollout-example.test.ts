import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../../src/server/index.js";

/**
 * examples/rl/rollout.ts as a user runs it: a separate Node process importing the package's
 * `terrarium/openenv` export (dist/, built by `npm run build`), against `serve tau2-retail --tasks` with
 * the published retail tasks. Replaying task 0's ground truth ends the episode with tau2's db check at 1.
 */
const ROOT = join(import.meta.dirname, "..", "..");
const TASKS = join(ROOT, "test", "fixtures", "tau2-retail", "tasks.json");

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  server = await startServer({ sources: ["tau2-retail"], port: 0, openenv: { tasks: [TASKS] } });
}, 120_000);
afterAll(async () => {
  await server?.close();
});

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, args, { cwd: ROOT });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("examples/rl/rollout.ts", () => {
  it("the package exports terrarium/openenv (dist/openenv.js)", async () => {
    expect(existsSync(join(ROOT, "dist", "openenv.js")), "dist/ is stale: run `npm run build`").toBe(true);
    const imported = await run([
      "--input-type=module",
      "-e",
      'const m = await import("terrarium/openenv"); console.log(typeof m.OpenEnvClient, typeof m.OpenEnvClientError);',
    ]);
    expect(imported.stderr).toBe("");
    expect(imported.stdout.trim()).toBe("function function");
  });

  it("replays task 0's ground truth over the WebSocket and prints the reward breakdown", async () => {
    const result = await run([
      "--import",
      "tsx",
      "examples/rl/rollout.ts",
      "--url",
      `${server.url}/openenv`,
      "--task",
      "0",
      "--replay",
      TASKS,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^instruction: /);
    expect(lines[1]).toMatch(/^tools: .*exchange_delivered_order_items/);
    expect(lines).toContain("finish -> ok");
    const final = JSON.parse(lines.at(-1) as string);
    expect(final).toMatchObject({ done: true, reward: 1, reward_breakdown: { db: 1 } });
    expect(final.state).toMatchObject({ done: true });
    // The episode's calls are in its engine session, as the export and `rl score` read them.
    const history = await server.engine.history(final.session_id);
    expect(history.map((entry) => entry.request.name)).toContain("exchange_delivered_order_items");
  }, 120_000);
});
