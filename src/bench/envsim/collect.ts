import type { Tool } from "../../catalog/tool.js";
import { createRandom, type Random } from "../../core/random.js";
import type { Environment, EnvironmentInstance, Transition } from "../../envs/types.js";
import type { Models } from "../../models/hub.js";
import type { Message } from "../../models/types.js";
import { ENVSIM_SCHEMA_VERSION, type EnvSimSample } from "./types.js";

/** A transition as an EnvSimBench sample. */
export function toSample(
  environment: Environment,
  taskId: string,
  step: number,
  transition: Transition,
  task?: string,
  seed?: string,
): EnvSimSample {
  const args = (transition.call.arguments ?? {}) as Record<string, unknown>;
  return {
    schemaVersion: ENVSIM_SCHEMA_VERSION,
    id: `${environment.name}/${taskId}/${step}`,
    envId: environment.name,
    taskId,
    ...(task ? { task } : {}),
    step,
    call: { name: transition.call.name, arguments: args },
    observation: transition.observation,
    observationText:
      transition.observationText ??
      (typeof transition.observation === "string"
        ? transition.observation
        : JSON.stringify(transition.observation)),
    before: transition.before,
    after: transition.after,
    changes: transition.envChanges,
    delta: transition.delta,
    success: transition.success,
    argCount: Object.keys(args).length,
    envCode: environment.source.code ?? "",
    envKind: environment.source.kind,
    ...(seed !== undefined ? { seed } : {}),
  };
}

/** Whether instances can start from any state (then every step is reproducible from before + seed). */
function startsFromState(environment: Environment): boolean {
  return environment.source.kind !== "python";
}

/**
 * Runs one step. Environments that start from any state get a fresh instance per step, seeded for that
 * step, so the transition can be repeated exactly from (before, call, seed); others keep one instance.
 */
async function stepOnce(
  environment: Environment,
  live: EnvironmentInstance,
  call: { name: string; arguments?: unknown },
  seed: string,
): Promise<Transition> {
  if (!startsFromState(environment)) return live.step(call);
  const fresh = await environment.create({ state: await live.state(), seed });
  try {
    const transition = await fresh.step(call);
    await live.reset(transition.after);
    return transition;
  } finally {
    await fresh.close();
  }
}

/** What schema-driven exploration reached: per tool, successes and the distinct rejections (guards) seen. */
export interface OutcomeCoverage {
  tools: Record<string, { calls: number; successes: number; rejections: string[] }>;
  /** Tools called at least once with success / at least one distinct rejection, over all tools. */
  toolsSucceeded: number;
  toolsRejected: number;
  toolCount: number;
  /** Distinct (tool, outcome) pairs reached: each success counts once per tool, each rejection message once. */
  outcomes: number;
}

/**
 * Schema-driven exploration with no model: arguments generated from each tool's schema, with strings taken
 * from the current state where a parameter plausibly names an existing entity, so guards and
 * state-changing branches are reached. Step 0 of every trajectory is recorded too (benchmark building drops it).
 */
export async function exploreWithSchemas(
  environment: Environment,
  options: { trajectories: number; steps: number; seed: string | number },
): Promise<{ samples: EnvSimSample[]; coverage: OutcomeCoverage }> {
  const samples: EnvSimSample[] = [];
  const coverage: OutcomeCoverage = {
    tools: {},
    toolsSucceeded: 0,
    toolsRejected: 0,
    toolCount: environment.tools.length,
    outcomes: 0,
  };
  for (const tool of environment.tools)
    coverage.tools[tool.name] = { calls: 0, successes: 0, rejections: [] };
  for (let trajectory = 0; trajectory < options.trajectories; trajectory++) {
    const random = createRandom(`${options.seed}/explore/${trajectory}`);
    const instance = await environment.create({ seed: `${options.seed}/${trajectory}` });
    try {
      for (let step = 0; step < options.steps; step++) {
        const call = randomValidCall(environment.tools, await instance.state(), random);
        const seed = `${options.seed}/${trajectory}/${step}`;
        const transition = await stepOnce(environment, instance, call, seed);
        samples.push(toSample(environment, `schema-${trajectory}`, step, transition, undefined, seed));
        const entry = coverage.tools[call.name] as OutcomeCoverage["tools"][string];
        entry.calls++;
        if (transition.success) entry.successes++;
        else {
          const message = errorMessage(transition.observation);
          if (!entry.rejections.includes(message)) entry.rejections.push(message);
        }
      }
    } finally {
      await instance.close();
    }
  }
  const entries = Object.values(coverage.tools);
  coverage.toolsSucceeded = entries.filter((e) => e.successes > 0).length;
  coverage.toolsRejected = entries.filter((e) => e.rejections.length > 0).length;
  coverage.outcomes = entries.reduce(
    (total, e) => total + (e.successes > 0 ? 1 : 0) + e.rejections.length,
    0,
  );
  return { samples, coverage };
}

