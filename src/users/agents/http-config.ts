import { resolve } from "node:path";
import { z } from "zod";
import { readDocument } from "../../catalog/read-document.js";
import { TerrariumError } from "../../core/errors.js";
import { formatPointer, parsePointer } from "../../core/json-pointer.js";

/**
 * The http target's config (`--http-config`, YAML or JSON): how one user message becomes a request to
 * the agent and where its answer is in the response.
 *
 * Placeholders: a string of the body or of a header value may contain `{{message}}`, `{{session_id}}`,
 * `{{run_id}}` and `{{scenario_id}}`; the value is inserted as text into that string (so it always stays
 * one JSON string, whatever it holds). A body string that is exactly `{{history}}` becomes the earlier
 * messages as `[{role: "user" | "assistant", content}]`, exactly `{{messages}}` the same with the current
 * user message at the end. Header values and `terrariumToken` may also read the environment with
 * `{{env:NAME}}` (for credentials kept out of the file).
 */
export interface HttpAgentConfig {
  method?: "POST" | "PUT" | "PATCH";
  headers?: Record<string, string>;
  /** The request body template (default `{message: "{{message}}", session_id: "{{session_id}}"}`). */
  body?: unknown;
  response: {
    /** JSON Pointer (`/reply/text`) or dotted path (`reply.text`, `choices[0].message.content`). */
    message: string;
    /** Path to a list of `{name | tool, arguments, result?, status?}`. */
    toolCalls?: string;
    /** Path to `{input_tokens, output_tokens}` or `{prompt_tokens, completion_tokens}`. */
    usage?: string;
  };
  /** A header that carries the session id on every request (e.g. X-Session-ID). */
  sessionHeader?: string;
  /** The terrarium server serving the agent's tools: sessions, tool calls and final state come from it. */
  terrariumServer?: string;
  /** Bearer token for that server (when it was started with --token). */
  terrariumToken?: string;
  /** Per request, in ms (default 60 000). */
  timeoutMs?: number;
}

export const DEFAULT_HTTP_BODY = { message: "{{message}}", session_id: "{{session_id}}" };

const TEXT_PLACEHOLDERS = new Set(["message", "session_id", "run_id", "scenario_id"]);
const WHOLE_PLACEHOLDERS = new Set(["history", "messages"]);
const PLACEHOLDER = /\{\{\s*([A-Za-z_]+)(?::([A-Za-z_][A-Za-z0-9_]*))?\s*\}\}/g;
const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

const httpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}, "must be an http(s) URL");

const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, "must be a valid HTTP header name");
const headerValue = z.string().refine((value) => !/[\r\n\0]/.test(value), "must not contain line breaks");

const ConfigSchema = z
  .object({
    method: z
      .string()
      .transform((value) => value.toUpperCase())
      .pipe(z.enum(["POST", "PUT", "PATCH"]))
      .optional(),
    headers: z.record(headerName, headerValue).optional(),
    body: z.unknown().optional(),
    response: z
      .object({
        message: z.string().min(1),
        toolCalls: z.string().min(1).optional(),
        usage: z.string().min(1).optional(),
      })
      .strict(),
    sessionHeader: headerName.optional(),
    terrariumServer: httpUrl.optional(),
    terrariumToken: headerValue.optional(),
    timeoutMs: z.number().int().positive().max(3_600_000).optional(),
  })
  .strict();

/** Reads and checks an http config (a file path relative to `cwd`, or the config itself). */
export function loadHttpConfig(source: string | HttpAgentConfig | undefined, cwd?: string): HttpAgentConfig {
  if (source === undefined)
    throw new TerrariumError(
      "INVALID_INPUT",
      "an http:<url> agent needs --http-config: a YAML or JSON file saying how to send a message and where the reply is (response.message)",
    );
  if (typeof source === "string") {
    const file = resolve(cwd ?? process.cwd(), source);
    return parseHttpConfig(readDocument(file), file);
  }
  return parseHttpConfig(source);
}

