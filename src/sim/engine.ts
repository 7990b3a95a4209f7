import type { Catalog } from "../catalog/catalog.js";
import type { Tool, ToolEffect } from "../catalog/tool.js";
import { type Clock, isoTime, ManualClock, parseTime, systemClock } from "../core/clock.js";
import { TerrariumError } from "../core/errors.js";
import { createIdGenerator, type IdGenerator } from "../core/ids.js";
import { toImmutableJson } from "../core/immutable-json.js";
import { type JsonChange, same } from "../core/json-diff.js";
import { DEFAULT_MAX_JSON_DEPTH, DEFAULT_MAX_RESULT_BYTES, formatSize } from "../core/json-limits.js";
import { parsePointer } from "../core/json-pointer.js";
import { createRandom, unseededRandom } from "../core/random.js";
import { SEEDED_CLOCK_START } from "../envs/define.js";
import { Lru } from "../sessions/lru.js";
import { MemoryStore } from "../sessions/memory-store.js";
import {
  type HistoryEntry,
  SESSION_SCHEMA_VERSION,
  type SessionHead,
  type SessionRecord,
  type Snapshot,
  type StepBase,
  type StepState,
  type Store,
} from "../sessions/types.js";
import { SchemaCompiler } from "../validate/ajv.js";
import { CallValidator } from "../validate/validator.js";
import { toViolations, type Violation } from "../validate/violations.js";
import { checkedLimit, EXPORT_WRAPPING, jsonDepth, jsonSize, Slicer } from "./limits.js";
import { sessionLineage } from "./lineage.js";
import type { SemanticValidator } from "./semantic.js";
import { readSessionExport } from "./session-export.js";
import { SchemaSimulator } from "./simulators/schema.js";
import { applyTolerantly } from "./tolerant-patch.js";
import type { SimulationResult, Simulator, SimulatorName } from "./types.js";

/** How many recent calls simulators are shown. */
const HISTORY_WINDOW = 32;
/** How many sessions' owners an engine keeps (a few hundred bytes each). */
const OWNERS_KEPT = 4096;

/** The longest history a replay runs, unless configured otherwise. */
export const DEFAULT_MAX_REPLAY_STEPS = 10_000;

/** Which simulator answers which tool: one for all, by effect, or by tool name (names win). */
export type SimulatorPolicy =
  | "auto"
  | SimulatorName
  | {
      tools?: Record<string, SimulatorName>;
      read?: SimulatorName;
      write?: SimulatorName;
      unknown?: SimulatorName;
      default?: SimulatorName;
    };

export interface EngineOptions {
  catalog: Catalog;
  store?: Store;
  /** Simulators available to the policy. `schema` is always there. */
  simulators?: Simulator[];
  policy?: SimulatorPolicy;
  /** State new sessions start from. */
  initialState?: unknown;
  clock?: Clock;
  /** Seeds session ids and simulators, so a seeded server repeats exactly. */
  seed?: string | number;
  /** Semantic argument validation with a model; without it, every outcome says `semantic: "skipped"`. */
  semantic?: SemanticValidator;
  /**
   * How deeply a session export may nest: the server's limit on request bodies, which imports go through
   * (default 256, `DEFAULT_MAX_JSON_DEPTH`). The engine stores nothing that would make an export deeper:
   * a result nested too deep is a failed call (TOO_LARGE), a state too deep is refused.
   */
  maxJsonDepth?: number;
  /** The largest tool result (the JSON text of its observation) stored (default 10 MiB); larger: TOO_LARGE. */
  maxResultBytes?: number;
  /** The longest history `replay` runs (default 10,000 calls); a longer one is refused up front (TOO_LARGE). */
  maxReplaySteps?: number;
}

/** The outcome of one simulated call, as agents receive it. */
export interface CallOutcome {
  status: "ok" | "invalid" | "tool_error" | "error";
  observation: unknown;
  changes: unknown[];
  errors: Array<Violation | { rule: string; message: string; path?: string }>;
  simulator: string;
  usage?: Record<string, unknown>;
  /** Position of this call in the session's history. */
  step: number;
  /** What semantic validation said: passed, failed, skipped (no model configured) or error (failed open). */
  semantic: "passed" | "failed" | "skipped" | "error" | "not-run";
}

