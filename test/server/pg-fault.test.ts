import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, spawnCli, waitForStderr } from "../helpers/cli.js";
import { type PgCluster, postgresServerAvailable, startPgCluster } from "../helpers/pg-cluster.js";

/**
 * Postgres crashes under load and comes back. Two `terrarium serve` replicas (processes of their own)
 * share a private cluster; several clients make tool calls on shared sessions, spread over both
 * replicas and over terrarium's and Gecko's routes. Then `pg_ctl stop -m immediate` (every connection
 * cut, no checkpoint): both replicas stay up, /livez answers 200, /readyz 503, and calls get 503
 * STORE_UNAVAILABLE with Retry-After and no internals. After the restart, both are ready again and calls
 * succeed at once. In the end every call that was acknowledged (2xx) is in its session's history exactly
 * once, no call is there twice, and every session's state agrees with its history.
 */
const bin = postgresServerAvailable("Postgres restarted under load across two replicas");

const SESSIONS = 6;
const CLIENTS_PER_SESSION = 2;
/** How long anything may take on a loaded CI machine before the test gives up (never a sleep). */
const PATIENCE = 60_000;

let cluster: PgCluster | undefined;
const replicas: Array<{ process: CliProcess; url: string }> = [];

beforeAll(async () => {
  if (!bin) return;
  cluster = await startPgCluster(bin);
  for (let i = 0; i < 2; i++) {
    const process = spawnCli(["serve", "bank", "--db", cluster.url, "--port", "0", "--seed", `fault-${i}`]);
    await waitForStderr(process, / {2}try: /);
    const url = /terrarium serving \d+ tools at (\S+)/.exec(process.stderr())?.[1] as string;
    replicas.push({ process, url });
  }
}, 180_000);

afterAll(async () => {
  for (const { process } of replicas.splice(0)) {
    process.child.kill("SIGKILL");
    await process.exit;
  }
  await cluster?.destroy();
}, 120_000);

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

