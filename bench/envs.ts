/**
 * Environment step throughput: a TypeScript environment, the Python bridge and the QuickJS sandbox, each
 * beside a plain in-process function doing the same work, in the same run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Catalog } from "../src/catalog/index.js";
import { readDocument } from "../src/catalog/read-document.js";
import { ManualClock } from "../src/core/clock.js";
import { createRandom } from "../src/core/random.js";
import { bankDefinition } from "../src/envs/corpus/bank.js";
import { failTool, SEEDED_CLOCK_START, toolSources } from "../src/envs/define.js";
import {
  BUILTIN_ENVIRONMENTS,
  defineSandboxedEnvironment,
  type EnvironmentInstance,
  loadEnvironment,
  loadPythonEnvironment,
  type SandboxedEnvironmentDescriptor,
  SandboxPool,
} from "../src/envs/index.js";
import { MemoryStore, SqliteStore, type Store } from "../src/sessions/index.js";
import { CodeSimulator, Engine } from "../src/sim/index.js";
import { type BenchResult, stepsPerSecond } from "./report.js";

const FIXTURES = join(import.meta.dirname, "..", "test", "fixtures");

export async function benchEnvs(): Promise<BenchResult> {
  const rows: Array<{ subject: string; baseline: number; measured: number }> = [];

  // TypeScript: a transfer between two accounts (validation, a copy of each container the tool wrote, the
  // JSON Patch-style changes read from the draft; EnvSimBench's format is derived only when read).
  const bank = BUILTIN_ENVIRONMENTS.bank;
  if (!bank) throw new Error("the bank environment is missing");
  const bankInstance: EnvironmentInstance = await bank.create({ seed: 1 });
  const plainBank = { a: { balance: 1e12 }, b: { balance: 0 } };
  const transfer = {
    name: "transfer",
    arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 0.01 },
  };
  const plainTransfer = () => {
    if (plainBank.a.balance < 0.01) throw new Error("insufficient funds");
    plainBank.a.balance -= 0.01;
    plainBank.b.balance += 0.01;
  };
  // Reset every 100 steps: the state stays the size of a realistic session (transfers pile up otherwise).
  let n = 0;
  const bankStep = async () => {
    if (++n % 100 === 0) await bankInstance.reset();
    return bankInstance.step(transfer);
  };
  rows.push({
    subject: "TypeScript environment (bank.transfer, write)",
    baseline: await stepsPerSecond(plainTransfer),
    measured: await stepsPerSecond(bankStep),
  });
  // The same work without the environment's guarantees: the tool's own `run` on a plain mutable copy of
  // the state, with the context a step gives it (seeded ids, the seeded clock's time, `fail`), and no
  // validation, draft, freezing, change list or transition record.
  const transferRun = bankDefinition.tools.transfer;
  if (!transferRun) throw new Error("the bank's transfer tool has no implementation to run");
  const plainInitial = JSON.stringify(await bank.initialState());
  let plainState = JSON.parse(plainInitial);
  // The sources a step's tool gets (define.ts), from a seeded random and clock.
  const context = {
    state: plainState,
    args: transfer.arguments,
    ...toolSources(createRandom(1), new ManualClock(SEEDED_CLOCK_START, 1000)),
    fail: failTool,
  };
  let runs = 0;
  const runOnPlainState = () => {
    if (++runs % 100 === 0) {
      plainState = JSON.parse(plainInitial);
      context.state = plainState;
    }
    return transferRun.run(context);
  };
  const bankWrite = rows[rows.length - 1] as (typeof rows)[number];
  rows.push({
    subject:
      "TypeScript environment (bank.transfer, write) vs the tool's own run on a plain mutable state (the same work without the guarantees)",
    baseline: await stepsPerSecond(runOnPlainState),
    measured: bankWrite.measured,
  });
  const plainRead = () => plainBank.a.balance;
  const read = { name: "get_account", arguments: { account_id: "ACC-1001" } };
  await bankInstance.reset();
  rows.push({
    subject: "TypeScript environment (bank.get_account, read)",
    baseline: await stepsPerSecond(plainRead),
    measured: await stepsPerSecond(() => bankInstance.step(read)),
  });

  // The same transfer through the engine in process: validation, the code simulator's instance, the
  // limit checks, and the store's write (history entry and snapshot). A session lives for 100 calls.
  const dir = mkdtempSync(join(tmpdir(), "terrarium-bench-envs-"));
  try {
    for (const [kind, store] of [
      ["memory", new MemoryStore()],
      ["SQLite", new SqliteStore(join(dir, "sessions.sqlite"))],
    ] as Array<[string, Store]>) {
      const engine = new Engine({
        catalog: new Catalog(bank.tools),
        store,
        simulators: [new CodeSimulator(bank)],
        initialState: await bank.initialState(),
      });
      let session = (await engine.createSession()).id;
      let calls = 0;
      const call = async () => {
        if (++calls % 100 === 0) {
          await engine.deleteSession(session);
          session = (await engine.createSession()).id;
        }
        return engine.call(session, transfer);
      };
      const oneAtATime = await stepsPerSecond(call);
      rows.push({
        subject: `engine.call in process (bank.transfer, ${kind} store)`,
        baseline: await stepsPerSecond(plainTransfer),
        measured: oneAtATime,
      });
      if (kind === "SQLite") {
        // Eight calls queued on the session at once: staged steps, one transaction for the eight.
        let batches = 0;
        const eight = async () => {
          // A session lives for 96 calls here (12 batches), as about 100 above.
          if (++batches % 12 === 0) {
            await engine.deleteSession(session);
            session = (await engine.createSession()).id;
          }
          return Promise.all(Array.from({ length: 8 }, () => engine.call(session, transfer)));
        };
        rows.push({
          subject:
            "engine.call in process, 8 calls queued on one session (staged steps: one commit for the 8), vs one at a time (SQLite store; a slowdown under 1 is a speed-up)",
          baseline: oneAtATime,
          measured: 8 * (await stepsPerSecond(eight)),
        });
      }
      await engine.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  // Python: a read of the warehouse through the JSON-lines bridge.
  const warehouse = await loadPythonEnvironment(join(FIXTURES, "python", "warehouse.yaml"));
  try {
    const instance = await warehouse.create();
    const plainBins: Record<string, Record<string, number>> = { north: { A1: 10, B2: 3 }, south: { A1: 1 } };
    const plainStock = () => Object.values(plainBins).reduce((sum, bins) => sum + (bins.A1 ?? 0), 0);
    rows.push({
      subject: "Python bridge (warehouse.stock, read)",
      baseline: await stepsPerSecond(plainStock),
      measured: await stepsPerSecond(() => instance.step({ name: "stock", arguments: { sku: "A1" } })),
    });
  } finally {
    await warehouse.close?.();
  }

  rows.push(...(await sandboxRows()));

  const fmt = (value: number) => Math.round(value).toLocaleString("en-US");
  // Whole numbers, but two decimals near 1 (a speed-up shows as under 1).
  const slowdown = (ratio: number) => ratio.toFixed(ratio < 10 ? 2 : 0);
  return {
    name: "envs",
    lines: [
      "environment steps per second (median of 5 rounds; higher is better)",
      "| environment | plain in-process function (baseline) | environment step | slowdown |",
      "|---|---:|---:|---:|",
      ...rows.map(
        (row) =>
          `| ${row.subject} | ${fmt(row.baseline)} | ${fmt(row.measured)} | ${slowdown(row.baseline / row.measured)}x |`,
      ),
      "(an environment step also validates the call, copies each container the tool wrote, freezes the copies and lists the changes)",
    ],
    report: { benchmark: "environment-steps", rows },
  };
}

/**
 * The QuickJS sandbox: the counter example's increment, beside the same work as a plain function; once
 * in one session, once in four sessions at a time, and once with every call in a worker thread (the
 * pool's inline calls off: what a call that overruns the inline budget costs, see pool.ts).
 */
