import { createWriteStream, readFileSync } from "node:fs";
import type { Command } from "commander";
import { readDocument } from "../../catalog/read-document.js";
import { TerrariumError } from "../../core/errors.js";
import { BUILTIN_ENVIRONMENTS } from "../../envs/corpus/index.js";
import { loadEnvironment } from "../../envs/load.js";
import type { Environment } from "../../envs/types.js";
import { type CliIo, compactTable, write } from "../io.js";

/** Version of the transition records `env run` writes. */
export const TRANSITION_SCHEMA_VERSION = 1;

export function registerEnvCommands(program: Command, io: CliIo): void {
  const env = program
    .command("env")
    .description("executable environments: list them and replay calls on them");

  env
    .command("list")
    .argument("[environments...]", "extra environments to describe: module paths or descriptor files")
    .option("--json", "print as JSON")
    .description("list the built-in environments (and any given ones) with their tools")
    .addHelpText(
      "after",
      "\nExamples:\n  terrarium env list\n  terrarium env list ./my-env.ts envs/warehouse.yaml --json\n",
    )
    .action(async (extra: string[], options: { json?: boolean }) => {
      const environments: Environment[] = [...Object.values(BUILTIN_ENVIRONMENTS)];
      for (const reference of extra) environments.push(await loadEnvironment(reference));
      try {
        const rows = environments.map((environment) => ({
          name: environment.name,
          kind: environment.source.kind,
          tools: environment.tools.map((tool) => ({ name: tool.name, effect: tool.effect })),
          description: environment.description,
        }));
        if (options.json) {
          io.stdout.write(`${JSON.stringify({ schemaVersion: 1, environments: rows }, null, 2)}\n`);
          return;
        }
        const table = compactTable(["environment", "kind", "tools", "description"]);
        for (const row of rows) {
          const description =
            row.description.length > 70 ? `${row.description.slice(0, 69)}…` : row.description;
          table.push([row.name, row.kind, String(row.tools.length), description]);
        }
        io.stdout.write(`${table.toString()}\n`);
      } finally {
        for (const environment of environments) await environment.close?.();
      }
    });

  env
    .command("run")
    .argument(
      "<environment>",
      "a built-in name, a TypeScript/JavaScript module, or a Python/QuickJS descriptor",
    )
    .requiredOption("--calls <file>", 'JSONL with one {"name", "arguments"} per line ("-" = stdin)')
    .option("--state <file>", "start from this state (JSON or YAML) instead of the initial one")
    .option("--seed <n>", "seed the clock, random source and ids so the run repeats exactly")
    .option("--out <file>", "write the transitions to a file instead of stdout")
    .description("replay calls on an environment and write one JSONL transition per call")
    .addHelpText(
      "after",
      `
Each output line: {"schemaVersion", "step", "call", "success", "observation", "before", "after", "changes",
"envChanges", "delta"}. An invalid call is a failed step carrying the validation errors; a line that is not a
call is reported as {"step", "line", "error"}; the run goes on either way.

Examples:
  terrarium env run bank --calls calls.jsonl --seed 1
  terrarium env run envs/warehouse.yaml --calls calls.jsonl --state snapshot.json --out transitions.jsonl
`,
    )
    .action(
      async (reference: string, options: { calls: string; state?: string; seed?: string; out?: string }) => {
        const text = options.calls === "-" ? await readStream(io.stdin) : readCalls(options.calls);
        const state = options.state !== undefined ? readDocument(options.state) : undefined;
        const environment = await loadEnvironment(reference);
        const output = options.out ? createWriteStream(options.out) : io.stdout;
        try {
          const instance = await environment.create({
            ...(state !== undefined ? { state } : {}),
            ...(options.seed !== undefined ? { seed: options.seed } : {}),
          });
          let step = 0;
          for (const [index, line] of text.split("\n").entries()) {
            if (line.trim() === "") continue;
            step++;
            const call = parseCall(line);
            if ("error" in call) {
              io.stderr.write(`line ${index + 1}: ${call.error}\n`);
              await write(
                output,
                `${JSON.stringify({ schemaVersion: TRANSITION_SCHEMA_VERSION, step, line: index + 1, error: call.error })}\n`,
              );
              continue;
            }
            const transition = await instance.step(call);
            await write(
              output,
              `${JSON.stringify({ schemaVersion: TRANSITION_SCHEMA_VERSION, step, ...transition })}\n`,
            );
          }
          await instance.close();
        } finally {
          if (output !== io.stdout)
            await new Promise<void>((resolve) => (output as NodeJS.WritableStream).end(resolve));
          await environment.close?.();
        }
      },
    );
}

function readCalls(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the calls (no such file)", { where: { file } });
  }
}

function parseCall(line: string): { name: string; arguments: unknown } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { error: `invalid JSON: ${(error as Error).message}` };
  }
  if (value === null || typeof value !== "object" || typeof (value as { name?: unknown }).name !== "string") {
    return { error: 'a call is {"name": string, "arguments": object}' };
  }
  const call = value as { name: string; arguments?: unknown };
  return { name: call.name, arguments: call.arguments ?? {} };
}

async function readStream(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString("utf8");
}