/** A call as it goes through `callNow`: what its record needs, filled in as it is learnt. */
interface CallInProgress {
  id: string;
  /** Where the session ended when the call started: its step is built on this. */
  head: SessionHead;
  at: string;
  recorded: { name: string; arguments: unknown };
  semantic: CallOutcome["semantic"];
  /** Recorded in the history when the validator failed the call or could not run (fails open). */
  semanticNote: HistoryEntry["semantic"];
  /** The seed the simulator ran the call under (code environments replay calls with it). */
  seed: string | undefined;
  /**
   * Set once a simulator answered with changes: one that keeps a live instance (code) has applied them
   * to it and expects the next snapshot to hold them. When no such snapshot is stored (the changes
   * turned out to change nothing, were refused, or the write failed), the instance is dropped, so it is
   * never mistaken for a snapshot with the same index written later, here or by another replica.
   */
  simulatedChanges: boolean;
}

/**
 * A call whose step has been handed to the store: `outcome` settles once it is stored (or not). The
 * session's next call may start before then (see `Staged`).
 */
interface CallTicket {
  outcome: Promise<CallOutcome>;
}

/**
 * A session's steps handed to a store that stages steps (`Store.stagesSteps`) and not yet known to be
 * stored. The session's next call starts from `head`, where they leave it, instead of reading the store;
 * each call is answered only once its own step is stored, so acknowledged still means stored. A step
 * that fails to be stored fails every later one built on it (the store checks each step's base).
 */
interface Staged {
  head: SessionHead;
  /** The latest step's write: the store settles a session's writes in order, so this one settles last. */
  last: Promise<HistoryEntry>;
  /** A write failed (or the session was deleted): the next call waits for all to settle and reads the store. */
  failed: boolean;
}

export interface SessionExport {
  schemaVersion: number;
  session: SessionRecord;
  snapshots: Snapshot[];
  history: HistoryEntry[];
}

/**
 * The simulation engine: route -> syntactic validation -> simulator chosen per tool -> output validation
 * -> tolerant application of the changes -> one atomic store write -> outcome. Invalid calls, tool errors
 * and simulator failures are data (a status and errors) and are recorded in the history; only a call that
 * changes the state produces a snapshot. Calls on one session run one at a time; with a store that stages
 * steps, the next starts once the last one's step is handed to the store, not once it is stored.
 */
export class Engine {
  readonly catalog: Catalog;
  readonly store: Store;
  private readonly simulators = new Map<SimulatorName, Simulator>();
  private readonly validator = new CallValidator();
  private readonly outputs = new SchemaCompiler();
  private readonly policy: SimulatorPolicy;
  private readonly clock: Clock;
  private readonly ids: IdGenerator;
  private readonly seed: string;
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Sessions with steps handed to the store and not yet stored (see `Staged`). */
  private readonly staged = new Map<string, Staged>();
  private readonly maxJsonDepth: number;
  private readonly maxResultBytes: number;
  private readonly maxReplaySteps: number;
  /** States from outside already found shallow enough (the initial state, given to every new session). */
  private readonly admitted = new WeakSet<object>();
  /** Owners of sessions read before (see `sessionOwner`): a record is then not read again per request. */
  private readonly owners = new Lru<string, { owner: string | undefined }>(OWNERS_KEPT);

  constructor(private readonly options: EngineOptions) {
    // Below 16 the export's own wrapping leaves no room; above 4096 nothing JSON can hold (states stop at 512).
    this.maxJsonDepth = checkedLimit(
      "maxJsonDepth",
      options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH,
      16,
      4096,
    );
    this.maxResultBytes = checkedLimit(
      "maxResultBytes",
      options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
      1,
    );
    this.maxReplaySteps = checkedLimit(
      "maxReplaySteps",
      options.maxReplaySteps ?? DEFAULT_MAX_REPLAY_STEPS,
      1,
    );
    this.catalog = options.catalog;
    this.store = options.store ?? new MemoryStore();
    this.policy = options.policy ?? "auto";
    // A seeded engine keeps its own time too (one second per reading from a fixed start), so a seeded
    // run repeats byte for byte, tools' timestamps included; otherwise sessions live in real time.
    this.clock =
      options.clock ?? (options.seed !== undefined ? new ManualClock(SEEDED_CLOCK_START, 1000) : systemClock);
    this.seed = options.seed === undefined ? `${Date.now()}` : String(options.seed);
    this.ids = createIdGenerator(
      options.seed === undefined ? unseededRandom() : createRandom(`${this.seed}/sessions`),
    );
    for (const simulator of options.simulators ?? []) this.simulators.set(simulator.name, simulator);
    this.validator.prepare(this.catalog);
  }

