/**
 * Steps over HTTP (issue 25): each measure against its baseline in the same run, in alternating rounds,
 * medians compared. The servers run in processes of their own (bench/http-child.ts) and the clients here,
 * through one keep-alive agent, the same for the baseline and the measure:
 *
 * - a bank `transfer` through `POST /sessions/{id}/calls`, 8 clients on one session, memory store and
 *   SQLite, and a QuickJS tool adding to a counter, each against a node:http JSON echo;
 * - the ceiling: a node:http server answering that route with a fixed reply of a transfer's size and the
 *   fast path's headers, no engine, against the echo (what node:http itself allows for the exchange);
 * - the cost of a write late in one session against its first 1,000 writes (SQLite; 100,000 writes with
 *   `--long` or TERRARIUM_BENCH_LONG=1, fewer by default);
 * - 1, 2 and 3 `serve` replicas on one Postgres database against one SQLite server, calls round robin and
 *   sticky by session (with `--postgres=<url>` or TERRARIUM_TEST_POSTGRES; skipped without).
 *
 * `--only=calls|long|replicas` runs one part; `--quick` shortens the rounds (a smoke run, noisier).
 * `--only=fastpath` (never by default) compares the bank transfer with the server's fast path for
 * `POST /sessions/{id}/calls` against the same server with every request through Hono, and the echo.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScratchDatabase } from "../src/sessions/index.js";
import { type ChildServer, spawnNodeServer } from "./child-server.js";
import { type BenchResult, median } from "./report.js";

const CLIENTS = 8;

function flag(name: string): string | undefined {
  const prefix = `--${name}=`;
  const found = process.argv.find((arg) => arg === `--${name}` || arg.startsWith(prefix));
  if (found === undefined) return undefined;
  return found.startsWith(prefix) ? found.slice(prefix.length) : "";
}

/** Round length and count: `--quick` shortens them (a smoke run), the default is a few minutes in all. */
const QUICK = flag("quick") !== undefined;
const ROUND_MS = QUICK ? 300 : 1000;
const ROUNDS = QUICK ? 3 : 5;
/** `--only=calls|long|replicas`: one part of the benchmark (all by default). */
const ONLY = flag("only");
const part = (name: "calls" | "long" | "replicas") => !ONLY || ONLY === name;

