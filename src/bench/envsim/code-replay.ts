import { hashJson, jsonEqual } from "../../core/canonical-json.js";
import { TerrariumError } from "../../core/errors.js";
import { diffJson } from "../../core/json-diff.js";
import { isReplayingEnvironment, type SeededInstance } from "../../envs/python/environment.js";
import type { Environment, EnvironmentInstance, Transition } from "../../envs/types.js";
import { instanceStepSeed } from "./collect.js";
import { environmentOf } from "./sample-store.js";
import type { EnvSimPrediction, EnvSimSample, PrefixCall } from "./types.js";

/**
 * The `code` simulator of EnvSimBench: the environment itself predicts each sample.
 *
 * An environment that starts from any state (TypeScript, QuickJS) gets a fresh instance at the sample's
 * before-state with the seed its step ran under. A Python instance holds more than its state (private
 * attributes, such as a file system's current directory, and classes like BFCL's backends can only be
 * built from their own scenario, not from a state), so it is rebuilt by replaying the sample's `prefix`
 * (its trajectory's earlier calls, with their seeds) on a fresh instance, and the state reached must be
 * the sample's before-state. Instances are kept by the prefix they stand at: once a sample is predicted,
 * its instance stands at the next sample's prefix, so a trajectory's samples cost one replay in all, not
 * one per sample. A sample whose prefix another worker is reaching waits for it instead of replaying.
 */
export class CodePredictor {
  /** Instances not in use, by prefix key, oldest first (the first to be closed). */
  private readonly idle = new Map<string, EnvironmentInstance>();
  /** Prefix keys an instance is being stepped to, settled when it is idle (or lost). */
  private readonly pending = new Map<string, Promise<void>>();
  /** Instances being closed (awaited by `close`). */
  private readonly closing = new Set<Promise<void>>();
  private readonly maxIdle: number;

  /** @param options.maxIdle instances kept between samples (each Python one is a process, ~16 MB). */
  constructor(options: { maxIdle?: number } = {}) {
    this.maxIdle = Math.max(1, options.maxIdle ?? 16);
  }

  async predict(sample: EnvSimSample, environment: Environment): Promise<EnvSimPrediction> {
    if (!isReplayingEnvironment(environment)) return this.fromState(sample, environment);
    const prefix = prefixOf(sample);
    if (!prefix) {
      try {
        return await this.fromState(sample, environment);
      } catch (error) {
        throw new TerrariumError(
          error instanceof TerrariumError ? error.code : "INVALID_INPUT",
          `${(error as Error).message}. The sample does not record the calls that led to its before-state ` +
            `(collected before terrarium kept them, or not by envsim collect), so ${environment.name} could ` +
            `only be built from the state: collect it again to score it with the code simulator`,
          { cause: error },
        );
      }
    }
    return this.byReplay(sample, environment, prefix);
  }

  /** Closes the instances kept. */
  async close(): Promise<void> {
    await Promise.all([...this.pending.values()]);
    const instances = [...this.idle.values()];
    this.idle.clear();
    for (const instance of instances) this.retire(instance);
    await Promise.all([...this.closing]);
  }

  private retire(instance: EnvironmentInstance): void {
    const closed = instance.close().catch(() => undefined);
    this.closing.add(closed);
    void closed.then(() => this.closing.delete(closed));
  }

  private async fromState(sample: EnvSimSample, environment: Environment): Promise<EnvSimPrediction> {
    const instance = await environment.create({
      state: sample.before,
      ...(sample.seed !== undefined ? { seed: sample.seed } : {}),
    });
    try {
      return toPrediction(sample, await instance.step(sample.call));
    } finally {
      await instance.close();
    }
  }

  private async byReplay(
    sample: EnvSimSample,
    environment: Environment,
    prefix: PrefixCall[],
  ): Promise<EnvSimPrediction> {
    const keys = prefixKeys(environmentOf(sample), prefix);
    const found = await this.take(keys);
    let instance: EnvironmentInstance | undefined = found?.instance;
    let at = found?.length ?? 0;
    try {
      instance ??= await environment.create();
      for (; at < prefix.length; at++) await stepSeeded(instance, prefix[at] as PrefixCall);
      const reached = await instance.state();
      if (!jsonEqual(reached, sample.before)) {
        throw new TerrariumError(
          "INVALID_INPUT",
          `replaying the ${prefix.length} earlier calls of the sample's trajectory on a fresh ${environment.name} ` +
            `does not give its before-state (${difference(sample.before, reached)}): was ${environment.name} ` +
            "changed since the sample was collected, or is it not deterministic under a seed?",
        );
      }
      // The sample's own call, as the next sample's prefix holds it: its instance then stands there.
      const call = {
        ...sample.call,
        ...(sample.seed !== undefined ? { seed: sample.seed } : {}),
      };
      const next = nextKey(keys[prefix.length] as string, call);
      const settle = this.reserve(next);
      try {
        const transition = await stepSeeded(instance, call);
        this.keep(next, instance);
        instance = undefined;
        return toPrediction(sample, transition);
      } finally {
        settle();
      }
    } finally {
      if (instance) this.retire(instance);
    }
  }

