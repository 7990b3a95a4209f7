/**
 * Scale-out (issue 16): tool calls per second through 1, 2 and 3 `terrarium serve` replicas sharing one
 * Postgres database, beside one SQLite server in the same run (the embedded default, the baseline); and
 * work items per second through 1 and 2 Redis workers. Clients spread sessions over the replicas
 * round-robin, each session's calls in order. Needs the services of scripts/services.sh
 * (TERRARIUM_TEST_POSTGRES, TERRARIUM_TEST_REDIS); without them this benchmark says it was skipped.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RedisJobQueue } from "../src/queue/index.js";
import { startServer } from "../src/server/start.js";
import { createScratchDatabase } from "../src/sessions/index.js";
import type { BenchResult } from "./report.js";

const SESSIONS = 48;
const CALLS_PER_SESSION = 10;
const ITEMS = 200;
/** Each work item waits this long, as a model call would: workers overlap waiting, not CPU. */
const ITEM_MS = 20;

type Server = Awaited<ReturnType<typeof startServer>>;

/** Calls per second: `SESSIONS` sessions, round-robin over the servers, each session's calls in order. */
async function callsPerSecond(servers: Server[]): Promise<number> {
  const post = async (url: string, body: unknown) => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (response.status >= 300) throw new Error(`${url}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id?: string };
  };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const home = servers[s % servers.length] as Server;
      const { id } = await post(`${home.url}/sessions`, {});
      for (let call = 0; call < CALLS_PER_SESSION; call++) {
        // Each call goes to the next replica: any replica serves any session.
        const server = servers[(s + call) % servers.length] as Server;
        await post(`${server.url}/sessions/${id}/calls`, {
          name: "transfer",
          arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 },
        });
      }
    }),
  );
  return (SESSIONS * CALLS_PER_SESSION) / ((performance.now() - started) / 1000);
}

async function replicas(count: number, db: string): Promise<Server[]> {
  return Promise.all(Array.from({ length: count }, () => startServer({ sources: ["bank"], db, port: 0 })));
}

async function itemsPerSecond(url: string, workers: number): Promise<number> {
  const name = `bench-${process.pid}-${workers}`;
  const queues = await Promise.all(
    Array.from({ length: workers + 1 }, () =>
      RedisJobQueue.connect(url, { queue: name, prefix: name, pollMs: 20 }),
    ),
  );
  const kind = {
    kind: "bench-wait",
    async open() {
      return {
        process: () => new Promise((resolve) => setTimeout(() => resolve(true), ITEM_MS)),
        close: async () => {},
      };
    },
  };
  for (const queue of queues) queue.register(kind);
  const running = queues.slice(1).map((queue) => queue.work({ concurrency: 4 }));
  try {
    const started = performance.now();
    await (queues[0] as RedisJobQueue).submit({
      runId: `run-${name}`,
      kind: kind.kind,
      context: {},
      items: Array.from({ length: ITEMS }, (_, i) => ({ id: String(i), payload: i })),
    });
    return ITEMS / ((performance.now() - started) / 1000);
  } finally {
    await Promise.all(running.map((worker) => worker.close()));
    await (queues[0] as RedisJobQueue).discard(`run-${name}`);
    await Promise.all(queues.map((queue) => queue.close()));
  }
}

export async function benchScale(): Promise<BenchResult> {
  const name = "scale: replicas on Postgres and workers on Redis";
  const postgres = process.env.TERRARIUM_TEST_POSTGRES;
  const redis = process.env.TERRARIUM_TEST_REDIS;
  if (!postgres || !redis) {
    return {
      name,
      lines: [
        "skipped: start the services with scripts/services.sh and export TERRARIUM_TEST_POSTGRES and TERRARIUM_TEST_REDIS",
      ],
      report: { skipped: true },
    };
  }
  const lines = [
    `${SESSIONS} sessions × ${CALLS_PER_SESSION} bank transfers, calls of a session spread round-robin over the replicas`,
    "| setup | calls/s |",
    "|---|---|",
  ];
  const report: Record<string, number> = {};
  const folder = mkdtempSync(join(tmpdir(), "terrarium-bench-scale-"));
  try {
    const [sqlite] = await replicas(1, join(folder, "sessions.sqlite"));
    report.sqlite = await callsPerSecond([sqlite as Server]);
    await sqlite?.close();
    lines.push(`| baseline: SQLite, one process | ${report.sqlite.toFixed(0)} |`);
    for (const count of [1, 2, 3]) {
      const scratch = await createScratchDatabase(postgres, "bench");
      const servers = await replicas(count, scratch.url);
      try {
        report[`postgres${count}`] = await callsPerSecond(servers);
      } finally {
        await Promise.all(servers.map((server) => server.close()));
        await scratch.drop();
      }
      lines.push(
        `| Postgres, ${count} replica${count > 1 ? "s" : ""} | ${(report[`postgres${count}`] as number).toFixed(0)} |`,
      );
    }
    lines.push(
      "",
      `${ITEMS} work items of ${ITEM_MS} ms each (a model call's wait), 4 at a time per worker`,
      "| workers | items/s |",
      "|---|---|",
    );
    for (const workers of [1, 2]) {
      report[`workers${workers}`] = await itemsPerSecond(redis, workers);
      lines.push(`| ${workers} | ${(report[`workers${workers}`] as number).toFixed(0)} |`);
    }
    const ratio = (report.workers2 as number) / (report.workers1 as number);
    lines.push(`2 workers do ${ratio.toFixed(2)}× the work of one (target ≥ 1.5×)`);
    return { name, lines, report, pass: ratio >= 1.5 };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
