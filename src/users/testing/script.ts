/**
 * A test's `script:` checked and normalised step by step, each problem reported at its step's JSON Pointer
 * (the scenario loader turns that into a line of the file).
 */
import { distance } from "fastest-levenshtein";
import { escapeToken, parsePointer } from "../../core/json-pointer.js";
import { SCENARIO_LIMITS } from "../scenario/schema.js";
import type { ScriptStep, ScriptStepKind } from "./types.js";

export const SCRIPT_STEP_KINDS: readonly ScriptStepKind[] = [
  "user",
  "simulate",
  "expect_reply",
  "expect_tool_call",
  "expect_no_tool_call",
  "expect_state",
  "judge",
  "stop",
];

/** Limits of one step. */
export const SCRIPT_LIMITS = {
  /** Characters of a regular expression in `expect_reply`. */
  maxPatternChars: 2_000,
  /** Criteria of one `judge` step. */
  maxCriteria: 32,
  /** Characters of a tool name. */
  maxToolNameChars: 200,
} as const;

export interface ScriptIssue {
  pointer: string;
  message: string;
}

/** What the rest of the scenario tells the parser (whether the simulated user can be played). */
export interface ScriptContext {
  hasProfile: boolean;
  hasGoal: boolean;
}

/** The steps of `script` normalised, or every problem found. */
export function parseScript(
  raw: readonly unknown[],
  base: string,
  context: ScriptContext,
): { steps: ScriptStep[]; issues: ScriptIssue[] } {
  const steps: ScriptStep[] = [];
  const issues: ScriptIssue[] = [];
  let stopAt: number | undefined;
  raw.forEach((item, index) => {
    const at = `${base}/script/${index}`;
    const label = `script[${index}]`;
    const problem = (message: string, pointer = at) =>
      issues.push({ pointer, message: `${label}${message}` });
    const step = parseStep(item, at, problem);
    if (!step) return;
    const kind = stepKind(step);
    if ((kind === "user" || kind === "simulate") && stopAt !== undefined)
      problem(
        `: a ${kind} step after the stop at script[${stopAt}] (nothing is said after the conversation ends)`,
      );
    if (kind === "stop" && stopAt === undefined) stopAt = index;
    if (kind === "simulate" && (!context.hasProfile || !context.hasGoal))
      problem(
        `: simulate needs the scenario's ${[!context.hasProfile && "profile", !context.hasGoal && "goal"].filter(Boolean).join(" and ")} (the simulated user plays them)`,
      );
    steps.push(step);
  });
  return { steps, issues };
}

/** The kind of a normalised step (its one key). */
export function stepKind(step: ScriptStep): ScriptStepKind {
  return Object.keys(step)[0] as ScriptStepKind;
}

