import { type ChildProcess, spawn } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildBenchmark } from "../../src/bench/envsim/build.js";
import { exploreWithSchemas } from "../../src/bench/envsim/collect.js";
import { toEnvSimBenchRecord } from "../../src/bench/envsim/records.js";
import type { EnvSimSample } from "../../src/bench/envsim/types.js";
import type { JsonSchema } from "../../src/catalog/tool.js";
import { buildProgram } from "../../src/cli/main.js";
import { hashJson } from "../../src/core/canonical-json.js";
import { createRandom } from "../../src/core/random.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/corpus/index.js";
import { loadEnvironment } from "../../src/envs/load.js";
import { synthesizeValid } from "../../src/sim/synthesize.js";
import { SchemaCompiler } from "../../src/validate/ajv.js";
import { type CliRun, cli, jsonLines } from "../helpers/cli.js";
import { need } from "../helpers/requirements.js";
import {
  type ScriptedLlmServer,
  type ScriptStep,
  startScriptedLlmServer,
} from "../helpers/scripted-llm-server.js";

/**
 * Every example command line the CLI shows — in the `--help` of every command and subcommand, and in the
 * ```sh blocks of README.md — is run here as written, against a scripted OpenAI-compatible model on
 * 127.0.0.1 (no network, no key), and must work: exit code 0 and the output it promises. The examples are
 * collected from the commander program and README.md, so new ones are picked up.
 *
 * How the lines run:
 * - Each example gets a fresh working directory <tmp>/<n>/work holding the files the examples name
 *   (built below from test/fixtures, examples/ and the built-in environments). `test/` and `examples/` are
 *   symlinked into it and `<tmp>/<n>/shared/datasets/bfcl` points at test/fixtures/bfcl, so the relative
 *   paths of the examples resolve unchanged. In-process runs (`cli()` of test/helpers/cli.ts) change
 *   process.cwd() to that directory for the duration of the run (vitest's default `forks` pool allows it);
 *   they run one at a time.
 * - A `terrarium.config.yaml` in that directory overrides the built-in `openai` provider's baseURL with the
 *   scripted server, so `openai:gpt-4.1-mini` reaches it as written; `roles.default` names the same model,
 *   as the commands that need roles (gats, bench bfcl) document. The scripted model answers any role: a
 *   value synthesized by terrarium's own synthesizer for a `json_schema` response format (optimistic: true
 *   booleans, first enum values, no state changes), one tool call the first time it is offered tools, and a
 *   short text otherwise; only the schema converter gets a hand-made answer (see `convertedOperations`).
 * - `> file` redirections write the captured stdout to the file.
 * - `serve` and `mcp` never end by themselves: they run as child processes of the CLI from source (tsx), at
 *   the same time as each other, and are stopped once they serve. `serve` gets `--port 0` (replacing a
 *   given port or the default 8080) so runs never collide; a session is opened and one (not proxied) call
 *   made over HTTP. `mcp` is driven by an MCP client that lists the tools.
 * - `mcp+stdio:"npx -y some-mcp-server"` finds a local package `some-mcp-server` in the working directory
 *   (npx runs local bins without the registry; an .npmrc there says offline) whose bin is `terrarium mcp bank`.
 * - Sizes too big for a unit test are shrunk (see `scaled`); the flags stay the example's.
 *
 * Examples that fail today because of bugs are marked `it.fails` in KNOWN_BUGS with the reason.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const TSX_LOADER = pathToFileURL(join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
const CLI_SOURCE = join(ROOT, "src", "cli", "main.ts");
const MODEL = "openai:gpt-4.1-mini";

/**
 * Examples that fail today because of bugs in terrarium (not in this test), run with `it.fails`; each
 * names the bug. Remove an entry once its bug is fixed (the run then fails, saying the example works).
 */
const KNOWN_BUGS = new Map<string, string>([]);

// ---------------------------------------------------------------------------------------------------------
// Collecting the examples

interface Example {
  line: string;
  sources: string[];
}

/** `terrarium …` lines of a text: continuation lines (`\`) joined, comments and surrounding space removed. */
function exampleLines(text: string): string[] {
  const joined = text.replace(/\\\r?\n\s*/g, " ");
  return joined
    .split("\n")
    .map((line) => stripComment(line).trim())
    .filter((line) => line.startsWith("terrarium "));
}

/** Removes a shell comment: a `#` that starts a word outside quotes. */
function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (quote) {
      if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'") quote = char;
    else if (char === "#" && (i === 0 || /\s/.test(line[i - 1] as string))) return line.slice(0, i);
  }
  return line;
}