  /** The simulator that answers calls to a tool under the policy. */
  simulatorFor(tool: Tool, policy: SimulatorPolicy = this.policy): Simulator {
    let wanted: SimulatorName | undefined;
    if (typeof policy === "string") wanted = policy === "auto" ? undefined : policy;
    else wanted = policy.tools?.[tool.name] ?? policy[tool.effect as ToolEffect] ?? policy.default;
    if (wanted) {
      const simulator =
        this.simulators.get(wanted) ?? (wanted === "schema" ? this.schemaSimulator() : undefined);
      if (!simulator)
        throw new TerrariumError(
          "INVALID_INPUT",
          `the "${wanted}" simulator is not available (policy for ${tool.name})`,
        );
      return simulator;
    }
    // auto: exact code where an implementation exists, else a model, else schema synthesis.
    for (const name of ["code", "llm"] as const) {
      const simulator = this.simulators.get(name);
      if (simulator?.handles(tool)) return simulator;
    }
    return this.schemaSimulator();
  }

  async createSession(
    options: { state?: unknown; owner?: string; seed?: string; metadata?: Record<string, unknown> } = {},
  ): Promise<SessionRecord> {
    const record: SessionRecord = {
      id: this.ids.uuid(),
      createdAt: new Date(this.clock.now()).toISOString(),
      seed: options.seed ?? `${this.seed}/${this.ids.next()}`,
      ...(options.owner ? { owner: options.owner } : {}),
      ...(options.metadata ? { metadata: options.metadata } : {}),
    };
    const state = this.admitState(options.state ?? this.options.initialState ?? {});
    await this.store.createSession(record, state);
    return record;
  }

  async session(id: string): Promise<SessionRecord> {
    const record = await this.store.getSession(id);
    if (!record) throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
    return record;
  }

  /** The current state: an immutable tree (frozen; read it, copy it to change it). */
  async state(id: string): Promise<unknown> {
    await this.session(id);
    return (await this.store.latestSnapshot(id)).state;
  }

  async history(id: string): Promise<HistoryEntry[]> {
    await this.session(id);
    return this.store.history(id);
  }

  /** How many calls the session has recorded (read from its last entry, never by reading them all). */
  async callCount(id: string): Promise<number> {
    const { lastCall } = await this.head(id);
    return lastCall ? lastCall.index + 1 : 0;
  }

  /** Replaces the state (a new snapshot); simulators holding live objects rebuild from it. */
  async setState(id: string, state: unknown, reason: Snapshot["reason"] = "set"): Promise<Snapshot> {
    const admitted = this.admitState(state);
    return this.serial(id, () => this.setStateNow(id, admitted, reason));
  }

  /**
   * Back to the session's first snapshot. Queued at once, like a call: a call made after `reset` runs on
   * the reset state.
   */
  async reset(id: string): Promise<Snapshot> {
    return this.serial(id, async () => {
      const first = await this.store.snapshot(id, 0);
      if (!first) throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
      return this.setStateNow(id, first.state, "reset");
    });
  }

  /** `setState`'s work, in the session's turn: after the session's staged steps are stored. */
  private async setStateNow(id: string, admitted: unknown, reason: Snapshot["reason"]): Promise<Snapshot> {
    await this.drain(id);
    await this.session(id);
    const at = await this.nextTime(id);
    this.forget(id);
    return this.store.appendSnapshot(id, admitted, reason, at);
  }

  /** A new session starting from a snapshot of this one (the latest by default). */
  async fork(id: string, snapshotIndex?: number, owner?: string): Promise<SessionRecord> {
    const source = await this.session(id);
    const snapshot =
      snapshotIndex === undefined
        ? await this.store.latestSnapshot(id)
        : await this.store.snapshot(id, snapshotIndex);
    if (!snapshot)
      throw new TerrariumError("INVALID_INPUT", `session ${id} has no snapshot ${snapshotIndex}`);
    const record: SessionRecord = {
      id: this.ids.uuid(),
      createdAt: new Date(this.clock.now()).toISOString(),
      seed: source.seed,
      parent: { session: id, snapshot: snapshot.index },
      ...((owner ?? source.owner) ? { owner: owner ?? source.owner } : {}),
    };
    await this.store.createSession(record, snapshot.state);
    return record;
  }

  async deleteSession(id: string): Promise<boolean> {
    this.forget(id);
    this.owners.delete(id);
    // Calls queued behind a staged write read the store (and find no session) instead of running on.
    const staged = this.staged.get(id);
    if (staged) staged.failed = true;
    return this.store.deleteSession(id);
  }

  /**
   * Whose session `id` is (`{owner: undefined}` for one without an owner), undefined when there is none.
   * A session's owner never changes, so an answer once read is kept (a few thousand, least recently used
   * first out) and the record is not read again, which for a store over the network is a round trip per
   * call. A kept answer can be stale only for a session deleted since (here or by another replica):
   * `ownsSession` reads again before it refuses, and `call` with `options.owner` checks the owner at its
   * own read of the session, under the session's lock.
   */
  async sessionOwner(id: string): Promise<{ owner: string | undefined } | undefined> {
    const known = this.owners.get(id);
    if (known) return known;
    return this.readOwner(id);
  }

