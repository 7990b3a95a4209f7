import type { JsonSchema } from "../catalog/tool.js";
import { hashJson } from "../core/canonical-json.js";
import { TerrariumError } from "../core/errors.js";
import { createRandom, type Random } from "../core/random.js";
import { type CacheMode, type ResponseCache, SqliteResponseCache } from "./cache.js";
import { parseConfig, type TerrariumConfig } from "./config.js";
import { ProviderGate } from "./limits.js";
import { PriceTable } from "./prices.js";
import { repairInstruction, schemaInstruction } from "./prompts/structured-output.js";
import { createBackend, parseModelName, providerSettings } from "./registry.js";
import {
  AttemptTimeout,
  backoffDelay,
  DEFAULT_RETRY,
  isRetryable,
  type RetryPolicy,
  statusOf,
} from "./retry.js";
import { JsonAnswerChecker } from "./structured.js";
import { emulatedToolSchema, fromProviderNames, toolInstruction, toProviderNames } from "./tool-calls.js";
import type {
  BackendRequest,
  BackendResponse,
  Message,
  ModelBackend,
  ModelToolCall,
  StructuredMode,
  TokenUsage,
  ToolSpec,
} from "./types.js";
import { UsageLedger } from "./usage.js";

export const DEFAULT_CACHE_PATH = ".terrarium/cache.sqlite";
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_REPAIR_ATTEMPTS = 2;

export interface ModelsOptions {
  config?: TerrariumConfig;
  env?: NodeJS.ProcessEnv;
  /** A cache to use instead of the SQLite file named in config; `null` for none. */
  cache?: ResponseCache | null;
  cacheMode?: CacheMode;
  /** Backends by model name, used before the registry (tests, embedding applications). */
  backends?: Record<string, ModelBackend>;
  fetch?: typeof fetch;
  ledger?: UsageLedger;
  /** Seeds the retry jitter, so a seeded run also waits the same. */
  random?: Random;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  budgetUsd?: number;
  /**
   * The calling command's flags that name a model serving the roles the configuration leaves unset
   * (e.g. `["--planner <provider:model>"]`), for the message of a role with no model. Without them the
   * message names only the configuration, since a library caller has no flags.
   */
  modelFlags?: readonly string[];
}

/**
 * A caller's word on an answer: nothing (or no problems) accepts it, a list of problems rejects it. Only
 * accepted answers are written to the cache or served from it, so a rejected one is never replayed: asking
 * again (same request, same seed) really calls the model.
 */
export type Verdict = readonly string[] | undefined;

/** What a caller's `accept` sees of a plain or tool-calling answer (tool names as the caller gave them). */
export interface CallAnswer {
  text: string;
  toolCalls: ModelToolCall[];
  finishReason: BackendResponse["finishReason"];
}

/** Who is calling and how: a role (mapped to a model by config) or a model name, and sampling settings. */
export interface CallOptions {
  role?: string;
  model?: string;
  messages: Message[];
  temperature?: number;
  seed?: number;
  maxOutputTokens?: number;
  /** Groups usage (a session, a task, a sample). */
  scope?: string;
  cache?: CacheMode;
  timeoutMs?: number;
  /** Distinguishes otherwise identical requests in the cache (e.g. the n-th independent sample). */
  variant?: string | number;
  /**
   * The caller's check of the answer (see `Verdict`). A rejected answer is returned with `rejected` set
   * and is not cached; a cached answer it rejects is dropped from the cache and the model asked again.
   */
  accept?: (answer: CallAnswer) => Verdict;
}

/** Options of `generateObject`: its `accept` judges the parsed value, after the schema has. */
export interface ObjectCallOptions<T> extends Omit<CallOptions, "accept"> {
  schema: JsonSchema;
  schemaName?: string;
  repairAttempts?: number;
  /** A value that passed the schema but not this check is repaired like a schema violation. */
  accept?: (object: T) => Verdict;
  /** The repair turn's text from the problems (default: the structured-output repair prompt). */
  repairPrompt?: (problems: string[]) => string;
}

export interface CallResult {
  model: string;
  text: string;
  toolCalls: ModelToolCall[];
  finishReason: BackendResponse["finishReason"];
  usage: TokenUsage;
  costUsd: number;
  latencyMs: number;
  cached: boolean;
  attempts: number;
  /** The problems the caller's `accept` found: the answer was not cached (generateText, generateWithTools). */
  rejected?: string[];
}

export interface ObjectResult<T = unknown> extends CallResult {
  object: T;
  structuredMode: StructuredMode;
  /** How many repair turns it took (0 = the first answer was valid). */
  repairs: number;
}

