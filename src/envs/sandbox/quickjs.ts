import { z } from "zod";
import { isPlainObject } from "../../catalog/json-schema.js";
import type { JsonObjectSchema, JsonSchema, ToolEffect } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import { same } from "../../core/json-diff.js";
import { formatPointer } from "../../core/json-pointer.js";
import { defineEnvironment, type ToolContext, ToolFailure, type ToolImplementation } from "../define.js";
import { unchangedDraftBase } from "../draft.js";
import type {
  CreateOptions,
  Environment,
  EnvironmentInstance,
  RestartableInstance,
  Transition,
} from "../types.js";
import type { GuestLimits, GuestOutcome, GuestRequest } from "./engine.js";
import { type SandboxPool, sandboxPool } from "./pool.js";
import { type SourceForecast, SourceLease } from "./sources.js";

/**
 * Environments whose tools are untrusted JavaScript (written by a model or a user), run in a QuickJS
 * sandbox. They behave like TypeScript environments (defineEnvironment does the validation, the seeding,
 * fork and reset, and the transitions): only a tool's `run` is different, it hands the state and the
 * arguments as JSON to a fresh QuickJS context, with a time and a memory limit, and takes back the
 * observation and the new state as JSON. A tool that loops, allocates without end, throws, or tries to
 * reach anything outside its sandbox ends its call as a failed step; the state stays as it was.
 * Calls run in worker threads (pool.ts), so a looping tool never holds the host's event loop.
 */

/** One tool: its schema as in defineEnvironment, and its implementation as JavaScript source. */
export interface SandboxedToolDescriptor {
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema; unknown arguments are rejected). */
  input?: JsonObjectSchema;
  output?: JsonSchema;
  effect: ToolEffect;
  /**
   * A JavaScript function expression, `(ctx) => observation` or `function (ctx) { ... }`, run in strict
   * mode. `ctx.state` is a draft of the state to change (or replace), `ctx.args` the validated arguments,
   * `ctx.now()` the time as an ISO string, `ctx.random()` a float in [0, 1), `ctx.id(prefix)` a fresh id,
   * `ctx.fail(message, details?)` rejects the call. It may be async. `Date` and `Math.random` follow the
   * same seeded clock and random source.
   */
  code: string;
}

/** A sandboxed environment as plain data (what a JSON or YAML descriptor holds). */
export interface SandboxedEnvironmentDescriptor {
  kind: "quickjs";
  name: string;
  description: string;
  /** The state a new instance starts from: a JSON object. */
  initialState: Record<string, unknown>;
  tools: SandboxedToolDescriptor[];
}

export interface SandboxOptions {
  /** Wall-clock time one call may take (default 1000 ms). */
  timeLimitMs?: number;
  /** Memory one call may use (default 32 MiB; at least 1 MiB). */
  memoryLimitBytes?: number;
  /** The descriptor's file, for error locations and the environment's source. */
  file?: string;
  /** The worker pool that runs the calls (default: the process's pool, see sandboxPool()). */
  pool?: SandboxPool;
  /**
   * Where failures of the QuickJS engine itself are logged, one line each (default: stderr). Callers get
   * a generic message instead: the engine's own text (assertions, WebAssembly traps) is for operators.
   */
  log?: (line: string) => void;
}

export const DEFAULT_TIME_LIMIT_MS = 1000;
export const DEFAULT_MEMORY_LIMIT_BYTES = 32 * 1024 * 1024;
const MIN_MEMORY_LIMIT_BYTES = 1024 * 1024;
const MAX_MEMORY_LIMIT_BYTES = 1024 * 1024 * 1024;

type JsonObject = Record<string, unknown>;

const jsonObject = z.custom<JsonObject>(isPlainObject, { message: "expected a JSON object" });

const ToolDescriptorSchema = z
  .object({
    name: z.string().min(1),
    description: z.string(),
    input: jsonObject.optional(),
    output: z.union([z.boolean(), jsonObject]).optional(),
    effect: z.enum(["read", "write", "unknown"]),
    code: z.string().min(1),
  })
  .strict();

const DescriptorSchema = z
  .object({
    kind: z.literal("quickjs"),
    name: z.string().min(1),
    description: z.string(),
    initialState: jsonObject,
    tools: z.array(ToolDescriptorSchema).min(1),
  })
  .strict()
  .superRefine((descriptor, check) => {
    const seen = new Set<string>();
    descriptor.tools.forEach((tool, index) => {
      if (seen.has(tool.name)) {
        check.addIssue({
          code: "custom",
          path: ["tools", index, "name"],
          message: `two tools are named "${tool.name}"`,
        });
      }
      seen.add(tool.name);
    });
  });