  /**
   * Whether `id` is `owner`'s session (undefined: one without an owner). A kept owner that says no is
   * read again before the answer: it may be stale (the session deleted and its id made again for another
   * token, which only seeded engines sharing a store can do), and the session's real owner must not be
   * locked out by it. Only refused requests pay for that read.
   */
  async ownsSession(id: string, owner: string | undefined): Promise<boolean> {
    const known = this.owners.get(id);
    if (known !== undefined && known.owner === owner) return true;
    const found = await this.readOwner(id);
    return found !== undefined && found.owner === owner;
  }

  private async readOwner(id: string): Promise<{ owner: string | undefined } | undefined> {
    this.owners.delete(id);
    const record = await this.store.getSession(id);
    if (!record) return undefined;
    const found = { owner: record.owner };
    this.owners.set(id, found);
    return found;
  }

  /**
   * One simulated call. With `options.owner` (the caller, undefined for an open server's), a session that
   * is not the caller's is refused as unknown, checked at the call's own read of the session.
   */
  call(
    id: string,
    request: { name: string; arguments?: unknown },
    options?: { owner: string | undefined },
  ): Promise<CallOutcome> {
    return this.serial(id, () => this.callNow(id, request, this.policy, options)).then(outcomeOf);
  }

  /**
   * Re-runs a session's calls, in order, on a new session that starts from the same first state, with
   * another simulator policy (for example to compare an llm simulator against the code that is truth).
   * A history longer than `maxReplaySteps`, or a policy that cannot answer a recorded call, is refused
   * before anything is created, and a replay that fails part way leaves no session behind. The calls run
   * in slices that give the event loop a turn, so a long replay does not hold up other sessions.
   */
  async replay(
    id: string,
    policy: SimulatorPolicy,
  ): Promise<{ session: SessionRecord; outcomes: CallOutcome[] }> {
    const source = await this.session(id);
    // The length from the last entry: a history too long to replay is never read whole.
    const [last] = await this.store.history(id, 1);
    const length = last ? last.index + 1 : 0;
    if (length > this.maxReplaySteps)
      throw new TerrariumError(
        "TOO_LARGE",
        `session ${id} has ${length} calls; a replay runs at most ${this.maxReplaySteps} (maxReplaySteps)`,
        { details: { limit: this.maxReplaySteps, length } },
      );
    const first = await this.store.snapshot(id, 0);
    if (!first) throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
    const history = await this.store.history(id);
    for (const entry of history) {
      const tool = this.catalog.get(entry.request.name);
      if (tool) this.simulatorFor(tool, policy);
    }
    const session = await this.createSession({
      state: first.state,
      seed: source.seed,
      ...(source.owner ? { owner: source.owner } : {}),
    });
    const outcomes: CallOutcome[] = [];
    const slicer = new Slicer();
    try {
      // One turn of the session's queue (and lock) for the whole replay: no other call lands between its steps.
      await this.serial(session.id, async () => {
        for (const entry of history) {
          await slicer.pause();
          outcomes.push(await (await this.callNow(session.id, entry.request, policy)).outcome);
        }
      });
    } catch (error) {
      await this.deleteSession(session.id);
      throw error;
    }
    return { session, outcomes };
  }

  /**
   * Stores an exported session under a new id, snapshots and history as they were, in one write: a
   * document that is not a valid export is refused with the place it breaks, and nothing is stored. The
   * owner inside the document is ignored: the session belongs to `owner` (the importing caller).
   */
  async importSession(exported: unknown, owner?: string): Promise<SessionRecord> {
    // Long documents are read in slices (see replay): checking 1,000 entries and states takes a while.
    const slicer = new Slicer();
    const document = await readSessionExport(exported, () => slicer.pause());
    const snapshots: Snapshot[] = [];
    for (const [i, snapshot] of document.snapshots.entries()) {
      await slicer.pause();
      try {
        snapshots.push({ ...snapshot, state: this.admitState(snapshot.state) });
      } catch (error) {
        const code = error instanceof TerrariumError ? error.code : "INVALID_INPUT";
        throw new TerrariumError(code, `snapshot ${i}: ${(error as Error).message}`, {
          where: { pointer: `/snapshots/${i}/state` },
        });
      }
    }
    const { owner: _ignored, ...session } = document.session;
    const record: SessionRecord = {
      ...session,
      id: this.ids.uuid(),
      ...(owner ? { owner } : {}),
      metadata: { ...(session.metadata ?? {}), importedFrom: session.id },
    };
    await this.store.importSession(record, { snapshots, history: document.history as HistoryEntry[] });
    return record;
  }

