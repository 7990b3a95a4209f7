import { readFileSync, statSync } from "node:fs";
import { extname } from "node:path";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { TerrariumError } from "../core/errors.js";

/**
 * Reads a JSON, JSON Lines or YAML file into a value. JSON Lines files become an array of their lines'
 * values. Errors name the file and the line.
 */
export function readDocument(file: string): unknown {
  let text: string;
  try {
    if (statSync(file).isDirectory()) {
      throw new TerrariumError("FILE_UNREADABLE", "is a directory, not a file", { where: { file } });
    }
    text = readFileSync(file, "utf8");
  } catch (error) {
    if (error instanceof TerrariumError) throw error;
    const reason =
      (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    throw new TerrariumError("FILE_UNREADABLE", `cannot read the file (${reason})`, {
      where: { file },
      cause: error,
    });
  }
  return parseDocument(text, file);
}

export function parseDocument(text: string, file?: string): unknown {
  const extension = file ? extname(file).toLowerCase() : "";
  if (text.trim() === "") throw new TerrariumError("PARSE_ERROR", "the file is empty", { where: { file } });
  if (extension === ".yaml" || extension === ".yml") return parseYamlText(text, file);
  if (extension === ".jsonl" || extension === ".ndjson") return parseJsonLines(text, file);
  try {
    return JSON.parse(text);
  } catch (jsonError) {
    const trimmed = text.trimStart();
    // Many "*.json" files in the field (BFCL among them) are really JSON Lines.
    if ((trimmed.startsWith("{") || trimmed.startsWith("[")) && text.trim().includes("\n")) {
      try {
        return parseJsonLines(text, file);
      } catch {
        // fall through to the JSON error, which points at the first problem
      }
    }
    if (extension === ".json" || trimmed.startsWith("{") || trimmed.startsWith("[")) {
      throw jsonParseError(text, jsonError as Error, file);
    }
    return parseYamlText(text, file);
  }
}

function parseJsonLines(text: string, file?: string): unknown[] {
  const values: unknown[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    try {
      values.push(JSON.parse(line));
    } catch (error) {
      throw new TerrariumError("PARSE_ERROR", `invalid JSON on this line: ${(error as Error).message}`, {
        where: { file, line: index + 1 },
      });
    }
  });
  return values;
}

function parseYamlText(text: string, file?: string): unknown {
  try {
    return parseYaml(text, { maxAliasCount: 10_000 });
  } catch (error) {
    const line = error instanceof YAMLParseError ? error.linePos?.[0]?.line : undefined;
    const message = (error as Error).message.split("\n")[0] ?? "invalid YAML";
    throw new TerrariumError("PARSE_ERROR", `invalid YAML: ${message}`, {
      where: { file, line },
      cause: error,
    });
  }
}

function jsonParseError(text: string, error: Error, file?: string): TerrariumError {
  const position = /position (\d+)/.exec(error.message);
  const line = position ? text.slice(0, Number(position[1])).split("\n").length : undefined;
  const detail = error.message.replace(/^JSON\.parse: /, "").replace(/ in JSON at position \d+.*$/, "");
  return new TerrariumError("PARSE_ERROR", `invalid JSON: ${detail}`, { where: { file, line } });
}
