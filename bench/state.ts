/**
 * Large states: a step's cost should follow what it touches, not the size of the state. Write steps per
 * second on tau2-retail (a 1.2 MB state) beside bank (1 KB) in the same run, as an environment step and
 * as an engine call over both stores; the previous design (copy and diff the whole state per step)
 * measured on tau2-retail as a baseline; SQLite growth per write; the heap held by 300 served sessions.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Catalog } from "../src/catalog/index.js";
import { diffEnvSim, diffJson, ManualClock } from "../src/core/index.js";
import { BUILTIN_ENVIRONMENTS, type Environment } from "../src/envs/index.js";
import { createApp } from "../src/server/app.js";
import { MemoryStore, SqliteStore, type Store } from "../src/sessions/index.js";
import { buildEngine } from "../src/sim/build-engine.js";
import { CodeSimulator, Engine } from "../src/sim/index.js";
import { type BenchResult, stepsPerSecond } from "./report.js";

const bank = BUILTIN_ENVIRONMENTS.bank as Environment;
const retail = BUILTIN_ENVIRONMENTS["tau2-retail"] as Environment;

const transfer = () => ({
  name: "transfer",
  arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 0.01 },
});
let address = 0;
const move = () => ({
  name: "modify_user_address",
  arguments: {
    user_id: "noah_brown_6181",
    address1: `${++address} Main St`,
    address2: "",
    city: "Springfield",
    state: "IL",
    country: "USA",
    zip: "62701",
  },
});

async function engineOver(environment: Environment, store: Store, newSession = true) {
  const engine = new Engine({
    catalog: new Catalog(environment.tools),
    simulators: [new CodeSimulator(environment, "bench")],
    store,
    clock: new ManualClock("2025-03-01T00:00:00Z", 1),
    initialState: await environment.initialState(),
    seed: 1,
  });
  return { engine, session: newSession ? await engine.createSession() : undefined };
}

export async function benchState(): Promise<BenchResult> {
  const rows: Array<{ subject: string; bank: number; retail: number }> = [];
  const folder = mkdtempSync(join(tmpdir(), "terrarium-bench-state-"));
  let files = 0;
  try {
    const bankInstance = await bank.create({ seed: 1 });
    const retailInstance = await retail.create({ seed: 1 });
    let n = 0;
    rows.push({
      subject: "environment step (write)",
      bank: await stepsPerSecond(async () => {
        if (++n % 100 === 0) await bankInstance.reset();
        return bankInstance.step(transfer());
      }),
      retail: await stepsPerSecond(() => retailInstance.step(move())),
    });

    // The previous design on the same state: a full copy per step, a JSON round trip, full diffs.
    const state = await retail.initialState();
    const wholeCopy = await stepsPerSecond(
      () => {
        const draft = structuredClone(state) as { users: Record<string, { address: unknown }> };
        (draft.users.noah_brown_6181 as { address: unknown }).address = move().arguments;
        const after = JSON.parse(JSON.stringify(draft));
        diffJson(state, after);
        diffEnvSim(state, after);
      },
      400,
      3,
    );

    for (const [label, makeStore] of [
      ["engine call (write), memory store", () => new MemoryStore()],
      ["engine call (write), SQLite store", () => new SqliteStore(join(folder, `${++files}.sqlite`))],
    ] as const) {
      const a = await engineOver(bank, makeStore());
      const b = await engineOver(retail, makeStore());
      const [aId, bId] = [a.session?.id as string, b.session?.id as string];
      let m = 0;
      rows.push({
        subject: label,
        bank: await stepsPerSecond(async () => {
          if (++m % 100 === 0) await a.engine.reset(aId);
          return a.engine.call(aId, transfer());
        }),
        retail: await stepsPerSecond(() => b.engine.call(bId, move())),
      });
      await a.engine.close();
      await b.engine.close();
    }

    // SQLite growth per write on tau2-retail, after the first checkpoint.
    const growthPath = join(folder, "growth.sqlite");
    const growth = await engineOver(retail, new SqliteStore(growthPath));
    await growth.engine.close();
    const start = statSync(growthPath).size;
    const reopened = await engineOver(retail, new SqliteStore(growthPath), false);
    const writes = 200;
    const growthSession = growth.session?.id as string;
    for (let i = 0; i < writes; i++) await reopened.engine.call(growthSession, move());
    await reopened.engine.close();
    const bytesPerWrite = (statSync(growthPath).size - start) / writes;

    // Heap held by 300 served tau2-retail sessions with one write each.
    const heap = await sessionsHeap(300);

    const ratio = (row: (typeof rows)[number]) => row.retail / row.bank;
    const fmt = (value: number) => Math.round(value).toLocaleString("en-US");
    const slowest = Math.min(...rows.map(ratio));
    const stateBytes = JSON.stringify(state).length;
    // What remains between the two is the width of the containers a write copies (500 users in tau2-retail).
    const pass =
      slowest >= 0.2 &&
      (rows[0]?.retail ?? 0) >= 50 * wholeCopy &&
      bytesPerWrite < 64 * 1024 &&
      heap.megabytes < 200;
    return {
      name: "state",
      lines: [
        "write steps per second, bank (1 KB state, baseline) vs tau2-retail (1.2 MB state), median of 5 rounds",
        "| step | bank (baseline) | tau2-retail | tau2-retail / bank |",
        "|---|---:|---:|---:|",
        ...rows.map(
          (row) => `| ${row.subject} | ${fmt(row.bank)} | ${fmt(row.retail)} | ${ratio(row).toFixed(2)} |`,
        ),
        `| previous design on tau2-retail (copy + JSON round trip + full diffs) | | ${fmt(wholeCopy)} | |`,
        "",
        `SQLite growth per tau2-retail write: ${fmt(bytesPerWrite)} bytes (the state is ${fmt(stateBytes)} bytes)`,
        `heap held by a tau2-retail server with 300 sessions, one write each (over HTTP, in process): ${heap.megabytes.toFixed(1)} MB`,
        `target: tau2-retail at least 0.2 of bank's rate on every row and 50x the previous design, under 64 KB per write, under 200 MB of heap: ${pass ? "met" : "MISSED"}`,
      ],
      report: { benchmark: "large-states", rows, wholeCopy, bytesPerWrite, stateBytes, heap, pass },
      pass,
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** Heap growth (after GC when exposed) while `count` sessions are live in a served tau2-retail. */
async function sessionsHeap(count: number): Promise<{ megabytes: number; sessions: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const { engine } = await buildEngine({ sources: ["tau2-retail"], seed: "bench" });
  const app = createApp(engine);
  const post = async (path: string, body: unknown) => {
    const response = await app.request(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id?: string; status?: string };
  };
  for (let i = 0; i < count; i++) {
    const session = await post("/sessions", {});
    const outcome = await post(`/sessions/${session.id}/calls`, move());
    if (outcome.status !== "ok") throw new Error(`the call failed: ${JSON.stringify(outcome)}`);
  }
  gc?.();
  const megabytes = (process.memoryUsage().heapUsed - before) / 1024 / 1024;
  await engine.close();
  return { megabytes, sessions: count };
}