export interface ToolCallResult extends CallResult {
  toolMode: "native" | "emulated";
}

/**
 * The model layer: every LLM call in terrarium goes through here. It resolves roles to models, caches
 * responses, limits concurrency and rate per provider, retries what is worth retrying, stops at the
 * budget, accounts usage and cost, and makes structured output trustworthy (validate, then repair).
 */
export class Models {
  readonly config: TerrariumConfig;
  readonly ledger: UsageLedger;
  private readonly env: NodeJS.ProcessEnv;
  private readonly backends = new Map<string, Promise<ModelBackend>>();
  private readonly gates = new Map<string, ProviderGate>();
  private readonly prices: PriceTable;
  private readonly retry: RetryPolicy;
  private readonly random: Random;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly checker = new JsonAnswerChecker();
  private readonly cacheMode: CacheMode;
  private cacheInstance: ResponseCache | null | undefined;
  private readonly budgetUsd: number | undefined;
  /** Set on a run's view (`forRun`): the Models whose cache and backends it uses. */
  private owner: Models | undefined;

  constructor(private readonly options: ModelsOptions = {}) {
    this.config = options.config ?? parseConfig({});
    this.env = options.env ?? process.env;
    this.ledger = options.ledger ?? new UsageLedger();
    this.prices = new PriceTable(this.config.prices);
    this.retry = { ...DEFAULT_RETRY, ...stripUndefined(this.config.retry) };
    this.random = options.random ?? createRandom("terrarium-retry-jitter");
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.cacheMode =
      options.cacheMode ?? this.config.cache.mode ?? (this.env.TERRARIUM_CACHE as CacheMode) ?? "use";
    this.cacheInstance = options.cache;
    this.budgetUsd = options.budgetUsd ?? this.config.budgetUsd;
    for (const [name, backend] of Object.entries(options.backends ?? {}))
      this.backends.set(name, Promise.resolve(backend));
  }

  /** The model that serves a role: `roles.<role>`, else `roles.default`. */
  modelFor(role: string): string {
    const model = this.config.roles[role] ?? this.config.roles.default;
    if (!model) {
      const flags = this.options.modelFlags ?? [];
      throw new TerrariumError(
        "MODEL_NO_ROLE",
        `no model is configured for the "${role}" role: set roles.${role} or roles.default in terrarium.config.yaml (e.g. roles: { default: openai:gpt-4.1-mini })` +
          (flags.length > 0
            ? `, or pass ${flags.join(" or ")} (a model given on the command line serves every role the configuration leaves unset)`
            : ""),
      );
    }
    return model;
  }

  /** The backend of a model name, created once. */
  backend(name: string): Promise<ModelBackend> {
    let backend = this.backends.get(name);
    if (!backend) {
      backend = createBackend(name, {
        config: this.config,
        env: this.env,
        ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      });
      this.backends.set(name, backend);
      backend.catch(() => this.backends.delete(name));
    }
    return backend;
  }

  async generateText(options: CallOptions): Promise<CallResult> {
    const name = this.resolveName(options);
    const backend = await this.backend(name);
    const accept = options.accept;
    return this.call(
      backend,
      { messages: options.messages, ...sampling(options) },
      options,
      accept ? (response) => accept(answerOf(response)) : undefined,
    );
  }

  /**
   * A JSON value that satisfies `schema`: native structured output where the provider has it, grammar
   * decoding for local models, JSON mode with the schema in the prompt otherwise; always validated, and
   * repaired (the model is shown its errors) up to `repairAttempts` times. The caller's `accept` counts as
   * part of the validation: only a value that passes both is cached, and a rejected one is repaired.
   */
  generateObject<T = unknown>(options: ObjectCallOptions<T>): Promise<ObjectResult<T>> {
    return this.structured(options, true);
  }

