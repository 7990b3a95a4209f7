import { existsSync } from "node:fs";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { TerrariumError } from "../core/errors.js";
import { AiSdkBackend } from "./backends/ai-sdk.js";
import { MockBackend } from "./backends/mock.js";
import type { ProviderSettings, TerrariumConfig } from "./config.js";
import type { ModelBackend } from "./types.js";

export const BUILTIN_PROVIDERS = ["openai", "anthropic", "google", "llama", "mock"] as const;

/** Environment variables each hosted provider reads its key from, first match wins. */
const KEY_VARIABLES: Record<string, string[]> = {
  openai: ["OPENAI_API_KEY"],
  anthropic: ["ANTHROPIC_API_KEY"],
  google: ["GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"],
};
const BASE_URL_VARIABLES: Record<string, string> = {
  openai: "OPENAI_BASE_URL",
  anthropic: "ANTHROPIC_BASE_URL",
  google: "GOOGLE_GENERATIVE_AI_BASE_URL",
};

export interface ModelName {
  provider: string;
  model: string;
}

/** Splits `provider:model` at the first colon (model ids such as Ollama's `qwen2.5:7b` keep theirs). */
export function parseModelName(name: string): ModelName {
  const at = name.indexOf(":");
  if (at <= 0 || at === name.length - 1) {
    throw new TerrariumError(
      "MODEL_UNKNOWN_PROVIDER",
      `"${name}" is not a model name; write provider:model, e.g. openai:gpt-4.1-mini, local:qwen2.5:7b, llama:./model.gguf or mock:replies.yaml`,
    );
  }
  return { provider: name.slice(0, at), model: name.slice(at + 1) };
}

export interface RegistryContext {
  config: TerrariumConfig;
  env: NodeJS.ProcessEnv;
  /** Used by HTTP providers; tests and benchmarks inject their own. */
  fetch?: typeof fetch;
}

/** The settings of a provider name: from config, or the defaults of a built-in provider. */
export function providerSettings(provider: string, config: TerrariumConfig): ProviderSettings | undefined {
  const configured = config.providers[provider];
  if (configured) return configured;
  return provider in KEY_VARIABLES ? {} : undefined;
}

/** The API a provider entry speaks. */
export function providerType(provider: string, settings: ProviderSettings): string {
  return settings.type ?? (provider in KEY_VARIABLES ? provider : "openai-compatible");
}

/**
 * Builds the backend for a model name. Fails fast, before any call, with what to set: an unknown
 * provider, a missing key, a missing local model file.
 */
export async function createBackend(name: string, context: RegistryContext): Promise<ModelBackend> {
  const { provider, model } = parseModelName(name);
  if (provider === "mock") {
    if (!existsSync(model)) {
      throw new TerrariumError("FILE_UNREADABLE", `mock model script not found (${name})`, {
        where: { file: model },
      });
    }
    return MockBackend.fromFile(name, model);
  }
  if (provider === "llama") {
    const { LlamaBackend } = await import("./backends/llama.js");
    return LlamaBackend.open(name, model, context.config.llama);
  }
  const settings = providerSettings(provider, context.config);
  if (!settings) {
    const configured = Object.keys(context.config.providers);
    throw new TerrariumError(
      "MODEL_UNKNOWN_PROVIDER",
      `unknown provider "${provider}" in "${name}". Built in: ${BUILTIN_PROVIDERS.join(", ")}` +
        (configured.length ? `; configured: ${configured.join(", ")}` : "") +
        `. To add an OpenAI-compatible endpoint, declare it in terrarium.config.yaml: ` +
        `providers: { ${provider}: { type: openai-compatible, baseURL: "http://127.0.0.1:8000/v1" } }`,
    );
  }
  const type = providerType(provider, settings);
  const baseURL =
    settings.baseURL ?? (BASE_URL_VARIABLES[type] ? context.env[BASE_URL_VARIABLES[type]] : undefined);
  const apiKey = resolveKey(name, provider, type, settings, baseURL, context.env);
  const common = {
    ...(baseURL ? { baseURL } : {}),
    ...(settings.headers ? { headers: settings.headers } : {}),
    ...(context.fetch ? { fetch: context.fetch } : {}),
  };
  switch (type) {
    case "openai":
      return new AiSdkBackend(
        name,
        provider,
        createOpenAI({ apiKey: apiKey ?? "unused", ...common }).chat(model),
        { structured: "native", tools: true, seed: true },
        // Arbitrary tool schemas are not all valid in OpenAI's strict mode; Ajv checks the output instead.
        { openai: { strictJsonSchema: false } },
      );
    case "anthropic":
      return new AiSdkBackend(
        name,
        provider,
        createAnthropic({ apiKey: apiKey ?? "unused", ...common })(model),
        {
          structured: "native",
          tools: true,
          seed: false,
        },
      );
    case "google":
      return new AiSdkBackend(
        name,
        provider,
        createGoogleGenerativeAI({ apiKey: apiKey ?? "unused", ...common })(model),
        {
          structured: "native",
          tools: true,
          seed: true,
        },
      );
    case "openai-compatible": {
      if (!baseURL) {
        throw new TerrariumError(
          "CONFIG_INVALID",
          `provider "${provider}" needs a baseURL (providers.${provider}.baseURL)`,
        );
      }
      const structuredOutputs = settings.structuredOutputs ?? false;
      const compatible = createOpenAICompatible({
        name: provider,
        baseURL,
        ...(apiKey ? { apiKey } : {}),
        ...(settings.headers ? { headers: settings.headers } : {}),
        ...(context.fetch ? { fetch: context.fetch } : {}),
        includeUsage: true,
        supportsStructuredOutputs: structuredOutputs,
      });
      return new AiSdkBackend(name, provider, compatible.chatModel(model), {
        structured: structuredOutputs ? "native" : "emulated",
        tools: true,
        seed: true,
      });
    }
    default:
      throw new TerrariumError("CONFIG_INVALID", `provider "${provider}" has an unknown type "${type}"`);
  }
}

function resolveKey(
  name: string,
  provider: string,
  type: string,
  settings: ProviderSettings,
  baseURL: string | undefined,
  env: NodeJS.ProcessEnv,
): string | undefined {
  const variables = settings.apiKeyEnv ? [settings.apiKeyEnv] : (KEY_VARIABLES[type] ?? []);
  for (const variable of variables) {
    const value = env[variable];
    if (value) return value;
  }
  // Local OpenAI-compatible servers usually take no key; hosted providers always need one.
  const needsKey =
    settings.apiKeyEnv !== undefined || (type !== "openai-compatible" && !settings.baseURL && !baseURL);
  if (!needsKey) return undefined;
  throw new TerrariumError(
    "MODEL_MISSING_KEY",
    `${name} needs an API key: set ${variables.join(" or ")} in the environment` +
      (settings.apiKeyEnv
        ? ""
        : ` (or name another variable with providers.${provider}.apiKeyEnv in terrarium.config.yaml)`),
  );
}