/** Splits a command line as a POSIX shell would (quotes, backslashes); `>` is its own word. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i] as string;
    if (quote) {
      if (char === quote) quote = undefined;
      else if (char === "\\" && quote === '"' && /["\\$`]/.test(line[i + 1] ?? "")) word += line[++i];
      else word += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      inWord = true;
    } else if (char === "\\") {
      word += line[++i] ?? "";
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else if (char === ">") {
      if (inWord) words.push(word);
      words.push(">");
      word = "";
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote) throw new Error(`unbalanced quote in ${line}`);
  if (inWord) words.push(word);
  return words;
}

function commandAt(path: string[]): Command {
  let command = program;
  for (const name of path) command = command.commands.find((sub) => sub.name() === name) as Command;
  return command;
}

function commandPaths(command: Command, path: string[] = []): string[][] {
  return [
    path,
    ...command.commands
      .filter((sub) => sub.name() !== "help")
      .flatMap((sub) => commandPaths(sub, [...path, sub.name()])),
  ];
}

const silentIo = { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough() };
const program = buildProgram(silentIo as never, () => undefined);
const examples = new Map<string, Example>();
const addExample = (line: string, source: string) => {
  const known = examples.get(line);
  if (known) known.sources.push(source);
  else examples.set(line, { line, sources: [source] });
};
// The help text of each command as a user sees it is commander's helpInformation() (usage, options,
// subcommands) followed by what addHelpText added, where the examples are.
let helpExamples = 0;
for (const path of commandPaths(program)) {
  const help = await cli([...path, "--help"]);
  if (help.code !== 0) throw new Error(`terrarium ${path.join(" ")} --help failed: ${help.stderr}`);
  const information = commandAt(path).helpInformation();
  if (!help.stdout.startsWith(information))
    throw new Error(`terrarium ${path.join(" ")} --help does not start with its helpInformation()`);
  for (const line of exampleLines(help.stdout.slice(information.length))) {
    helpExamples++;
    addExample(line, `terrarium ${[...path, "--help"].join(" ")}`);
  }
}
// README's ```sh blocks; its first block runs `node bin/terrarium.js …`, tested by test/cli/readme.test.ts.
let readmeExamples = 0;
for (const block of readFileSync(join(ROOT, "README.md"), "utf8").matchAll(/```sh\n([\s\S]*?)```/g)) {
  for (const line of exampleLines(block[1] as string)) {
    readmeExamples++;
    addExample(line, "README.md");
  }
}

/** The command an argument list runs (`bench bfcl --data …` is `bench bfcl run`, its default). */
function commandOf(args: string[]): string[] {
  const path: string[] = [];
  let command: Command = program;
  for (const arg of args) {
    const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!sub) break;
    path.push(arg);
    command = sub;
  }
  // commander keeps the default subcommand (`isDefault: true`) in a private field.
  const defaultName = (command as unknown as { _defaultCommandName?: string })._defaultCommandName;
  if (defaultName) path.push(defaultName);
  return path;
}

// ---------------------------------------------------------------------------------------------------------
// The scripted model

const compiler = new SchemaCompiler();

/**
 * An optimistic, cautious reading of a schema: every boolean true and every enum its first value (a
 * judge's "success", a verdict's "valid"), and no state `changes` (made-up JSON Pointers would be refused by
 * the engine, rightly), so that a scripted model's answers let the runs go to their end.
 */
function optimistic(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(optimistic);
  if (schema === null || typeof schema !== "object") return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) copy[key] = optimistic(value);
  if (Array.isArray(copy.enum) && copy.enum.length > 1) copy.enum = [copy.enum[0]];
  if (copy.type === "boolean" && copy.const === undefined && copy.enum === undefined) copy.const = true;
  const changes = (copy.properties as Record<string, Record<string, unknown>> | undefined)?.changes;
  if (changes && typeof changes === "object" && changes.type === "array") changes.maxItems = 0;
  return copy;
}

/** A value valid against `schema`, synthesized by terrarium; optimistic where that stays valid. */
function answerFor(schema: JsonSchema, seed: string): unknown {
  const validate = compiler.compile(schema);
  const options = { random: createRandom(seed), idSeed: seed, now: "2025-01-01T00:00:00Z" };
  const check = (candidate: unknown) => validate(candidate) as boolean;
  const hopeful = synthesizeValid(optimistic(schema) as JsonSchema, options, check);
  return hopeful.valid ? hopeful.value : synthesizeValid(schema, options, check).value;
}

/**
 * The one role answered specially: the schema converter's answer must be a usable OpenAPI operation named
 * after the function it was shown, which its (deliberately loose) response schema does not say.
 */
function convertedOperations(messages: any[]): unknown {
  const text = String(messages.findLast((message) => message.role === "user")?.content ?? "");
  const name = /<data>\n(?:Method of class \w+\.\n)?(\w+)\(/.exec(text)?.[1] ?? "tool";
  return {
    operations: [
      {
        operationId: name,
        summary: name.replace(/_/g, " "),
        description: `Calls ${name}.`,
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
            },
          },
        },
        responses: {
          "200": {
            description: "The result, or an error.",
            content: {
              "application/json": {
                schema: {
                  oneOf: [
                    { type: "object", properties: { result: {} }, required: ["result"] },
                    { type: "object", properties: { error: { type: "string" } }, required: ["error"] },
                  ],
                },
              },
            },
          },
        },
      },
    ],
  };
}

