import { isAbsolute, relative } from "node:path";
import type { Command } from "commander";
import pc from "picocolors";
import { TerrariumError } from "../../../core/errors.js";
import {
  collectScenarioTests,
  runScenarioTests,
  type TestRunRecord,
  type TestsSummary,
} from "../../../users/test-run/index.js";
import {
  type CliIo,
  collect,
  interruptOnSignals,
  parsePositiveInteger,
  parsePositiveSeconds,
} from "../../io.js";
import { usersModels } from "./run.js";

/** Where a test run goes when --out is not given (replaced by the next run, never anything else). */
export const DEFAULT_TEST_OUT = ".terrarium/test-results";

interface UsersTestCliOptions {
  agent: string;
  agentTools?: string[];
  httpConfig?: string;
  junit?: string;
  runs: number;
  concurrency: number;
  seed: string;
  out: string;
  userModel?: string;
  judgeModel?: string;
  agentTimeout: number;
}

/** A path relative to the working directory when it is inside it, else as it is. */
function shown(path: string, cwd: string): string {
  const inside = relative(cwd, path);
  return inside !== "" && !inside.startsWith("..") && !isAbsolute(inside) ? inside : path;
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(2)}s` : `${(ms / 1000).toFixed(1)}s`;
}

/** The line of one finished test run, and under it why it failed. */
function testLines(record: TestRunRecord, colour: boolean): string {
  const paint = (text: string, how: (s: string) => string) => (colour ? how(text) : text);
  const label =
    record.status === "passed"
      ? paint("PASS ", pc.green)
      : record.status === "failed"
        ? paint("FAIL ", pc.red)
        : paint("ERROR", pc.yellow);
  const lines = [
    `${label} ${record.name}  ${paint(`(${seconds(record.durationMs)})`, pc.dim)}  ${record.file}`,
  ];
  const step = record.failedStep;
  // The failing step says what went wrong; an error outside any step (the session did not open) says it.
  if (step) lines.push(`      step ${step.index + 1} ${step.kind}: ${step.message}`);
  else if (record.error) lines.push(`      ${record.error}`);
  return lines.map((line) => line.replace(/\n/g, "\n      ")).join("\n");
}

function summaryLine(tests: TestsSummary, seconds: string): string {
  const parts = [`${tests.passed} passed`, `${tests.failed} failed`];
  if (tests.errored > 0) parts.push(`${tests.errored} errored`);
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const noun =
    tests.runs > 1
      ? `test runs (${plural(tests.tests.length, "test")} × ${tests.runs})`
      : tests.total === 1
        ? "test"
        : "tests";
  return `${tests.total} ${noun}: ${parts.join(", ")} in ${seconds}`;
}

export function registerUsersTestCommand(
  users: Command,
  io: CliIo,
  setExitCode: (code: number) => void,
): void {
  users
    .command("test")
    .description(
      "run scenario tests (scenario files with a script: of steps and assertions) against an agent; JUnit XML for CI",
    )
    .argument(
      "<paths...>",
      "test files (.yaml, .yml, .json) and folders of them (searched with their subfolders)",
    )
    .requiredOption(
      "--agent <target>",
      "module:<file>#<export> | http:<url> | openai-compatible:<baseURL>#<model> | planner:<provider:model>",
    )
    .option(
      "--agent-tools <source>",
      "the agent's tools: an environment (tau2-retail) or tool files (repeatable); a fresh session per test, which expect_state reads; a module agent calls them with input.tools.call(name, args)",
      collect,
    )
    .option("--http-config <file>", "for http: targets: request template, response paths, session header")
    .option("--junit <file>", "write JUnit XML (one testcase per test and run) for CI")
    .option("--runs <k>", "runs of each test (pass^k over them)", parsePositiveInteger, 1)
    .option("--concurrency <n>", "tests at once", parsePositiveInteger, 2)
    .option("--seed <seed>", "seed of every run (run k of test t uses <seed>/<t>/<k>)", "0")
    .option(
      "--out <dir>",
      "run folder: run.json, transcripts/, summary.json, report.html (an earlier users test run there is replaced)",
      DEFAULT_TEST_OUT,
    )
    .option(
      "--user-model <model>",
      "the simulated user's model, for simulate: steps (default: roles.user, else roles.default)",
    )
    .option(
      "--judge-model <model>",
      "the judge's model, for judge: steps (default: roles.judge, else roles.default)",
    )
    .option(
      "--agent-timeout <seconds>",
      "longest wait for each answer of the agent; a test that waits longer errors",
      parsePositiveSeconds,
      60,
    )
    .addHelpText(
      "after",
      `
