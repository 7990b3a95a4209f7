import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { Command, CommanderError } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { registerUsersGenerateCommand } from "../../src/cli/commands/users/generate.js";
import { isTerrariumError } from "../../src/core/errors.js";
import { loadScenarios } from "../../src/users/scenario/index.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const EXAMPLE = "examples/users/generate";

/** Runs `users generate` on a throwaway program shaped like terrarium's (global --config, errors as codes). */
async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (chunk: Buffer) => out.push(chunk));
  stderr.on("data", (chunk: Buffer) => err.push(chunk));
  let code = 0;
  const program = new Command("terrarium")
    .option("--config <file>")
    .exitOverride()
    .configureOutput({ writeOut: (t) => stdout.write(t), writeErr: (t) => stderr.write(t) });
  const users = program.command("users").exitOverride();
  registerUsersGenerateCommand(users, { stdout, stderr, stdin: Readable.from([""]) }, (c) => {
    code = c;
  });
  for (const command of users.commands) command.exitOverride();
  try {
    await program.parseAsync(["users", "generate", ...args], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) code = error.exitCode === 0 ? 0 : 2;
    else if (isTerrariumError(error)) {
      stderr.write(`terrarium: ${error.describe()}\n`);
      code = 2;
    } else throw error;
  }
  return { code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") };
}

async function setup() {
  server = await startScriptedLlmServer([], {
    respond: (body) => {
      const prompt = body.messages.find((m: any) => m.role === "user").content as string;
      const source = /<document source="([^"]+)">/.exec(prompt)?.[1] ?? "doc";
      const occupation = /^- occupation: (.+)$/m.exec(prompt)?.[1] ?? "someone";
      const personality = /^- personality: (.+)$/m.exec(prompt)?.[1] ?? "calm";
      return {
        reply: {
          content: JSON.stringify({
            goal: `You want ${source} explained for a ${occupation} who is ${personality}, step ${prompt.length}.`,
            reveal_attribute: "account number",
            reveal_value: "BB-40112873",
            checklist: ["The agent asks for the account number before answering."],
            situation: "",
          }),
        },
      };
    },
  });
  const dir = mkdtempSync(join(tmpdir(), "terrarium-gen-cli-"));
  const config = writeScriptedConfig(dir, server.baseURL, { default: "scripted:writer" });
  return { dir, config, out: join(dir, "out") };
}

const base = (config: string, out: string) => [
  "--config",
  config,
  "--docs",
  `${EXAMPLE}/docs`,
  "--attributes",
  `${EXAMPLE}/attributes.yaml`,
  "--out",
  out,
];

describe("terrarium users generate", () => {
  it("writes loadable scenarios from the example, prints JSON, and refuses to overwrite without --force", async () => {
    const { config, out } = await setup();
    const first = await run([
      ...base(config, out),
      "--count",
      "4",
      "--seed",
      "7",
      "--max-turns",
      "9",
      "--json",
    ]);
    expect(first.stderr).toContain("4/4 scenarios written");
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report).toMatchObject({ schemaVersion: 1, seed: "7", strategy: "mixed" });
    expect(report.scenarios).toHaveLength(4);
    expect(report.scenarios[0].reveal).toEqual({ attribute: "account number", value: "BB-40112873" });
    const loaded = loadScenarios(out);
    expect(loaded).toHaveLength(4);
    expect(loaded.every((s) => s.maxTurns === 9)).toBe(true);
    expect(readdirSync(join(out, "knowledge")).sort()).toEqual([
      "billing.md",
      "moving-home.md",
      "outages.md",
    ]);
    const calls = server?.requests.length ?? 0;
    expect(calls).toBe(4);

    const again = await run([...base(config, out), "--count", "4", "--seed", "7"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exist.*--force/);
    expect(server?.requests.length).toBe(calls); // refused before any model call

    const forced = await run([...base(config, out), "--count", "4", "--seed", "7", "--force"]);
    expect(forced.code).toBe(0);
    expect(forced.stdout.trim().split("\n")).toHaveLength(4);
    // Same seed: the same scenarios again.
    expect(loadScenarios(out).map((s) => [s.id, s.goal])).toEqual(loaded.map((s) => [s.id, s.goal]));
  });

  it("--model overrides the configured model and --strategy is applied", async () => {
    const { config, out } = await setup();
    const result = await run([
      ...base(config, out),
      "--count",
      "2",
      "--strategy",
      "bottom-up",
      "--model",
      "scripted:other",
      "--json",
    ]);
    expect(result.code).toBe(0);
    expect(server?.requests.map((r) => r.body.model)).toEqual(["other", "other"]);
    expect(JSON.parse(result.stdout).scenarios.map((s: any) => s.strategy)).toEqual([
      "bottom-up",
      "bottom-up",
    ]);
  });

  it("refuses every bad value before any model call", async () => {
    const { dir, config, out } = await setup();
    const badAttributes = join(dir, "bad.yaml");
    writeFileSync(badAttributes, "age: [20, 30]\ntone:\n  values: [calm]\n  weights: [1, 2]\n");
    const cases: Array<[string[], RegExp]> = [
      [["--count", "0"], /at least 1/],
      [["--count", "many"], /at least 1/],
      [["--count", "1001"], /at most 1000/],
      [["--count", "2", "--max-turns", "0"], /at least 1/],
      [["--count", "2", "--max-turns", "5000"], /at most 1000/],
      [["--count", "2", "--concurrency", "-1"], /at least 1/],
      [["--count", "2", "--strategy", "sideways"], /Allowed choices are top-down, bottom-up, mixed/],
      [["--count", "2", "--model", "nowhere:m"], /nowhere/],
    ];
    for (const [args, message] of cases) {
      const result = await run([...base(config, out), ...args]);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr, args.join(" ")).toMatch(message);
    }
    const attributes = await run([
      "--config",
      config,
      "--docs",
      `${EXAMPLE}/docs`,
      "--attributes",
      badAttributes,
      "--count",
      "2",
      "--out",
      out,
    ]);
    expect(attributes.code).toBe(2);
    expect(attributes.stderr).toContain(`${badAttributes}:4`);
    expect(attributes.stderr).toMatch(/2 weights for 1 values.*CONFIG_INVALID/);
    const docs = await run([
      "--config",
      config,
      "--docs",
      join(dir, "none"),
      "--attributes",
      badAttributes,
      "--count",
      "1",
      "--out",
      out,
    ]);
    expect(docs.code).toBe(2);
    expect(docs.stderr).toMatch(/cannot read the documents/);
    const missing = await run([
      "--config",
      config,
      "--docs",
      `${EXAMPLE}/docs`,
      "--count",
      "1",
      "--out",
      out,
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--attributes/);
    const file = join(dir, "a-file");
    writeFileSync(file, "x");
    const notFolder = await run([...base(config, file), "--count", "1"]);
    expect(notFolder.code).toBe(2);
    expect(notFolder.stderr).toMatch(/not a folder/);
    // A knowledge file with other text is kept: refused before any model call.
    mkdirSync(join(out, "knowledge"), { recursive: true });
    writeFileSync(join(out, "knowledge", "billing.md"), "someone else's notes\n");
    const conflict = await run([...base(config, out), "--count", "3"]);
    expect(conflict.code).toBe(2);
    expect(conflict.stderr).toMatch(/billing\.md.*INVALID_INPUT/);
    expect(server?.requests).toHaveLength(0);
    expect(readdirSync(out)).toEqual(["knowledge"]);
  });
});
