import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { runCli } from "../../src/cli/main.js";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process with captured output. */
export async function cli(args: string[], stdin = ""): Promise<CliRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (chunk: Buffer) => out.push(chunk));
  stderr.on("data", (chunk: Buffer) => err.push(chunk));
  const code = await runCli(args, { stdout, stderr, stdin: Readable.from([stdin]) });
  return { code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") };
}

export function jsonLines(text: string): Array<Record<string, any>> {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}

/** The CLI in a process of its own (as CI runs it): its stderr as it comes, and its exit code. */
export interface CliProcess {
  child: ChildProcess;
  stderr(): string;
  stdout(): string;
  exit: Promise<number | null>;
}

const ROOT = join(import.meta.dirname, "..", "..");

export function spawnCli(args: string[]): CliProcess {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { cwd: ROOT });
  let stderr = "";
  let stdout = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  const exit = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, stderr: () => stderr, stdout: () => stdout, exit };
}

/** Resolves when the process's stderr matches (on its data events, never by polling a clock). */
export function waitForStderr(run: CliProcess, pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (pattern.test(run.stderr())) {
        run.child.stderr?.off("data", check);
        resolve();
      }
    };
    run.child.stderr?.on("data", check);
    run.child.once("close", () => reject(new Error(`exited before ${pattern}: ${run.stderr()}`)));
    check();
  });
}