Examples:
  terrarium users test examples/users/tests --agent module:examples/users/tests/retail-agent.mjs#reply --agent-tools tau2-retail
  terrarium users test examples/users/tests/cancel-order.yaml --agent module:examples/users/tests/retail-agent.mjs#reply --agent-tools tau2-retail --junit junit.xml --out runs/cancel
  terrarium users test examples/users/tests --agent module:examples/users/tests/retail-agent.mjs#reply --agent-tools tau2-retail --runs 3 --concurrency 4 --out runs/flaky

A test is a scenario file with a script: of steps (user, simulate, expect_reply, expect_tool_call,
expect_no_tool_call, expect_state, judge, stop); see docs/users.md. A test of scripted and expect_* steps
makes no model call and needs no configuration; simulate: needs the user's model and judge: the judge's
(--user-model, --judge-model, or roles in terrarium.config.yaml). Files in a folder without a script: are
skipped with a note; a file named on the command line must be a test.

One line per test (PASS, FAIL or ERROR, its time and file, and under a failure the step, what was
expected and what happened), then a summary. Transcripts, summary.json and report.html are written to
--out as users run writes them; --junit writes JUnit XML for CI (a failure element per failed test, an
error element per test that could not run, the transcript's path in system-out).

Exit codes: 0 every test passed; 1 a test failed or errored; 2 bad input (bad flags, missing files, an
invalid test with its file and line, an unknown agent): nothing ran; 130 interrupted (no summary, report or
JUnit file is written).
`,
    )
    .action(async (paths: string[], options: UsersTestCliOptions, command: Command) => {
      const cwd = process.cwd();
      // Everything that can be refused is refused before the agent opens: the tests, then the agent.
      const loaded = collectScenarioTests(paths, cwd);
      for (const { file, reason } of loaded.skipped)
        io.stderr.write(`skipped ${shown(file, cwd)}: ${reason}\n`);
      const { models } = usersModels(command, options);
      // A model named on the command line is checked (provider, key) now; a test that needs a model
      // when none is configured errors on its own, and the others run.
      if (options.userModel) await models.backend(options.userModel);
      if (options.judgeModel) await models.backend(options.judgeModel);
      const interrupt = interruptOnSignals(io, "the tests");
      const colour = io.stdout.isTTY === true && !process.env.NO_COLOR;
      const started = performance.now();
      try {
        const result = await runScenarioTests(loaded, {
          agent: options.agent,
          ...(options.agentTools ? { agentTools: options.agentTools } : {}),
          ...(options.httpConfig ? { httpConfig: options.httpConfig } : {}),
          models,
          outDir: options.out,
          ...(options.junit ? { junit: options.junit } : {}),
          runs: options.runs,
          concurrency: options.concurrency,
          seed: options.seed,
          agentTimeoutMs: options.agentTimeout * 1000,
          cwd,
          signal: interrupt.signal,
          onTest: (record) => io.stdout.write(`${testLines(record, colour)}\n`),
        });
        const tests = result.summary.tests;
        const elapsed = seconds(performance.now() - started);
        io.stdout.write(`${summaryLine(tests, elapsed)}\n`);
        if (tests.runs > 1) {
          for (const test of tests.tests) {
            const ks = Object.entries(test.passHatK)
              .map(([k, value]) => `pass^${k} ${value.toFixed(2)}`)
              .join(", ");
            io.stdout.write(
              `  ${test.id}: ${test.passed}/${test.runs.length} passed${test.errored > 0 ? ` (${test.errored} errored)` : ""}${ks ? `; ${ks}` : ""}\n`,
            );
          }
          const overall = Object.entries(tests.passHatK).map(([k, v]) => `pass^${k} ${v.toFixed(2)}`);
          if (overall.length > 0) io.stdout.write(`  mean over tests: ${overall.join(", ")}\n`);
        }
        io.stderr.write(
          `report: ${shown(result.report, cwd)}${result.junit ? `; junit: ${shown(result.junit, cwd)}` : ""}\n`,
        );
        if (result.exitCode !== 0) setExitCode(result.exitCode);
      } catch (error) {
        if (!(error instanceof TerrariumError && error.code === "INTERRUPTED")) throw error;
        io.stderr.write(`${error.message}\n`);
        setExitCode(130);
      } finally {
        interrupt.dispose();
        await models.close();
      }
    });
}