/** Replays given call lists (one trajectory each) from the initial state. */
export async function replayCalls(
  environment: Environment,
  trajectories: Array<Array<{ name: string; arguments?: unknown }>>,
  seed: string | number = 0,
): Promise<EnvSimSample[]> {
  const samples: EnvSimSample[] = [];
  for (const [index, calls] of trajectories.entries()) {
    const instance = await environment.create({ seed: `${seed}/${index}` });
    try {
      for (const [step, call] of calls.entries())
        samples.push(toSample(environment, `replay-${index}`, step, await instance.step(call)));
    } finally {
      await instance.close();
    }
  }
  return samples;
}

/**
 * The paper's way: an agent model explores the environment for up to `steps` calls per trajectory, with
 * native tool calling (or emulated, for local models), seeing each call's result.
 */
export async function exploreWithAgent(
  environment: Environment,
  models: Models,
  options: { trajectories: number; steps: number; seed: string | number; role?: string; model?: string },
): Promise<EnvSimSample[]> {
  const samples: EnvSimSample[] = [];
  const tools = environment.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
  }));
  for (let trajectory = 0; trajectory < options.trajectories; trajectory++) {
    const instance: EnvironmentInstance = await environment.create({ seed: `${options.seed}/${trajectory}` });
    const task = `Use this environment the way a real user would (trajectory ${trajectory + 1}): look things up, then change them, including requests that should be refused.`;
    const messages: Message[] = [
      {
        role: "system",
        content: `You are exploring "${environment.name}": ${environment.description}\nMake one or more tool calls per turn. Vary the tools and the arguments.`,
      },
      { role: "user", content: task },
    ];
    let step = 0;
    try {
      while (step < options.steps) {
        const turn = await models.generateWithTools({
          ...(options.model ? { model: options.model } : { role: options.role ?? "explorer" }),
          messages,
          tools,
          temperature: 0.7,
          seed: Number.parseInt(String(options.seed), 10) || 0,
          variant: `${trajectory}/${step}`,
        });
        if (turn.toolCalls.length === 0) break;
        messages.push({ role: "assistant", content: turn.text, toolCalls: turn.toolCalls });
        for (const call of turn.toolCalls) {
          if (step >= options.steps) break;
          const seed = `${options.seed}/${trajectory}/${step}`;
          const transition = await stepOnce(
            environment,
            instance,
            { name: call.name, arguments: call.arguments },
            seed,
          );
          samples.push(toSample(environment, `agent-${trajectory}`, step, transition, task, seed));
          messages.push({
            role: "tool",
            toolCallId: call.id,
            name: call.name,
            content: JSON.stringify(transition.observation),
          });
          step++;
        }
      }
    } finally {
      await instance.close();
    }
  }
  return samples;
}

function errorMessage(observation: unknown): string {
  if (observation && typeof observation === "object" && "error" in observation) {
    const error = (observation as { error: unknown }).error;
    const text = typeof error === "string" ? error : JSON.stringify(error);
    // Keep the rule, not the instance: numbers and quoted names vary from call to call.
    return text
      .replace(/\d+(\.\d+)?/g, "N")
      .replace(/"[^"]*"|'[^']*'/g, "…")
      .slice(0, 120);
  }
  return "failed";
}

/** A schema-valid call whose string values come from the state when the state has candidates. */
export function randomValidCall(
  tools: Tool[],
  state: unknown,
  random: Random,
): { name: string; arguments: Record<string, unknown> } {
  const tool = random.pick(tools);
  const index = indexState(state);
  return {
    name: tool.name,
    arguments: valueFor(tool.inputSchema, index, random, 0, "") as Record<string, unknown>,
  };
}