  /**
   * `generateObject`, where a value the caller rejects is either repaired (`repairRejected`) or returned
   * with `rejected` set (emulated tool calling, whose caller decides, as with native tool calls).
   */
  private async structured<T>(
    options: ObjectCallOptions<T>,
    repairRejected: boolean,
  ): Promise<ObjectResult<T>> {
    const name = this.resolveName(options);
    const backend = await this.backend(name);
    const mode = backend.capabilities.structured;
    let messages =
      mode === "emulated"
        ? withSystem(options.messages, schemaInstruction(options.schema))
        : options.messages;
    const repairAttempts = options.repairAttempts ?? this.config.repairAttempts ?? DEFAULT_REPAIR_ATTEMPTS;
    const totals = emptyCallTotals();
    let lastProblems: string[] = [];
    let lastText = "";
    const repairPrompt = options.repairPrompt ?? repairInstruction;
    const { accept, ...callOptions } = options;
    for (let repair = 0; repair <= repairAttempts; repair++) {
      // The check runs inside the call, before the cache sees the answer: an invalid answer is never
      // stored, and one stored before this check existed is dropped and asked for again.
      let value: unknown;
      let problems: string[] = [];
      let byCaller = false;
      const result = await this.call(
        backend,
        {
          messages,
          ...sampling(options),
          json: { schema: options.schema, ...(options.schemaName ? { name: options.schemaName } : {}) },
        },
        callOptions,
        (response) => {
          const check = this.checker.check(response.text, options.schema);
          problems = check.ok ? (problemsOf(accept?.(check.value as T)) ?? []) : check.problems;
          byCaller = check.ok && problems.length > 0;
          value = check.ok ? check.value : undefined;
          return problems;
        },
      );
      accumulate(totals, result);
      if (problems.length === 0 || (byCaller && !repairRejected)) {
        const { rejected: _rejected, ...answer } = result;
        return {
          ...answer,
          ...totals,
          object: value as T,
          structuredMode: mode,
          repairs: repair,
          ...(problems.length > 0 ? { rejected: problems } : {}),
        };
      }
      lastProblems = problems;
      lastText = result.text;
      messages = [
        ...messages,
        { role: "assistant", content: result.text },
        { role: "user", content: repairPrompt(problems) },
      ];
    }
    throw new TerrariumError(
      "MODEL_OUTPUT_INVALID",
      `${name} did not produce a valid answer after ${repairAttempts} repair attempt${repairAttempts === 1 ? "" : "s"}: ${lastProblems.slice(0, 3).join("; ")}`,
      { details: { model: name, raw: lastText, problems: lastProblems, usage: totals } },
    );
  }

  /**
   * One model turn with tools: native tool calling where the provider has it, otherwise emulated through
   * structured output (the model answers with the calls as JSON). Tool names are made provider-safe on
   * the way out (BFCL's dots, for instance) and restored on the way back.
   */
  async generateWithTools(
    options: CallOptions & { tools: ToolSpec[]; toolChoice?: BackendRequest["toolChoice"] },
  ): Promise<ToolCallResult> {
    const name = this.resolveName(options);
    const backend = await this.backend(name);
    const naming = toProviderNames(options.tools);
    const { accept, ...callOptions } = options;
    if (backend.capabilities.tools) {
      const choice = options.toolChoice;
      const request: BackendRequest = {
        messages: naming.renameMessages(options.messages),
        ...sampling(options),
        tools: naming.tools,
        ...(choice
          ? { toolChoice: typeof choice === "object" ? { tool: naming.toProvider(choice.tool) } : choice }
          : {}),
      };
      const result = await this.call(
        backend,
        request,
        callOptions,
        accept
          ? (response) =>
              accept({ ...answerOf(response), toolCalls: fromProviderNames(response.toolCalls, naming) })
          : undefined,
      );
      return { ...result, toolCalls: fromProviderNames(result.toolCalls, naming), toolMode: "native" };
    }
    type EmulatedTurn = { content: string; tool_calls: Array<{ name: string; arguments: unknown }> };
    const result = await this.structured<EmulatedTurn>(
      {
        ...callOptions,
        messages: withSystem(options.messages, toolInstruction(options.tools)),
        schema: emulatedToolSchema(options.tools),
        schemaName: "tool_turn",
        ...(accept ? { accept: (turn: EmulatedTurn) => accept(emulatedAnswer(turn)) } : {}),
      },
      false,
    );
    return { ...result, ...emulatedAnswer(result.object), toolMode: "emulated" };
  }

  /** Closes the cache and local models. */
  /**
   * A view of these models for one run (one task, one benchmark item): the same backends, provider limits,
   * cache and budget, and its own ledger whose records also reach this one's. Concurrent runs then account
   * their own calls exactly. Closing the view closes nothing: the parent owns the resources.
   */
  forRun(): Models {
    const view = Object.create(Models.prototype) as Models;
    Object.assign(view, this, { ledger: new UsageLedger(this.ledger), owner: this.owner ?? this });
    return view;
  }

  async close(): Promise<void> {
    if (this.owner) return;
    this.cacheInstance?.close?.();
    for (const backend of this.backends.values()) await (await backend.catch(() => undefined))?.dispose?.();
  }

