import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { TerrariumError } from "../../core/errors.js";
import { formatSize } from "../../core/json-limits.js";

/** Finds bridge.py next to this module (source) or in the package's src/ (when running from dist/). */
export function bridgeScriptPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, "bridge.py"), join(here, "..", "src", "envs", "python", "bridge.py")];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found)
    throw new TerrariumError(
      "INTERNAL",
      `the Python bridge script is missing (looked in ${candidates.join(", ")})`,
    );
  return found;
}

interface Pending {
  op: string;
  resolve(reply: Record<string, unknown>): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout | undefined;
}

/** Raised when the bridge process died or was stopped during a request. */
export class BridgeDied extends Error {}

/** Raised when a request took longer than its time limit (the process was stopped to end it). */
export class BridgeTimeout extends Error {}

/** The longest protocol line read from a bridge, unless its owner says otherwise: 64 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * One long-lived `python3` process speaking JSON lines. Requests are answered in order; a request that
 * runs past its time limit kills the process (the only way to stop running Python code). After a death,
 * `alive` is false and the next request starts a fresh process with a new `generation`, so owners can
 * tell that their objects in Python are gone and rebuild them.
 */
export class PythonProcess {
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stderrTail = "";
  /** Incremented on every start, so owners can tell that their objects in Python are gone. */
  generation = 0;

  /**
   * `script` runs another program that speaks the same protocol (for example one that imports bridge.py
   * and adds operations of its own); by default, bridge.py itself.
   */
  constructor(
    private readonly python = process.env.TERRARIUM_PYTHON ?? "python3",
    private readonly script?: string,
    /**
     * The longest answer read: a longer one is never held in memory whole; the process is stopped and the
     * request fails with TOO_LARGE (the next request starts a fresh process, as after a crash).
     */
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
  ) {}

