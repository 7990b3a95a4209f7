import { dirname, resolve } from "node:path";
import { TerrariumError } from "../../core/errors.js";
import type { Models } from "../../models/hub.js";
import type { Engine } from "../../sim/engine.js";
import type { Scenario, UserToolDeclaration } from "../scenario/index.js";
import { knowledgeDocuments } from "../scenario/index.js";
import {
  adaptTool,
  createMockedTool,
  createPreferenceTools,
  createRetrievalTool,
  createWebTools,
  KnowledgeBase,
  LocalCorpusSearch,
  LocalPageReader,
  type MockedToolDeclaration,
  PreferenceMemory,
  type UserTool,
  UserToolbox,
} from "../tools/index.js";

/** The tool kinds a scenario may declare. A declaration without `kind` is a mocked tool. */
export const USER_TOOL_KINDS = ["retrieval", "mock", "memory", "web", "environment"] as const;

/**
 * Makes the user's toolbox for each run from the scenario's declarations. Kinds:
 * - `retrieval`: BM25 over the scenario's knowledge (the declaration's name and description are used);
 * - `mock` (the default): declared outcomes, chosen from the run's seed and the arguments;
 * - `memory`: `remember_preference` / `recall_preference` (`config` = initial preferences);
 * - `web`: `web_search` / `read_page` over a local folder (`config: {folder}`), offline;
 * - `environment`: every tool of a terrarium environment or tool files (`config: {sources: [...]}` or
 *   `{environment: name}`) as the user's own side of a system, one fresh session per run.
 * Engines for `environment` tools are built once per source list and shared by runs (sessions isolate them).
 */
export class UserToolFactory {
  private readonly engines = new Map<string, Promise<Engine>>();

  constructor(private readonly options: { models?: Models; cwd?: string } = {}) {}

  /** Checks every declaration of the scenarios before any run starts (unknown kind, bad mocked tool…). */
  check(scenarios: readonly Scenario[]): void {
    for (const scenario of scenarios) {
      for (const [index, declaration] of scenario.userTools.entries()) {
        const where = `scenario "${scenario.id}", user_tools/${index} (${declaration.name})`;
        const kind = declaration.kind ?? "mock";
        if (!(USER_TOOL_KINDS as readonly string[]).includes(kind)) {
          throw new TerrariumError(
            "CONFIG_INVALID",
            `${where}: unknown kind "${kind}"; use one of ${USER_TOOL_KINDS.join(", ")}`,
          );
        }
        if (kind === "mock") createMockedTool(mockedDeclaration(declaration), { seed: "check" });
        if (kind === "web") webFolder(scenario, declaration, where);
        if (kind === "environment") environmentSources(scenario, declaration, where);
      }
    }
  }

  /** The toolbox of one run. */
  async toolbox(scenario: Scenario, seed: string): Promise<UserToolbox> {
    const tools: UserTool[] = [];
    for (const [index, declaration] of scenario.userTools.entries()) {
      const where = `scenario "${scenario.id}", user_tools/${index} (${declaration.name})`;
      switch (declaration.kind ?? "mock") {
        case "retrieval":
          tools.push(
            createRetrievalTool(new KnowledgeBase(knowledgeDocuments(scenario)), {
              name: declaration.name,
              ...(declaration.description ? { description: declaration.description } : {}),
            }),
          );
          break;
        case "memory": {
          const initial = isRecord(declaration.config) ? declaration.config : {};
          tools.push(...createPreferenceTools(new PreferenceMemory(initial)));
          break;
        }
        case "web": {
          const folder = webFolder(scenario, declaration, where);
          tools.push(
            ...createWebTools({
              search: new LocalCorpusSearch(folder),
              reader: new LocalPageReader({ root: folder }),
            }),
          );
          break;
        }
        case "environment":
          tools.push(...(await this.environmentTools(environmentSources(scenario, declaration, where))));
          break;
        default:
          tools.push(createMockedTool(mockedDeclaration(declaration), { seed }));
      }
    }
    return new UserToolbox(tools);
  }

  async close(): Promise<void> {
    for (const engine of this.engines.values()) await (await engine.catch(() => undefined))?.close();
    this.engines.clear();
  }

  private async environmentTools(sources: string[]): Promise<UserTool[]> {
    const key = JSON.stringify(sources);
    let engine = this.engines.get(key);
    if (!engine) {
      const { buildEngine } = await import("../../server/start.js");
      engine = buildEngine({
        sources,
        ...(this.options.models ? { models: this.options.models } : {}),
      }).then((built) => built.engine);
      this.engines.set(key, engine);
    }
    const ready = await engine;
    const session = await ready.createSession();
    return ready.catalog.tools.map((tool) =>
      adaptTool(tool, async (args) => {
        const outcome = await ready.call(session.id, { name: tool.name, arguments: args });
        return {
          status: outcome.status,
          data: outcome.status === "ok" ? outcome.observation : (outcome.errors ?? outcome.observation),
          message: outcome.status === "ok" ? `${tool.name} done` : `${tool.name} failed (${outcome.status})`,
        };
      }),
    );
  }
}

function mockedDeclaration(declaration: UserToolDeclaration): MockedToolDeclaration {
  return {
    name: declaration.name,
    description: declaration.description ?? declaration.name,
    parameters: declaration.parameters,
    ...(isRecord(declaration.data) ? { data: declaration.data } : {}),
    ...(declaration.outcomes
      ? { outcomes: declaration.outcomes as unknown as MockedToolDeclaration["outcomes"] }
      : {}),
  };
}

/** A path written in a scenario, relative to the scenario's file (or the working directory). */
function scenarioPath(scenario: Scenario, path: string): string {
  return resolve(scenario.source.file ? dirname(scenario.source.file) : ".", path);
}

function webFolder(scenario: Scenario, declaration: UserToolDeclaration, where: string): string {
  const folder = isRecord(declaration.config) ? declaration.config.folder : undefined;
  if (typeof folder !== "string" || folder === "") {
    throw new TerrariumError("CONFIG_INVALID", `${where}: a web tool needs config: {folder: <local folder>}`);
  }
  return scenarioPath(scenario, folder);
}

/** Environment names as they are; tool files (a path or a file name with an extension) next to the scenario. */
function environmentSources(scenario: Scenario, declaration: UserToolDeclaration, where: string): string[] {
  const config = isRecord(declaration.config) ? declaration.config : {};
  const sources =
    typeof config.environment === "string"
      ? [config.environment]
      : Array.isArray(config.sources) && config.sources.every((s) => typeof s === "string")
        ? (config.sources as string[])
        : undefined;
  if (!sources || sources.length === 0) {
    throw new TerrariumError(
      "CONFIG_INVALID",
      `${where}: an environment tool needs config: {environment: <name>} or {sources: [files…]}`,
    );
  }
  return sources.map((source) =>
    /[\\/]|\.[a-z0-9]+$/i.test(source) ? scenarioPath(scenario, source) : source,
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