  private resolveName(options: Pick<CallOptions, "model" | "role">): string {
    if (options.model) return options.model;
    if (options.role) return this.modelFor(options.role);
    throw new TerrariumError("MODEL_NO_ROLE", "a model call needs a role or a model name");
  }

  private get cache(): ResponseCache | null {
    if (this.owner) return this.owner.cache;
    if (this.cacheInstance === undefined) {
      this.cacheInstance =
        this.cacheMode === "off"
          ? null
          : new SqliteResponseCache(this.config.cache.path ?? DEFAULT_CACHE_PATH);
    }
    return this.cacheInstance;
  }

  private gate(provider: string): ProviderGate {
    let gate = this.gates.get(provider);
    if (!gate) {
      const settings = providerSettings(provider, this.config) ?? {};
      // A local model runs one generation at a time.
      const concurrency = settings.concurrency ?? (provider === "llama" ? 1 : DEFAULT_CONCURRENCY);
      gate = new ProviderGate(concurrency, settings.rpm ?? 0, this.now, this.sleep);
      this.gates.set(provider, gate);
    }
    return gate;
  }

  /**
   * One logical call: cache, budget, admission, attempts with timeout and backoff, accounting, then the
   * caller's verdict (`accept`), and only an accepted answer goes to the cache.
   */
  private async call(
    backend: ModelBackend,
    request: BackendRequest,
    options: Omit<CallOptions, "accept">,
    accept?: (response: BackendResponse) => Verdict,
  ): Promise<CallResult> {
    const mode = options.cache ?? this.cacheMode;
    const cache = mode === "off" || mode === "bypass" ? null : this.cache;
    const key = cacheKey(backend, request, options.variant, this.config);
    const meta = {
      model: backend.name,
      ...(options.role ? { role: options.role } : {}),
      ...(options.scope ? { scope: options.scope } : {}),
    };

    if (cache && mode === "use") {
      const hit = cache.get(key);
      // A stored answer the caller refuses (written before it was checked) is dropped, never served.
      if (hit && problemsOf(accept?.(hit)) !== undefined) cache.delete(key);
      else if (hit) {
        this.ledger.add({
          ...meta,
          cached: true,
          inputTokens: 0,
          outputTokens: 0,
          cachedInputTokens: 0,
          latencyMs: 0,
          costUsd: 0,
          attempts: 0,
          ok: true,
        });
        return { model: backend.name, ...hit, costUsd: 0, latencyMs: 0, cached: true, attempts: 0 };
      }
    }
    this.checkBudget(backend.name);

    const { provider } = parseModelName(backend.name);
    const timeoutMs =
      options.timeoutMs ??
      providerSettings(provider, this.config)?.timeoutMs ??
      this.config.timeoutMs ??
      DEFAULT_TIMEOUT_MS;
    const started = this.now();
    let attempts = 0;
    let response: BackendResponse;
    try {
      response = await this.gate(provider).run(async () => {
        for (;;) {
          attempts++;
          try {
            return await withTimeout((signal) => backend.generate({ ...request, signal }), timeoutMs);
          } catch (error) {
            if (attempts > this.retry.retries || !isRetryable(error)) throw error;
            await this.sleep(backoffDelay(error, attempts - 1, this.retry, this.random));
          }
        }
      });
    } catch (error) {
      this.ledger.add({
        ...meta,
        cached: false,
        inputTokens: 0,
        outputTokens: 0,
        cachedInputTokens: 0,
        latencyMs: this.now() - started,
        costUsd: 0,
        attempts,
        ok: false,
      });
      throw callError(backend.name, error, attempts);
    }
    const latencyMs = this.now() - started;
    const costUsd = this.prices.cost(backend.name, response.usage);
    const unpriced = !this.prices.isPriced(backend.name);
    // The call was made and is paid whatever the verdict; a check that throws is a rejection too.
    let rejected: string[] | undefined;
    let checkError: unknown;
    try {
      rejected = problemsOf(accept?.(response));
    } catch (error) {
      checkError = error;
    }
    this.ledger.add({
      ...meta,
      cached: false,
      ...response.usage,
      latencyMs,
      costUsd,
      attempts,
      ok: true,
      ...(rejected || checkError !== undefined ? { rejected: true } : {}),
      ...(unpriced ? { unpriced } : {}),
    });
    if (checkError !== undefined) throw checkError;
    if (cache && !rejected) cache.set(key, backend.name, response);
    return {
      model: backend.name,
      ...response,
      costUsd,
      latencyMs,
      cached: false,
      attempts,
      ...(rejected ? { rejected } : {}),
    };
  }

