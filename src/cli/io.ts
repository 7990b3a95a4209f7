import Table from "cli-table3";
import { InvalidArgumentError } from "commander";
import type { ToolEffect } from "../catalog/tool.js";
import { TOOL_EFFECTS } from "../catalog/tool.js";
import { TerrariumError } from "../core/errors.js";

/** Where a command writes; injected so tests can run the CLI in-process. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream;
  /** Where serve's and worker's TERRARIUM_* variables are read (default: the process's environment). */
  env?: NodeJS.ProcessEnv;
}

export const processIo: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };

/** Parses repeated `--effect name=read|write|unknown` options. */
export function parseEffectOverrides(values: string[] | undefined): Record<string, ToolEffect> | undefined {
  if (!values || values.length === 0) return undefined;
  const overrides: Record<string, ToolEffect> = {};
  for (const value of values) {
    const at = value.lastIndexOf("=");
    const name = value.slice(0, at);
    const effect = value.slice(at + 1) as ToolEffect;
    if (at <= 0 || !TOOL_EFFECTS.includes(effect)) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `--effect "${value}" must look like <tool>=${TOOL_EFFECTS.join("|")} (for example send_email=write)`,
      );
    }
    overrides[name] = effect;
  }
  return overrides;
}

/** A whole number option (digits only); anything else becomes NaN for the command's own range check. */
export function wholeNumber(value: string): number {
  return /^\d+$/.test(value) ? Number(value) : Number.NaN;
}

/** A commander parser for counts: a whole number (0, 1, 2, …), else refused before the command runs. */
export function parseWholeNumber(value: string): number {
  if (!/^\d+$/.test(value.trim()))
    throw new InvalidArgumentError(`expected a whole number (0, 1, 2, …), got "${value}"`);
  return Number(value);
}

/** A commander parser for sizes that must be at least 1 (concurrency, limits). */
export function parsePositiveInteger(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1)
    throw new InvalidArgumentError(`expected a whole number of at least 1, got "${value}"`);
  return Number(value);
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Writes a chunk and waits when the stream asks for it, so large outputs never pile up in memory. */
export function write(stream: NodeJS.WritableStream, text: string): Promise<void> | void {
  if (!stream.write(text)) return new Promise((resolve) => stream.once("drain", () => resolve()));
}

/** A table with a header rule and no rules between rows. */
export function compactTable(head: string[]): Table.Table {
  return new Table({
    head,
    style: { head: [], border: [], compact: true },
    chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" },
    wordWrap: false,
  });
}

/**
 * Progress of long work on stderr: a live line rewritten in place on a terminal, otherwise a plain line
 * at most every 10 seconds (and at the end), so logs stay readable.
 */
export class Progress {
  private finished = 0;
  private lastLine = 0;
  private readonly live: boolean;

  constructor(
    private readonly stream: NodeJS.WritableStream & { isTTY?: boolean },
    private readonly total: number,
    private readonly unit: string,
    private readonly now: () => number = Date.now,
  ) {
    this.live = stream.isTTY === true;
  }

  tick(note?: string): void {
    this.finished++;
    const line = `${this.finished}/${this.total} ${this.unit}${note ? ` (${note})` : ""}`;
    if (this.live) {
      this.stream.write(`\r${line}\x1b[K`);
      return;
    }
    const at = this.now();
    if (this.finished === this.total || at - this.lastLine >= 10_000) {
      this.lastLine = at;
      this.stream.write(`${line}\n`);
    }
  }

  done(): void {
    if (this.live && this.finished > 0) this.stream.write("\n");
  }
}

/** A commander parser for durations in seconds: a positive number (0.5, 60), else refused before any work. */
export function parsePositiveSeconds(value: string): number {
  const seconds = Number(value.trim());
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !(seconds > 0))
    throw new InvalidArgumentError(`expected a number of seconds above 0 (e.g. 60 or 0.5), got "${value}"`);
  return seconds;
}

/**
 * The first SIGINT or SIGTERM aborts the returned signal (the command stops starting work and keeps what
 * is unfinished for --resume); a second one exits at once with 130. `dispose` removes the handlers.
 */
export function interruptOnSignals(io: CliIo, what: string): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      io.stderr.write(`${name} again: exiting now\n`);
      process.exit(130);
    }
    io.stderr.write(`${name}: stopping ${what}; press Ctrl-C again to exit at once\n`);
    controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    signal: controller.signal,
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}
