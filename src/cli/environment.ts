import { readFileSync } from "node:fs";
import type { Command, Option } from "commander";
import { TerrariumError } from "../core/errors.js";
import { collect } from "./io.js";

/** Prefix of the environment variables that stand in for flags (`--drain-timeout` -> TERRARIUM_DRAIN_TIMEOUT). */
export const ENVIRONMENT_PREFIX = "TERRARIUM_";

/** `drainTimeout` -> `TERRARIUM_DRAIN_TIMEOUT`. */
export function environmentName(option: Option): string {
  return (
    ENVIRONMENT_PREFIX +
    option
      .attributeName()
      .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
      .toUpperCase()
  );
}

const TRUE_WORDS = new Set(["1", "true", "yes", "on"]);
const FALSE_WORDS = new Set(["0", "false", "no", "off", ""]);

/**
 * Lets every flag of a long-running command (serve, worker) come from an environment variable, the way
 * containers are configured: `--db` from TERRARIUM_DB, `--drain-timeout` from TERRARIUM_DRAIN_TIMEOUT. A flag
 * on the command line wins over the variable, the variable over the default. Values go through the flag's own
 * parser, so a bad value is refused before anything starts, with the variable's name in the message.
 * Repeatable flags (`--token`) take a comma-separated list; switches take 1/0, true/false, yes/no, on/off.
 * Commander's own `.env()` is not used because it turns a switch on for any value, `0` included.
 */
export function flagsFromEnvironment(command: Command, env: NodeJS.ProcessEnv = process.env): Command {
  const parent = command.parent;
  if (!parent) throw new Error("flagsFromEnvironment needs a registered subcommand");
  const options = command.options.filter((option) => option.long && option.long !== "--help");
  for (const option of options) option.description += ` [env ${environmentName(option)}]`;
  // Applied before the subcommand parses its arguments (so a required flag may come from the environment);
  // the command line then overrides each value it sets, and adds to a repeatable one.
  parent.hook("preSubcommand", (_parent, subcommand) => {
    if (subcommand !== command) return;
    for (const option of options) {
      const name = environmentName(option);
      const raw = env[name];
      if (raw === undefined) continue;
      const key = option.attributeName();
      const where = `${name}=${JSON.stringify(raw.length > 60 ? `${raw.slice(0, 60)}…` : raw)} (for ${option.long})`;
      const value = fromText(option, raw, command.getOptionValue(key), where);
      if (value !== undefined) command.setOptionValueWithSource(key, value, "env");
    }
  });
  return command;
}

function fromText(option: Option, raw: string, fallback: unknown, where: string): unknown {
  if (option.isBoolean()) {
    const word = raw.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return !option.negate;
    if (FALSE_WORDS.has(word)) return undefined;
    throw new TerrariumError("INVALID_INPUT", `${where}: expected 1/0, true/false, yes/no or on/off`);
  }
  const parse = option.parseArg as ((value: string, previous: unknown) => unknown) | undefined;
  try {
    if (!parse) return raw;
    // A repeatable flag collects: each comma-separated entry is one occurrence.
    if (parse === collect) {
      let collected: unknown;
      for (const entry of raw.split(",").map((part) => part.trim()))
        if (entry !== "") collected = parse(entry, collected);
      return collected;
    }
    const value = parse(raw.trim(), fallback);
    // Some commands' parsers leave NaN for the command's own range check, which names only the flag.
    if (typeof value === "number" && Number.isNaN(value)) throw new Error("not a number");
    return value;
  } catch (error) {
    throw new TerrariumError("INVALID_INPUT", `${where}: ${(error as Error).message}`);
  }
}

/**
 * Secrets from a file instead of the command line, where `ps` shows them: one per line; blank lines and
 * lines starting with `#` are skipped; surrounding spaces are dropped. An empty file is refused (a server
 * started with no tokens would be open to everyone, the opposite of what the file asked for).
 */
export function readSecretsFile(file: string, flag: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    throw new TerrariumError("FILE_UNREADABLE", `${flag} ${file}: ${reason}`, { where: { file } });
  }
  const secrets = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  if (secrets.length === 0)
    throw new TerrariumError("INVALID_INPUT", `${flag} ${file}: the file holds no entries`, {
      where: { file },
    });
  return secrets;
}

/** A password from a file: its first line as it is (only the line break dropped); an empty one is refused. */
export function readPasswordFile(file: string, flag: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw unreadable(file, flag, error);
  }
  const password = text.split(/\r?\n/)[0] ?? "";
  if (password === "")
    throw new TerrariumError("INVALID_INPUT", `${flag} ${file}: the first line is empty`, {
      where: { file },
    });
  return password;
}

function unreadable(file: string, flag: string, error: unknown): TerrariumError {
  const reason =
    (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
  return new TerrariumError("FILE_UNREADABLE", `${flag} ${file}: ${reason}`, { where: { file } });
}