  private checkBudget(model: string): void {
    if (this.budgetUsd === undefined) return;
    const spent = this.ledger.root.totals.costUsd;
    if (spent >= this.budgetUsd) {
      throw new TerrariumError(
        "MODEL_BUDGET_EXCEEDED",
        `the run's budget of $${this.budgetUsd.toFixed(4)} is spent ($${spent.toFixed(4)} used); no new call to ${model} was started. Raise budgetUsd in terrarium.config.yaml or pass --budget`,
        { details: { budgetUsd: this.budgetUsd, spentUsd: spent } },
      );
    }
  }
}

/** The cache key: everything that determines the answer, and nothing secret (no keys, no headers). */
function cacheKey(
  backend: ModelBackend,
  request: BackendRequest,
  variant: string | number | undefined,
  config: TerrariumConfig,
): string {
  const { signal: _signal, ...rest } = request;
  const { provider } = parseModelName(backend.name);
  const baseURL = config.providers[provider]?.baseURL;
  return hashJson({
    v: 1,
    model: backend.name,
    ...(baseURL ? { baseURL } : {}),
    request: rest,
    ...(variant !== undefined ? { variant } : {}),
  });
}

async function withTimeout<T>(run: (signal: AbortSignal) => Promise<T>, timeoutMs: number): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(new AttemptTimeout(timeoutMs));
      reject(new AttemptTimeout(timeoutMs));
    }, timeoutMs);
  });
  try {
    // Racing matters for backends that ignore the signal (a local model mid-generation).
    return await Promise.race([run(controller.signal), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function callError(model: string, error: unknown, attempts: number): TerrariumError {
  if (error instanceof TerrariumError) return error;
  const tries = `after ${attempts} attempt${attempts === 1 ? "" : "s"}`;
  if (error instanceof AttemptTimeout) {
    return new TerrariumError(
      "MODEL_TIMEOUT",
      `${model} gave no answer within ${error.timeoutMs} ms (${tries})`,
      {
        details: { attempts },
      },
    );
  }
  const status = statusOf(error);
  const message = error instanceof Error ? error.message : String(error);
  return new TerrariumError(
    "MODEL_CALL_FAILED",
    `${model} failed ${tries}: ${status ? `HTTP ${status}: ` : ""}${message}`,
    {
      details: { attempts, ...(status ? { status } : {}) },
      cause: error,
    },
  );
}

/** The problems of a verdict, or undefined when it accepts. */
function problemsOf(verdict: Verdict): string[] | undefined {
  return verdict && verdict.length > 0 ? [...verdict] : undefined;
}

function answerOf(response: BackendResponse): CallAnswer {
  return { text: response.text, toolCalls: response.toolCalls, finishReason: response.finishReason };
}

/** An emulated tool turn as the answer a native one would have given. */
function emulatedAnswer(turn: {
  content: string;
  tool_calls: Array<{ name: string; arguments: unknown }>;
}): CallAnswer {
  const toolCalls = turn.tool_calls.map((call, index) => ({
    id: `call_${index}`,
    name: call.name,
    arguments: call.arguments,
  }));
  return { text: turn.content, toolCalls, finishReason: toolCalls.length > 0 ? "tool-calls" : "stop" };
}

function sampling(
  options: Omit<CallOptions, "accept">,
): Pick<BackendRequest, "temperature" | "seed" | "maxOutputTokens"> {
  return {
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
  };
}

/** Adds instructions to the system message (creating one when there is none). */
function withSystem(messages: Message[], instruction: string): Message[] {
  const [first, ...rest] = messages;
  if (first?.role === "system")
    return [{ role: "system", content: `${first.content}\n\n${instruction}` }, ...rest];
  return [{ role: "system", content: instruction }, ...messages];
}

type CallTotals = Pick<CallResult, "usage" | "costUsd" | "latencyMs" | "attempts" | "cached">;

function emptyCallTotals(): CallTotals {
  return {
    usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 },
    costUsd: 0,
    latencyMs: 0,
    attempts: 0,
    cached: true,
  };
}

function accumulate(totals: CallTotals, result: CallResult): void {
  totals.usage = {
    inputTokens: totals.usage.inputTokens + result.usage.inputTokens,
    outputTokens: totals.usage.outputTokens + result.usage.outputTokens,
    cachedInputTokens: totals.usage.cachedInputTokens + result.usage.cachedInputTokens,
  };
  totals.costUsd += result.costUsd;
  totals.latencyMs += result.latencyMs;
  totals.attempts += result.attempts;
  totals.cached = totals.cached && result.cached;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