  /**
   * The instance standing at the longest prefix of `keys` that is kept (taken out of the cache), waiting
   * first for a longer one in the making; undefined when none is kept.
   */
  private async take(keys: string[]): Promise<{ instance: EnvironmentInstance; length: number } | undefined> {
    for (;;) {
      let best = -1;
      for (let length = keys.length - 1; length >= 0; length--)
        if (this.idle.has(keys[length] as string)) {
          best = length;
          break;
        }
      let longer: Promise<void> | undefined;
      for (let length = keys.length - 1; length > best && !longer; length--)
        longer = this.pending.get(keys[length] as string);
      if (longer) {
        await longer;
        continue;
      }
      if (best < 0) return undefined;
      const key = keys[best] as string;
      const instance = this.idle.get(key) as EnvironmentInstance;
      this.idle.delete(key);
      return { instance, length: best };
    }
  }

  /** Marks a prefix as being reached; the returned function settles it. */
  private reserve(key: string): () => void {
    let settle!: () => void;
    const promise = new Promise<void>((resolve) => {
      settle = resolve;
    });
    // Two samples reaching the same prefix (duplicates): the later one is waited for, the earlier one's
    // entry is simply replaced; a settled entry never stays (a waiter would loop on it).
    this.pending.set(key, promise);
    return () => {
      if (this.pending.get(key) === promise) this.pending.delete(key);
      settle();
    };
  }

  private keep(key: string, instance: EnvironmentInstance): void {
    const existing = this.idle.get(key);
    if (existing) {
      this.idle.delete(key);
      this.retire(existing);
    }
    this.idle.set(key, instance);
    while (this.idle.size > this.maxIdle) {
      const [oldest, evicted] = this.idle.entries().next().value as [string, EnvironmentInstance];
      this.idle.delete(oldest);
      this.retire(evicted);
    }
  }
}

/** The sample's prefix, checked; undefined when it has none (samples from before it was recorded). */
function prefixOf(sample: EnvSimSample): PrefixCall[] | undefined {
  const prefix = (sample as { prefix?: unknown }).prefix;
  if (prefix === undefined) return undefined;
  const bad = (what: string) =>
    new TerrariumError("INVALID_INPUT", `sample ${sample.id}: its prefix ${what}`, {
      details: { sample: sample.id },
    });
  if (!Array.isArray(prefix)) throw bad("is not a list of calls");
  for (const [index, call] of prefix.entries()) {
    const c = call as Partial<PrefixCall> | null;
    if (c === null || typeof c !== "object" || typeof c.name !== "string")
      throw bad(`has no call name at ${index}`);
    if (c.arguments !== undefined && (typeof c.arguments !== "object" || c.arguments === null))
      throw bad(`has arguments that are not an object at ${index}`);
    if (c.seed !== undefined && typeof c.seed !== "string")
      throw bad(`has a seed that is not text at ${index}`);
  }
  if (prefix.length !== sample.step - 1)
    throw bad(
      `holds ${prefix.length} calls, but the sample is step ${sample.step} (it should hold ${sample.step - 1})`,
    );
  return prefix as PrefixCall[];
}

/** Keys of the prefixes of `calls` (index n: the first n calls), chained so each costs one hash. */
function prefixKeys(reference: string, calls: PrefixCall[]): string[] {
  const keys = [hashJson({ environment: reference })];
  for (const call of calls) keys.push(nextKey(keys[keys.length - 1] as string, call));
  return keys;
}

function nextKey(key: string, call: { name: string; arguments?: unknown; seed?: string }): string {
  return hashJson([key, call.name, call.arguments ?? {}, call.seed ?? null]);
}

/** A step under the seed collection ran it with (a Python instance's first step after `seed`). */
function stepSeeded(
  instance: EnvironmentInstance,
  call: { name: string; arguments?: unknown; seed?: string },
): Promise<Transition> {
  const step = { name: call.name, arguments: call.arguments ?? {} };
  return call.seed === undefined
    ? instance.step(step)
    : (instance as SeededInstance).step(step, { seed: instanceStepSeed(call.seed) });
}

function toPrediction(sample: EnvSimSample, transition: Transition): EnvSimPrediction {
  const observation =
    transition.observationText ??
    (typeof transition.observation === "string"
      ? transition.observation
      : JSON.stringify(transition.observation));
  const changes = transition.envChanges.map(({ path, type, after }) => ({
    path,
    type,
    ...(type === "removed" ? {} : { after }),
  }));
  return { sampleId: sample.id, observation, changes };
}

/** Where two states first differ, for messages. */
function difference(expected: unknown, reached: unknown): string {
  const change = diffJson(expected, reached)[0];
  if (!change) return "the states differ";
  const at = change.path === "" ? "the root" : change.path;
  const text = (value: unknown) => {
    const json = JSON.stringify(value) ?? String(value);
    return json.length > 60 ? `${json.slice(0, 57)}...` : json;
  };
  if (change.op === "add") return `the replay has ${at}, which the before-state lacks`;
  if (change.op === "remove") return `the replay lacks ${at}`;
  return `at ${at} the replay has ${text(change.after)}, the before-state ${text(change.before)}`;
}