function respond(body: any): ScriptStep {
  const seed = hashJson(body?.messages ?? []);
  const format = body?.response_format;
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  if (format?.type === "json_schema" && format.json_schema?.name === "openapi_operations") {
    return { reply: { content: JSON.stringify(convertedOperations(messages)) } };
  }
  if (format?.type === "json_schema" && format.json_schema?.schema) {
    return { reply: { content: JSON.stringify(answerFor(format.json_schema.schema, seed)) } };
  }
  const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
  const first = tools[0]?.function;
  if (first && !messages.some((message) => message.role === "tool")) {
    return {
      reply: { toolCalls: [{ name: first.name, arguments: answerFor(first.parameters ?? {}, seed) }] },
    };
  }
  if (format?.type === "json_object") return { reply: { content: "{}" } };
  return { reply: { content: "Done." } };
}

// ---------------------------------------------------------------------------------------------------------
// Fixtures

let server: ScriptedLlmServer;
let base: string;
/** Files every working directory starts with (copied), built once. */
let seedDir: string;
let runs = 0;

const MY_TOOLS_PY = `"""Tools of a small shop, to be converted to OpenAPI with a model."""


def get_price(sku: str) -> float:
    """Price of a product.

    Args:
        sku: the product's stock keeping unit
    """
    return 9.99


def place_order(sku: str, quantity: int = 1) -> dict:
    """Order a product.

    Args:
        sku: the product's stock keeping unit
        quantity: how many to order
    """
    return {"order_id": "O1", "sku": sku, "quantity": quantity}
`;

// The TypeScript environment of docs/environments.md, importing terrarium from this repository's source.
const MY_ENV_TS = `import { defineEnvironment } from ${JSON.stringify(pathToFileURL(join(ROOT, "src", "index.ts")).href)};

export default defineEnvironment({
  name: "notes",
  description: "A notebook.",
  initialState: { notes: {} as Record<string, { text: string; created_at: string }> },
  tools: {
    add_note: {
      description: "Add a note.",
      effect: "write",
      input: { properties: { text: { type: "string", minLength: 1 } }, required: ["text"] },
      run: ({ state, args, ids, now }) => {
        const id = ids.next("note");
        state.notes[id] = { text: args.text as string, created_at: now() };
        return { id };
      },
    },
  },
});
`;

/** `env run` calls per environment (calls.jsonl is also validate's dataset: see `prepare`). */
const ENV_CALLS: Record<string, unknown[]> = {
  bank: [
    { name: "get_account", arguments: { account_id: "ACC-1001" } },
    { name: "transfer", arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 25 } },
  ],
  "tau2-retail": [
    { name: "list_all_product_types", arguments: {} },
    { name: "calculate", arguments: { expression: "(2 + 3) * 4" } },
  ],
  "envs/warehouse.yaml": [
    { name: "stock", arguments: { sku: "A1" } },
    { name: "move", arguments: { sku: "A1", source: "north", target: "south", quantity: 2 } },
  ],
};

/** validate's datasets: calls against tools.openapi.yaml (the petstore), and lines carrying their tools. */
const VALIDATE_CALLS = [
  { id: "c1", calls: [{ name: "listPets", arguments: { limit: 10 } }] },
  {
    id: "c2",
    calls: [
      { name: "createPet", arguments: { name: "Rex", tag: "dog" } },
      { name: "showPetById", arguments: { petId: 1 } },
    ],
  },
];

const jsonl = (records: unknown[]) => records.map((record) => `${JSON.stringify(record)}\n`).join("");

