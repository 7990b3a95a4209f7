import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A redis-server of one test's own, on a free loopback port with its data in a temp folder and AOF on
 * (unless asked otherwise),
 * so the test may kill and restart it (never the shared Redis of `scripts/services.sh`). The port and the
 * folder stay the same over restarts: what was written before a restart is read back from the AOF.
 */
export interface PrivateRedis {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Whether the server is running now. */
  readonly running: boolean;
  /** Stops it: SIGKILL (a crash) or SHUTDOWN (a clean stop, AOF flushed). Resolves once it has exited. */
  stop(how?: "kill" | "shutdown"): Promise<void>;
  /** Starts it again on the same port and folder; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
}

/** The redis-server binary, or undefined when this machine has none. */
export function redisServerBinary(): string | undefined {
  const found = spawnSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" });
  const path = found.stdout.trim();
  return found.status === 0 && path !== "" ? path : undefined;
}

/**
 * Whether tests that run a private Redis can run: the shared Redis is configured (TERRARIUM_TEST_REDIS) and
 * redis-server is installed. Configured without the binary is a broken setup, refused loudly.
 */
export function privateRedisRunnable(sharedRedisUrl: string | undefined): boolean {
  const runnable = sharedRedisUrl !== undefined && redisServerBinary() !== undefined;
  if (sharedRedisUrl !== undefined && !runnable)
    throw new Error(
      "TERRARIUM_TEST_REDIS is set but redis-server is not installed (apt-get install -y redis-server)",
    );
  return runnable;
}

export async function startPrivateRedis(
  options: {
    /** AOF fsync policy: "always" makes a result written before a SIGKILL survive it. Default "always". */
    appendfsync?: "always" | "everysec";
    /** False: no persistence at all (a restart starts empty). Default true. */
    appendonly?: boolean;
  } = {},
): Promise<PrivateRedis> {
  const binary = redisServerBinary();
  if (!binary) throw new Error("redis-server is not installed (apt-get install -y redis-server)");
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "terrarium-redis-"));
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--appendonly",
    options.appendonly === false ? "no" : "yes",
    "--appendfsync",
    options.appendfsync ?? "always",
    "--save",
    "",
    "--daemonize",
    "no",
    "--protected-mode",
    "yes",
  ];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const proc = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
      child = proc;
      let output = "";
      exited = new Promise((done) => proc.once("exit", () => done()));
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        // Printed once the AOF is loaded and the port listens.
        if (/Ready to accept connections/.test(output)) {
          proc.stdout?.off("data", onData);
          resolve();
        }
      };
      proc.stdout?.on("data", onData);
      proc.stderr?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      proc.once("exit", (code) => {
        if (child === proc) child = undefined;
        reject(new Error(`redis-server on port ${port} exited (${code}) before it was ready:\n${output}`));
      });
    });
  const stop = async (how: "kill" | "shutdown" = "kill") => {
    const proc = child;
    if (!proc) return;
    if (how === "kill") proc.kill("SIGKILL");
    else spawnSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "shutdown"], { encoding: "utf8" });
    await exited;
    child = undefined;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    get running() {
      return child !== undefined;
    },
    stop,
    start,
    async close() {
      await stop("kill");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A port nothing listens on now (taken from the kernel, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}