  /** The session as a versioned JSON document (without its owner: token hashes never leave the server). */
  async exportSession(id: string): Promise<SessionExport> {
    const { owner: _owner, ...session } = await this.session(id);
    return {
      schemaVersion: SESSION_SCHEMA_VERSION,
      session,
      snapshots: await this.store.snapshots(id),
      history: await this.store.history(id),
    };
  }

  async close(): Promise<void> {
    for (const simulator of this.simulators.values()) await simulator.close?.();
    await this.store.close();
  }

  private async callNow(
    id: string,
    request: { name: string; arguments?: unknown },
    policy: SimulatorPolicy = this.policy,
    expected?: { owner: string | undefined },
  ): Promise<CallTicket> {
    // Arguments are stored with the call: ones too deep to export are refused before anything is recorded.
    this.checkArguments(request.arguments);
    // The session, its latest state and where its history ends, read together (one round trip for a store
    // over the network), or where the session's staged steps leave it; nothing here grows with the
    // session's history.
    const head = await this.startOf(id);
    const { record: session, snapshot, lastCall } = head;
    if (expected && session.owner !== expected.owner) {
      this.owners.delete(id);
      throw new TerrariumError("UNKNOWN_SESSION", `there is no session ${id}`);
    }
    const callCount = lastCall ? lastCall.index + 1 : 0;
    const at = this.timeAfter(snapshot.at, lastCall?.at);
    const recorded = { name: request.name, arguments: request.arguments ?? {} };
    // What the call's record (`recordCall`) needs, filled in as the call goes.
    const call: CallInProgress = {
      id,
      head,
      at,
      recorded,
      semantic: "not-run",
      semanticNote: undefined,
      seed: undefined,
      simulatedChanges: false,
    };

    const verdict = this.validator.validate(this.catalog, recorded);
    if (!verdict.valid) {
      return this.recordCall(
        call,
        {
          status: "invalid",
          observation: { error: "invalid call", violations: verdict.errors },
          changes: [],
          errors: verdict.errors,
        },
        "validator",
      );
    }
    const tool = this.catalog.get(request.name) as Tool;
    const args = (
      typeof recorded.arguments === "string" ? JSON.parse(recorded.arguments) : recorded.arguments
    ) as Record<string, unknown>;
    if (this.options.semantic) {
      const verdict = await this.options.semantic.check(tool, args, id);
      call.semantic = verdict.status;
      if (verdict.status === "error") call.semanticNote = { status: "error", message: verdict.message };
      if (verdict.status === "failed") {
        call.semanticNote = { status: "failed" };
        return this.recordCall(
          call,
          {
            status: "invalid",
            observation: { error: "invalid call", violations: verdict.problems },
            changes: [],
            errors: verdict.problems,
          },
          "validator",
        );
      }
    } else {
      call.semantic = "skipped";
    }
    const simulator = this.simulatorFor(tool, policy);
    // Simulators see a window of recent calls, read only for those that look at it.
    // (Read once the session's staged steps are stored, so the window ends with the last call.)
    const history =
      simulator.readsHistory === false
        ? []
        : await this.drain(id).then(() => this.store.history(id, HISTORY_WINDOW));
    let result: SimulationResult;
    try {
      result = await simulator.simulate({
        sessionId: id,
        tool,
        arguments: args,
        state: snapshot.state,
        snapshotIndex: snapshot.index,
        history,
        // Hashed into a state only at its first draw: most calls only read its seed (a code environment
        // seeds itself from it).
        random: createRandom(`${session.seed}:${callCount}`),
        now: at,
        lineage: (replayable) => this.drain(id).then(() => sessionLineage(this.store, id, replayable)),
      });
      call.seed = result.seed;
      call.simulatedChanges = result.changes.length > 0;
    } catch (error) {
      // A simulator failure (a model that gave up, a dead bridge) leaves the state untouched.
      const message = error instanceof Error ? error.message : String(error);
      const code = error instanceof TerrariumError ? error.code : "SIMULATOR_FAILED";
      return this.recordCall(
        call,
        { status: "error", observation: { error: message }, changes: [], errors: [{ rule: code, message }] },
        simulator.name,
      );
    }
    // A result the session could not export (too deep) or that is absurdly large fails the call the same
    // way: nothing of it is stored and the state stays as it was.
    const refusal = this.resultRefusal(result);
    if (refusal) return this.recordCall(call, refusal, simulator.name);

    const errors: CallOutcome["errors"] = [...(result.errors ?? [])];
    if (result.status === "ok" && tool.outputSchema !== undefined) {
      const validate = this.outputs.compile(tool.outputSchema);
      if (!validate(result.observation)) {
        for (const violation of toViolations(validate.errors ?? [], result.observation)) {
          errors.push({
            ...violation,
            rule: `output.${violation.rule}`,
            message: violation.message.replace(/^the arguments/, "the result"),
          });
        }
      }
    }
    if (result.status !== "ok" || result.changes.length === 0) {
      return this.recordCall(
        call,
        {
          status: result.status,
          observation: result.observation,
          changes: [],
          errors,
          ...(result.usage ? { usage: result.usage } : {}),
        },
        simulator.name,
      );
    }
    let state: unknown;
    let applied: JsonChange[];
    // Exact changes made from this very state come with the new state (code environments): taken as they
    // are, so a step copies the changed containers once, in the environment. Otherwise (models, proxies)
    // the changes are applied tolerantly here.
    const exact = result.state !== undefined;
    try {
      if (exact) {
        state = this.immutableState(result.state);
        applied = result.changes;
      } else {
        ({ state, applied } = applyTolerantly(snapshot.state, result.changes));
        state = this.immutableState(state);
      }
    } catch (error) {
      // Changes that would make an unusable state (nested too deep, no longer an object) are refused.
      const message = `the simulator's changes were not applied: ${(error as Error).message}`;
      return this.recordCall(
        call,
        {
          status: "error",
          observation: { error: message },
          changes: [],
          errors: [{ rule: "CHANGES_REFUSED", message }],
        },
        simulator.name,
      );
    }
    const tooDeep = this.changesRefusal(applied);
    if (tooDeep) return this.recordCall(call, tooDeep, simulator.name);
    // Exact changes are never empty for a state that did not change; tolerant ones may cancel out, and
    // shared structure makes the check cheap (only the changed paths are compared).
    const changed = exact ? applied.length > 0 : !same(state, snapshot.state);
    return this.recordCall(
      call,
      {
        status: "ok",
        observation: result.observation,
        changes: applied,
        errors,
        ...(result.usage ? { usage: result.usage } : {}),
      },
      simulator.name,
      changed ? state : undefined,
      // Only exact changes reach the store: tolerant ones may create parents they do not name.
      changed && exact ? applied : undefined,
    );
  }

