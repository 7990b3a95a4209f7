import { distance } from "fastest-levenshtein";
import { TerrariumError } from "../core/errors.js";
import { loadToolFile, type ToolsFromDocumentOptions, toolsFromDocument } from "./load.js";
import { DEFS_PREFIX } from "./refs.js";
import { type CatalogNote, describeNote, LoadReport, summariseLoad } from "./report.js";
import { SharedDefinitions } from "./shared-definitions.js";
import { type JsonObjectSchema, TOOL_EFFECTS, type Tool, type ToolEffect } from "./tool.js";

export const CATALOG_SCHEMA_VERSION = 1;

/** A set of tools with unique names: what an agent may call. */
export class Catalog {
  private readonly byName = new Map<string, Tool>();
  private listing: ReturnType<Catalog["toJSON"]> | undefined;
  /** What loading noticed: normalisations, translations and skipped operations. */
  readonly report: LoadReport;

  constructor(tools: Iterable<Tool> = [], report: LoadReport = new LoadReport()) {
    this.report = report;
    for (const tool of tools) this.add(tool);
  }

  /** `1,204 tools; 19 operations skipped: …; 312 warnings (…)`. */
  summary(): string {
    return summariseLoad(this.size, this.report);
  }

  add(tool: Tool): void {
    const existing = this.byName.get(tool.name);
    if (existing) {
      throw new TerrariumError("DUPLICATE_TOOL", `two tools are named "${tool.name}"`, {
        where:
          tool.origin.file || tool.origin.pointer
            ? { file: tool.origin.file, pointer: tool.origin.pointer }
            : {},
        details: { first: existing.origin, second: tool.origin },
      });
    }
    this.byName.set(tool.name, tool);
    this.listing = undefined;
  }

  get(name: string): Tool | undefined {
    return this.byName.get(name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  get size(): number {
    return this.byName.size;
  }

  get tools(): Tool[] {
    return [...this.byName.values()];
  }

  get names(): string[] {
    return [...this.byName.keys()];
  }

  /** Up to `limit` tool names closest to `name` (edit distance on normalised names), for "did you mean". */
  closest(name: string, limit = 3): string[] {
    const wanted = normaliseName(name);
    return this.names
      .map((candidate) => {
        const normalised = normaliseName(candidate);
        const contains = normalised.includes(wanted) || wanted.includes(normalised) ? -0.5 : 0;
        return {
          candidate,
          score: distance(wanted, normalised) / Math.max(wanted.length, normalised.length, 1) + contains,
        };
      })
      .filter(({ score }) => score <= 0.6)
      .sort((a, b) => a.score - b.score || a.candidate.localeCompare(b.candidate))
      .slice(0, limit)
      .map(({ candidate }) => candidate);
  }

  /** A copy with some tools' effects set by hand (`{"send_email": "write"}`). */
  withEffects(overrides: Record<string, ToolEffect>): Catalog {
    for (const [name, effect] of Object.entries(overrides)) {
      if (!this.has(name)) {
        throw new TerrariumError(
          "UNKNOWN_TOOL",
          `cannot set the effect of "${name}": there is no such tool`,
          {
            details: { closest: this.closest(name) },
          },
        );
      }
      if (!TOOL_EFFECTS.includes(effect)) {
        throw new TerrariumError(
          "INVALID_INPUT",
          `effect of "${name}" must be one of ${TOOL_EFFECTS.join(", ")}`,
        );
      }
    }
    return new Catalog(
      this.tools.map((tool) =>
        overrides[tool.name] === undefined
          ? tool
          : { ...tool, effect: overrides[tool.name] as ToolEffect, effectSource: "declared" },
      ),
      this.report,
    );
  }

  /**
   * The canonical listing. Shared definitions (a document's large or recursive schemas) are written once,
   * under the listing's own `$defs`, and every tool's `$ref`s point there ("#/$defs/<name>" read against
   * the listing), instead of each tool carrying every definition it reaches. Computed once.
   */
  toJSON(): { schemaVersion: number; tools: Tool[]; $defs?: Record<string, unknown> } {
    if (this.listing) return this.listing;
    const shared = new SharedDefinitions(DEFS_PREFIX);
    const tools = this.tools.map((tool) => ({
      ...tool,
      inputSchema: shared.hoist(tool.inputSchema) as JsonObjectSchema,
      ...(tool.outputSchema !== undefined ? { outputSchema: shared.hoist(tool.outputSchema) } : {}),
    }));
    this.listing = {
      schemaVersion: CATALOG_SCHEMA_VERSION,
      tools,
      ...(shared.size > 0 ? { $defs: shared.schemas } : {}),
    };
    return this.listing;
  }

  /** The tools of one parsed document (OpenAPI 3 or function-style; strict unless a report is given). */
  static fromDocument(document: unknown, options?: ToolsFromDocumentOptions): Catalog {
    return new Catalog(toolsFromDocument(document, options), options?.report);
  }
}

function normaliseName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, "");
}

export interface LoadCatalogOptions extends Omit<ToolsFromDocumentOptions, "file" | "report"> {
  effects?: Record<string, ToolEffect>;
  /** Fail (CATALOG_INCOMPLETE) when any operation had to be skipped, instead of loading the rest. */
  strict?: boolean;
}

/**
 * Loads one catalog from several files; tool names must be unique across all of them. An operation or
 * definition that cannot be read is skipped and listed in `catalog.report` (or, with `strict`, fails
 * the load after every file was read, so the error lists all of them).
 */
export async function loadCatalog(files: string[], options: LoadCatalogOptions = {}): Promise<Catalog> {
  const report = new LoadReport();
  const tools: Tool[] = [];
  for (const file of files) tools.push(...(await loadToolFile(file, { format: options.format, report })));
  const catalog = tolerantCatalog(tools, report);
  if (options.strict) assertComplete(report);
  return options.effects ? catalog.withEffects(options.effects) : catalog;
}

/** A catalog of `tools` where a second tool with a taken name is skipped and reported, not an error. */
export function tolerantCatalog(tools: Iterable<Tool>, report: LoadReport): Catalog {
  const catalog = new Catalog([], report);
  for (const tool of tools) {
    const first = catalog.get(tool.name);
    if (!first) {
      catalog.add(tool);
      continue;
    }
    const firstPlace = `${first.origin.file ?? ""}${first.origin.pointer !== undefined ? `#${first.origin.pointer}` : ""}`;
    report.skip({
      code: "DUPLICATE_TOOL",
      message: `two tools are named "${tool.name}" (the first, kept, is at ${firstPlace || "an earlier source"})`,
      ...(tool.origin.file ? { file: tool.origin.file } : {}),
      ...(tool.origin.pointer !== undefined ? { pointer: tool.origin.pointer } : {}),
      tool: tool.name,
    });
  }
  return catalog;
}

/** The strict mode's check: a report with skipped operations becomes one error that lists them. */
export function assertComplete(report: LoadReport): void {
  if (report.skipped.length === 0) return;
  const first = report.skipped[0] as CatalogNote;
  const listed = report.skipped.slice(0, 20).map(describeNote).join("\n  ");
  const more = report.skipped.length > 20 ? `\n  … and ${report.skipped.length - 20} more` : "";
  throw new TerrariumError(
    "CATALOG_INCOMPLETE",
    `${report.skipped.length} ${report.skipped.length === 1 ? "operation was" : "operations were"} skipped (strict mode):\n  ${listed}${more}`,
    { where: { file: first.file, pointer: first.pointer }, details: { skipped: report.skipped } },
  );
}