/** Checks an http config document; every problem is located (file and JSON Pointer). */
export function parseHttpConfig(document: unknown, file?: string): HttpAgentConfig {
  const fail = (pointer: string, message: string): never => {
    throw new TerrariumError("CONFIG_INVALID", `invalid http agent config: ${message}`, {
      where: { ...(file ? { file } : {}), pointer },
    });
  };
  if (document === null || typeof document !== "object" || Array.isArray(document))
    fail("", "the config must be an object with at least response.message");
  const parsed = ConfigSchema.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    const path = issue.path.map((token) => (typeof token === "symbol" ? String(token) : token));
    const label = path.length ? `${path.join(".")}: ` : "";
    if (issue.code === "unrecognized_keys")
      fail(
        formatPointer(path),
        `${label}unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}`,
      );
    if (issue.code === "invalid_key")
      fail(formatPointer(path), `${label}"${String(path.at(-1))}" is not a valid HTTP header name`);
    const parent = path.slice(0, -1);
    const holder = valueAt(document, parent);
    const last = path[path.length - 1];
    if (
      issue.code === "invalid_type" &&
      last !== undefined &&
      holder !== null &&
      typeof holder === "object" &&
      !Array.isArray(holder) &&
      !Object.hasOwn(holder, String(last))
    )
      fail(
        formatPointer(parent),
        `${parent.length ? `${parent.join(".")}: ` : ""}missing required key "${String(last)}"`,
      );
    fail(formatPointer(path), `${label}${issue.message}`);
  }
  const config = (parsed as { data: HttpAgentConfig }).data;
  for (const key of ["message", "toolCalls", "usage"] as const) {
    const path = config.response[key];
    if (path === undefined) continue;
    try {
      parseResponsePath(path);
    } catch (error) {
      fail(`/response/${key}`, `response.${key}: ${(error as Error).message}`);
    }
  }
  for (const [name, value] of Object.entries(config.headers ?? {}))
    checkPlaceholders(value, `/headers/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`, "header", fail);
  if (config.terrariumToken !== undefined)
    checkPlaceholders(config.terrariumToken, "/terrariumToken", "token", fail);
  if (config.body !== undefined) checkBody(config.body, ["body"], 0, fail);
  if (config.terrariumServer !== undefined && !passesSessionId(config))
    fail(
      "/terrariumServer",
      "terrariumServer is set, but the session id reaches the agent nowhere: add sessionHeader, or {{session_id}} to the body or a header, so the agent calls its tools in that session",
    );
  return config;
}

function checkPlaceholders(
  text: string,
  pointer: string,
  place: "header" | "body" | "token",
  fail: (pointer: string, message: string) => never,
): void {
  for (const match of text.matchAll(PLACEHOLDER)) {
    const [whole, name = "", argument] = match;
    if (name === "env" && argument !== undefined && place !== "body") continue;
    if (argument === undefined && TEXT_PLACEHOLDERS.has(name) && place !== "token") continue;
    if (argument === undefined && WHOLE_PLACEHOLDERS.has(name) && place === "body") {
      if (text.trim() === whole) continue;
      fail(pointer, `${whole} must be the whole string (it becomes a list of messages)`);
    }
    const valid =
      place === "body"
        ? "{{message}}, {{session_id}}, {{run_id}}, {{scenario_id}}, {{history}}, {{messages}}"
        : place === "header"
          ? "{{message}}, {{session_id}}, {{run_id}}, {{scenario_id}}, {{env:NAME}}"
          : "{{env:NAME}}";
    fail(pointer, `unknown placeholder ${whole} (valid here: ${valid})`);
  }
}

function checkBody(
  value: unknown,
  path: Array<string | number>,
  depth: number,
  fail: (pointer: string, message: string) => never,
): void {
  if (depth > 64) fail(formatPointer(path), "the body template is nested more than 64 levels");
  if (typeof value === "string") checkPlaceholders(value, formatPointer(path), "body", fail);
  else if (Array.isArray(value))
    for (const [index, item] of value.entries()) checkBody(item, [...path, index], depth + 1, fail);
  else if (value !== null && typeof value === "object")
    for (const key of Object.keys(value)) {
      if (key === "__proto__")
        fail(formatPointer([...path, key]), 'the body template may not use the key "__proto__"');
      checkBody((value as Record<string, unknown>)[key], [...path, key], depth + 1, fail);
    }
  else if (value !== null && typeof value !== "number" && typeof value !== "boolean")
    fail(formatPointer(path), "the body template must be JSON");
}