/** Builds an environment from a descriptor; the QuickJS engine is loaded when the first instance is created. */
export function defineSandboxedEnvironment(
  descriptor: SandboxedEnvironmentDescriptor,
  options: SandboxOptions = {},
): Environment {
  const parsed = readDescriptor(descriptor, options.file);
  const limits = readLimits(options);
  const pool = () => options.pool ?? sandboxPool();
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const report = (tool: string, what: string, detail: string) =>
    log(`terrarium: sandbox: ${parsed.name}.${tool}: ${what}: ${detail}`);
  const tools: Record<string, ToolImplementation<JsonObject>> = Object.fromEntries(
    parsed.tools.map((tool) => [
      tool.name,
      {
        description: tool.description,
        ...(tool.input !== undefined ? { input: tool.input } : {}),
        ...(tool.output !== undefined ? { output: tool.output } : {}),
        effect: tool.effect,
        run: sandboxedRun(tool, limits, pool, report),
      },
    ]),
  );
  const inner = defineEnvironment<JsonObject>({
    name: parsed.name,
    description: parsed.description,
    initialState: parsed.initialState,
    tools,
    ...(options.file ? { file: options.file } : {}),
  });

  const environment: Environment = {
    name: parsed.name,
    description: parsed.description,
    tools: inner.tools,
    source: { kind: "quickjs", ...(options.file ? { file: options.file } : {}), code: sourceOf(parsed) },
    initialState: () => inner.initialState(),
    create: async (createOptions: CreateOptions = {}) => {
      if (createOptions.state !== undefined) requireObjectState(createOptions.state);
      await pool().warm();
      // defineEnvironment's instances (TypeScriptInstance) restart in place and take step options.
      return new SandboxedInstance(environment, (await inner.create(createOptions)) as RestartableInstance);
    },
  };
  return environment;
}

/** The instance defineEnvironment made, presented as belonging to the sandboxed environment. */
class SandboxedInstance implements RestartableInstance {
  constructor(
    readonly environment: Environment,
    private readonly inner: RestartableInstance,
  ) {}

  step(
    call: { name: string; arguments?: unknown },
    options?: { checkedAgainst?: object },
  ): Promise<Transition> {
    // Options go through: the engine's code simulator says which schema it already validated against.
    return this.inner.step(call, options);
  }

  /** Made anew in place with `create`'s options (the code simulator's per-call instance, see define.ts). */
  restart(options: CreateOptions): void {
    if (options.state !== undefined) requireObjectState(options.state);
    this.inner.restart(options);
  }

  state(): Promise<unknown> {
    return this.inner.state();
  }

  async fork(): Promise<EnvironmentInstance> {
    return new SandboxedInstance(this.environment, (await this.inner.fork()) as RestartableInstance);
  }