  /**
   * Records a call (its history entry and, when it changed the state, its snapshot, in one store write)
   * and gives its ticket. With a store that stages steps, the session's next call may start as soon as
   * this returns, from where this step leaves the session (`Staged`); otherwise this waits for the write.
   */
  private async recordCall(
    call: CallInProgress,
    result: Omit<CallOutcome, "step" | "simulator" | "semantic">,
    simulator: string,
    newState?: unknown,
    changes?: readonly JsonChange[],
  ): Promise<CallTicket> {
    const { id, head, simulatedChanges } = call;
    // Built field by field in the order a history entry always had (no spread of temporary objects).
    const step: Omit<HistoryEntry, "index" | "snapshot"> = {
      at: call.at,
      request: call.recorded,
      result: {
        status: result.status,
        observation: result.observation,
        changes: result.changes,
        errors: result.errors,
      },
      simulator,
    };
    if (result.usage) step.usage = result.usage;
    if (call.seed !== undefined) step.seed = call.seed;
    if (call.semanticNote) step.semantic = call.semanticNote;
    let stepState: StepState | undefined;
    if (newState !== undefined) {
      stepState = { state: newState, reason: "step" };
      if (changes) stepState.changes = changes;
    }
    // Changes a live instance applied that no snapshot will hold: dropped now, before the session's next
    // call (which may start before this write settles) can use that instance.
    if (simulatedChanges && stepState === undefined) this.forget(id);
    const stages = this.store.stagesSteps === true;
    const base: StepBase | undefined = stages
      ? { lastCall: head.lastCall ? head.lastCall.index : -1, snapshot: head.snapshot.index }
      : undefined;
    let write: Promise<HistoryEntry>;
    try {
      write = this.store.appendStep(id, step, stepState, base);
    } catch (error) {
      write = Promise.reject(error);
    }
    if (base) {
      const at = call.at;
      this.stage(id, write, {
        record: head.record,
        snapshot:
          stepState === undefined
            ? head.snapshot
            : { index: base.snapshot + 1, at, reason: "step", state: stepState.state },
        lastCall: { index: base.lastCall + 1, at },
      });
    }
    const outcome = write.then(
      (entry): CallOutcome => ({ ...result, simulator, step: entry.index, semantic: call.semantic }),
      (error: unknown) => {
        // Whatever a live instance did for this call (and for the staged calls after it, refused too),
        // even without changing the state (a hidden counter), is not stored: it is rebuilt from the store.
        this.forget(id);
        throw error;
      },
    );
    // Without staging, the session's next call waits until this one is stored.
    if (!base) await outcome.catch(ignore);
    return { outcome };
  }