async function buildSeed(dir: string): Promise<void> {
  const copy = (from: string, to: string) => cpSync(join(ROOT, from), join(dir, to));
  copy("test/fixtures/tools/petstore.openapi.yaml", "petstore.openapi.yaml");
  copy("test/fixtures/tools/petstore.openapi.yaml", "tools.openapi.yaml");
  copy("test/fixtures/tools/slackish.swagger.json", "slack.swagger.json");
  copy("test/fixtures/tools/openai-tools.json", "tools.json");
  copy("test/fixtures/tools/mcp-tools.json", "mcp-tools.json");
  copy("test/fixtures/tools/mcp-tools.json", "mcp.json");
  copy("examples/serve/notifications.openapi.yaml", "api.openapi.yaml");
  copy("test/fixtures/tau2-retail/tasks.json", "tasks.json");
  mkdirSync(join(dir, "envs"));
  copy("test/fixtures/python/warehouse.yaml", "envs/warehouse.yaml");
  copy("test/fixtures/python/warehouse_env.py", "envs/warehouse_env.py");
  writeFileSync(join(dir, "my_tools.py"), MY_TOOLS_PY);
  writeFileSync(join(dir, "my-env.ts"), MY_ENV_TS);

  const openAiTools = JSON.parse(readFileSync(join(ROOT, "test/fixtures/tools/openai-tools.json"), "utf8"));
  writeFileSync(
    join(dir, "data.jsonl"),
    jsonl([
      {
        id: "d1",
        tools: openAiTools,
        calls: [{ name: "get_weather", arguments: { city: "Oslo", unit: "celsius" } }],
      },
    ]),
  );
  writeFileSync(
    join(dir, "tasks.jsonl"),
    jsonl([
      { id: "t1", tools: openAiTools, turns: ["What is the weather in Oslo, in celsius?"] },
      { id: "t2", tools: openAiTools, turns: ["Check the weather in Paris.", "And in Rome?"] },
    ]),
  );

  // BFCL results for `bench bfcl score`: the first acceptable value of every ground-truth argument.
  const answers: unknown[] = [];
  for (const category of ["simple", "parallel", "multiple"]) {
    const file = join(ROOT, "test/fixtures/bfcl/possible_answer", `BFCL_v3_${category}.json`);
    for (const item of jsonLines(readFileSync(file, "utf8"))) {
      const calls = (item.ground_truth as Array<Record<string, Record<string, unknown[]>>>).map((call) => {
        const [name, params] = Object.entries(call)[0] as [string, Record<string, unknown[]>];
        const args = Object.fromEntries(
          Object.entries(params)
            .filter(([, values]) => values[0] !== "")
            .map(([key, values]) => [key, values[0]]),
        );
        return { name, arguments: args };
      });
      answers.push({ id: item.id, calls });
    }
  }
  writeFileSync(join(dir, "my-model.jsonl"), jsonl(answers));

  buildBfclPackage(join(dir, "bfcl-package"));

  // EnvSimBench files: samples explored from a few built-ins (no model), a small benchmark built from them
  // (targets far below the paper's so model evaluations stay quick), and the same in the published format.
  const samples: EnvSimSample[] = [];
  for (const name of ["bank", "hotel", "restaurant", "warehouse"]) {
    const environment = BUILTIN_ENVIRONMENTS[name];
    if (!environment) throw new Error(`no built-in ${name}`);
    samples.push(...(await exploreWithSchemas(environment, { trajectories: 3, steps: 20, seed: 1 })).samples);
  }
  writeFileSync(join(dir, "samples.jsonl"), jsonl(samples));
  writeFileSync(join(dir, "transitions.jsonl"), jsonl(samples));
  const bench = buildBenchmark(samples, {
    seed: "1",
    targets: {
      failure: 2,
      noChangeZeroArgs: 2,
      noChangeWithArgs: 2,
      simplePerDelta: 2,
      mediumPerDelta: 1,
      difficult: 1,
    },
  }).samples;
  writeFileSync(join(dir, "bench.jsonl"), jsonl(bench));
  writeFileSync(join(dir, "envsimbench.jsonl"), jsonl(bench.map(toEnvSimBenchRecord)));
  writeFileSync(join(dir, "published.jsonl"), jsonl(bench.map(toEnvSimBenchRecord)));

  // A state of the Python warehouse after a move, for `--state snapshot.json`.
  const warehouse = await loadEnvironment(join(dir, "envs", "warehouse.yaml"));
  try {
    const instance = await warehouse.create({ seed: "1" });
    const moved = await instance.step({
      name: "move",
      arguments: { sku: "B2", source: "north", target: "south", quantity: 1 },
    });
    if (!moved.success) throw new Error(`snapshot step failed: ${JSON.stringify(moved.observation)}`);
    writeFileSync(join(dir, "snapshot.json"), `${JSON.stringify(await instance.state(), null, 2)}\n`);
    await instance.close();
  } finally {
    await warehouse.close?.();
  }

  // A local package whose bin is an MCP server over stdio (terrarium's own, serving the bank).
  const pkg = join(dir, "node_modules", "some-mcp-server");
  mkdirSync(pkg, { recursive: true });
  writeFileSync(
    join(pkg, "package.json"),
    JSON.stringify({ name: "some-mcp-server", version: "1.0.0", bin: { "some-mcp-server": "server.sh" } }),
  );
  writeFileSync(
    join(pkg, "server.sh"),
    `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} --import ${JSON.stringify(TSX_LOADER)} ${JSON.stringify(CLI_SOURCE)} mcp bank\n`,
  );
  chmodSync(join(pkg, "server.sh"), 0o755);
  mkdirSync(join(dir, "node_modules", ".bin"));
  symlinkSync("../some-mcp-server/server.sh", join(dir, "node_modules", ".bin", "some-mcp-server"));
  // npm reads the project's .npmrc (the MCP client passes npx no environment of ours): no network at all.
  writeFileSync(join(dir, ".npmrc"), "offline=true\nupdate-notifier=false\n");

  writeFileSync(
    join(dir, "terrarium.config.yaml"),
    `providers:\n  openai:\n    baseURL: ${server.baseURL}\nroles:\n  default: ${MODEL}\ncache:\n  mode: off\nretry:\n  retries: 0\n`,
  );
  // README's reproduction writes this file with printf; here it points at the scripted server too.
  writeFileSync(
    join(dir, "gecko.config.yaml"),
    `providers:\n  openai:\n    baseURL: ${server.baseURL}\nroles:\n  default: openai:gpt-4o\n  validator: openai:gpt-4.1-nano\ncache:\n  mode: off\nretry:\n  retries: 0\n`,
  );
}

/**
 * A stand-in for an installed `bfcl_eval` package (README's "Reproduce the paper's BFCL results" reads
 * `$BFCL/data` and `$BFCL/eval_checker/multi_turn_eval/func_source_code`): BFCL v4 file names, two items
 * per category made from the vendored v3 subset, and the tiny BFCL-style multi-turn fixture with its own
 * backends in place of BFCL's.
 */
