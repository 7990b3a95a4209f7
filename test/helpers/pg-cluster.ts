import { spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import pg from "pg";
import { requires } from "./requirements.js";

/**
 * A private, throwaway PostgreSQL cluster for tests that must stop and restart the database (the shared
 * one of TERRARIUM_TEST_POSTGRES is never stopped): `initdb` in a temporary folder, its own port on
 * loopback, trust authentication for the `terrarium` role, sockets in its own folder. As root, the server's
 * programs run as the `postgres` user (Postgres refuses root).
 *
 * Binaries: `$TERRARIUM_PG_BIN`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian's
 * `postgresql` package), else `initdb` and `pg_ctl` on PATH. Missing, the tests that need them are skipped
 * with one line, or fail when TERRARIUM_REQUIRE_SERVICES is set (see requirements.ts).
 */
export interface PgCluster {
  /** `postgres://terrarium@127.0.0.1:<port>/terrarium` (the database is created at start). */
  url: string;
  port: number;
  dir: string;
  /** Starts the server and resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops the server: `immediate` is a crash (no checkpoint, every connection cut), as `pg_ctl -m immediate`. */
  stop(mode?: "immediate" | "fast" | "smart"): Promise<void>;
  /** Stops (immediately), then starts again. */
  restart(): Promise<void>;
  /** Stops it if running and removes its folder. */
  destroy(): Promise<void>;
  /** The server's log so far (for failure messages). */
  log(): string;
}

/** The folder holding initdb and pg_ctl, or undefined when there is none. */
export function findPostgresBin(): string | undefined {
  const has = (dir: string) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"));
  const given = process.env.TERRARIUM_PG_BIN?.trim();
  if (given) return has(given) ? given : undefined;
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((name) => /^\d+(\.\d+)?$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) if (has(join(root, version, "bin"))) return join(root, version, "bin");
  }
  return (process.env.PATH ?? "").split(delimiter).find((dir) => dir !== "" && has(dir));
}

/**
 * Whether the PostgreSQL server programs are here, for a test file that starts its own cluster (`what`
 * names its tests): the bin folder, or one skip line and undefined, or a throw when CI requires them.
 */
export function postgresServerAvailable(what: string): string | undefined {
  const bin = findPostgresBin();
  if (bin) return bin;
  const missing =
    "PostgreSQL's server programs (initdb, pg_ctl) not found (apt-get install -y postgresql, or set TERRARIUM_PG_BIN to their folder)";
  if (requires("TERRARIUM_REQUIRE_SERVICES"))
    throw new Error(`${what}: TERRARIUM_REQUIRE_SERVICES is set but ${missing}`);
  console.warn(`skipped: ${what}: ${missing}`);
  return undefined;
}

/** Creates (initdb) and starts a cluster of its own; `destroy()` it in afterAll. */
export async function startPgCluster(bin: string): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), "terrarium-pg-"));
  const data = join(dir, "data");
  const logFile = join(dir, "server.log");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = await postgresUser();
    chownSync(dir, uid, gid);
  }
  const run = (program: string, args: string[]) => runAs(asRoot, join(bin, program), args);
  const port = await freePort();
  let running = false;
  const cluster: PgCluster = {
    url: `postgres://terrarium@127.0.0.1:${port}/terrarium`,
    port,
    dir,
    async start() {
      await run("pg_ctl", [
        "start",
        "-D",
        data,
        "-l",
        logFile,
        "-w",
        "-t",
        "120",
        "-o",
        `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c max_connections=200`,
      ]);
      running = true;
    },
    async stop(mode = "immediate") {
      await run("pg_ctl", ["stop", "-D", data, "-m", mode, "-w", "-t", "120"]);
      running = false;
    },
    async restart() {
      await cluster.stop("immediate");
      await cluster.start();
    },
    async destroy() {
      if (running) await cluster.stop("immediate").catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
  };
  try {
    await run("initdb", ["-D", data, "-U", "terrarium", "--auth=trust", "-E", "UTF8", "--no-sync"]);
    await cluster.start();
    const admin = new pg.Client({ connectionString: `postgres://terrarium@127.0.0.1:${port}/postgres` });
    await admin.connect();
    try {
      await admin.query("CREATE DATABASE terrarium");
    } finally {
      await admin.end();
    }
  } catch (error) {
    await cluster.destroy().catch(() => undefined);
    throw error;
  }
  return cluster;
}

/** Runs a program (as `postgres` when we are root), without a shell; rejects with its output on failure. */
function runAs(asRoot: boolean, program: string, args: string[]): Promise<void> {
  const [command, argv] = asRoot
    ? existsSync("/usr/sbin/runuser") || existsSync("/sbin/runuser")
      ? ["runuser", ["-u", "postgres", "--", program, ...args]]
      : ["su", ["postgres", "-s", "/bin/sh", "-c", [program, ...args].map(shellQuote).join(" ")]]
    : [program, args];
  return new Promise((resolve, reject) => {
    const child = spawn(command as string, argv as string[], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${program} ${args.join(" ")} exited with ${code}: ${output.trim()}`)),
    );
  });
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  const [, , uid, gid] = line?.split(":") ?? [];
  if (uid === undefined || gid === undefined)
    throw new Error("running as root, but there is no postgres user to run PostgreSQL as");
  return { uid: Number(uid), gid: Number(gid) };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
