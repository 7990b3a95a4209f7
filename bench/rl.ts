/**
 * OpenEnv steps over the WebSocket (issue 24): steps per second and p50/p99 latency of `call_tool` through
 * `/openenv/ws` with 8 clients (one connection and one episode each), on bank (a `transfer`, a write) and on
 * tau2-retail (`get_order_details`, a read), each against a bare WebSocket JSON echo (the ws package)
 * answering the same messages with a reply of the same size; and a minimal OpenEnv-style environment on a
 * Python server (bench/python/openenv_minimal.py: FastAPI, uvicorn, websockets, OpenEnv's message shapes
 * and per-step executor) driven by the same clients. Subjects take turns round by round; medians compared.
 * Every server runs in a process of its own, the clients here.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket } from "ws";
import { type ChildServer, spawnNodeServer, spawnServer } from "./child-server.js";
import { type BenchResult, median } from "./report.js";

const ROOT = join(import.meta.dirname, "..");
const CLIENTS = 8;
const QUICK = process.argv.includes("--quick");
const ROUND_MS = QUICK ? 300 : 1500;
const ROUNDS = QUICK ? 3 : 5;
const WARM_UP_MS = QUICK ? 500 : 3000;
const PYTHON_PACKAGES = "python3-fastapi python3-uvicorn python3-websockets";

const nodeServer = (options: Record<string, unknown>) => spawnNodeServer("rl-child.ts", options);

/** A Python 3 that has the baseline's packages, or why there is none. */
function findPython(): { python: string } | { skipped: string } {
  const candidates = [process.env.TERRARIUM_BENCH_PYTHON, "python3", "/usr/bin/python3"].filter(
    (candidate): candidate is string => !!candidate,
  );
  for (const python of new Set(candidates)) {
    const probe = spawnSync(python, ["-c", "import fastapi, uvicorn, websockets"], { stdio: "ignore" });
    if (probe.status === 0) return { python };
  }
  return {
    skipped: `no Python 3 with fastapi, uvicorn and websockets (tried ${[...new Set(candidates)].join(", ")}; apt-get install ${PYTHON_PACKAGES}, or set TERRARIUM_BENCH_PYTHON)`,
  };
}

/** One connection that asks one message at a time. */
class Client {
  private pending: ((text: string) => void) | undefined;
  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (raw) => {
      const resolve = this.pending;
      this.pending = undefined;
      resolve?.(raw.toString());
    });
  }
  static connect(url: string): Promise<Client> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(new Client(ws)));
      ws.once("error", reject);
    });
  }
  ask(text: string): Promise<string> {
    return new Promise((resolve) => {
      this.pending = resolve;
      this.ws.send(text);
    });
  }
  close(): void {
    this.ws.close();
  }
}

interface Subject {
  name: string;
  url: string;
  /** The step message client `k` sends as its `i`th step. */
  step: (k: number, i: number) => string;
  /** What an answer must look like (checked on every answer: a failing step is not a step). */
  check: (answer: string) => boolean;
  clients: Client[];
  samples: Array<{ stepsPerSecond: number; p50: number; p99: number }>;
}

const callTool = (toolName: string, args: Record<string, unknown>) =>
  JSON.stringify({ type: "step", data: { type: "call_tool", tool_name: toolName, arguments: args } });

/** Bank: each client moves 1 back and forth between the two open accounts, so every step is a real write. */
const bankStep = (_k: number, i: number) =>
  i % 2 === 0
    ? callTool("transfer", { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 })
    : callTool("transfer", { from_account: "ACC-1002", to_account: "ACC-1001", amount: 1 });

function retailSteps(): (k: number, i: number) => string {
  const db = JSON.parse(
    readFileSync(join(ROOT, "src", "envs", "corpus", "data", "tau2-retail-db.json"), "utf8"),
  ) as { orders: Record<string, unknown> };
  const orders = Object.keys(db.orders).slice(0, 64);
  const messages = orders.map((order) => callTool("get_order_details", { order_id: order }));
  return (k, i) => messages[(k * 7 + i) % messages.length] as string;
}

