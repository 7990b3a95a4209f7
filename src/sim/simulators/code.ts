import type { Tool } from "../../catalog/tool.js";
import { type Clock, parseTime } from "../../core/clock.js";
import {
  isReplayingEnvironment,
  type ReplayCall,
  type ReplayLineage,
  type SeededInstance,
} from "../../envs/python/environment.js";
import type {
  CheckedInstance,
  Environment,
  EnvironmentInstance,
  RestartableInstance,
} from "../../envs/types.js";
import type { HistoryEntry } from "../../sessions/types.js";
import type { SimulationContext, SimulationResult, Simulator } from "../types.js";

export interface CodeSimulatorOptions {
  /**
   * How many sessions keep a live environment instance (a Python instance holds a process of ~16 MB).
   * Beyond it the least recently used idle instance is closed; its session is rebuilt from the store when
   * it is called again. Default 64.
   */
  maxLiveInstances?: number;
}

export const DEFAULT_MAX_LIVE_INSTANCES = 64;

/**
 * An environment's clock under the engine: a call's first reading is the session's time for that call
 * (real time unless the engine is seeded, never earlier than anything the session recorded), and further
 * readings in the same call move on by a millisecond, so tools see the session's time, not their own.
 */
class CallClock implements Clock {
  private next = 0;

  startCall(at: string): void {
    this.next = Math.max(parseTime(at), this.next);
  }

  now(): number {
    return this.next++;
  }

  /** A clock at the same reading that moves on its own: the sandbox reads ahead on it (envs/sandbox/sources.ts). */
  clone(): CallClock {
    const copy = new CallClock();
    copy.next = this.next;
    return copy;
  }
}

interface Live {
  instance: EnvironmentInstance;
  clock: CallClock;
  /** The snapshot whose state the instance holds. */
  snapshotIndex: number;
  /** Calls running on it: a busy instance is never evicted. */
  busy: number;
}

/**
 * The exact simulator: runs the tool's real implementation in an executable environment. Live instances
 * are kept per session, at most `maxLiveInstances` of them (least recently used closed first), and rebuilt
 * whenever the session's state moved without them (a reset, a fork, a state set from outside, a restart,
 * an eviction). Environments that can start from any state (TypeScript) are built from the stored state;
 * Python environments are placed there exactly, through the class's set_state or by replaying the
 * session's calls with the seeds they ran under, and a state neither reaches is refused with an error.
 */
export class CodeSimulator implements Simulator {
  readonly name = "code" as const;
  /** Environments hold their own state; live ones are rebuilt from the session's lineage, not its recent calls. */
  readonly readsHistory = false;
  /** Insertion order is recency: a used entry is moved to the end. */
  private readonly live = new Map<string, Live>();
  private readonly toolNames: Set<string>;
  private readonly maxLive: number;

  constructor(
    readonly environment: Environment,
    private readonly seed?: string,
    options: CodeSimulatorOptions = {},
  ) {
    this.toolNames = new Set(environment.tools.map((tool) => tool.name));
    this.maxLive = Math.max(1, Math.floor(options.maxLiveInstances ?? DEFAULT_MAX_LIVE_INSTANCES));
  }

  handles(tool: Tool): boolean {
    return this.toolNames.has(tool.name);
  }

  /** How many sessions hold a live instance now. */
  get liveInstances(): number {
    return this.live.size;
  }

  async simulate(context: SimulationContext): Promise<SimulationResult> {
    const entry = await this.acquire(context);
    entry.clock.startCall(context.now);
    const call = { name: context.tool.name, arguments: context.arguments };
    // Python steps run under the engine's per-call seed, recorded with the call so a replay repeats it.
    const seed = isReplayingEnvironment(this.environment) ? context.random.seed : undefined;
    let transition: Awaited<ReturnType<EnvironmentInstance["step"]>>;
    try {
      // The engine validated the arguments against the tool's input schema: an instance that knows the
      // schema as its own need not validate them again (instances that take no options ignore it).
      transition =
        seed !== undefined
          ? await (entry.instance as SeededInstance).step(call, { seed })
          : await (entry.instance as CheckedInstance).step(call, {
              checkedAgainst: context.tool.inputSchema,
            });
    } catch (error) {
      this.drop(context.sessionId, entry);
      throw error;
    } finally {
      entry.busy--;
    }
    // The instance now holds the state of the snapshot this step will produce (if it changes anything).
    entry.snapshotIndex = context.snapshotIndex + (transition.changes.length > 0 ? 1 : 0);
    this.evict();
    const result: SimulationResult = {
      status: transition.success ? "ok" : "tool_error",
      observation: transition.observation,
      changes: transition.changes,
    };
    // A transition's changes apply exactly to its `before`; when that is the stored state itself, the
    // engine takes `after` as the new state rather than applying the changes to it again.
    if (transition.success && transition.before === context.state) result.state = transition.after;
    if (seed !== undefined) result.seed = seed;
    return result;
  }

