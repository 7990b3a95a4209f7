import { closeSync, existsSync, openSync, readFileSync, writeSync } from "node:fs";
import type { Command } from "commander";
import { isSampleFile, readSamplesSync } from "../../../bench/envsim/sample-store.js";
import { TerrariumError } from "../../../core/errors.js";
import { loadConfig } from "../../../models/config.js";
import { Models } from "../../../models/hub.js";

/**
 * Reads a JSONL file into objects, naming the line of any bad one. A sample file of schemaVersion 2
 * (`envsim collect`'s, states stored once) is read as its samples, states rebuilt with shared structure;
 * code that can work sample by sample should use `streamSamples` (bench/envsim/sample-store.ts) instead.
 */
export function readJsonl<T>(file: string): T[] {
  if (!existsSync(file))
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the file (no such file)", { where: { file } });
  if (isSampleFile(file)) return readSamplesSync(file) as T[];
  return readFileSync(file, "utf8")
    .split("\n")
    .map((line, index) => ({ line, index }))
    .filter(({ line }) => line.trim() !== "")
    .map(({ line, index }) => {
      try {
        return JSON.parse(line) as T;
      } catch (error) {
        throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
          where: { file, line: index + 1 },
        });
      }
    });
}

/** Writes records as JSON Lines, in chunks (a large file is never built as one string). */
export function writeJsonl(file: string, records: Iterable<unknown>): void {
  const fd = openSync(file, "w");
  try {
    let chunk = "";
    for (const record of records) {
      chunk += `${JSON.stringify(record)}\n`;
      if (chunk.length >= 1 << 20) {
        writeSync(fd, chunk);
        chunk = "";
      }
    }
    if (chunk) writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
}

/** The models of a command: its configuration with `roles` set; `modelFlags` are the command's model flags. */
export function modelsFor(
  command: Command,
  roles: Record<string, string> = {},
  modelFlags?: readonly string[],
): Models {
  const configPath = command.optsWithGlobals().config as string | undefined;
  const { config } = loadConfig(configPath ? { path: configPath } : {});
  return new Models({
    config: { ...config, roles: { ...config.roles, ...roles } },
    ...(modelFlags ? { modelFlags } : {}),
  });
}