async function sandboxRows(): Promise<Array<{ subject: string; baseline: number; measured: number }>> {
  const file = join(import.meta.dirname, "..", "examples", "environments", "counter.quickjs.yaml");
  const counter = await loadEnvironment(file);
  const instance = await counter.create({ seed: 1 });
  const plain = { count: 0, history: {} as Record<string, unknown> };
  let n = 0;
  const plainIncrement = () => {
    plain.count += 1;
    plain.history[`inc_${n++}`] = { by: 1, at: "2025-01-01T00:00:00.000Z" };
  };
  let steps = 0;
  const sandboxed = async () => {
    if (++steps % 100 === 0) await instance.reset();
    return instance.step({ name: "increment", arguments: { by: 1 } });
  };
  const baseline = await stepsPerSecond(plainIncrement);
  // QuickJS is WebAssembly that V8 first compiles quickly and recompiles optimised in the background once
  // it runs hot; on a loaded machine that takes seconds. Measured before that, a step is several times
  // slower than it will be for the rest of the process's life.
  await warmUp(sandboxed);
  const single = {
    subject: "QuickJS sandbox (counter.increment, write)",
    baseline,
    measured: await stepsPerSecond(sandboxed),
  };
  const SESSIONS = 4;
  const instances = await Promise.all(Array.from({ length: SESSIONS }, () => counter.create({ seed: 1 })));
  let rounds = 0;
  const together = async () => {
    const reset = ++rounds % 25 === 0;
    await Promise.all(
      instances.map(async (each) => {
        if (reset) await each.reset();
        return each.step({ name: "increment", arguments: { by: 1 } });
      }),
    );
  };
  await warmUp(together);
  const parallel = {
    subject: `QuickJS sandbox, ${SESSIONS} sessions at once (steps per second in all)`,
    baseline,
    measured: (await stepsPerSecond(together)) * SESSIONS,
  };
  const workersOnly = new SandboxPool({ inlineMs: 0 });
  try {
    const inWorkers = defineSandboxedEnvironment(readDocument(file) as SandboxedEnvironmentDescriptor, {
      pool: workersOnly,
    });
    const workerInstance = await inWorkers.create({ seed: 1 });
    let workerSteps = 0;
    const inWorker = async () => {
      if (++workerSteps % 100 === 0) await workerInstance.reset();
      return workerInstance.step({ name: "increment", arguments: { by: 1 } });
    };
    await warmUp(inWorker);
    const workers = {
      subject: "QuickJS sandbox, every call in a worker thread (inline calls off)",
      baseline,
      measured: await stepsPerSecond(inWorker),
    };
    return [single, parallel, workers];
  } finally {
    await workersOnly.close();
  }
}

/** Runs `step` for WARM_UP_MS, so that what is measured next runs on optimised code. */
async function warmUp(step: () => Promise<unknown>): Promise<void> {
  const end = performance.now() + WARM_UP_MS;
  while (performance.now() < end) await step();
}

const WARM_UP_MS = 3000;