  async reset(state?: unknown): Promise<void> {
    if (state !== undefined) requireObjectState(state);
    await this.inner.reset(state);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Fewest clock readings, random numbers and ids drawn ahead for a call. */
const MIN_AHEAD = 4;

/** Logs a failure of the engine: the tool's name, what failed, and the engine's own text. */
type Report = (tool: string, what: string, detail: string) => void;

function sandboxedRun(
  tool: SandboxedToolDescriptor,
  limits: GuestLimits,
  pool: () => SandboxPool,
  report: Report,
) {
  // How many clock readings, random numbers and ids to draw ahead: what the tool's last call took.
  // A few of each at first; then what the last call took, at least a few of each kind the tool ever took,
  // none of a kind it never took (a source's first value can cost more than the rest: seeding). Unused
  // random numbers and ids are kept for the next call and clock readings are read ahead on a clone, so
  // drawing too many costs little, while too few sends an inline call to a worker (pool.ts).
  let forecast: SourceForecast = { clock: MIN_AHEAD, random: MIN_AHEAD, ids: MIN_AHEAD };
  const took: SourceForecast = { clock: 0, random: 0, ids: 0 };
  const ahead = (kind: keyof SourceForecast, used: SourceForecast) => {
    took[kind] = Math.max(took[kind], used[kind]);
    return took[kind] === 0 ? 0 : Math.max(MIN_AHEAD, used[kind]);
  };
  return async ({ state, args, clock, random, ids }: ToolContext<JsonObject>): Promise<unknown> => {
    // The state as the step started: the draft's immutable base (read directly, never through the draft's
    // proxies; made into text only for a worker). A draft already changed (a tool called from another
    // tool's code) is taken as text now, as it is at this moment.
    const base = unchangedDraftBase(state);
    const request: GuestRequest =
      base !== undefined
        ? { code: tool.code, values: { state: base, args }, changes: true }
        : {
            code: tool.code,
            input: `{"state":${JSON.stringify(state)},"args":${JSON.stringify(args)}}`,
            changes: true,
          };
    const lease = new SourceLease({ clock, random, ids }, forecast);
    const outcome = await pool().run(request, lease, limits);
    const used = lease.used;
    if (used) {
      forecast = { clock: ahead("clock", used), random: ahead("random", used), ids: ahead("ids", used) };
    }
    return settle(outcome, state, limits, (what, detail) => report(tool.name, what, detail));
  };
}

/**
 * Text from inside the engine rather than from the tool: quickjs-emscripten's errors (QuickJSUseAfterFree,
 * lifetime errors) and WebAssembly traps (RuntimeError) reach the guest as ordinary exceptions when they
 * happen in a host call, and an Emscripten abort names QuickJS's C source. Matched at the start of the
 * message where a name is, so a tool's own "Error: Assertion failed: ..." still reaches its caller.
 */
const ENGINE_TEXT =
  /^(?:RuntimeError|ExitStatus|QuickJS[A-Z]\w*)\b|Aborted\(|Lifetime not alive|quickjs\.c\b/;

/** The message callers get when the engine itself failed; the engine's text goes to the log. */
export const SANDBOX_FAILED =
  "the tool's sandbox failed while running it and was restarted; the call changed nothing";

/** Turns what the guest did into what defineEnvironment expects: a result, or an exception. */
function settle(
  outcome: GuestOutcome,
  draft: JsonObject,
  limits: GuestLimits,
  report: (what: string, detail: string) => void,
): unknown {
  const engineFailed = outcome.kind === "stopped" && outcome.reason === "engine";
  const engineText =
    outcome.kind === "raised" ? outcome.message : outcome.kind === "stopped" ? outcome.detail : undefined;
  if (engineFailed || (engineText !== undefined && ENGINE_TEXT.test(engineText))) {
    report(
      engineFailed ? "the QuickJS engine failed" : "engine text in the tool's outcome",
      engineText || "(no detail)",
    );
    throw new ToolFailure(SANDBOX_FAILED, { code: "INTERNAL" });
  }
  switch (outcome.kind) {
    case "returned":
      if ("changes" in outcome) {
        applyChanges(draft, outcome.changes);
        return outcome.observation;
      }
      if (!isPlainObject(outcome.state)) {
        throw new ToolFailure(`the tool left a state that is not a JSON object (${typeName(outcome.state)})`);
      }
      replaceContents(draft, outcome.state);
      return outcome.observation;
    case "rejected":
      throw new ToolFailure(outcome.message, outcome.details);
    case "raised":
      // defineEnvironment reports it as "the tool raised an error: <message>", as for TypeScript tools.
      throw new Error(outcome.message);
    case "stopped":
      throw new ToolFailure(stopMessage(outcome, limits));
  }
}

function stopMessage(outcome: Extract<GuestOutcome, { kind: "stopped" }>, limits: GuestLimits): string {
  const detail = outcome.detail ?? "";
  switch (outcome.reason) {
    case "time":
      return `the tool ran longer than ${limits.timeLimitMs} ms and was stopped`;
    case "memory":
      return `the tool exceeded its memory limit of ${formatBytes(limits.memoryLimitBytes)}`;
    case "stack":
      return "the tool nested its calls too deeply and was stopped";
    case "compile":
      return `the tool's code does not compile: ${detail}`;
    case "not-a-function":
      return `the tool's code must be a function such as (ctx) => { ... }, but it evaluates to ${detail}`;
    case "unserializable":
      return `the tool's result or state cannot be stored as JSON: ${detail}`;
    case "tampered":
      return `the tool changed the built-in ${detail}, which sandboxed tools may not do`;
    case "unsettled":
      return "the tool returned a promise that never settled";
    case "bad-output":
      return `the sandbox could not read what the tool did: ${detail}`;
    case "engine":
      return SANDBOX_FAILED; // settle answers these before (and logs the engine's text)
  }
}

/**
 * Makes the draft hold exactly the properties of `source`. The draft is defineEnvironment's copy-on-write
 * view of a null-prototype state, so plain assignment stores "__proto__" as an own key; keys whose text is
 * unchanged are left alone, so the new state shares them with the old one.
 */
function replaceContents(target: JsonObject, source: JsonObject): void {
  for (const key of Object.keys(target)) {
    if (!Object.hasOwn(source, key)) delete target[key];
  }
  for (const [key, value] of Object.entries(source)) {
    if (Object.hasOwn(target, key) && same(target[key], value)) continue;
    target[key] = value;
  }
}

/**
 * Applies what the guest's lazy draft reports it changed (prelude.ts): [0, path, value] sets the member at
 * `path`, [1, path] deletes it, in order; an empty path is the whole state. Every path leads through
 * objects of the state as the call started, so a path that does not is a broken report, refused whole
 * (the draft is then dropped with the failed step).
 */
function applyChanges(draft: JsonObject, changes: unknown): void {
  const broken = () => new ToolFailure("the sandbox could not read what the tool did: a malformed change");
  if (!Array.isArray(changes)) throw broken();
  for (const change of changes) {
    if (!Array.isArray(change) || (change[0] !== 0 && change[0] !== 1) || !Array.isArray(change[1]))
      throw broken();
    const path = change[1] as unknown[];
    if (change[0] === 0 && change.length !== 3) throw broken();
    if (path.length === 0) {
      if (change[0] === 1 || !isPlainObject(change[2])) {
        throw new ToolFailure(`the tool left a state that is not a JSON object (${typeName(change[2])})`);
      }
      replaceContents(draft, change[2]);
      continue;
    }
    // Each step reads the draft once: a key the draft does not hold reads as undefined (its objects have
    // no prototype), which is not an object, so the path is refused at the next step.
    let parent: unknown = draft;
    for (let i = 0; i < path.length - 1; i++) {
      const key = path[i];
      if (typeof key !== "string" || !isObject(parent)) throw broken();
      parent = (parent as JsonObject)[key];
    }
    const key = path[path.length - 1];
    if (typeof key !== "string" || !isObject(parent)) throw broken();
    const target = parent as JsonObject;
    const value = change[2];
    if (change[0] === 1) delete target[key];
    // A JSON value other than an object or array is written unless it is there already (=== is same()
    // for those; undefined is never one, so a key that reads as the value is held).
    else if (typeof value !== "object" || value === null) {
      if (target[key] !== value) target[key] = value;
    } else if (!(Object.hasOwn(target, key) && same(target[key], value))) target[key] = value;
  }
}

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function requireObjectState(state: unknown): void {
  if (!isPlainObject(state)) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `the state of a sandboxed environment must be a JSON object, got ${typeName(state)}`,
    );
  }
}

function readDescriptor(descriptor: unknown, file: string | undefined): SandboxedEnvironmentDescriptor {
  const parsed = DescriptorSchema.safeParse(descriptor);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const pointer = formatPointer((issue?.path ?? []).map(String));
    throw new TerrariumError(
      "CONFIG_INVALID",
      `sandboxed environment descriptor${pointer ? ` at ${pointer}` : ""}: ${issue?.message ?? "invalid"}`,
      { where: { ...(file ? { file } : {}), pointer } },
    );
  }
  return parsed.data as SandboxedEnvironmentDescriptor;
}