async function send(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(url + path, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/** Polls `check` until it holds (no fixed sleeps). */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = PATIENCE): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One call a client made: its unique owner name (the mark in the history) and how it was answered. */
interface Made {
  session: string;
  owner: string;
  status: number;
  /** The history index the answer gave (terrarium's route only). */
  step?: number;
  at: number;
}

const INTERNALS = /ECONNREFUSED|ECONNRESET|127\.0\.0\.1|terminated|57P0|pg_|postgres:\/\//i;

describe.runIf(bin)("Postgres stopped with -m immediate under load, then restarted", () => {
  it("both replicas stay up, answer 503 STORE_UNAVAILABLE meanwhile, recover at once, and lose or repeat nothing", async () => {
    const db = cluster as PgCluster;
    expect(replicas).toHaveLength(2);
    const sessions: string[] = [];
    for (let s = 0; s < SESSIONS; s++) {
      const created = await send((replicas[s % 2] as { url: string }).url, "POST", "/sessions", {});
      expect(created.status).toBe(201);
      sessions.push(created.body.id);
    }

    // The load: clients calling open_account with a name of their own, each call on the next replica,
    // every other call through Gecko's tool route. A 503 is waited out briefly, then a NEW call is made
    // (a client never resends a call whose outcome it does not know).
    const made: Made[] = [];
    const unexpected: string[] = [];
    let stopLoad = false;
    const client = async (session: string, name: string) => {
      for (let n = 0; !stopLoad; n++) {
        const replica = replicas[n % 2] as { url: string };
        const owner = `${name}-${n}`;
        const viaTool = n % 4 === 1;
        let answer: Answer;
        try {
          answer = viaTool
            ? await send(
                replica.url,
                "POST",
                "/open_account",
                { owner, deposit: n % 50 },
                { "x-session-id": session },
              )
            : await send(replica.url, "POST", `/sessions/${session}/calls`, {
                name: "open_account",
                arguments: { owner, deposit: n % 50 },
              });
        } catch (error) {
          // A refused or reset connection would mean a replica went down: never expected.
          unexpected.push(`${owner}: ${(error as Error).message}`);
          return;
        }
        made.push({
          session,
          owner,
          status: answer.status,
          ...(!viaTool && answer.status === 200 ? { step: answer.body.step } : {}),
          at: Date.now(),
        });
        if (answer.status === 503) {
          if (answer.headers.get("retry-after") === null || INTERNALS.test(answer.text))
            unexpected.push(`${owner}: 503 without Retry-After or with internals: ${answer.text}`);
          if (!viaTool && answer.body?.error?.code !== "STORE_UNAVAILABLE")
            unexpected.push(`${owner}: 503 ${answer.text}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        } else if (answer.status !== 200) {
          unexpected.push(`${owner}: ${answer.status} ${answer.text}`);
        }
      }
    };
    const load = Promise.all(
      sessions.flatMap((session, s) =>
        Array.from({ length: CLIENTS_PER_SESSION }, (_, k) => client(session, `s${s}c${k}`)),
      ),
    );
    const acknowledged = () => made.filter((call) => call.status === 200).length;
    try {
      await until(async () => acknowledged() >= SESSIONS * CLIENTS_PER_SESSION * 3, "the load to get going");

      // The crash.
      await db.stop("immediate");
      const stoppedAt = Date.now();
      await until(
        async () => made.some((call) => call.at > stoppedAt && call.status === 503),
        "the clients to hear 503",
      );
      for (const replica of replicas) {
        expect(replica.process.child.exitCode).toBeNull();
        expect((await send(replica.url, "GET", "/livez")).status).toBe(200);
        await until(
          async () => (await send(replica.url, "GET", "/readyz")).status === 503,
          "/readyz to say 503",
        );
        const ready = await send(replica.url, "GET", "/readyz");
        expect(ready.body).toMatchObject({ status: "not ready", checks: { store: "failing" } });
        expect(ready.text).not.toMatch(INTERNALS);
        // A call now: 503 STORE_UNAVAILABLE with Retry-After, nothing internal, in each route group's shape.
        const call = await send(replica.url, "POST", `/sessions/${sessions[0]}/calls`, {
          name: "open_account",
          arguments: { owner: "during-outage", deposit: 1 },
        });
        expect(call.status).toBe(503);
        expect(call.headers.get("retry-after")).toBe("1");
        expect(call.body).toEqual({
          error: {
            code: "STORE_UNAVAILABLE",
            message: expect.any(String),
            requestId: call.headers.get("x-request-id"),
          },
        });
        expect(call.text).not.toMatch(INTERNALS);
        const tool = await send(
          replica.url,
          "POST",
          "/open_account",
          { owner: "during-outage", deposit: 1 },
          { "x-session-id": sessions[0] as string },
        );
        expect(tool.status).toBe(503);
        expect(tool.headers.get("retry-after")).toBe("1");
        expect(tool.text).not.toMatch(INTERNALS);
      }

      // The restart: both replicas serve again as soon as the database accepts connections.
      await db.start();
      const startedAt = Date.now();
      await Promise.all(
        replicas.map(async (replica, r) => {
          await until(async () => {
            const answer = await send(replica.url, "POST", `/sessions/${sessions[r]}/calls`, {
              name: "open_account",
              arguments: { owner: `after-restart-${r}-${Date.now()}`, deposit: 1 },
            });
            if (answer.status === 200)
              made.push({
                session: sessions[r] as string,
                owner: answer.body.changes[0].after.owner,
                status: 200,
                step: answer.body.step,
                at: Date.now(),
              });
            return answer.status === 200;
          }, "a call to succeed after the restart");
          const recovered = Date.now() - startedAt;
          console.info(`replica ${r} served a call ${recovered} ms after Postgres accepted connections`);
          // Generous for a shared CI machine; on a quiet one this is tens of milliseconds.
          expect(recovered).toBeLessThan(5000);
          await until(
            async () => (await send(replica.url, "GET", "/readyz")).status === 200,
            "/readyz to say 200",
          );
        }),
      );
      const afterRestart = acknowledged();
      await until(
        async () => acknowledged() >= afterRestart + SESSIONS * CLIENTS_PER_SESSION * 2,
        "the load to go on",
      );
    } finally {
      stopLoad = true;
      await load;
    }

    expect(unexpected).toEqual([]);
    for (const replica of replicas) {
      expect(replica.process.child.exitCode).toBeNull();
      expect(replica.process.stderr()).not.toMatch(/Unhandled|uncaught|at .*\.(ts|js):\d+/i);
      // One line when the store stopped answering, one when it came back (a few more if it flapped as it went).
      const outages = replica.process.stderr().match(/session store at .* does not answer/g) ?? [];
      const recoveries = replica.process.stderr().match(/session store at .* answers again/g) ?? [];
      expect(outages.length).toBeGreaterThanOrEqual(1);
      expect(outages.length).toBeLessThanOrEqual(3);
      expect(recoveries).toHaveLength(outages.length);
    }
    expect(made.filter((call) => call.status === 503).length).toBeGreaterThan(0);

    // Nothing acknowledged lost, nothing applied twice, every state what its history says.
    const owners = new Map<string, Made>(made.map((call) => [call.owner, call]));
    for (const session of sessions) {
      const history = await send((replicas[0] as { url: string }).url, "GET", `/sessions/${session}/history`);
      expect(history.status).toBe(200);
      const counted = new Map<string, number>();
      for (const entry of history.body as Array<{
        index: number;
        request: { arguments: { owner: string } };
      }>) {
        const owner = entry.request.arguments.owner;
        counted.set(owner, (counted.get(owner) ?? 0) + 1);
        const call = owners.get(owner);
        if (call?.step !== undefined) expect(entry.index, owner).toBe(call.step);
      }
      expect([...counted].filter(([, n]) => n > 1)).toEqual([]);
      const ours = made.filter((call) => call.session === session && call.status === 200);
      expect(ours.length).toBeGreaterThan(0);
      for (const call of ours) expect(counted.get(call.owner), call.owner).toBe(1);
      // Entries of calls answered 503 may be there (a commit whose answer was lost), but only once each.
      const state = await send((replicas[1] as { url: string }).url, "GET", `/sessions/${session}/state`);
      const opened = Object.values(state.body.accounts as Record<string, { owner: string }>).map(
        (a) => a.owner,
      );
      for (const owner of counted.keys())
        expect(
          opened.filter((o) => o === owner),
          owner,
        ).toHaveLength(1);
    }
  }, 300_000);
});
