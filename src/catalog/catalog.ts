import { distance } from "fastest-levenshtein";
import { TerrariumError } from "../core/errors.js";
import { loadToolFile, type ToolsFromDocumentOptions, toolsFromDocument } from "./load.js";
import { TOOL_EFFECTS, type Tool, type ToolEffect } from "./tool.js";

export const CATALOG_SCHEMA_VERSION = 1;

/** A set of tools with unique names: what an agent may call. */
export class Catalog {
  private readonly byName = new Map<string, Tool>();

  constructor(tools: Iterable<Tool> = []) {
    for (const tool of tools) this.add(tool);
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
    );
  }

  toJSON(): { schemaVersion: number; tools: Tool[] } {
    return { schemaVersion: CATALOG_SCHEMA_VERSION, tools: this.tools };
  }

  static fromDocument(document: unknown, options?: ToolsFromDocumentOptions): Catalog {
    return new Catalog(toolsFromDocument(document, options));
  }
}

function normaliseName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, "");
}

export interface LoadCatalogOptions extends Omit<ToolsFromDocumentOptions, "file"> {
  effects?: Record<string, ToolEffect>;
}

/** Loads one catalog from several files; tool names must be unique across all of them. */
export function loadCatalog(files: string[], options: LoadCatalogOptions = {}): Catalog {
  const catalog = new Catalog(files.flatMap((file) => loadToolFile(file, options)));
  return options.effects ? catalog.withEffects(options.effects) : catalog;
}
