import { writeFileSync } from "node:fs";
import type { Command } from "commander";
import type { Catalog } from "../../catalog/catalog.js";
import { exportOpenApi } from "../../catalog/export-openapi.js";
import { describeNote } from "../../catalog/report.js";
import type { Tool, ToolFormat } from "../../catalog/tool.js";
import { TOOL_FORMATS } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import { loadToolSources } from "../../mcp/sources.js";
import { loadConfig } from "../../models/config.js";
import { Models } from "../../models/hub.js";
import { convertToOpenApi, describeToolsInFile } from "../../task/converter.js";
import { CallValidator } from "../../validate/validator.js";
import { type CliIo, collect, compactTable, parseEffectOverrides } from "../io.js";

interface SourceOptions {
  effect?: string[];
  as?: ToolFormat;
  strict?: boolean;
}

export function registerToolsCommands(program: Command, io: CliIo): void {
  const tools = program
    .command("tools")
    .description("read tool definitions (OpenAPI 3.0/3.1, OpenAI, Anthropic, MCP, BFCL) and convert them");

  const addSourceOptions = (command: Command) =>
    command
      .option(
        "--effect <tool=effect>",
        "set a tool's effect by hand: read, write or unknown (repeatable)",
        collect,
      )
      .option(
        "--as <format>",
        `read every definition as this format instead of detecting it (${TOOL_FORMATS.join(", ")})`,
      )
      .option("--strict", "fail when any operation cannot be read, instead of skipping and reporting it");

  addSourceOptions(
    tools
      .command("list")
      .argument(
        "<source...>",
        "tool definition files (JSON, JSON Lines or YAML), an environment (bank, a module, a descriptor), or mcp+stdio:<command> / mcp+http:<url>",
      )
      .option("--json", "print the canonical tools and the load report (skips, warnings) as JSON")
      .option("--warnings", "print every warning (normalised schemas, translated or dropped patterns)")
      .description(
        "list the tools in one or more sources (OpenAPI 3.x, Swagger 2.0 and function-style files)",
      )
      .addHelpText(
        "after",
        "\nOperations that cannot be read are skipped and listed at the end (use --strict to fail instead)." +
          "\n\nExamples:\n  terrarium tools list petstore.openapi.yaml\n  terrarium tools list slack.swagger.json --warnings\n  terrarium tools list bank\n" +
          "  terrarium tools list tools.json --json > canonical.json\n",
      ),
  ).action(async (sources: string[], options: SourceOptions & { json?: boolean; warnings?: boolean }) => {
    const catalog = await loadFromSources(sources, options);
    new CallValidator().prepare(catalog); // surface schemas Ajv cannot compile now, not at the first call
    if (options.json) {
      io.stdout.write(
        `${JSON.stringify({ ...catalog.toJSON(), report: catalog.report.toJSON() }, null, 2)}\n`,
      );
    } else {
      io.stdout.write(
        `${toolTable(catalog.tools, io.stdout.isTTY ? (process.stdout.columns ?? 120) : 120)}\n`,
      );
    }
    io.stderr.write(describeLoad(catalog, { warnings: options.warnings === true }));
  });

  addSourceOptions(
    tools
      .command("export")
      .argument("<source...>", "tool definition files")
      .option("--format <format>", "output format (openapi: OpenAPI 3.1 in Gecko's shape)", "openapi")
      .option("--title <title>", "info.title of the exported document")
      .description("write the tools of the sources as one OpenAPI 3.1 document on stdout")
      .addHelpText(
        "after",
        "\nExample:\n  terrarium tools export tools.json mcp-tools.json --format openapi > tools.openapi.json\n",
      ),
  ).action(async (sources: string[], options: SourceOptions & { format: string; title?: string }) => {
    if (options.format !== "openapi") {
      throw new TerrariumError("INVALID_INPUT", `--format "${options.format}" is not supported; use openapi`);
    }
    const catalog = await loadFromSources(sources, options);
    new CallValidator().prepare(catalog);
    const document = exportOpenApi(catalog, options.title ? { title: options.title } : {});
    io.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  });
  registerConvertCommand(tools, io);
}