function buildBfclPackage(pkg: string): void {
  const data = join(pkg, "data");
  mkdirSync(join(data, "possible_answer"), { recursive: true });
  const v3 = (category: string, answers = false) =>
    jsonLines(
      readFileSync(
        join(ROOT, "test/fixtures/bfcl", ...(answers ? ["possible_answer"] : []), `BFCL_v3_${category}.json`),
        "utf8",
      ),
    ).slice(0, 2);
  const write = (category: string, from: string, withAnswers: boolean) => {
    const rename = (record: Record<string, any>) => ({ ...record, id: record.id.replace(from, category) });
    writeFileSync(join(data, `BFCL_v4_${category}.json`), jsonl(v3(from).map(rename)));
    if (withAnswers)
      writeFileSync(
        join(data, "possible_answer", `BFCL_v4_${category}.json`),
        jsonl(v3(from, true).map(rename)),
      );
  };
  write("simple_python", "simple", true);
  write("parallel", "parallel", true);
  write("multiple", "multiple", true);
  write("live_simple", "simple", true);
  write("live_multiple", "multiple", true);
  write("irrelevance", "simple", false);
  write("live_irrelevance", "simple", false);
  const multiTurn = join(ROOT, "test/fixtures/bfcl-multi-turn");
  cpSync(join(multiTurn, "BFCL_v3_multi_turn_base.json"), join(data, "BFCL_v4_multi_turn_base.json"));
  cpSync(
    join(multiTurn, "possible_answer", "BFCL_v3_multi_turn_base.json"),
    join(data, "possible_answer", "BFCL_v4_multi_turn_base.json"),
  );
  cpSync(join(multiTurn, "multi_turn_func_doc"), join(data, "multi_turn_func_doc"), { recursive: true });
  mkdirSync(join(pkg, "eval_checker", "multi_turn_eval"), { recursive: true });
  symlinkSync(join(multiTurn, "backends"), join(pkg, "eval_checker", "multi_turn_eval", "func_source_code"));
}

/**
 * Shell variables the examples use, as the test provides them (`AGENT_URL`, an agent's chat-completions
 * URL, is the scripted server once it runs: examples are parsed again inside each test).
 */
const EXAMPLE_VARIABLES: Record<string, string> = { BFCL: "bfcl-package" };

/** A fresh working directory for one example, with what its command reads. */
async function prepare(args: string[]): Promise<string> {
  const root = join(base, String(++runs));
  const cwd = join(root, "work");
  cpSync(seedDir, cwd, { recursive: true, verbatimSymlinks: true });
  symlinkSync(join(ROOT, "test"), join(cwd, "test"));
  symlinkSync(join(ROOT, "examples"), join(cwd, "examples"));
  mkdirSync(join(root, "shared", "datasets"), { recursive: true });
  symlinkSync(join(ROOT, "test", "fixtures", "bfcl"), join(root, "shared", "datasets", "bfcl"));

  const command = commandOf(args).join(" ");
  // calls.jsonl means a validate dataset to `validate` and calls of the named environment to `env run`.
  if (command === "validate") writeFileSync(join(cwd, "calls.jsonl"), jsonl(VALIDATE_CALLS));
  if (command === "env run") {
    const calls = ENV_CALLS[args[2] as string];
    if (!calls) throw new Error(`no calls prepared for the environment ${args[2]}`);
    writeFileSync(join(cwd, "calls.jsonl"), jsonl(calls));
  }
  if (command === "users report" || command === "users compare") {
    // A users run folder is what `users run` writes; made here with the offline rule-based agent.
    for (const dir of args.slice(2).filter((arg) => !arg.startsWith("-") && !arg.endsWith(".html"))) {
      const made = await inDirectory(cwd, () =>
        cli([
          "users",
          "run",
          "--scenarios",
          "examples/users/scenarios",
          "--agent",
          "module:examples/users/rule-agent.mjs#reply",
          "--user-model",
          MODEL,
          "--judge-model",
          MODEL,
          "--out",
          dir,
        ]),
      );
      if (made.code !== 0) throw new Error(`preparing ${dir} failed: ${made.stderr}`);
    }
  }
  if (command === "envsim report") {
    // results/ is what `envsim eval` writes; made here with the exact code simulator.
    const made = await inDirectory(cwd, () =>
      cli(["envsim", "eval", "--bench", "bench.jsonl", "--simulator", "code", "--out", "results/"]),
    );
    if (made.code !== 0) throw new Error(`preparing results/ failed: ${made.stderr}`);
  }
  return cwd;
}

async function inDirectory<T>(dir: string, run: () => Promise<T>): Promise<T> {
  const previous = process.cwd();
  process.chdir(dir);
  try {
    return await run();
  } finally {
    process.chdir(previous);
  }
}

beforeAll(async () => {
  server = await startScriptedLlmServer([], { respond });
  EXAMPLE_VARIABLES.AGENT_URL = server.baseURL;
  base = mkdtempSync(join(tmpdir(), "terrarium-examples-"));
  seedDir = join(base, "seed");
  mkdirSync(seedDir);
  await buildSeed(seedDir);
}, 60_000);

