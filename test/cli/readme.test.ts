import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** README.md promises two commands that work on a fresh machine; the first is run here as written. */
describe("README", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  const [mainJob, tests] = block.split("\n").map((line) => line.replace(/\s+#.*$/, "").trim());

  it("starts with the main job and the test command", () => {
    expect(mainJob).toMatch(/^npm install && node bin\/terrarium\.js serve /);
    expect(tests).toBe("npm test");
    expect(readFileSync(join(ROOT, ".ci", "run"), "utf8")).toContain("\nnpm test\n");
  });

  it("runs the main job with the built CLI: a session, an exact call and a synthesized one", async () => {
    expect(existsSync(join(ROOT, "dist", "cli.js")), "dist/ is missing: run `npm run build`").toBe(true);
    const port = await freePort();
    const command = `${(mainJob as string).replace(/^npm install && /, "")} --port ${port}`;
    const child = spawn("sh", ["-c", `exec ${command}`], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
    try {
      await new Promise<void>((resolve, reject) => {
        let text = "";
        child.stderr?.on("data", (chunk: Buffer) => {
          text += chunk.toString();
          if (text.includes("terrarium serving")) resolve();
        });
        child.on("exit", (code) => reject(new Error(`the main job exited (${code}): ${text}`)));
      });
      const base = `http://127.0.0.1:${port}`;
      const post = async (path: string, body?: unknown) =>
        (
          await fetch(base + path, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body ?? {}),
          })
        ).json() as Promise<any>;
      const { id } = await post("/sessions");
      const moved = await post(`/sessions/${id}/calls`, {
        name: "transfer",
        arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 25 },
      });
      expect(moved).toMatchObject({
        status: "ok",
        simulator: "code",
        semantic: "skipped",
        observation: { from_balance: 2475 },
      });
      const sent = await post(`/sessions/${id}/calls`, {
        name: "send_notification",
        arguments: { account_id: "ACC-1001", channel: "sms", message: "Sent $25" },
      });
      expect(sent).toMatchObject({
        status: "ok",
        simulator: "schema",
        errors: [],
        observation: { status: expect.stringMatching(/^(queued|sent)$/) },
      });
    } finally {
      child.kill("SIGTERM");
    }
  }, 30_000);
});