  /** The running process's id (tests use it to kill one bridge from outside). */
  get pid(): number | undefined {
    return this.alive ? this.child?.pid : undefined;
  }

  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && !this.child.killed;
  }

  start(): void {
    if (this.alive) return;
    const child = spawn(this.python, ["-u", this.script ?? bridgeScriptPath()], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, PYTHONIOENCODING: "utf-8" },
    });
    this.child = child;
    this.generation++;
    this.stderrTail = "";
    // Writing to a process that just died raises EPIPE on stdin; the exit handler reports the death.
    child.stdin.on("error", () => undefined);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-4000);
    });
    const lines = new LineReader(
      this.maxLineBytes,
      (line) => this.onLine(line),
      () => this.onOverlong(child),
    );
    child.stdout.on("data", (chunk: Buffer) => lines.push(chunk));
    child.on("error", (error) => this.failAll(new BridgeDied(`cannot run ${this.python}: ${error.message}`)));
    child.on("exit", (code, signal) => {
      // A process we already replaced (after a kill) must not fail the requests of its successor.
      if (this.child !== child) return;
      this.child = undefined;
      const tail = this.stderrTail.trim().split("\n").slice(-5).join("\n");
      this.failAll(
        new BridgeDied(`the Python bridge exited (${signal ?? `code ${code}`})${tail ? `: ${tail}` : ""}`),
      );
    });
    this.setHeld(false);
  }

  /**
   * An idle bridge must not keep Node running, but one with a request in flight must: otherwise a
   * program whose only pending work is a Python call would exit before the answer arrives.
   */
  private setHeld(held: boolean): void {
    const child = this.child;
    if (!child) return;
    const handles = [child, child.stdout, child.stderr, child.stdin] as unknown as Array<{
      ref?: () => void;
      unref?: () => void;
    }>;
    for (const handle of handles) {
      if (held) handle.ref?.();
      else handle.unref?.();
    }
  }

  /**
   * Sends one request and waits for its answer (or the time limit). With `generation`, the request is
   * refused as `BridgeDied` when that process is gone, instead of reaching a fresh one that lacks its objects.
   */
  request(
    op: string,
    payload: Record<string, unknown>,
    timeoutMs: number,
    generation?: number,
  ): Promise<Record<string, unknown>> {
    if (generation !== undefined && (!this.alive || this.generation !== generation))
      return Promise.reject(new BridgeDied("the Python bridge exited before the request"));
    this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              this.pending.delete(id);
              if (this.pending.size === 0) this.setHeld(false);
              reject(new BridgeTimeout(`${op} took longer than ${timeoutMs} ms and was stopped`));
              this.kill();
            }, timeoutMs)
          : undefined;
      this.pending.set(id, { op, resolve, reject, timer });
      if (this.pending.size === 1) this.setHeld(true);
      this.child?.stdin.write(`${JSON.stringify({ id, op, ...payload })}\n`);
    });
  }

  kill(): void {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    this.failAll(new BridgeDied("the Python bridge was stopped"));
    child.kill("SIGKILL");
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.setHeld(true); // keep Node alive until the process has gone
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.stdin.end();
      setTimeout(() => child.kill("SIGKILL"), 2000).unref();
    });
  }

  private onLine(line: string): void {
    let reply: Record<string, unknown>;
    try {
      reply = JSON.parse(line);
    } catch {
      return; // not a protocol line
    }
    const entry = this.pending.get(reply.id as number);
    if (!entry) return;
    this.pending.delete(reply.id as number);
    if (this.pending.size === 0) this.setHeld(false);
    clearTimeout(entry.timer);
    if (typeof reply.failure === "string") entry.reject(new PythonFailure(reply.failure));
    else entry.resolve(reply);
  }

  /**
   * An answer longer than maxLineBytes: it belongs to the oldest request (the bridge answers in order),
   * which fails with TOO_LARGE; the process is stopped, so the rest of the line is never read.
   */
  private onOverlong(child: ChildProcessWithoutNullStreams): void {
    if (this.child !== child) return;
    const [id, entry] = [...this.pending][0] ?? [];
    if (id !== undefined && entry) {
      this.pending.delete(id);
      clearTimeout(entry.timer);
      entry.reject(
        new TerrariumError(
          "TOO_LARGE",
          `the Python bridge's answer to ${entry.op} is longer than ${formatSize(this.maxLineBytes)}; the process was stopped`,
          { details: { limit: this.maxLineBytes } },
        ),
      );
    }
    this.kill();
  }

  private failAll(error: Error): void {
    for (const [id, entry] of this.pending) {
      clearTimeout(entry.timer);
      entry.reject(error);
      this.pending.delete(id);
    }
  }
}

/** An exception raised by the bridge itself (loading a class, building an instance), with its traceback. */
export class PythonFailure extends Error {
  constructor(readonly traceback: string) {
    super(lastLine(traceback));
  }
}

function lastLine(traceback: string): string {
  const lines = traceback.trim().split("\n");
  return lines[lines.length - 1] ?? traceback;
}

/**
 * Splits a byte stream into lines (UTF-8, newline-terminated) without ever holding more than `max` bytes of
 * one line: at the first byte past it, `overlong` is called and everything after is dropped.
 */
class LineReader {
  private parts: Buffer[] = [];
  private length = 0;
  private stopped = false;

  constructor(
    private readonly max: number,
    private readonly line: (text: string) => void,
    private readonly overlong: () => void,
  ) {}

  push(chunk: Buffer): void {
    let rest = chunk;
    while (!this.stopped) {
      const end = rest.indexOf(0x0a);
      const part = end < 0 ? rest : rest.subarray(0, end);
      if (this.length + part.length > this.max) {
        this.stopped = true;
        this.parts = [];
        this.overlong();
        return;
      }
      if (end < 0) {
        if (part.length > 0) {
          this.parts.push(part);
          this.length += part.length;
        }
        return;
      }
      const text = Buffer.concat([...this.parts, part]).toString("utf8");
      this.parts = [];
      this.length = 0;
      this.line(text);
      rest = rest.subarray(end + 1);
    }
  }
}