export function registerConvertCommand(tools: Command, io: CliIo): void {
  tools
    .command("convert")
    .argument(
      "<file>",
      "a Python source file (its public functions and methods) or a text file describing tools",
    )
    .option("--out <file>", "write the OpenAPI 3.1 document here instead of stdout")
    .option("--model <model>", "model that writes the schemas (default: roles.converter or roles.default)")
    .option("--title <title>", "info.title of the document")
    .description(
      "write OpenAPI 3.1 operations for tools described in code or text, with a model (checked and repaired)",
    )
    .addHelpText(
      "after",
      "\nExample:\n  terrarium tools convert my_tools.py --out tools.openapi.json --model openai:gpt-4.1-mini\n",
    )
    .action(
      async (file: string, options: { out?: string; model?: string; title?: string }, command: Command) => {
        const configPath = command.optsWithGlobals().config as string | undefined;
        const { config } = loadConfig(configPath ? { path: configPath } : {});
        const models = new Models({
          config: options.model
            ? { ...config, roles: { ...config.roles, converter: options.model } }
            : config,
          modelFlags: ["--model <provider:model>"],
        });
        try {
          const descriptions = describeToolsInFile(file);
          io.stderr.write(
            `converting ${descriptions.length} tool description${descriptions.length === 1 ? "" : "s"}…\n`,
          );
          const document = await convertToOpenApi(descriptions, {
            models,
            ...(options.title ? { title: options.title } : {}),
          });
          const text = `${JSON.stringify(document, null, 2)}\n`;
          if (options.out) writeFileSync(options.out, text);
          else io.stdout.write(text);
          const usage = models.ledger.totals;
          io.stderr.write(
            `${Object.keys(document.paths as object).length} operations; ${usage.calls} model calls, $${usage.costUsd.toFixed(4)}\n`,
          );
        } finally {
          await models.close();
        }
      },
    );
}

export async function loadFromSources(sources: string[], options: SourceOptions) {
  if (options.as !== undefined && !TOOL_FORMATS.includes(options.as)) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `--as "${options.as}" is not a format; use one of ${TOOL_FORMATS.join(", ")}`,
    );
  }
  const effects = parseEffectOverrides(options.effect);
  return loadToolSources(sources, {
    ...(options.as ? { format: options.as } : {}),
    ...(effects ? { effects } : {}),
    ...(options.strict ? { strict: true } : {}),
  });
}

/** How many skips are listed one per line under the summary; all of them are in `--json`. */
const LISTED_SKIPS = 20;

/**
 * The load summary for stderr: `1,204 tools; 19 operations skipped: …; 312 warnings (…)`, then each skip
 * (and, when asked, each warning) on its own line. `serve` and `gats` print the same at start-up.
 */
export function describeLoad(catalog: Catalog, options: { warnings?: boolean } = {}): string {
  const lines = [catalog.summary()];
  const { skipped, warnings } = catalog.report;
  for (const note of skipped.slice(0, LISTED_SKIPS)) lines.push(`  skipped ${describeNote(note)}`);
  if (skipped.length > LISTED_SKIPS)
    lines.push(`  … ${skipped.length - LISTED_SKIPS} more skips (see --json)`);
  if (options.warnings) for (const note of warnings) lines.push(`  warning ${describeNote(note)}`);
  else if (warnings.length > 0) lines.push("  (--warnings lists the warnings)");
  return `${lines.join("\n")}\n`;
}

function toolTable(tools: Tool[], width: number): string {
  const descriptionWidth = Math.max(20, width - 70);
  const table = compactTable(["tool", "effect", "format", "args", "description"]);
  for (const tool of tools) {
    const properties = Object.keys((tool.inputSchema.properties as object | undefined) ?? {});
    const required = (tool.inputSchema.required as string[] | undefined)?.length ?? 0;
    const description = tool.description.replace(/\s+/g, " ").trim();
    table.push([
      tool.name,
      tool.effect + (tool.effectSource === "inferred" && tool.effect !== "unknown" ? "*" : ""),
      tool.origin.format,
      `${properties.length} (${required} req)`,
      description.length > descriptionWidth ? `${description.slice(0, descriptionWidth - 1)}…` : description,
    ]);
  }
  return `${table.toString()}\n* inferred from the HTTP method or the tool name; set it with --effect <tool>=read|write`;
}