  forget(sessionId: string): void {
    const entry = this.live.get(sessionId);
    if (entry) this.drop(sessionId, entry);
  }

  async close(): Promise<void> {
    const closing = [...this.live.values()].map((entry) => entry.instance.close().catch(() => undefined));
    this.live.clear();
    await Promise.all(closing);
    await this.environment.close?.();
  }

  /**
   * The session's live instance at the context's snapshot (marked busy), rebuilt when it is not there.
   *
   * A live instance is only this process's cache: the store is the truth, and another replica sharing it
   * may have moved the session on. An instance is reused only when the snapshot the engine just read
   * (under the session's lock) is the one the instance holds; snapshots are append-only and the engine
   * drops an instance whose predicted snapshot was not stored, so an equal index means an equal state.
   *
   * Instances of environments that start from any state (TypeScript, sandboxed JavaScript) are made anew
   * for every call from the stored state, with a seed and a clock of their own: the ids, random draws and
   * times of a call then depend only on the session and the call's place in it, never on which replica
   * ran it or what that replica had cached, and replaying the history on a fresh engine gives the same
   * states. An idle one is made anew in place (`restart`: exactly what `create` would make) rather than
   * replaced, which halves what the collector copies per call.
   */
  private async acquire(context: SimulationContext): Promise<Live> {
    const cached = this.live.get(context.sessionId);
    const reusable = isReplayingEnvironment(this.environment);
    if (cached) {
      const current = reusable && cached.snapshotIndex === context.snapshotIndex;
      const restartable = !reusable && cached.busy === 0 && isRestartable(cached.instance);
      if (current || restartable) {
        if (restartable) {
          cached.clock = new CallClock();
          (cached.instance as RestartableInstance).restart({
            ...this.startOptions(context),
            clock: cached.clock,
          });
          cached.snapshotIndex = context.snapshotIndex;
        }
        // Most recently used: to the end of the map.
        this.live.delete(context.sessionId);
        this.live.set(context.sessionId, cached);
        cached.busy++;
        return cached;
      }
      this.drop(context.sessionId, cached);
    }
    const clock = new CallClock();
    const instance = await this.open(context, clock);
    const entry: Live = { instance, clock, snapshotIndex: context.snapshotIndex, busy: 1 };
    const raced = this.live.get(context.sessionId);
    if (raced) this.drop(context.sessionId, raced);
    this.live.set(context.sessionId, entry);
    this.evict();
    return entry;
  }

  /** The seed of a session's instance at a snapshot. */
  private instanceSeed(context: SimulationContext): string {
    return `${this.seed ?? "code"}:${context.sessionId}:${context.snapshotIndex}`;
  }

  /** What a call's instance of an environment that starts from any state is made with (but the clock). */
  private startOptions(context: SimulationContext): { state: unknown; seed: string } {
    return { state: context.state, seed: `${this.instanceSeed(context)}:${context.random.seed}` };
  }

  private async open(context: SimulationContext, clock: CallClock): Promise<EnvironmentInstance> {
    if (!isReplayingEnvironment(this.environment))
      return this.environment.create({ ...this.startOptions(context), clock });
    const seed = this.instanceSeed(context);
    const lineage = context.lineage;
    return this.environment.restore({
      state: context.state,
      seed,
      ...(lineage
        ? {
            lineage: async (): Promise<ReplayLineage> => {
              const found = await lineage(
                (entry) => entry.simulator === this.name && entry.result.status === "ok",
              );
              return { base: found.base, calls: found.entries.map(replayCall) };
            },
          }
        : {}),
    });
  }

  /** Closes least recently used idle instances until at most `maxLive` remain. */
  private evict(): void {
    for (const [sessionId, entry] of this.live) {
      if (this.live.size <= this.maxLive) return;
      if (entry.busy === 0) this.drop(sessionId, entry);
    }
  }

  private drop(sessionId: string, entry: Live): void {
    if (this.live.get(sessionId) === entry) this.live.delete(sessionId);
    void entry.instance.close().catch(() => undefined);
  }
}

function isRestartable(instance: EnvironmentInstance): instance is RestartableInstance {
  return typeof (instance as Partial<RestartableInstance>).restart === "function";
}

function replayCall(entry: HistoryEntry): ReplayCall {
  const args = entry.request.arguments;
  return {
    name: entry.request.name,
    arguments: typeof args === "string" ? JSON.parse(args) : args,
    ...(entry.seed !== undefined ? { seed: entry.seed } : {}),
  };
}
