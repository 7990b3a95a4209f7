import type { Command } from "commander";
import { TerrariumError } from "../../core/errors.js";
import { loadConfig } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { parseModelName, providerSettings, providerType } from "../../models/registry.js";
import { type CliIo, compactTable } from "../io.js";

/** The structured-output round trip of `models check`. */
const CHECK_SCHEMA = {
  type: "object",
  properties: { ok: { type: "boolean" }, sum: { type: "integer" } },
  required: ["ok", "sum"],
  additionalProperties: false,
};
const HOSTED = ["openai", "anthropic", "google"];
const KEY_HINT: Record<string, string> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  google: "GOOGLE_GENERATIVE_AI_API_KEY",
};

export function registerModelsCommands(
  program: Command,
  io: CliIo,
  setExitCode: (code: number) => void,
): void {
  const models = program
    .command("models")
    .description("list configured model providers and roles, and check a model");

  models
    .command("list")
    .description("show the providers and roles of terrarium.config.yaml (keys are never printed)")
    .option("--json", "print as JSON")
    .addHelpText("after", "\nExample:\n  terrarium models list --config terrarium.config.yaml\n")
    .action((options: { json?: boolean }, command: Command) => {
      const { config, file } = loadConfig(configPath(command));
      const names = [...new Set([...HOSTED, ...Object.keys(config.providers)])];
      const providers = names.map((name) => {
        const settings = providerSettings(name, config) ?? {};
        const type = providerType(name, settings);
        const keyVariable = settings.apiKeyEnv ?? KEY_HINT[type];
        return {
          name,
          type,
          baseURL: settings.baseURL ?? null,
          keyVariable: keyVariable ?? null,
          keySet: keyVariable ? Boolean(process.env[keyVariable]) : null,
          structured:
            type === "openai-compatible" ? (settings.structuredOutputs ? "native" : "emulated") : "native",
          concurrency: settings.concurrency ?? 4,
          rpm: settings.rpm ?? 0,
        };
      });
      const local = [
        { name: "llama", type: "local GGUF (node-llama-cpp)", structured: "grammar", limits: "1 at once" },
        { name: "mock", type: "scripted replies from a file", structured: "as scripted", limits: "-" },
      ];
      if (options.json) {
        io.stdout.write(
          `${JSON.stringify({ schemaVersion: 1, configFile: file ?? null, providers, local, roles: config.roles }, null, 2)}\n`,
        );
        return;
      }
      io.stdout.write(`config: ${file ?? "(none found; built-in defaults)"}\n\n`);
      const table = compactTable(["provider", "type", "base URL", "key", "structured", "limits"]);
      for (const p of providers) {
        const key = p.keyVariable ? `${p.keyVariable} ${p.keySet ? "(set)" : "(not set)"}` : "none needed";
        table.push([
          p.name,
          p.type,
          p.baseURL ?? "default",
          key,
          p.structured,
          `${p.concurrency} at once${p.rpm ? `, ${p.rpm}/min` : ""}`,
        ]);
      }
      for (const p of local) table.push([p.name, p.type, "-", "-", p.structured, p.limits]);
      io.stdout.write(`${table.toString()}\n\n`);
      const roles = Object.entries(config.roles);
      io.stdout.write(
        roles.length
          ? `roles:\n${roles.map(([role, model]) => `  ${role.padEnd(12)} ${model}`).join("\n")}\n`
          : "roles: none configured (set roles.default in terrarium.config.yaml)\n",
      );
    });

  models
    .command("check")
    .argument("<model>", "provider:model, e.g. openai:gpt-4.1-mini, local:qwen2.5:7b, llama:./model.gguf")
    .description("make one structured-output call and report how it went")
    .option("--json", "print the report as JSON")
    .option("--timeout <ms>", "time limit of the call", (value) => Number.parseInt(value, 10), 60_000)
    .addHelpText(
      "after",
      "\nExamples:\n  terrarium models check openai:gpt-4.1-mini\n  terrarium models check mock:examples/models/replies.yaml --json\n",
    )
    .action(async (model: string, options: { json?: boolean; timeout: number }, command: Command) => {
      const { config } = loadConfig(configPath(command));
      const { provider } = parseModelName(model);
      const hub = new Models({ config, cacheMode: "off" });
      try {
        const result = await hub.generateObject<{ ok: boolean; sum: number }>({
          model,
          schema: CHECK_SCHEMA,
          schemaName: "check",
          temperature: 0,
          seed: 1,
          timeoutMs: options.timeout,
          messages: [
            { role: "system", content: "You answer with JSON only." },
            { role: "user", content: 'Add 2 and 3. Answer with {"ok": true, "sum": <the sum>}.' },
          ],
        });
        const report = {
          schemaVersion: 1,
          model,
          provider,
          ok: true,
          structuredMode: result.structuredMode,
          repairs: result.repairs,
          answer: result.object,
          correct: result.object.sum === 5,
          latencyMs: Math.round(result.latencyMs),
          inputTokens: result.usage.inputTokens,
          outputTokens: result.usage.outputTokens,
          costUsd: result.costUsd,
          attempts: result.attempts,
        };
        if (options.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
        else {
          io.stdout.write(
            `${[
              `model       ${model} (provider ${provider})`,
              `structured  ${report.structuredMode}${report.repairs ? ` after ${report.repairs} repair(s)` : ""}`,
              `answer      ${JSON.stringify(report.answer)}${report.correct ? "" : " (valid, but the sum is wrong)"}`,
              `latency     ${report.latencyMs} ms over ${report.attempts} attempt(s)`,
              `tokens      ${report.inputTokens} in, ${report.outputTokens} out, $${report.costUsd.toFixed(6)}`,
            ].join("\n")}\n`,
          );
        }
      } catch (error) {
        if (!(error instanceof TerrariumError)) throw error;
        if (options.json) {
          io.stdout.write(
            `${JSON.stringify({ schemaVersion: 1, model, provider, ok: false, error: error.toJSON() }, null, 2)}\n`,
          );
        }
        io.stderr.write(`terrarium: ${error.describe()}\n`);
        setExitCode(1);
      } finally {
        await hub.close();
      }
    });
}

function configPath(command: Command): { path?: string } {
  const path = command.optsWithGlobals().config as string | undefined;
  return path ? { path } : {};
}
