import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, jsonLines } from "../helpers/cli.js";
import { FIXTURES } from "../helpers/paths.js";

function tempFile(name: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "terrarium-env-")), name);
  writeFileSync(file, text);
  return file;
}

const CALLS = [
  { name: "open_account", arguments: { owner: "Ana", deposit: 50 } },
  {
    name: "transfer",
    arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 25, memo: "lunch" },
  },
  { name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: "a lot" } },
  { name: "freeze_account", arguments: { account_id: "ACC-2001" } },
]
  .map((call) => JSON.stringify(call))
  .concat(["{not json"])
  .join("\n");

describe("terrarium env", () => {
  it("lists the built-in environments", async () => {
    const run = await cli(["env", "list", "--json"]);
    const listed = JSON.parse(run.stdout);
    expect(listed.schemaVersion).toBe(1);
    const bank = listed.environments.find((e: { name: string }) => e.name === "bank");
    expect(bank).toMatchObject({ kind: "typescript" });
    expect(bank.tools.length).toBeGreaterThanOrEqual(6);
  });

  it("run: one transition per call; invalid calls and bad lines are recorded and the run goes on", async () => {
    const calls = tempFile("calls.jsonl", CALLS);
    const run = await cli(["env", "run", "bank", "--calls", calls, "--seed", "1"]);
    expect(run.code).toBe(0);
    const records = jsonLines(run.stdout);
    expect(records.map((r) => [r.step, r.success, r.delta])).toEqual([
      [1, true, 1],
      [2, true, 5],
      [3, false, 0],
      [4, false, 0],
      [5, undefined, undefined],
    ]);
    expect(Object.keys(records[1] as object)).toEqual([
      "schemaVersion",
      "step",
      "call",
      "success",
      "observation",
      "before",
      "after",
      "changes",
      "envChanges",
      "delta",
    ]);
    expect(records[2]?.observation).toEqual({
      error: "invalid call",
      violations: [
        { path: "/amount", rule: "type", message: '"amount" must be a number > 0, got a string "a lot"' },
      ],
    });
    expect(records[3]?.observation).toEqual({ error: "account is frozen" });
    expect(records[4]).toMatchObject({ step: 5, line: 5, error: expect.stringMatching(/^invalid JSON/) });
    expect(run.stderr).toMatch(/^line 5: invalid JSON/);
  });

  it("replaying the same calls with the same seed gives byte-identical transitions", async () => {
    const calls = tempFile("calls.jsonl", CALLS);
    const first = await cli(["env", "run", "bank", "--calls", calls, "--seed", "42"]);
    const second = await cli(["env", "run", "bank", "--calls", calls, "--seed", "42"]);
    const other = await cli(["env", "run", "bank", "--calls", calls, "--seed", "43"]);
    expect(second.stdout).toBe(first.stdout);
    expect(other.stdout).not.toBe(first.stdout); // generated ids differ with the seed
  });

  it("starts from a given state and writes to --out; runs Python descriptors too", async () => {
    const state = tempFile(
      "state.json",
      JSON.stringify({
        accounts: {
          A: { owner: "x", balance: 0, currency: "USD", status: "open", opened_at: "2020-01-01T00:00:00Z" },
        },
        transfers: {},
        limits: { daily_transfer_max: 10 },
        stats: { transfer_count: 0, total_moved: 0 },
      }),
    );
    const out = join(mkdtempSync(join(tmpdir(), "terrarium-env-")), "t.jsonl");
    const calls = tempFile(
      "c.jsonl",
      JSON.stringify({ name: "close_account", arguments: { account_id: "A" } }),
    );
    await cli(["env", "run", "bank", "--calls", calls, "--state", state, "--out", out]);
    const [record] = jsonLines(readFileSync(out, "utf8"));
    expect(record).toMatchObject({
      success: true,
      delta: 1,
      envChanges: [{ path: "accounts.A.status", type: "modified", before: "open", after: "closed" }],
    });

    const pyCalls = tempFile("p.jsonl", JSON.stringify({ name: "stock", arguments: { sku: "A1" } }));
    const python = await cli(["env", "run", join(FIXTURES, "python", "warehouse.yaml"), "--calls", pyCalls]);
    expect(jsonLines(python.stdout)[0]).toMatchObject({
      success: true,
      observation: { sku: "A1", total: 11 },
      delta: 0,
    });
  });

  it("runs a QuickJS descriptor", async () => {
    const example = join(import.meta.dirname, "..", "..", "examples", "environments");
    const run = await cli([
      "env",
      "run",
      join(example, "counter.quickjs.yaml"),
      "--calls",
      join(example, "counter-calls.jsonl"),
      "--seed",
      "1",
    ]);
    const records = jsonLines(run.stdout);
    expect(records.map((r) => [r.success, r.delta])).toEqual([
      [true, 2],
      [true, 0],
      [false, 0],
    ]);
    expect(records[0]?.observation).toEqual({ id: expect.stringMatching(/^inc_/), count: 5 });
  });

  it("says what an unknown environment reference is", async () => {
    const run = await cli(["env", "run", "nope", "--calls", "x.jsonl"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/cannot read the calls|is neither a built-in environment/);
  });
});
