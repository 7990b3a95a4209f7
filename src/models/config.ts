import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { readDocument } from "../catalog/read-document.js";
import { TerrariumError } from "../core/errors.js";
import { formatPointer } from "../core/json-pointer.js";

export const CONFIG_FILE_NAME = "terrarium.config.yaml";

const ProviderType = z.enum(["openai", "openai-compatible", "anthropic", "google"]);

const ProviderConfig = z
  .object({
    /** Which API the endpoint speaks; defaults to the entry's name for openai, anthropic and google. */
    type: ProviderType.optional(),
    baseURL: z.string().url().optional(),
    /** Name of the environment variable that holds the key (never the key itself). */
    apiKeyEnv: z.string().min(1).optional(),
    /** Whether an OpenAI-compatible server enforces a JSON schema (`response_format: json_schema`). */
    structuredOutputs: z.boolean().optional(),
    /** Most calls in flight at once to this provider. */
    concurrency: z.number().int().positive().optional(),
    /** Most calls started per minute (0 = no limit). */
    rpm: z.number().int().nonnegative().optional(),
    timeoutMs: z.number().int().positive().optional(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

/** USD per million tokens. */
const Price = z
  .object({
    input: z.number().nonnegative(),
    output: z.number().nonnegative(),
    cachedInput: z.number().nonnegative().optional(),
  })
  .strict();

export const ConfigSchema = z
  .object({
    schemaVersion: z.literal(1).optional(),
    providers: z
      .record(
        z.string().regex(/^[a-z][a-z0-9-]*$/, "provider names are lower-case letters, digits and -"),
        ProviderConfig,
      )
      .default({}),
    /** Role -> model name; `default` serves every role without its own entry. */
    roles: z
      .record(z.string(), z.string().includes(":", { message: 'a model is named "provider:model"' }))
      .default({}),
    /** Model name (`provider:model`) -> price; extends and overrides the built-in table. */
    prices: z.record(z.string(), Price).default({}),
    cache: z
      .object({ path: z.string().optional(), mode: z.enum(["use", "bypass", "refresh", "off"]).optional() })
      .strict()
      .default({}),
    /** Stop starting model calls once a run has spent this many US dollars. */
    budgetUsd: z.number().positive().optional(),
    retry: z
      .object({
        retries: z.number().int().nonnegative().optional(),
        baseDelayMs: z.number().nonnegative().optional(),
        maxDelayMs: z.number().nonnegative().optional(),
      })
      .strict()
      .default({}),
    timeoutMs: z.number().int().positive().optional(),
    /** Repair attempts after structured output fails validation. */
    repairAttempts: z.number().int().nonnegative().optional(),
    llama: z
      .object({
        contextSize: z.number().int().positive().optional(),
        threads: z.number().int().positive().optional(),
        gpu: z.boolean().optional(),
      })
      .strict()
      .default({}),
  })
  .strict();

export type TerrariumConfig = z.infer<typeof ConfigSchema>;
export type ProviderSettings = z.infer<typeof ProviderConfig>;
export type ModelPrice = z.infer<typeof Price>;

export interface LoadedConfig {
  config: TerrariumConfig;
  /** The file it came from, when there was one. */
  file?: string;
}

/** Validates a config value; errors name the file and the JSON Pointer of the first problem. */
export function parseConfig(value: unknown, file?: string): TerrariumConfig {
  const parsed = ConfigSchema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const pointer = formatPointer((issue?.path ?? []).map((part) => String(part)));
  throw new TerrariumError("CONFIG_INVALID", issue?.message ?? "invalid configuration", {
    where: { file, pointer },
  });
}

/**
 * Finds and reads the configuration: an explicit path, else `$TERRARIUM_CONFIG`, else
 * `terrarium.config.yaml` in `cwd`; with none of them, the defaults (no providers configured, no roles).
 */
export function loadConfig(
  options: { path?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): LoadedConfig {
  const env = options.env ?? process.env;
  const explicit = options.path ?? env.TERRARIUM_CONFIG;
  const candidate = explicit ?? resolve(options.cwd ?? process.cwd(), CONFIG_FILE_NAME);
  if (!explicit && !existsSync(candidate)) return { config: parseConfig({}) };
  return { config: parseConfig(readDocument(candidate), candidate), file: candidate };
}

/**
 * The configuration with a model given on the command line serving every role it leaves unset: that
 * model becomes `roles.default` when the configuration has none (roles of its own, and a configured
 * default, are kept). Without a model, the configuration as it is.
 */
export function withCommandLineModel(config: TerrariumConfig, model: string | undefined): TerrariumConfig {
  if (!model || config.roles.default) return config;
  return { ...config, roles: { ...config.roles, default: model } };
}