/** The values placeholders stand for in one request. */
export interface TemplateValues {
  message: string;
  session_id: string;
  run_id: string;
  scenario_id: string;
  history: Array<{ role: "user" | "assistant"; content: string }>;
}

/** The request body: the template with its placeholders filled (values only ever become string content). */
export function renderBody(template: unknown, values: TemplateValues): unknown {
  if (typeof template === "string") {
    const trimmed = template.trim();
    if (/^\{\{\s*history\s*\}\}$/.test(trimmed)) return values.history.map((entry) => ({ ...entry }));
    if (/^\{\{\s*messages\s*\}\}$/.test(trimmed))
      return [...values.history, { role: "user", content: values.message }].map((entry) => ({ ...entry }));
    return fillText(template, values, {});
  }
  if (Array.isArray(template)) return template.map((item) => renderBody(item, values));
  if (template !== null && typeof template === "object") {
    const out: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(template))
      out[key] = renderBody((template as Record<string, unknown>)[key], values);
    return out;
  }
  return template;
}

/** A string with its text placeholders (and `{{env:NAME}}` when `env` is given) replaced. */
export function fillText(
  text: string,
  values: Partial<Pick<TemplateValues, "message" | "session_id" | "run_id" | "scenario_id">>,
  env: Record<string, string | undefined> | undefined,
): string {
  return text.replace(PLACEHOLDER, (whole, name: string, argument?: string) => {
    if (name === "env" && argument !== undefined) return env?.[argument] ?? "";
    if (argument === undefined && TEXT_PLACEHOLDERS.has(name))
      return values[name as keyof typeof values] ?? "";
    return whole;
  });
}

/**
 * A response path as tokens: a JSON Pointer (`""`, `/a/0/b`) or a dotted path (`a.b`, `a[0].b`, `a.0.b`).
 * `__proto__`, `constructor` and `prototype` are refused.
 */
export function parseResponsePath(path: string): string[] {
  let tokens: string[];
  if (path === "" || path.startsWith("/")) {
    tokens = parsePointer(path);
  } else {
    const dotted = path.replace(/\[(\d+)\]/g, ".$1");
    tokens = dotted.split(".");
    if (tokens.some((token) => token === ""))
      throw new Error(`"${path}" is not a JSON Pointer (/a/b) or a dotted path (a.b, a[0].b)`);
  }
  const bad = tokens.find((token) => FORBIDDEN_KEYS.has(token));
  if (bad !== undefined) throw new Error(`"${path}" uses the key "${bad}", which is not allowed`);
  return tokens;
}

/** The value at a response path, reading own properties only; undefined when it is not there. */
export function readPath(document: unknown, tokens: readonly string[]): unknown {
  let current = document;
  for (const token of tokens) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (current !== null && typeof current === "object") {
      if (!Object.hasOwn(current, token)) return undefined;
      current = (current as Record<string, unknown>)[token];
    } else return undefined;
  }
  return current;
}

function valueAt(root: unknown, path: ReadonlyArray<string | number>): unknown {
  let current = root;
  for (const token of path) {
    if (current === null || typeof current !== "object" || !Object.hasOwn(current, String(token)))
      return undefined;
    current = (current as Record<string, unknown>)[String(token)];
  }
  return current;
}

/** Whether the agent is told the session id (a header, or {{session_id}} in a header value or the body). */
function passesSessionId(config: HttpAgentConfig): boolean {
  if (config.sessionHeader) return true;
  const mentions = (text: string) => /\{\{\s*session_id\s*\}\}/.test(text);
  if (Object.values(config.headers ?? {}).some(mentions)) return true;
  if (config.body === undefined) return true; // the default body carries session_id
  return mentions(JSON.stringify(config.body));
}
