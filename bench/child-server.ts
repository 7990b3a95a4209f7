import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

/**
 * The protocol of the benches' server processes: the child prints `{"port": n}` once it listens and exits
 * when its stdin closes, so a server never outlives the bench that started it.
 */
const ROOT = join(import.meta.dirname, "..");

export interface ChildServer {
  port: number;
  stop: () => Promise<void>;
}

/** Starts a server process (any language) that speaks the protocol; resolves once it listens. */
export async function spawnServer(command: string, args: string[]): Promise<ChildServer> {
  const child: ChildProcess = spawn(command, args, { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let text = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const line = text.split("\n")[0];
      if (text.includes("\n") && line) resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once("exit", (code) => reject(new Error(`${command} exited (${code}) before listening`)));
  });
  return {
    port,
    stop: async () => {
      child.stdin?.end();
      await exited;
    },
  };
}

/** A TypeScript bench child (`bench/<file>`) given its options as one JSON argument. */
export function spawnNodeServer(file: string, options: unknown): Promise<ChildServer> {
  return spawnServer(process.execPath, [
    "--import",
    "tsx",
    join(ROOT, "bench", file),
    JSON.stringify(options),
  ]);
}

/** The child's side: says its port, then closes and exits when the parent closes its stdin. */
export function serveUntilStdinEnds(port: number, close: () => Promise<unknown>): void {
  process.stdout.write(`${JSON.stringify({ port })}\n`);
  process.stdin.resume();
  process.stdin.on("end", () => {
    void close().finally(() => process.exit(0));
  });
}

/** Runs a child's main, printing a failure and exiting 1. */
export function runChild(main: () => Promise<void>): void {
  main().catch((error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    process.exit(1);
  });
}