/** A server of bench/http-child.ts: echo, or `startServer` with `sources` and `db`. */
const spawnServer = (options: {
  echo?: boolean;
  ceiling?: boolean;
  sources?: string[];
  db?: string;
  hono?: boolean;
}): Promise<ChildServer> => spawnNodeServer("http-child.ts", options);

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** One POST through the shared keep-alive agent: the status and the body as text. */
function post(port: number, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        response.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function postOk(port: number, path: string, body: unknown): Promise<Record<string, unknown>> {
  const { status, text } = await post(port, path, JSON.stringify(body));
  if (status !== 200 && status !== 201) throw new Error(`POST ${path}: ${status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** What one client sends next: the server's port, the path and the body (client `worker`, its `n`th call). */
type Next = (worker: number, n: number) => { port: number; path: string; body: string };

interface Rate {
  callsPerSecond: number;
  p50: number;
  p99: number;
}

/**
 * `clients` clients, each sending its next request when the last is answered, for `ms` milliseconds. A
 * call answered other than 200, or whose outcome is not `ok` (when `expectOk`), fails the benchmark: a
 * rate of refusals measures nothing.
 */
async function drive(next: Next, clients: number, ms: number, expectOk: boolean): Promise<Rate> {
  const latencies: number[] = [];
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async (_, worker) => {
      for (let n = 0; performance.now() < end; n++) {
        const { port, path, body } = next(worker, n);
        const started = performance.now();
        const { status, text } = await post(port, path, body);
        latencies.push(performance.now() - started);
        if (status !== 200 || (expectOk && !text.includes('"status":"ok"')))
          throw new Error(`POST ${path}: ${status} ${text.slice(0, 300)}`);
      }
    }),
  );
  const elapsed = ms / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { callsPerSecond: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) };
}

/** Each subject in turn, `ROUNDS` times (after a warm-up round each): the median rate of each. */
async function alternate(subjects: Array<() => Promise<Rate>>): Promise<Rate[]> {
  for (const subject of subjects) await subject();
  const samples: Rate[][] = subjects.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, subject] of subjects.entries()) samples[i]?.push(await subject());
  }
  return samples.map((rates) => ({
    callsPerSecond: median(rates.map((rate) => rate.callsPerSecond)),
    p50: median(rates.map((rate) => rate.p50)),
    p99: median(rates.map((rate) => rate.p99)),
  }));
}

const transferBody = (n: number) =>
  JSON.stringify({
    name: "transfer",
    // Back and forth, so that the balances last however long the run is.
    arguments:
      n % 2 === 0
        ? { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 }
        : { from_account: "ACC-1002", to_account: "ACC-1001", amount: 1 },
  });

/** A sandboxed environment whose one write adds to a counter (and keeps nothing else). */
const TALLY = `kind: quickjs
name: tally
description: A counter.
initialState: { count: 0 }
tools:
  - name: add
    description: Add to the counter.
    effect: write
    input: { properties: { by: { type: integer, minimum: 1, maximum: 100 } }, required: [by] }
    code: "(ctx) => { ctx.state.count += ctx.args.by; return { count: ctx.state.count }; }"
`;

interface Row {
  measure: string;
  baseline: string;
  baselineRate: number;
  measured: Rate;
  ratio: number;
  target: string;
  met?: boolean;
}

export async function benchHttp(): Promise<BenchResult> {
  const folder = mkdtempSync(join(tmpdir(), "terrarium-bench-http-"));
  const rows: Row[] = [];
  const notes: string[] = [];
  const children: ChildServer[] = [];
  const start = async (options: Parameters<typeof spawnServer>[0]) => {
    const child = await spawnServer(options);
    children.push(child);
    return child;
  };
  try {
    if (ONLY && !["calls", "long", "replicas", "fastpath"].includes(ONLY))
      throw new Error(`--only takes calls, long, replicas or fastpath (got ${ONLY})`);
    const echo = await start({ echo: true });
    const echoBody = transferBody(0);
    const echoRate = () =>
      drive(() => ({ port: echo.port, path: "/echo", body: echoBody }), CLIENTS, ROUND_MS, false);
    // A fresh process serves a fraction of its rate for its first seconds (the JIT): warm the baseline
    // up before the first measure, or that measure's ratio flatters it.
    if (part("calls") || ONLY === "fastpath") for (let i = 0; i < 3; i++) await echoRate();

    // One session, 8 clients: the calls of a session run one at a time, so this is the step's own cost.
    const oneSession = async (
      measure: string,
      options: { sources: string[]; db?: string },
      body: (n: number) => string,
      target: number,
    ) => {
      const server = await start(options);
      const { id } = (await postOk(server.port, "/sessions", {})) as { id: string };
      const path = `/sessions/${id}/calls`;
      const [baseline, measured] = (await alternate([
        echoRate,
        () =>
          drive(
            (worker, n) => ({ port: server.port, path, body: body(n * CLIENTS + worker) }),
            CLIENTS,
            ROUND_MS,
            true,
          ),
      ])) as [Rate, Rate];
      const ratio = measured.callsPerSecond / baseline.callsPerSecond;
      rows.push({
        measure,
        baseline: "node:http JSON echo",
        baselineRate: baseline.callsPerSecond,
        measured,
        ratio,
        target: `≥ ${target}×`,
        met: ratio >= target,
      });
      await server.stop();
    };
    if (part("calls")) {
      // What node:http itself allows for this exchange (the same path, body and headers, a fixed reply of
      // a bank transfer's size, no engine): the share of the gap to the echo that is node:http's own.
      const ceiling = await start({ ceiling: true });
      const ceilingPath = "/sessions/ceiling/calls";
      const [echoed, ceilingRate] = (await alternate([
        echoRate,
        () =>
          drive(
            (worker, n) => ({
              port: ceiling.port,
              path: ceilingPath,
              body: transferBody(n * CLIENTS + worker),
            }),
            CLIENTS,
            ROUND_MS,
            true,
          ),
      ])) as [Rate, Rate];
      rows.push({
        measure: "ceiling: node:http answering the calls route with a fixed bank-sized reply (no engine)",
        baseline: "node:http JSON echo",
        baselineRate: echoed.callsPerSecond,
        measured: ceilingRate,
        ratio: ceilingRate.callsPerSecond / echoed.callsPerSecond,
        target: "",
      });
      await ceiling.stop();
      await oneSession(
        "bank transfer, memory store, 8 clients on one session",
        { sources: ["bank"] },
        transferBody,
        0.7,
      );
      await oneSession(
        "bank transfer, SQLite (acknowledged = durable), 8 clients on one session",
        { sources: ["bank"], db: join(folder, "calls.sqlite") },
        transferBody,
        0.5,
      );
      const tally = join(folder, "tally.quickjs.yaml");
      writeFileSync(tally, TALLY);
      const addBody = JSON.stringify({ name: "add", arguments: { by: 1 } });
      await oneSession(
        "QuickJS write (add to a counter), memory store, 8 clients",
        { sources: [tally] },
        () => addBody,
        0.4,
      );
    }

    if (ONLY === "fastpath") {
      // The same bank server twice, one with every request through Hono: echo, Hono, fast, in turn.
      const servers = [await start({ sources: ["bank"], hono: true }), await start({ sources: ["bank"] })];
      const subjects = await Promise.all(
        servers.map(async (server) => {
          const { id } = (await postOk(server.port, "/sessions", {})) as { id: string };
          const path = `/sessions/${id}/calls`;
          return () =>
            drive(
              (worker, n) => ({ port: server.port, path, body: transferBody(n * CLIENTS + worker) }),
              CLIENTS,
              ROUND_MS,
              true,
            );
        }),
      );
      const [baseline, hono, fast] = (await alternate([echoRate, ...subjects])) as [Rate, Rate, Rate];
      for (const [measure, measured] of [
        ["bank transfer, memory store, 8 clients, through Hono (fast path off)", hono],
        ["bank transfer, memory store, 8 clients, fast path", fast],
      ] as const)
        rows.push({
          measure,
          baseline: "node:http JSON echo",
          baselineRate: baseline.callsPerSecond,
          measured,
          ratio: measured.callsPerSecond / baseline.callsPerSecond,
          target: "≥ 0.7×",
          met: measured.callsPerSecond / baseline.callsPerSecond >= 0.7,
        });
    }

    if (part("long"))
      rows.push(await longSession(await start({ sources: ["bank"], db: join(folder, "long.sqlite") })));

    const postgres = flag("postgres") || process.env.TERRARIUM_TEST_POSTGRES;
    if (!part("replicas")) {
      // not asked for
    } else if (postgres) rows.push(...(await replicas(postgres, join(folder, "replicas.sqlite"), start)));
    else
      notes.push(
        "Postgres replicas: skipped (give --postgres=<url> or TERRARIUM_TEST_POSTGRES; the role needs CREATEDB)",
      );
  } finally {
    await Promise.all(children.map((child) => child.stop()));
    agent.destroy();
    rmSync(folder, { recursive: true, force: true });
  }

  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  const targeted = rows.filter((row) => row.met !== undefined);
  return {
    name: "http",
    lines: [
      `steps over HTTP on loopback; servers in their own processes, one keep-alive client; median of ${ROUNDS} alternating rounds of ${ROUND_MS} ms`,
      "| measure | baseline | baseline calls/s | calls/s | p50 ms | p99 ms | ratio | target | met |",
      "|---|---|---:|---:|---:|---:|---:|---|---|",
      ...rows.map(
        (row) =>
          `| ${row.measure} | ${row.baseline} | ${fmt(row.baselineRate)} | ${fmt(row.measured.callsPerSecond)} | ${row.measured.p50.toFixed(2)} | ${row.measured.p99.toFixed(2)} | ${row.ratio.toFixed(2)}× | ${row.target} | ${row.met === undefined ? "" : row.met ? "met" : "not met"} |`,
      ),
      ...notes,
    ],
    report: { benchmark: "http", rounds: ROUNDS, roundMs: ROUND_MS, rows },
    pass: targeted.every((row) => row.met),
  };
}

/**
 * The cost of a write late in a session against its first 1,000 (one client, calls in order, SQLite):
 * the time of the last 1,000 writes over the time of the first 1,000 (so checkpoints count, amortised).
 */
async function longSession(server: ChildServer): Promise<Row> {
  const long = flag("long") !== undefined || process.env.TERRARIUM_BENCH_LONG === "1";
  const writes = long ? 100_000 : QUICK ? 2_000 : 3_000;
  const window = 1_000;
  const { id } = (await postOk(server.port, "/sessions", {})) as { id: string };
  const path = `/sessions/${id}/calls`;
  const latencies: number[] = [];
  const times: number[] = [];
  for (let n = 0; n < writes; n++) {
    const body = transferBody(n);
    const started = performance.now();
    const { status, text } = await post(server.port, path, body);
    const took = performance.now() - started;
    if (status !== 200 || !text.includes('"status":"ok"'))
      throw new Error(`write ${n}: ${status} ${text.slice(0, 300)}`);
    times.push(took);
    if (n >= writes - window) latencies.push(took);
  }
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const first = sum(times.slice(0, window)) / window;
  const last = sum(times.slice(-window)) / window;
  const sorted = [...latencies].sort((a, b) => a - b);
  const ratio = last / first;
  return {
    measure: `write cost after ${writes.toLocaleString("en-US")} writes in one session (SQLite, 1 client)${long ? "" : "; --long for 100,000"}`,
    baseline: `first ${window.toLocaleString("en-US")} writes`,
    baselineRate: 1000 / first,
    measured: {
      callsPerSecond: 1000 / last,
      p50: sorted[Math.floor(sorted.length / 2)] ?? 0,
      p99: sorted[Math.floor(sorted.length * 0.99)] ?? 0,
    },
    // Cost, not rate: above 1 is slower.
    ratio,
    target: "≤ 1.2× (cost)",
    met: ratio <= 1.2,
  };
}

/**
 * Calls per second through 1, 2 and 3 replicas sharing one Postgres database beside one SQLite server:
 * 16 clients, each on a session of its own, each call to the next replica (any replica serves any session).
 * On Linux each measure also says the CPU a call cost in the servers (this process's children) and in
 * Postgres (every `postgres` process of this host, so only when it runs here, and whatever else it serves
 * meanwhile counts too): the per-call costs that say what to expect elsewhere (docs/deployment.md).
 */
async function replicas(
  url: string,
  sqliteFile: string,
  start: (options: { sources: string[]; db?: string }) => Promise<ChildServer>,
): Promise<Row[]> {
  const clients = 16;
  const { readFileSync, readdirSync } = await import("node:fs");
  /** CPU seconds of this process's children and of the host's postgres processes; undefined without /proc. */
  const cpuNow = (): { servers: number; postgres: number } | undefined => {
    try {
      let servers = 0;
      let postgres = 0;
      for (const entry of readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        let stat: string;
        try {
          stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        } catch {
          continue; // ended meanwhile
        }
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        // utime and stime, in clock ticks (100 a second on Linux)
        const seconds = (Number(fields[11]) + Number(fields[12])) / 100;
        if (Number(fields[1]) === process.pid) servers += seconds;
        else if (name === "postgres") postgres += seconds;
      }
      return { servers, postgres };
    } catch {
      return undefined;
    }
  };
  const scratch = await createScratchDatabase(url, "terrarium_bench");
  try {
    const sqlite = await start({ sources: ["bank"], db: sqliteFile });
    // Started one after another: the first migrates, the others find the layout in place.
    const pg: ChildServer[] = [];
    for (let i = 0; i < 3; i++) pg.push(await start({ sources: ["bank"], db: scratch.url }));
    // SQLite first (the baseline); then 1, 2 and 3 replicas with calls round robin (every call hands its
    // session's lock over), and 2 and 3 with each session's calls sent to the replica that made it (sticky
    // routing by session, which kept locks reward).
    const setups: Array<{ servers: ChildServer[]; sticky: boolean; target?: number }> = [
      { servers: [sqlite], sticky: true },
      { servers: pg.slice(0, 1), sticky: true, target: 0.8 },
      { servers: pg.slice(0, 2), sticky: false },
      { servers: pg.slice(0, 3), sticky: false },
      { servers: pg.slice(0, 2), sticky: true },
      { servers: pg.slice(0, 3), sticky: true },
    ];
    const sessions = await Promise.all(
      setups.map(({ servers }) =>
        Promise.all(
          Array.from({ length: clients }, async (_, s) => {
            const home = servers[s % servers.length] as ChildServer;
            return ((await postOk(home.port, "/sessions", {})) as { id: string }).id;
          }),
        ),
      ),
    );
    // Microseconds of CPU per call, each round's (the first, a warm-up, left out).
    const costs = setups.map(() => ({ rounds: 0, servers: [] as number[], postgres: [] as number[] }));
    const rates = await alternate(
      setups.map(({ servers, sticky }, i) => async () => {
        const ids = sessions[i] as string[];
        const before = cpuNow();
        const rate = await drive(
          (worker, n) => ({
            port: (servers[(sticky ? worker : worker + n) % servers.length] as ChildServer).port,
            path: `/sessions/${ids[worker]}/calls`,
            body: transferBody(n),
          }),
          clients,
          ROUND_MS,
          true,
        );
        const after = cpuNow();
        const cost = costs[i] as (typeof costs)[number];
        const calls = (rate.callsPerSecond * ROUND_MS) / 1000;
        if (cost.rounds++ > 0 && before && after && calls > 0) {
          cost.servers.push(((after.servers - before.servers) * 1e6) / calls);
          cost.postgres.push(((after.postgres - before.postgres) * 1e6) / calls);
        }
        return rate;
      }),
    );
    const base = rates[0] as Rate;
    for (const child of [sqlite, ...pg]) await child.stop();
    const cpu = (i: number, postgres: boolean) => {
      const cost = costs[i] as (typeof costs)[number];
      if (cost.servers.length === 0) return "";
      const servers = `${Math.round(median(cost.servers))} µs server`;
      return postgres
        ? ` (CPU per call: ${servers}s, ${Math.round(median(cost.postgres))} µs Postgres)`
        : ` (CPU per call: ${servers})`;
    };
    const row = ({ servers, sticky, target }: (typeof setups)[number], i: number): Row => {
      const measured = rates[i] as Rate;
      const routing =
        servers.length === 1
          ? ""
          : sticky
            ? ", each session's calls to one replica (sticky)"
            : ", calls round robin";
      return {
        measure: `Postgres, ${servers.length} replica${servers.length > 1 ? "s" : ""}, ${clients} clients on sessions of their own${routing}${cpu(i, true)}`,
        baseline: `SQLite, one server${cpu(0, false)}`,
        baselineRate: base.callsPerSecond,
        measured,
        ratio: measured.callsPerSecond / base.callsPerSecond,
        target: target === undefined ? "" : `≥ ${target}×`,
        ...(target === undefined ? {} : { met: measured.callsPerSecond / base.callsPerSecond >= target }),
      };
    };
    // Every setup but the baseline.
    return setups.slice(1).map((setup, i) => row(setup, i + 1));
  } finally {
    await scratch.drop();
  }
}