// Removing every example's working directory (copies of the seed, run folders, screenshots) can take
// longer than the default hook timeout on a busy machine.
afterAll(async () => {
  await server?.close();
  if (base) rmSync(base, { recursive: true, force: true });
}, 120_000);

// ---------------------------------------------------------------------------------------------------------
// Checking what an example produced

function optionValues(args: string[], names: string[]): string[] {
  const values: string[] = [];
  args.forEach((arg, i) => {
    if (names.includes(arg) && args[i + 1] !== undefined) values.push(args[i + 1] as string);
  });
  return values;
}

/** Every file or folder the example says it writes exists and holds what its extension promises. */
function checkWritten(cwd: string, path: string): void {
  const file = join(cwd, path);
  expect(existsSync(file), `${path} was not written`).toBe(true);
  if (statSync(file).isDirectory()) {
    expect(readdirSync(file).length, `${path} is empty`).toBeGreaterThan(0);
    return;
  }
  const text = readFileSync(file, "utf8");
  expect(text.trim(), `${path} is empty`).not.toBe("");
  if (/\.jsonl$/.test(path)) {
    const records = jsonLines(text);
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) expect(typeof record).toBe("object");
  } else if (/\.json$/.test(path)) JSON.parse(text);
  else if (/\.html$/.test(path)) expect(text).toMatch(/<html/i);
}

function checkRun(args: string[], run: CliRun, cwd: string, redirect: string | undefined): void {
  const command = commandOf(args).join(" ");
  const written = [...optionValues(args, ["--out", "--holdout-out"]), ...(redirect ? [redirect] : [])];
  for (const path of written) checkWritten(cwd, path);
  if (written.length === 0) expect(run.stdout.trim(), "nothing on stdout").not.toBe("");
  const stdoutOrFile = redirect ? readFileSync(join(cwd, redirect), "utf8") : run.stdout;
  const outFile = optionValues(args, ["--out"])[0];

  switch (command) {
    case "tools list":
      if (args.includes("--json")) expect(JSON.parse(stdoutOrFile).tools.length).toBeGreaterThan(0);
      else expect(stdoutOrFile).toMatch(/│ tool /);
      expect(run.stderr).toMatch(/\d+ tools?/);
      break;
    case "tools export":
      expect(JSON.parse(stdoutOrFile)).toMatchObject({ openapi: "3.1.0" });
      expect(Object.keys(JSON.parse(stdoutOrFile).paths).length).toBeGreaterThan(0);
      break;
    case "tools convert": {
      const document = JSON.parse(readFileSync(join(cwd, outFile ?? ""), "utf8"));
      expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(["/get_price", "/place_order"]));
      break;
    }
    case "validate": {
      const records = jsonLines(outFile ? readFileSync(join(cwd, outFile), "utf8") : run.stdout);
      expect(records.length).toBeGreaterThan(0);
      for (const record of records) expect(record.results ?? record.error).toBeDefined();
      // The datasets made here hold valid calls only; examples/dataset-check shows invalid ones on purpose.
      if (!optionValues(args, ["--dataset"])[0]?.startsWith("examples/")) {
        for (const record of records) {
          expect(record.error).toBeUndefined();
          for (const result of record.results) expect(result.valid, JSON.stringify(result)).toBe(true);
        }
      }
      break;
    }
    case "models check":
      if (args.includes("--json")) expect(JSON.parse(run.stdout)).toMatchObject({ ok: true });
      else expect(run.stdout).toMatch(/structured\s+native/);
      break;
    case "models list":
      expect(run.stdout).toMatch(/terrarium\.config\.yaml/);
      break;
    case "env list":
      if (args.includes("--json")) {
        const listed: Array<{ name: string; kind: string }> = JSON.parse(run.stdout).environments;
        expect(listed).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ name: "bank" }),
            expect.objectContaining({ name: "notes" }), // ./my-env.ts
            expect.objectContaining({ name: "warehouse", kind: "python" }), // envs/warehouse.yaml
          ]),
        );
      } else expect(run.stdout).toMatch(/bank/);
      break;
    case "env run": {
      const transitions = jsonLines(outFile ? readFileSync(join(cwd, outFile), "utf8") : stdoutOrFile);
      expect(transitions.length).toBe(2);
      for (const transition of transitions)
        expect(transition, JSON.stringify(transition)).toMatchObject({ success: true });
      break;
    }
    case "bench bfcl run":
      expect(run.stdout).toMatch(/\d+ items;/);
      break;
    case "bench bfcl score":
      expect(run.stdout).toMatch(/overall/);
      break;
    case "gats":
      if (!args.includes("--dataset")) expect(run.stdout).toMatch(/^success;/m);
      break;
    case "envsim eval":
      expect(existsSync(join(cwd, outFile ?? "", "summary.json"))).toBe(true);
      break;
    case "users run": {
      const summary = JSON.parse(readFileSync(join(cwd, outFile ?? "", "summary.json"), "utf8"));
      expect(summary).toMatchObject({ schemaVersion: 1, kind: "terrarium.users.summary" });
      expect(summary.runs.total).toBeGreaterThan(0);
      expect(readFileSync(join(cwd, outFile ?? "", "report.html"), "utf8")).toMatch(/<html/i);
      expect(run.stdout).toMatch(/TDE/);
      break;
    }
    case "users test": {
      // Every test of the examples passes, into --out (or the default folder), with JUnit when asked.
      const folder = join(cwd, outFile ?? ".terrarium/test-results");
      const summary = JSON.parse(readFileSync(join(folder, "summary.json"), "utf8"));
      expect(summary.tests.total).toBeGreaterThan(0);
      expect(summary.tests.passed).toBe(summary.tests.total);
      expect(run.stdout).toMatch(/^PASS /m);
      const junit = optionValues(args, ["--junit"])[0];
      if (junit) expect(readFileSync(join(cwd, junit), "utf8")).toMatch(/<testsuites [^>]*failures="0"/);
      break;
    }
    case "users report":
      expect(readFileSync(join(cwd, args[2] ?? "", "report.html"), "utf8")).toMatch(/<html/i);
      expect(run.stdout).toMatch(/TDE/);
      break;
    case "users compare":
      expect(run.stdout).toMatch(/TDE/);
      break;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Long-running commands