function parseStep(
  item: unknown,
  at: string,
  problem: (message: string, pointer?: string) => void,
): ScriptStep | undefined {
  if (item === "stop") return { stop: true };
  if (typeof item === "string") {
    const known = (SCRIPT_STEP_KINDS as readonly string[]).includes(item);
    problem(
      known
        ? `: the ${item} step needs a value (write "${item}: …")`
        : `: unknown step "${clip(item)}"${hint(item)}; a step is "stop" or an object with one of the keys ${SCRIPT_STEP_KINDS.join(", ")}`,
    );
    return undefined;
  }
  if (item === null || typeof item !== "object" || Array.isArray(item)) {
    problem(`: a step is "stop" or an object with one of the keys ${SCRIPT_STEP_KINDS.join(", ")}`);
    return undefined;
  }
  const keys = Object.keys(item);
  if (keys.length !== 1) {
    problem(
      keys.length === 0
        ? `: an empty step; use one of ${SCRIPT_STEP_KINDS.join(", ")}`
        : `: a step has exactly one key, not ${keys.length} (${keys.join(", ")}); write each as its own step`,
    );
    return undefined;
  }
  const key = keys[0] as string;
  const value = (item as Record<string, unknown>)[key];
  const here = `${at}/${escapeToken(key)}`;
  const bad = (message: string, pointer = here) => {
    problem(`.${key}${message}`, pointer);
    return undefined;
  };
  switch (key) {
    case "user": {
      if (typeof value !== "string" || value.trim() === "")
        return bad(": the user's message must be non-empty text");
      if (value.length > SCENARIO_LIMITS.maxTextChars)
        return bad(`: the message is longer than ${SCENARIO_LIMITS.maxTextChars} characters`);
      return { user: value };
    }
    case "simulate": {
      if (value === "until_stop") return { simulate: "until_stop" };
      if (
        typeof value !== "number" ||
        !Number.isInteger(value) ||
        value < 1 ||
        value > SCENARIO_LIMITS.maxTurns
      )
        return bad(`: a number of turns (1-${SCENARIO_LIMITS.maxTurns}) or until_stop`);
      return { simulate: value };
    }
    case "expect_reply":
      return parseExpectReply(value, here, bad);
    case "expect_tool_call": {
      if (typeof value === "string") {
        const name = toolName(value);
        return name ? { expect_tool_call: { name } } : bad(": the tool name must be non-empty text");
      }
      if (!isRecord(value)) return bad(": {name, arguments?} or the tool's name");
      const extra = Object.keys(value).filter((k) => k !== "name" && k !== "arguments");
      if (extra.length > 0)
        return bad(
          `: unknown key "${extra[0]}" (the keys are name and arguments)`,
          `${here}/${escapeToken(extra[0] as string)}`,
        );
      const name = toolName(value.name);
      if (!name) return bad(".name: the tool name must be non-empty text", `${here}/name`);
      return Object.hasOwn(value, "arguments")
        ? { expect_tool_call: { name, arguments: value.arguments } }
        : { expect_tool_call: { name } };
    }
    case "expect_no_tool_call": {
      const name = toolName(value);
      return name ? { expect_no_tool_call: name } : bad(": the tool name must be non-empty text");
    }
    case "expect_state": {
      if (!isRecord(value)) return bad(": {pointer, equals}");
      const extra = Object.keys(value).filter((k) => k !== "pointer" && k !== "equals");
      if (extra.length > 0)
        return bad(
          `: unknown key "${extra[0]}" (the keys are pointer and equals)`,
          `${here}/${escapeToken(extra[0] as string)}`,
        );
      if (typeof value.pointer !== "string")
        return bad(
          '.pointer: a JSON Pointer such as "/orders/#W001/status" (or "" for the whole state)',
          `${here}/pointer`,
        );
      try {
        parsePointer(value.pointer);
      } catch (error) {
        return bad(`.pointer: ${(error as Error).message}`, `${here}/pointer`);
      }
      if (!Object.hasOwn(value, "equals")) return bad(': missing required key "equals"');
      return { expect_state: { pointer: value.pointer, equals: value.equals } };
    }
    case "judge": {
      const criteria = typeof value === "string" ? [value] : value;
      if (!Array.isArray(criteria) || criteria.length === 0)
        return bad(": a list of criteria (each a sentence the conversation is judged on)");
      if (criteria.length > SCRIPT_LIMITS.maxCriteria)
        return bad(`: more than ${SCRIPT_LIMITS.maxCriteria} criteria`);
      const texts: string[] = [];
      for (const [index, criterion] of criteria.entries()) {
        if (typeof criterion !== "string" || criterion.trim() === "")
          return bad(
            `[${index}]: a criterion must be non-empty text`,
            Array.isArray(value) ? `${here}/${index}` : here,
          );
        if (criterion.length > SCENARIO_LIMITS.maxTextChars)
          return bad(`[${index}]: longer than ${SCENARIO_LIMITS.maxTextChars} characters`);
        texts.push(criterion.trim());
      }
      return { judge: texts };
    }
    case "stop":
      if (value === null || value === true) return { stop: true };
      return bad(': write "- stop" (stop takes no value)');
    default:
      problem(
        `: unknown step kind "${clip(key)}"${hint(key)}; the kinds are ${SCRIPT_STEP_KINDS.join(", ")}`,
        here,
      );
      return undefined;
  }
}

function parseExpectReply(
  value: unknown,
  here: string,
  bad: (message: string, pointer?: string) => undefined,
): ScriptStep | undefined {
  if (!isRecord(value)) return bad(": {matches: <regex>} or {not_matches: <regex>} (and flags?)");
  const extra = Object.keys(value).filter((k) => !["matches", "not_matches", "flags"].includes(k));
  if (extra.length > 0)
    return bad(
      `: unknown key "${extra[0]}" (the keys are matches, not_matches and flags)`,
      `${here}/${escapeToken(extra[0] as string)}`,
    );
  const which = ["matches", "not_matches"].filter((k) => Object.hasOwn(value, k));
  if (which.length !== 1) return bad(": exactly one of matches and not_matches");
  const key = which[0] as "matches" | "not_matches";
  const pattern = value[key];
  const flags = value.flags ?? "";
  if (typeof flags !== "string" || !/^[imsu]*$/.test(flags) || new Set(flags).size !== flags.length)
    return bad('.flags: some of the letters i, m, s, u (e.g. "i" to ignore case)', `${here}/flags`);
  if (typeof pattern !== "string" || pattern === "")
    return bad(`.${key}: a regular expression (JavaScript syntax)`, `${here}/${key}`);
  if (pattern.length > SCRIPT_LIMITS.maxPatternChars)
    return bad(`.${key}: longer than ${SCRIPT_LIMITS.maxPatternChars} characters`, `${here}/${key}`);
  try {
    new RegExp(pattern, flags);
  } catch (error) {
    return bad(`.${key}: not a valid regular expression (${(error as Error).message})`, `${here}/${key}`);
  }
  const body = key === "matches" ? { matches: pattern } : { not_matches: pattern };
  return { expect_reply: flags ? { ...body, flags } : body };
}

function toolName(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const name = value.trim();
  return name === "" || name.length > SCRIPT_LIMITS.maxToolNameChars ? undefined : name;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

/** " (did you mean …?)" for a close step kind. */
function hint(key: string): string {
  const lower = key.toLowerCase().replace(/-/g, "_");
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const kind of SCRIPT_STEP_KINDS) {
    const d = distance(lower, kind);
    if (d < bestDistance) {
      best = kind;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(best.length / 3))
    ? ` (did you mean "${best}"?)`
    : "";
}