function readLimits(options: SandboxOptions): GuestLimits {
  const timeLimitMs = options.timeLimitMs ?? DEFAULT_TIME_LIMIT_MS;
  const memoryLimitBytes = options.memoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES;
  if (!Number.isFinite(timeLimitMs) || timeLimitMs <= 0) {
    throw new TerrariumError("CONFIG_INVALID", `timeLimitMs must be a positive number, got ${timeLimitMs}`);
  }
  if (
    !Number.isInteger(memoryLimitBytes) ||
    memoryLimitBytes < MIN_MEMORY_LIMIT_BYTES ||
    memoryLimitBytes > MAX_MEMORY_LIMIT_BYTES
  ) {
    throw new TerrariumError(
      "CONFIG_INVALID",
      `memoryLimitBytes must be a whole number of bytes from 1 MiB to 1 GiB, got ${memoryLimitBytes}`,
    );
  }
  return { timeLimitMs, memoryLimitBytes };
}

/** The implementation as text, as for TypeScript environments: each tool's description, schema and code. */
function sourceOf(descriptor: SandboxedEnvironmentDescriptor): string {
  const parts = [
    `// environment ${descriptor.name}: ${descriptor.description}`,
    "// each tool is a JavaScript function of ctx, run in a QuickJS sandbox: ctx.state (a draft of the state",
    "// to change), ctx.args, ctx.now(), ctx.random(), ctx.id(prefix), ctx.fail(message) (rejects the call)",
  ];
  for (const tool of descriptor.tools) {
    parts.push(`// tool ${tool.name} (${tool.effect}): ${tool.description}`);
    if (tool.input) parts.push(`// input: ${JSON.stringify(tool.input)}`);
    parts.push(`${tool.name}: ${tool.code.trim()}`);
  }
  return parts.join("\n");
}

function formatBytes(bytes: number): string {
  const MiB = 1024 * 1024;
  if (bytes % MiB === 0) return `${bytes / MiB} MB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}