function spawnCli(args: string[], cwd: string): ChildProcess {
  return spawn(process.execPath, ["--import", TSX_LOADER, CLI_SOURCE, ...args], {
    cwd,
    stdio: ["ignore", "ignore", "pipe"],
  });
}

/** The simulator a `--policy` (`read=proxy,write=llm`, `<tool>=schema`) picks for a tool, if it names one. */
function policySimulator(args: string[], tool: { name: string; effect?: string }): string | undefined {
  const entries = (optionValues(args, ["--policy"])[0] ?? "").split(",").map((part) => part.split("="));
  const lookup = new Map(entries.map(([key, value]) => [key?.trim(), value?.trim()]));
  return lookup.get(tool.name) ?? lookup.get(tool.effect ?? "unknown");
}

/**
 * `serve` on port 0 until it says it serves; then a session and one call over HTTP, to a tool that is not
 * proxied (a proxied call would go to the real API named by `--proxy`, on the network).
 */
/**
 * A server command with `--port 0` (replacing a given port), as a child process, and the URL it prints
 * on stderr (`pattern`'s first group, without a trailing slash) once it serves.
 */
async function startListening(
  args: string[],
  cwd: string,
  pattern: RegExp,
): Promise<{ child: ChildProcess; url: string }> {
  const portAt = args.indexOf("--port");
  const served =
    portAt >= 0 ? args.map((arg, i) => (i === portAt + 1 ? "0" : arg)) : [...args, "--port", "0"];
  const child = spawnCli(served, cwd);
  const url = await new Promise<string>((resolve, reject) => {
    let text = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      const match = pattern.exec(text);
      if (match) resolve((match[1] as string).replace(/\/$/, ""));
    });
    child.on("exit", (code) =>
      reject(new Error(`${args.join(" ")} exited (${code}) before serving:\n${text}`)),
    );
  }).catch(async (error) => {
    await stopChild(child);
    throw error;
  });
  return { child, url };
}

/** SIGTERM, and wait for the exit. */
async function stopChild(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  if (child.exitCode === null && child.signalCode === null) {
    child.kill("SIGTERM");
    await exited;
  }
}

async function runServe(args: string[], cwd: string): Promise<void> {
  const { child, url } = await startListening(args, cwd, /terrarium serving \d+ tools at (http:\/\/\S+)/);
  try {
    const token = optionValues(args, ["--token"])[0];
    const headers = {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    };
    expect((await fetch(`${url}/health`)).status).toBe(200);
    const session = (await (
      await fetch(`${url}/sessions`, { method: "POST", headers, body: "{}" })
    ).json()) as { id: string };
    expect(session.id).toEqual(expect.any(String));
    const { tools } = (await (await fetch(`${url}/tools`, { headers })).json()) as {
      tools: Array<{ name: string; effect?: string; inputSchema: JsonSchema }>;
    };
    const tool = tools.find((candidate) => policySimulator(args, candidate) !== "proxy");
    if (!tool) throw new Error("every tool is proxied: no call can be made without the network");
    const result = (await (
      await fetch(`${url}/sessions/${session.id}/calls`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: tool.name, arguments: answerFor(tool.inputSchema, tool.name) }),
      })
    ).json()) as Record<string, any>;
    expect(result, JSON.stringify(result)).toMatchObject({
      status: expect.stringMatching(/^(ok|tool_error)$/),
      simulator: expect.any(String),
    });
    // A model named with --model simulated the call, through the scripted server.
    const model = optionValues(args, ["--model"])[0];
    if (model && policySimulator(args, tool) !== "schema" && result.simulator !== "code")
      expect(result, JSON.stringify(result)).toMatchObject({ simulator: "llm", usage: { model } });
  } finally {
    await stopChild(child);
  }
}