/** What the state offers as argument values: strings by field name, and record keys by collection name. */
interface StateIndex {
  byField: Map<string, string[]>;
  byCollection: Map<string, string[]>;
  all: string[];
}

function indexState(state: unknown): StateIndex {
  const index: StateIndex = { byField: new Map(), byCollection: new Map(), all: [] };
  const add = (map: Map<string, string[]>, key: string, value: string) => {
    const list = map.get(key) ?? [];
    if (!list.includes(value)) list.push(value);
    map.set(key, list);
  };
  const walk = (value: unknown, key: string, depth: number) => {
    if (depth > 8 || index.all.length > 3000) return;
    if (typeof value === "string" && value.length <= 80) {
      add(index.byField, key.toLowerCase(), value);
      index.all.push(value);
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, key, depth + 1);
    } else if (value && typeof value === "object") {
      for (const [child, member] of Object.entries(value)) {
        // The keys of a map of records (accounts: {ACC-1: {...}}) are the ids of that collection.
        if (member && typeof member === "object" && !Array.isArray(member))
          add(index.byCollection, key.toLowerCase(), child);
        walk(member, child, depth + 1);
      }
    }
  };
  walk(state, "", 0);
  return index;
}

/** Values a parameter plausibly takes: the same field elsewhere in the state, or the keys of its collection. */
function candidatesFor(name: string, index: StateIndex): string[] {
  const lower = name.toLowerCase();
  const sameField = index.byField.get(lower);
  if (sameField?.length) return sameField;
  const stem = lower
    .replace(/(_id|id|_ids|ids|_name|_key|_code)$/, "")
    .replace(/^(from|to|source|target|new|old)_/, "");
  if (stem) {
    for (const [collection, keys] of index.byCollection) {
      if (
        collection === stem ||
        collection === `${stem}s` ||
        collection === `${stem}es` ||
        (stem.length > 3 && collection.includes(stem))
      )
        return keys;
    }
  }
  return index.all;
}

function valueFor(
  schema: Record<string, unknown>,
  index: StateIndex,
  random: Random,
  depth: number,
  name: string,
): unknown {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return random.pick(schema.enum);
  if ("const" in schema) return schema.const;
  const type = Array.isArray(schema.type)
    ? random.pick((schema.type as string[]).filter((t) => t !== "null"))
    : schema.type;
  switch (type) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(properties)) {
        if (!required.has(name) && random.next() < 0.5) continue;
        if (depth < 4) out[name] = valueFor(property, index, random, depth + 1, name);
      }
      return out;
    }
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      const max = typeof schema.maxItems === "number" ? Math.min(schema.maxItems, min + 3) : min + 2;
      return Array.from({ length: random.int(min, max) }, () =>
        valueFor((schema.items ?? {}) as Record<string, unknown>, index, random, depth + 1, name),
      );
    }
    case "integer": {
      const min =
        typeof schema.minimum === "number"
          ? schema.minimum
          : typeof schema.exclusiveMinimum === "number"
            ? schema.exclusiveMinimum + 1
            : 0;
      const max = typeof schema.maximum === "number" ? schema.maximum : min + 10;
      return random.int(Math.ceil(min), Math.floor(Math.max(min, max)));
    }
    case "number": {
      const min =
        typeof schema.minimum === "number"
          ? schema.minimum
          : typeof schema.exclusiveMinimum === "number"
            ? schema.exclusiveMinimum + 0.01
            : 0.5;
      const max = typeof schema.maximum === "number" ? schema.maximum : min + 200;
      return Math.round((min + random.next() * (max - min)) * 100) / 100;
    }
    case "boolean":
      return random.next() < 0.5;
    default: {
      if (schema.format === "date") return `2025-0${random.int(1, 9)}-${String(random.int(10, 28))}`;
      if (schema.format === "date-time")
        return `2025-0${random.int(1, 9)}-${String(random.int(10, 28))}T1${random.int(0, 9)}:00:00Z`;
      // Mostly values the state already holds for this kind of parameter, sometimes a fresh word.
      const candidates = candidatesFor(name, index);
      const fromState =
        candidates.length > 0 && random.next() < 0.85 ? random.pick(candidates) : `new-${random.int(1, 999)}`;
      return typeof schema.maxLength === "number" ? fromState.slice(0, schema.maxLength) : fromState;
    }
  }
}
