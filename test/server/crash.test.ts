import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/index.js";
import { applyTolerantly } from "../../src/sim/index.js";

/**
 * Reliability: 50 concurrent sessions with no cross-talk, and a server killed with SIGKILL under load:
 * after a restart on the same SQLite file, every acknowledged call is in its session's history and every
 * state equals the replay of that history.
 */
const ROOT = join(import.meta.dirname, "..", "..");
let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill("SIGKILL");
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function startServe(db: string, port: number): Promise<ChildProcess> {
  const process_ = spawn(
    process.execPath,
    ["--import", "tsx", "src/cli/main.ts", "serve", "bank", "--db", db, "--port", String(port)],
    {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  await new Promise<void>((resolve, reject) => {
    let text = "";
    process_.stderr?.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes("terrarium serving")) resolve();
    });
    process_.on("exit", (code) => reject(new Error(`serve exited early (${code}): ${text}`)));
  });
  return process_;
}

const post = (base: string, path: string, body?: unknown) =>
  fetch(base + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });

describe("server reliability", () => {
  it("50 sessions x 50 calls, then SIGKILL under load: nothing acknowledged is lost", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "terrarium-crash-")), "sessions.sqlite");
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    child = await startServe(db, port);
    const sessions: string[] = [];
    for (let i = 0; i < 50; i++)
      sessions.push(((await (await post(base, "/sessions")).json()) as { id: string }).id);
    const acknowledged = new Map<string, number>(sessions.map((id) => [id, 0]));
    let killed = false;

    /** Each session's own client sends `calls` calls one after another; all sessions run at once. */
    const burst = (calls: number, killAt?: number) =>
      Promise.all(
        sessions.map(async (id, s) => {
          for (let i = 0; i < calls; i++) {
            try {
              const response = await post(base, `/sessions/${id}/calls`, {
                name: "transfer",
                arguments: {
                  from_account: "ACC-1001",
                  to_account: "ACC-1002",
                  amount: ((s * 7 + i) % 5) + 1,
                },
              });
              await response.text();
              if (response.status === 200) acknowledged.set(id, (acknowledged.get(id) ?? 0) + 1);
            } catch {
              return; // the server is gone
            }
            if (killAt !== undefined && !killed && s === 0 && i === killAt) {
              killed = true;
              child?.kill("SIGKILL");
            }
          }
        }),
      );

    /** Every acknowledged call is stored, and every state is the replay of its history. */
    const check = async (exact: boolean) => {
      for (const id of sessions) {
        const exported = (await (await fetch(`${base}/sessions/${id}/export`)).json()) as {
          snapshots: Array<{ state: unknown }>;
          history: Array<{ result: { changes: never[] } }>;
        };
        const state = await (await fetch(`${base}/sessions/${id}/state`)).json();
        if (exact) expect(exported.history.length).toBe(acknowledged.get(id));
        // A call may be stored whose answer never reached the client; never the other way round.
        else expect(exported.history.length).toBeGreaterThanOrEqual(acknowledged.get(id) ?? 0);
        let replayed = exported.snapshots[0]?.state;
        for (const entry of exported.history)
          replayed = applyTolerantly(replayed, entry.result.changes).state;
        expect(canonicalJson(state)).toBe(canonicalJson(replayed));
      }
    };

    await burst(50);
    await check(true); // 2,500 calls, no cross-talk
    await burst(30, 10);
    expect(killed).toBe(true);
    child = await startServe(db, port);
    await check(false);
    const after = await post(base, `/sessions/${sessions[1]}/calls`, {
      name: "get_account",
      arguments: { account_id: "ACC-1001" },
    });
    expect(after.status).toBe(200);
  }, 120_000);

  it("4 clients on each session (calls pipelined to the store), SIGKILL under load: every answered call is stored", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "terrarium-crash-staged-")), "sessions.sqlite");
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    child = await startServe(db, port);
    const sessions: string[] = [];
    for (let i = 0; i < 8; i++)
      sessions.push(((await (await post(base, "/sessions")).json()) as { id: string }).id);
    // Each call carries a memo of its own, so its history entry can be found whatever order it ran in.
    const answered = new Map<string, Set<string>>(sessions.map((id) => [id, new Set()]));
    let sent = 0;
    let killed = false;
    await Promise.all(
      sessions.flatMap((id, s) =>
        Array.from({ length: 4 }, async (_, c) => {
          for (let i = 0; i < 200; i++) {
            const memo = `${s}-${c}-${i}`;
            try {
              const response = await post(base, `/sessions/${id}/calls`, {
                name: "transfer",
                arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1, memo },
              });
              const text = await response.text();
              if (response.status === 200 && text.includes('"status":"ok"')) answered.get(id)?.add(memo);
            } catch {
              return; // the server is gone
            }
            // Killed once the load is well under way, from whichever client gets there first.
            if (++sent === 1500 && !killed) {
              killed = true;
              child?.kill("SIGKILL");
            }
          }
        }),
      ),
    );
    expect(killed).toBe(true);
    child = await startServe(db, port);
    let stored = 0;
    for (const id of sessions) {
      const exported = (await (await fetch(`${base}/sessions/${id}/export`)).json()) as {
        snapshots: Array<{ state: unknown }>;
        history: Array<{
          index: number;
          request: { arguments: { memo: string } };
          result: { changes: never[] };
        }>;
      };
      const memos = new Set(exported.history.map((entry) => entry.request.arguments.memo));
      for (const memo of answered.get(id) ?? []) expect(memos.has(memo), `${id}: ${memo}`).toBe(true);
      expect(exported.history.map((entry) => entry.index)).toEqual(exported.history.map((_, i) => i));
      // The stored state is the replay of the stored calls: nothing staged on a lost write survived.
      let replayed = exported.snapshots[0]?.state;
      for (const entry of exported.history) replayed = applyTolerantly(replayed, entry.result.changes).state;
      const state = await (await fetch(`${base}/sessions/${id}/state`)).json();
      expect(canonicalJson(state)).toBe(canonicalJson(replayed));
      stored += exported.history.length;
    }
    expect(stored).toBeGreaterThanOrEqual([...answered.values()].reduce((sum, set) => sum + set.size, 0));
  }, 120_000);
});