/** An answer that is an observation of a call without an error. */
function callSucceeded(answer: string): boolean {
  const message = JSON.parse(answer) as { type?: string; data?: { observation?: { error?: unknown } } };
  return message.type === "observation" && message.data?.observation?.error === null;
}

/** Every client runs steps back to back for `ms`; steps per second and latency percentiles. */
async function round(
  subject: Subject,
  ms: number,
): Promise<{ stepsPerSecond: number; p50: number; p99: number }> {
  // A fresh episode per client each round (not timed), so rounds are alike.
  await Promise.all(subject.clients.map((client) => client.ask(JSON.stringify({ type: "reset", data: {} }))));
  const latencies: number[] = [];
  const started = performance.now();
  const end = started + ms;
  await Promise.all(
    subject.clients.map(async (client, k) => {
      for (let i = 0; performance.now() < end; i++) {
        const sent = performance.now();
        const answer = await client.ask(subject.step(k, i));
        latencies.push(performance.now() - sent);
        if (!subject.check(answer))
          throw new Error(`${subject.name}: a step failed: ${answer.slice(0, 300)}`);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { stepsPerSecond: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) };
}

async function connectAll(url: string): Promise<Client[]> {
  return Promise.all(Array.from({ length: CLIENTS }, () => Client.connect(url)));
}

export async function benchRl(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "terrarium-bench-rl-"));
  const servers: ChildServer[] = [];
  const subjects: Subject[] = [];
  try {
    const retailStep = retailSteps();
    for (const [label, source, step, what] of [
      ["bank", "bank", bankStep, "transfer (write)"],
      ["tau2-retail", "tau2-retail", retailStep, "get_order_details (read)"],
    ] as const) {
      const terrarium = await nodeServer({ sources: [source] });
      servers.push(terrarium);
      const url = `ws://127.0.0.1:${terrarium.port}/openenv/ws`;
      const clients = await connectAll(url);
      // The echo answers with a real answer of this server to this step, so both move the same bytes.
      await clients[0]?.ask(JSON.stringify({ type: "reset", data: {} }));
      const sample = (await clients[0]?.ask(step(0, 0))) as string;
      if (!callSucceeded(sample))
        throw new Error(`${label}: the sample step failed: ${sample.slice(0, 300)}`);
      const replyFile = join(dir, `${label}.reply.json`);
      writeFileSync(replyFile, sample);
      const echo = await nodeServer({ echo: replyFile });
      servers.push(echo);
      const echoUrl = `ws://127.0.0.1:${echo.port}/openenv/ws`;
      subjects.push({
        name: `bare ws JSON echo, ${label}-sized (baseline)`,
        url: echoUrl,
        step,
        check: () => true,
        clients: await connectAll(echoUrl),
        samples: [],
      });
      subjects.push({
        name: `terrarium /openenv/ws, ${label} ${what}`,
        url,
        step,
        check: callSucceeded,
        clients,
        samples: [],
      });
    }
    // The Python baseline's environment on terrarium: the same counter on both, so the servers are compared.
    const counter = await nodeServer({ sources: [join(ROOT, "bench", "rl-counter.ts")] });
    servers.push(counter);
    const counterUrl = `ws://127.0.0.1:${counter.port}/openenv/ws`;
    const increment = () => callTool("increment", { by: 1 });
    subjects.push({
      name: "terrarium /openenv/ws, counter increment (write)",
      url: counterUrl,
      step: increment,
      check: callSucceeded,
      clients: await connectAll(counterUrl),
      samples: [],
    });
    const found = findPython();
    let pythonSkipped: string | undefined;
    if ("python" in found) {
      const python = await spawnServer(found.python, [join(ROOT, "bench", "python", "openenv_minimal.py")]);
      servers.push(python);
      const url = `ws://127.0.0.1:${python.port}/ws`;
      subjects.push({
        name: "Python OpenEnv-style server (FastAPI), counter increment (write)",
        url,
        step: increment,
        check: callSucceeded,
        clients: await connectAll(url),
        samples: [],
      });
    } else {
      pythonSkipped = found.skipped;
    }

    // A fresh server runs several times slower for its first seconds (compiling, heap growing): warm up.
    for (const subject of subjects) await round(subject, WARM_UP_MS);
    for (let r = 0; r < ROUNDS; r++)
      for (const subject of subjects) subject.samples.push(await round(subject, ROUND_MS));
    for (const subject of subjects) for (const client of subject.clients) client.close();

    const rows = subjects.map((subject) => ({
      subject: subject.name,
      stepsPerSecond: median(subject.samples.map((s) => s.stepsPerSecond)),
      p50: median(subject.samples.map((s) => s.p50)),
      p99: median(subject.samples.map((s) => s.p99)),
    }));
    const rate = (prefix: string) => rows.find((row) => row.subject.startsWith(prefix))?.stepsPerSecond;
    const pythonRate = rate("Python");
    const ratios = rows.map((row, i) => {
      // Each terrarium row against the echo row just before it, if any (same message sizes).
      const before = rows[i - 1];
      const echo =
        row.subject.startsWith("terrarium") && before?.subject.startsWith("bare")
          ? before.stepsPerSecond
          : undefined;
      return {
        vsEcho: echo ? row.stepsPerSecond / echo : undefined,
        vsPython:
          pythonRate && row.subject.startsWith("terrarium") ? row.stepsPerSecond / pythonRate : undefined,
      };
    });
    const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
    const ratio = (n: number | undefined) => (n === undefined ? "" : `${n.toFixed(2)}×`);
    // The target compares the servers on the same environment: terrarium's counter against Python's.
    const counterVsPython = ratios[rows.findIndex((row) => row.subject.includes("counter"))]?.vsPython;
    const pass = counterVsPython === undefined ? undefined : counterVsPython >= 1;
    // Issue 25's target: bank's write step against Python's counter (different environments, same client).
    const bankVsPython = ratios[rows.findIndex((row) => row.subject.includes("bank transfer"))]?.vsPython;
    return {
      name: "rl",
      lines: [
        `OpenEnv call_tool steps over a WebSocket on loopback, ${CLIENTS} clients (one episode each), ` +
          `${ROUNDS} alternating rounds of ${ROUND_MS / 1000} s, medians; servers in their own processes, memory store`,
        "| subject | steps per second | p50 ms | p99 ms | vs echo | vs Python |",
        "|---|---:|---:|---:|---:|---:|",
        ...rows.map(
          (row, i) =>
            `| ${row.subject} | ${fmt(row.stepsPerSecond)} | ${row.p50.toFixed(2)} | ${row.p99.toFixed(2)} | ${ratio(ratios[i]?.vsEcho)} | ${ratio(ratios[i]?.vsPython)} |`,
        ),
        pythonSkipped
          ? `Python OpenEnv-style server: skipped, ${pythonSkipped}`
          : `target: terrarium's counter no slower than the Python OpenEnv-style server's (≥ 1.00×): ${
              pass ? "met" : "missed"
            } (${ratio(counterVsPython)}); bank and tau2-retail show what their steps cost on top`,
        ...(bankVsPython === undefined
          ? []
          : [
              `issue 25's target: terrarium's bank transfer at least twice the Python counter's steps/s (≥ 2.00×): ${
                bankVsPython >= 2 ? "met" : "missed"
              } (${ratio(bankVsPython)})`,
            ]),
      ],
      report: {
        benchmark: "rl",
        clients: CLIENTS,
        rounds: ROUNDS,
        roundMs: ROUND_MS,
        rows: rows.map((row, i) => ({
          ...row,
          ...ratios[i],
          roundsStepsPerSecond: subjects[i]?.samples.map((sample) => Math.round(sample.stepsPerSecond)),
        })),
        ...(pythonSkipped ? { pythonSkipped } : { counterVsPython, bankVsPython }),
      },
      ...(pass === undefined ? {} : { pass }),
    };
  } finally {
    for (const subject of subjects) for (const client of subject.clients) client.close();
    await Promise.all(servers.map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}