  /** Notes a step handed to a staging store: the session's next call starts from `next`. */
  private stage(id: string, write: Promise<HistoryEntry>, next: SessionHead): void {
    let staged = this.staged.get(id);
    if (staged) {
      staged.head = next;
      staged.last = write;
    } else {
      staged = { head: next, last: write, failed: false };
      this.staged.set(id, staged);
    }
    const entry = staged;
    const settled = (): void => {
      // The last staged step settled: the store now holds all there is (nothing to start from but it).
      if (entry.last === write && this.staged.get(id) === entry) this.staged.delete(id);
    };
    write.then(settled, () => {
      entry.failed = true;
      settled();
    });
  }

  /**
   * Where a call starts: where the session's staged steps leave it, or (with none, or once one failed
   * and they have all settled) the store's read.
   */
  private async startOf(id: string): Promise<SessionHead> {
    const staged = this.staged.get(id);
    if (staged === undefined) return this.head(id);
    if (!staged.failed) return staged.head;
    await this.drain(id);
    return this.head(id);
  }

  /** Resolves once none of the session's staged steps is waiting for the store. */
  private async drain(id: string): Promise<void> {
    for (let staged = this.staged.get(id); staged; staged = this.staged.get(id))
      await staged.last.catch(ignore);
  }

  /** What a call reads first: the session, its latest snapshot, its last call (see `Store.head`). */
  private async head(id: string): Promise<SessionHead> {
    if (this.store.head) return this.store.head(id);
    const [record, snapshot, [last]] = await Promise.all([
      this.session(id),
      this.store.latestSnapshot(id),
      this.store.history(id, 1),
    ]);
    return { record, snapshot, ...(last ? { lastCall: { index: last.index, at: last.at } } : {}) };
  }

  /**
   * A state the engine can hold: an immutable JSON tree (no cycles, not nested absurdly deep), and an
   * object whenever sessions start from an object, since tools then read fields of it.
   */
  private admitState(state: unknown): unknown {
    const value = this.immutableState(state);
    if (value !== null && typeof value === "object" && !this.admitted.has(value)) {
      const limit = this.maxJsonDepth - EXPORT_WRAPPING.state;
      if (jsonDepth(value, limit) > limit)
        throw new TerrariumError(
          "INVALID_INPUT",
          `the state is nested deeper than ${limit} levels (a session export, limited to ${this.maxJsonDepth}, could not hold it)`,
        );
      this.admitted.add(value);
    }
    return value;
  }

  /** An immutable JSON tree, an object whenever sessions start from one (tools then read fields of it). */
  private immutableState(state: unknown): unknown {
    const value = toImmutableJson(state);
    const initial = this.options.initialState ?? {};
    if (isObject(initial) && !isObject(value)) {
      const kind = value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
      throw new TerrariumError("INVALID_INPUT", `the state must be a JSON object, got ${kind}`);
    }
    return value;
  }

  /** Arguments nested too deep to be stored in a history entry that can still be exported. */
  private checkArguments(args: unknown): void {
    const limit = this.maxJsonDepth - EXPORT_WRAPPING.resultPart;
    if (jsonDepth(args, limit) > limit)
      throw new TerrariumError(
        "TOO_LARGE",
        `the arguments are nested deeper than ${limit} levels (a session export, limited to ${this.maxJsonDepth}, could not hold them)`,
        { details: { limit } },
      );
  }

  /** Why a simulator's result cannot be stored: nested too deep to export, or larger than maxResultBytes. */
  private resultRefusal(
    result: SimulationResult,
  ): Omit<CallOutcome, "step" | "simulator" | "semantic"> | undefined {
    const limit = this.maxJsonDepth - EXPORT_WRAPPING.resultPart;
    let message: string | undefined;
    if (jsonDepth(result.observation, limit) > limit || jsonDepth(result.errors ?? [], limit) > limit)
      message = `the tool's result is nested deeper than ${limit} levels (a session export, limited to ${this.maxJsonDepth}, could not hold it)`;
    else {
      const size = jsonSize(result.observation, this.maxResultBytes);
      if (size > this.maxResultBytes)
        message = `the tool's result is larger than the limit of ${formatSize(this.maxResultBytes)} of JSON (maxResultBytes)`;
    }
    return message === undefined ? undefined : tooLarge(message);
  }

