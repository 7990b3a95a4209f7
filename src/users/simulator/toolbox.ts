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

/** What a user-tool kind does with a declaration: what it checks before any run, what it gives a run. */
interface UserToolKind {
  /** One line for the docs table and messages. */
  summary: string;
  /** Refuses a declaration of this kind that cannot work (CONFIG_INVALID, saying where), before any run. */
  check(scenario: Scenario, declaration: UserToolDeclaration, where: string): void;
  /** The tools this declaration gives one run. */
  create(run: {
    scenario: Scenario;
    declaration: UserToolDeclaration;
    where: string;
    seed: string;
    factory: UserToolFactory;
  }): UserTool[] | Promise<UserTool[]>;
}

/**
 * Every tool kind a scenario may declare, in one place: the factory checks and builds through it, and
 * `USER_TOOL_KINDS` (messages, docs/users.md's table, which a test holds to it) lists it. A declaration
 * without `kind` is a mocked tool. Adding a kind is one entry here and one row in the docs.
 */
const KINDS = {
  retrieval: {
    summary: "BM25 over the scenario's knowledge (the declaration's name and description are used)",
    check: () => {},
    create: ({ scenario, declaration }) => [
      createRetrievalTool(new KnowledgeBase(knowledgeDocuments(scenario)), {
        name: declaration.name,
        ...(declaration.description ? { description: declaration.description } : {}),
      }),
    ],
  },
  mock: {
    summary: "declared outcomes, chosen from the run's seed and the arguments (the default)",
    check: (_scenario, declaration) => {
      createMockedTool(mockedDeclaration(declaration), { seed: "check" });
    },
    create: ({ declaration, seed }) => [createMockedTool(mockedDeclaration(declaration), { seed })],
  },
  memory: {
    summary: "remember_preference / recall_preference (config = initial preferences)",
    check: () => {},
    create: ({ declaration }) =>
      createPreferenceTools(new PreferenceMemory(isRecord(declaration.config) ? declaration.config : {})),
  },
  web: {
    summary: "web_search / read_page over a local folder (config: {folder}), offline",
    check: (scenario, declaration, where) => {
      webFolder(scenario, declaration, where);
    },
    create: ({ scenario, declaration, where }) => {
      const folder = webFolder(scenario, declaration, where);
      return createWebTools({
        search: new LocalCorpusSearch(folder),
        reader: new LocalPageReader({ root: folder }),
      });
    },
  },
  environment: {
    summary:
      "every tool of a terrarium environment or tool files (config: {environment: name} or {sources: [...]}), one fresh session per run",
    check: (scenario, declaration, where) => {
      environmentSources(scenario, declaration, where);
    },
    create: ({ scenario, declaration, where, factory }) =>
      factory.environmentTools(environmentSources(scenario, declaration, where)),
  },
} satisfies Record<string, UserToolKind>;

export type UserToolKindName = keyof typeof KINDS;

/** The tool kinds a scenario may declare. A declaration without `kind` is a mocked tool. */
export const USER_TOOL_KINDS: readonly UserToolKindName[] = Object.freeze(
  Object.keys(KINDS) as UserToolKindName[],
);

/** What each kind does, in a line (for docs and messages). */
export function userToolKindSummaries(): Record<UserToolKindName, string> {
  const summaries = {} as Record<UserToolKindName, string>;
  for (const kind of USER_TOOL_KINDS) summaries[kind] = KINDS[kind].summary;
  return summaries;
}

/** The kind of a declaration, refused (CONFIG_INVALID, saying where) when there is no such kind. */
function kindOf(declaration: UserToolDeclaration, where: string): UserToolKind {
  const kind: unknown = declaration.kind ?? "mock";
  if (typeof kind !== "string" || !Object.hasOwn(KINDS, kind))
    throw new TerrariumError(
      "CONFIG_INVALID",
      `${where}: unknown kind ${JSON.stringify(kind)}; use one of ${USER_TOOL_KINDS.join(", ")}`,
    );
  return KINDS[kind as UserToolKindName];
}

/**
 * Makes the user's toolbox for each run from the scenario's declarations, through the kinds above.
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
        kindOf(declaration, where).check(scenario, declaration, where);
      }
    }
  }

  /** The toolbox of one run. */
  async toolbox(scenario: Scenario, seed: string): Promise<UserToolbox> {
    const tools: UserTool[] = [];
    for (const [index, declaration] of scenario.userTools.entries()) {
      const where = `scenario "${scenario.id}", user_tools/${index} (${declaration.name})`;
      const kind = kindOf(declaration, where);
      tools.push(...(await kind.create({ scenario, declaration, where, seed, factory: this })));
    }
    return new UserToolbox(tools);
  }

  async close(): Promise<void> {
    for (const engine of this.engines.values()) await (await engine.catch(() => undefined))?.close();
    this.engines.clear();
  }

  /** The tools of an environment (or tool files) on a fresh session of an engine shared per source list. */
  async environmentTools(sources: string[]): Promise<UserTool[]> {
    const key = JSON.stringify(sources);
    let engine = this.engines.get(key);
    if (!engine) {
      const { buildEngine } = await import("../../sim/build-engine.js");
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