/** `users demo` on port 0 until it says where the shop is; then a page and one chat turn, then SIGTERM. */
async function runDemo(args: string[], cwd: string): Promise<void> {
  const { child, url } = await startListening(args, cwd, /terrarium demo shop at (http:\/\/\S+)/);
  try {
    expect((await fetch(`${url}/`)).status).toBe(200);
    const chat = await fetch(`${url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "Hi, I want to return an item." }),
    });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as { reply: string }).reply).toEqual(expect.any(String));
  } finally {
    await stopChild(child);
  }
}

/** `mcp` as an MCP client sees it: it connects over stdio and lists the tools. */
async function runMcp(args: string[], cwd: string): Promise<void> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", TSX_LOADER, CLI_SOURCE, ...args],
    cwd,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: "examples-test", version: "1.0.0" });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    expect(stderr).toMatch(/terrarium mcp: \d+ tools, session /);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${stderr}`);
  } finally {
    await client.close();
  }
}

// ---------------------------------------------------------------------------------------------------------
// The examples

const LONG_RUNNING = new Set(["serve", "mcp", "users demo"]);

/** The long-running command of an example (`serve`, `mcp`, `users demo`), if it is one. */
function longRunning(args: string[]): string | undefined {
  const words = commandOf(args);
  return [words.join(" "), words[0] ?? ""].find((name) => LONG_RUNNING.has(name));
}

/** Splits an example into its arguments (without `terrarium`) and the file of a `> file` redirection. */
function parseExample(line: string): { args: string[]; redirect?: string } {
  const words = shellWords(line)
    .slice(1)
    .map((word) => word.replace(/\$([A-Z_]+)/g, (text, name: string) => EXAMPLE_VARIABLES[name] ?? text));
  const at = words.indexOf(">");
  return at >= 0 ? { args: words.slice(0, at), redirect: words[at + 1] as string } : { args: words };
}

/**
 * Sizes of the examples that are too big for a unit test, shrunk; the flags are the example's. `envsim
 * collect --env all --trajectories 40 --steps 60` is 31,200 transitions, 2,400 of them from tau2-retail at
 * about 2.4 MB each.
 */
function scaled(args: string[]): string[] {
  if (commandOf(args).join(" ") !== "envsim collect") return args;
  const limits: Record<string, number> = { "--trajectories": 2, "--steps": 10 };
  return args.map((arg, i) => {
    const limit = limits[args[i - 1] as string];
    return limit !== undefined ? String(Math.min(Number(arg), limit)) : arg;
  });
}

/** Whether an example drives Chromium: `users observe`, and `users run` with a browser agent or UI mode. */
function needsBrowser(args: string[]): boolean {
  const command = commandOf(args).join(" ");
  if (command === "users observe") return true;
  if (command !== "users run") return false;
  const modes = optionValues(args, ["--mode"]);
  return (
    modes.some((mode) => mode !== "api") ||
    optionValues(args, ["--agent"]).some((a) => a.startsWith("browser:"))
  );
}

// Without Chromium the browser examples are skipped, with one line saying so (CI requires the browser).
let chromium: string | undefined | null = null;
const browserAvailable = () => {
  if (chromium === null)
    chromium = need("chromium", "the browser examples (users observe, users run in a browser)");
  return chromium !== undefined;
};

// A known bug's example must still fail, and says which bug in its name.
const testFor = (example: Example) => {
  if (needsBrowser(parseExample(example.line).args) && !browserAvailable()) return it.skip;
  return KNOWN_BUGS.has(example.line) ? it.fails : it;
};
const named = (example: Example) =>
  `${example.line}  [${example.sources.join("; ")}]` +
  (KNOWN_BUGS.has(example.line) ? `  (known bug: ${KNOWN_BUGS.get(example.line)})` : "");

describe("examples in --help and README.md", () => {
  it("are found in both places", () => {
    expect(helpExamples).toBeGreaterThan(20);
    expect(readmeExamples).toBeGreaterThan(15);
    expect([...KNOWN_BUGS.keys()].filter((line) => !examples.has(line))).toEqual([]);
  });

  for (const example of examples.values()) {
    const { args: written, redirect } = parseExample(example.line);
    if (longRunning(written)) continue;
    testFor(example)(
      named(example),
      async () => {
        const args = scaled(parseExample(example.line).args);
        const cwd = await prepare(args);
        const requestsBefore = server.requests.length;
        const run = await inDirectory(cwd, () => cli(args));
        if (redirect) writeFileSync(join(cwd, redirect), run.stdout);
        expect(run.code, `exit code; stdout:\n${run.stdout.slice(-3000)}\nstderr:\n${run.stderr}`).toBe(0);
        checkRun(args, run, cwd, redirect);
        // A model named in the line was answered by the scripted server.
        if (args.some((arg) => arg.startsWith("openai:")))
          expect(server.requests.length).toBeGreaterThan(requestsBefore);
      },
      60_000,
    );
  }
});

// Each in its own process, so they can run at the same time.
describe.concurrent("long-running examples in --help and README.md (serve, mcp)", () => {
  for (const example of examples.values()) {
    const { args } = parseExample(example.line);
    const command = longRunning(args);
    if (!command) continue;
    testFor(example)(
      named(example),
      async () => {
        const cwd = await prepare(args);
        if (command === "serve") await runServe(args, cwd);
        else if (command === "users demo") await runDemo(args, cwd);
        else await runMcp(args, cwd);
      },
      60_000,
    );
  }
});