  /**
   * Changes that would be stored too deep to export: the entry's changes (their values before and after)
   * or the new state. A state the engine holds is at most `limit - 3` deep, so a value found at a path
   * of 3 or more tokens always fits beside its change; only shorter paths (and every new value) are measured.
   */
  private changesRefusal(
    applied: JsonChange[],
  ): Omit<CallOutcome, "step" | "simulator" | "semantic"> | undefined {
    const entryLimit = this.maxJsonDepth - EXPORT_WRAPPING.resultPart - 2; // [ {op, path, before, after} ]
    const stateLimit = this.maxJsonDepth - EXPORT_WRAPPING.state;
    for (const change of applied) {
      const tokens = pointerLength(change.path);
      if (change.op !== "remove") {
        const depth = jsonDepth(change.after, stateLimit);
        if (depth > entryLimit || tokens + depth > stateLimit)
          return tooLarge(
            `the tool's change at ${change.path || "the root"} would nest the state or the session's history deeper than a session export (limited to ${this.maxJsonDepth} levels) can hold`,
          );
      }
      if (change.op !== "add" && tokens < 3 && jsonDepth(change.before, entryLimit) > entryLimit)
        return tooLarge(
          `the tool's change at ${change.path || "the root"} replaces a value nested too deep to be kept in the session's history (a session export is limited to ${this.maxJsonDepth} levels)`,
        );
    }
    return undefined;
  }

  /** The session's clock reading: now, but never before anything the session already recorded. */
  private timeAfter(snapshotAt: string, lastCallAt: string | undefined): string {
    const now = this.clock.now();
    const latest = Math.max(
      readTime(snapshotAt),
      lastCallAt === undefined ? Number.NEGATIVE_INFINITY : readTime(lastCallAt),
    );
    return isoTime(Number.isFinite(latest) && now <= latest ? latest + 1 : now);
  }

  private async nextTime(id: string): Promise<string> {
    const { snapshot, lastCall } = await this.head(id);
    return this.timeAfter(snapshot.at, lastCall?.at);
  }

  private schemaSimulator(): Simulator {
    let simulator = this.simulators.get("schema");
    if (!simulator) {
      simulator = new SchemaSimulator();
      this.simulators.set("schema", simulator);
    }
    return simulator;
  }

  private forget(id: string): void {
    for (const simulator of this.simulators.values()) simulator.forget?.(id);
  }

  /**
   * Runs `task` after every earlier task of the same session (calls on one session never interleave),
   * and, when the store is shared between processes, under the store's lock on that session, so that
   * calls on it from other replicas wait too. The task reads the session's latest state from the store
   * once it holds the lock, never before.
   */
  private serial<T>(id: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(id);
    const store = this.store;
    const lock = store.withSessionLock;
    const locked = lock ? () => lock.call(store, id, task) as Promise<T> : task;
    // Nothing queued on the session: the task starts now (no turn of the microtask queue first).
    const next = previous === undefined ? startNow(locked) : previous.then(locked, locked);
    // The queue's tail: settles (never rejects) once the task has, and then leaves the queue if still last.
    const settled: Promise<void> = next.then(
      () => this.leave(id, settled),
      () => this.leave(id, settled),
    );
    this.queues.set(id, settled);
    return next;
  }

  private leave(id: string, settled: Promise<void>): void {
    if (this.queues.get(id) === settled) this.queues.delete(id);
  }
}

function outcomeOf(ticket: CallTicket): Promise<CallOutcome> {
  return ticket.outcome;
}

function ignore(): void {}

/** Runs `task` now; a synchronous throw becomes a rejection, as it would inside `then`. */
function startNow<T>(task: () => Promise<T>): Promise<T> {
  try {
    return task();
  } catch (error) {
    return Promise.reject(error);
  }
}

/** A failed call that stored nothing of what the simulator gave: TOO_LARGE. */
function tooLarge(message: string): Omit<CallOutcome, "step" | "simulator" | "semantic"> {
  return {
    status: "error",
    observation: { error: message },
    changes: [],
    errors: [{ rule: "TOO_LARGE", message }],
  };
}

/**
 * How many tokens a JSON Pointer has: its slashes, when it has no escapes to check (`parsePointer`, which
 * reads and checks each token, answers the rest, and refuses what it refuses).
 */
function pointerLength(pointer: string): number {
  if (pointer === "") return 0;
  if (pointer.charCodeAt(0) !== 47 || pointer.includes("~")) return parsePointer(pointer).length;
  let slashes = 0;
  for (let i = 0; i < pointer.length; i++) if (pointer.charCodeAt(i) === 47) slashes++;
  return slashes;
}

/** A recorded time in ms (-Infinity when it cannot be read, so it never wins a comparison). */
function readTime(at: string): number {
  const ms = parseTime(at);
  return Number.isFinite(ms) ? ms : Number.NEGATIVE_INFINITY;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
