import {
  closeSync,
  createReadStream,
  existsSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { hashJson, jsonEqual } from "../../core/canonical-json.js";
import { TerrariumError } from "../../core/errors.js";
import { toImmutableJson } from "../../core/immutable-json.js";
import { applyChanges, diffJson, type JsonChange } from "../../core/json-diff.js";
import { ENVSIM_SCHEMA_VERSION, type EnvSimSample, type PrefixCall } from "./types.js";

/**
 * EnvSimBench sample files, schemaVersion 2: states stored once and referred to.
 *
 * A v1 file holds one sample per line with its before- and after-state inline, so a file grows with the
 * state's size (two 1.2 MB states per tau2-retail sample). A v2 file is JSON Lines of records, each with a
 * `kind`, written in this order as a collection runs:
 *
 * - `header` (first line): `{kind, schemaVersion: 2, format: "terrarium.envsim.samples", collection?}`; the
 *   collection's settings (source, seed, steps) let `--resume` refuse to mix two collections.
 * - `environment`: `{kind, id, name, reference, envKind, code}`, once per environment. `reference` is how
 *   to load it again: a built-in name or the absolute path of its module or descriptor.
 * - `state`: `{kind, id, state}` (a full state) or `{kind, id, base, changes}` (JSON Patch-style changes,
 *   `{op: add|replace|remove, path, value?}`, applied exactly to the state `base`). A chain of deltas is
 *   cut by a full state every `fullStateEvery` states; identical start states are written once.
 * - `trajectory`: `{kind, id, environment, taskId, task?, seed?, state}`: step 0, the setup state before
 *   any action (EnvSimBench's step 0, which has no action and gives no sample).
 * - `sample`: the v1 sample's own fields (call, observation, changes, Δ, success, seed, …) with `before`
 *   and `after` as state ids, `trajectory` for what it shares with its episode, and `observationText`
 *   only when it is not the observation's JSON text. A Python environment's sample gets its `prefix` (the
 *   trajectory's earlier calls) from the sample records before it when they are steps 1, 2, … in order,
 *   as a collection writes them; `prefix` is written in the record only when it is not that (a benchmark's
 *   samples, which are a few steps of each episode).
 * - `error`: `{kind, trajectory, step, error}`: a step that could not be made (the agent model failed).
 * - `end`: `{kind, trajectory, samples, release?}`: the trajectory is complete; the states in `release`
 *   are not referred to again, so readers drop them (memory stays bounded however long the file is).
 *
 * Readers materialise `before`/`after` as immutable trees (see `core/immutable-json.ts`) built by applying
 * each delta to its base, so consecutive states share every subtree a step did not touch: reading 100k
 * samples, even holding them all, costs memory in proportion to what changed. Lines without `kind` are
 * v1 samples (inline states) and are returned as they are, in any file.
 */

/** Version of the sample file layout written here (inline v1 samples are still read). */
export const SAMPLE_FILE_SCHEMA_VERSION = 2;
export const SAMPLE_FILE_FORMAT = "terrarium.envsim.samples";

/** What a collection was run with; `--resume` continues only a collection made with the same settings. */
export interface CollectionSettings {
  source: string;
  seed: string;
  steps: number;
  model?: string;
}

export interface HeaderRecord {
  kind: "header";
  schemaVersion: number;
  format: string;
  collection?: CollectionSettings;
}

export interface EnvironmentRecord {
  kind: "environment";
  id: string;
  name: string;
  reference: string;
  envKind: string;
  code: string;
}

/** One change of a state delta (JSON Patch: `value` for add and replace). */
export interface StoredChange {
  op: "add" | "replace" | "remove";
  path: string;
  value?: unknown;
}

export interface StateRecord {
  kind: "state";
  id: string;
  /** The whole state (a full state record). */
  state?: unknown;
  /** The state these changes apply to (a delta record). */
  base?: string;
  changes?: StoredChange[];
}

export interface TrajectoryRecord {
  kind: "trajectory";
  id: string;
  environment: string;
  taskId: string;
  task?: string;
  seed?: string;
  /** Step 0: the setup state, before any action. */
  state: string;
}

export interface SampleRecord {
  kind: "sample";
  trajectory: string;
  id: string;
  step: number;
  call: EnvSimSample["call"];
  observation: unknown;
  observationText?: string;
  before: string;
  after: string;
  changes: EnvSimSample["changes"];
  delta: number;
  success: boolean;
  argCount: number;
  seed?: string;
  /** Written only when the sample records before it do not give it (see `PrefixTracker`). */
  prefix?: PrefixCall[];
}

export interface ErrorRecord {
  kind: "error";
  trajectory: string;
  step: number;
  error: string;
}

export interface EndRecord {
  kind: "end";
  trajectory: string;
  samples: number;
  release?: string[];
}

export type SampleFileRecord =
  | HeaderRecord
  | EnvironmentRecord
  | StateRecord
  | TrajectoryRecord
  | SampleRecord
  | ErrorRecord
  | EndRecord;

/**
 * How to load a sample's environment again: the reference it was collected from (a built-in name, or the
 * absolute path of a module or descriptor), else its name (samples from before references were kept).
 * The `code` simulator loads environments through this.
 */
export function environmentOf(sample: Pick<EnvSimSample, "envId" | "environment">): string {
  return sample.environment ?? sample.envId;
}

/**
 * The prefix a trajectory's samples imply (Python environments only): the calls of steps 1..k-1 for the
 * sample of step k, while the samples come in step order from step 1. Reader and writer both follow it,
 * so a collection's file stores no prefix at all and a benchmark's samples store theirs.
 */
class PrefixTracker {
  /** The calls up to the latest sample; undefined once the order is broken (then nothing is implied). */
  private calls: PrefixCall[] | undefined = [];
  private next = 1;

  /** The prefix implied for a sample of this step, if any (never changed afterwards: `advance` copies). */
  implied(step: number): PrefixCall[] | undefined {
    return this.calls && step === this.next ? this.calls : undefined;
  }

  /** Moves past a sample, given the prefix it has (stated or implied). */
  advance(step: number, prefix: PrefixCall[] | undefined, call: EnvSimSample["call"], seed?: string): void {
    if (!prefix) {
      this.calls = undefined;
      return;
    }
    this.calls = [
      ...prefix,
      { name: call.name, arguments: call.arguments, ...(seed !== undefined ? { seed } : {}) },
    ];
    this.next = step + 1;
  }
}

/** Whether a trajectory's samples carry prefixes: only environments that cannot start from any state. */
function tracksPrefix(envKind: string): boolean {
  return envKind === "python";
}

// ---------------------------------------------------------------------------------------------------------
// Lines

/** Splits bytes into lines, keeping each line's byte offsets (for `--resume`, which cuts a file at one). */
class LineSplitter {
  private pending: Buffer[] = [];
  private offset = 0;
  private lineNumber = 0;

  push(chunk: Buffer): Line[] {
    const lines: Line[] = [];
    let from = 0;
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, from)) {
      const piece = chunk.subarray(from, at);
      const bytes = this.pending.length > 0 ? Buffer.concat([...this.pending, piece]) : piece;
      this.pending = [];
      lines.push(this.line(bytes, bytes.length + 1));
      from = at + 1;
    }
    if (from < chunk.length) this.pending.push(Buffer.from(chunk.subarray(from)));
    return lines;
  }

  /** The last line when the data does not end with a newline. */
  end(): Line | undefined {
    if (this.pending.length === 0) return undefined;
    const bytes = Buffer.concat(this.pending);
    this.pending = [];
    return { ...this.line(bytes, bytes.length), complete: false };
  }

  private line(bytes: Buffer, length: number): Line {
    const start = this.offset;
    this.offset += length;
    this.lineNumber++;
    return { text: bytes.toString("utf8"), number: this.lineNumber, start, end: this.offset, complete: true };
  }
}

interface Line {
  text: string;
  /** 1-based. */
  number: number;
  /** Byte offsets of the line in the file (end is past its newline). */
  start: number;
  end: number;
  /** False for a last line without its newline (a write cut short). */
  complete: boolean;
}

const CHUNK = 1 << 20;

function* linesSync(file: string): Generator<Line> {
  const fd = openFile(file, "r");
  try {
    const splitter = new LineSplitter();
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const read = readSync(fd, buffer, 0, CHUNK, null);
      if (read === 0) break;
      yield* splitter.push(buffer.subarray(0, read));
    }
    const last = splitter.end();
    if (last) yield last;
  } finally {
    closeSync(fd);
  }
}

async function* linesAsync(file: string): AsyncGenerator<Line> {
  if (!existsSync(file))
    throw new TerrariumError("FILE_UNREADABLE", "cannot read the file (no such file)", { where: { file } });
  const splitter = new LineSplitter();
  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK }))
    yield* splitter.push(chunk as Buffer);
  const last = splitter.end();
  if (last) yield last;
}

function openFile(file: string, flags: string): number {
  try {
    return openSync(file, flags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new TerrariumError(
      "FILE_UNREADABLE",
      `cannot ${flags === "r" ? "read" : "write"} the file (${code === "ENOENT" ? "no such file" : (error as Error).message})`,
      { where: { file }, cause: error },
    );
  }
}

function parseLine(line: Line, file: string): unknown {
  try {
    return JSON.parse(line.text);
  } catch (error) {
    throw new TerrariumError("PARSE_ERROR", `invalid JSON: ${(error as Error).message}`, {
      where: { file, line: line.number },
    });
  }
}

// ---------------------------------------------------------------------------------------------------------
// Reading

/** Turns the records of a sample file, in order, into samples (v1 lines pass through as they are). */
export class SampleDecoder {
  header?: HeaderRecord;
  /** Steps that could not be made (agent model failures), in file order. */
  readonly errors: Array<ErrorRecord & { environment: string; taskId: string }> = [];
  private readonly environments = new Map<string, EnvironmentRecord>();
  private readonly trajectories = new Map<string, TrajectoryRecord>();
  private readonly states = new Map<string, unknown>();
  private readonly prefixes = new Map<string, PrefixTracker>();

  constructor(private readonly file?: string) {}

  /** Reads one record; returns the sample it completes, if any. */
  decode(record: unknown, line?: number): EnvSimSample | undefined {
    if (record === null || typeof record !== "object" || Array.isArray(record))
      throw this.invalid("a line is not a JSON object", line);
    const kind = (record as { kind?: unknown }).kind;
    if (kind === undefined) return record as EnvSimSample; // a v1 sample: states inline
    switch (kind) {
      case "header": {
        const header = record as HeaderRecord;
        if (header.format !== SAMPLE_FILE_FORMAT || typeof header.schemaVersion !== "number")
          throw this.invalid(`not a terrarium sample file header (format ${SAMPLE_FILE_FORMAT})`, line);
        if (header.schemaVersion > SAMPLE_FILE_SCHEMA_VERSION)
          throw this.invalid(
            `sample file schemaVersion ${header.schemaVersion} is newer than this terrarium reads (${SAMPLE_FILE_SCHEMA_VERSION})`,
            line,
          );
        this.header = header;
        return undefined;
      }
      case "environment": {
        const environment = record as EnvironmentRecord;
        this.environments.set(environment.id, environment);
        return undefined;
      }
      case "state": {
        const state = record as StateRecord;
        if (state.base === undefined) {
          if (!("state" in state)) throw this.invalid(`state ${state.id} has neither state nor base`, line);
          this.states.set(state.id, toImmutableJson(state.state));
        } else {
          const base = this.state(state.base, line);
          try {
            this.states.set(state.id, applyChanges(base, (state.changes ?? []).map(toJsonChange)));
          } catch (error) {
            throw this.invalid(
              `state ${state.id} does not apply to ${state.base}: ${(error as Error).message}`,
              line,
            );
          }
        }
        return undefined;
      }
      case "trajectory": {
        const trajectory = record as TrajectoryRecord;
        if (!this.environments.has(trajectory.environment))
          throw this.invalid(
            `trajectory ${trajectory.id} names an unknown environment ${trajectory.environment}`,
            line,
          );
        this.state(trajectory.state, line);
        this.trajectories.set(trajectory.id, trajectory);
        if (tracksPrefix((this.environments.get(trajectory.environment) as EnvironmentRecord).envKind))
          this.prefixes.set(trajectory.id, new PrefixTracker());
        return undefined;
      }
      case "sample":
        return this.sample(record as SampleRecord, line);
      case "error": {
        const error = record as ErrorRecord;
        const trajectory = this.trajectory(error.trajectory, line);
        this.errors.push({
          ...error,
          environment: (this.environments.get(trajectory.environment) as EnvironmentRecord).name,
          taskId: trajectory.taskId,
        });
        return undefined;
      }
      case "end": {
        const end = record as EndRecord;
        this.trajectories.delete(end.trajectory);
        this.prefixes.delete(end.trajectory);
        for (const id of end.release ?? []) this.states.delete(id);
        return undefined;
      }
      default:
        throw this.invalid(`unknown record kind ${JSON.stringify(kind)}`, line);
    }
  }

  /** The setup state (step 0) of a trajectory still open. */
  setupState(trajectoryId: string): unknown {
    const trajectory = this.trajectory(trajectoryId);
    return this.state(trajectory.state);
  }

  private sample(record: SampleRecord, line?: number): EnvSimSample {
    const trajectory = this.trajectory(record.trajectory, line);
    const environment = this.environments.get(trajectory.environment) as EnvironmentRecord;
    const tracker = this.prefixes.get(record.trajectory);
    const prefix = record.prefix ?? tracker?.implied(record.step);
    tracker?.advance(record.step, prefix, record.call, record.seed);
    return {
      schemaVersion: ENVSIM_SCHEMA_VERSION,
      id: record.id,
      envId: environment.name,
      taskId: trajectory.taskId,
      ...(trajectory.task !== undefined ? { task: trajectory.task } : {}),
      step: record.step,
      call: record.call,
      observation: record.observation,
      observationText: record.observationText ?? JSON.stringify(record.observation),
      before: this.state(record.before, line),
      after: this.state(record.after, line),
      changes: record.changes,
      delta: record.delta,
      success: record.success,
      argCount: record.argCount,
      envCode: environment.code,
      envKind: environment.envKind,
      environment: environment.reference,
      ...(record.seed !== undefined ? { seed: record.seed } : {}),
      ...(prefix ? { prefix } : {}),
    };
  }

  private state(id: string, line?: number): unknown {
    if (!this.states.has(id))
      throw this.invalid(`state ${id} is not defined before it is used (or was released)`, line);
    return this.states.get(id);
  }

  private trajectory(id: string, line?: number): TrajectoryRecord {
    const trajectory = this.trajectories.get(id);
    if (!trajectory) throw this.invalid(`trajectory ${id} is not open`, line);
    return trajectory;
  }

  private invalid(message: string, line?: number): TerrariumError {
    return new TerrariumError("INVALID_INPUT", `sample file: ${message}`, {
      where: { ...(this.file ? { file: this.file } : {}), ...(line !== undefined ? { line } : {}) },
    });
  }
}

function toJsonChange(change: StoredChange): JsonChange {
  return change.op === "remove"
    ? { op: "remove", path: change.path }
    : { op: change.op, path: change.path, after: change.value };
}

/**
 * The samples of a file, one at a time, with bounded memory: v2 files (states by reference, rebuilt with
 * structural sharing) and v1 files (one inline sample per line) alike. `onError` sees recorded failures.
 */
export async function* streamSamples(
  file: string,
  options: { onError?: (error: SampleDecoder["errors"][number]) => void } = {},
): AsyncGenerator<EnvSimSample> {
  const decoder = new SampleDecoder(file);
  let errors = 0;
  for await (const line of linesAsync(file)) {
    if (line.text.trim() === "") continue;
    const sample = decoder.decode(parseLine(line, file), line.number);
    for (; errors < decoder.errors.length; errors++)
      options.onError?.(decoder.errors[errors] as SampleDecoder["errors"][number]);
    if (sample) yield sample;
  }
}

/** Every sample of a file (v1 or v2); states of a v2 file share structure, so memory follows the changes. */
export async function readSamples(file: string): Promise<EnvSimSample[]> {
  const samples: EnvSimSample[] = [];
  for await (const sample of streamSamples(file)) samples.push(sample);
  return samples;
}

/** `readSamples`, synchronously (for callers that read whole files synchronously). */
export function readSamplesSync(file: string): EnvSimSample[] {
  const decoder = new SampleDecoder(file);
  const samples: EnvSimSample[] = [];
  for (const line of linesSync(file)) {
    if (line.text.trim() === "") continue;
    const sample = decoder.decode(parseLine(line, file), line.number);
    if (sample) samples.push(sample);
  }
  return samples;
}

/** Whether a file is a v2 sample file (its first line is the header). */
export function isSampleFile(file: string): boolean {
  if (!existsSync(file) || !statSync(file).isFile()) return false;
  const fd = openFile(file, "r");
  try {
    const buffer = Buffer.alloc(4096);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    const head = buffer.subarray(0, read).toString("utf8");
    const first = head.split("\n", 1)[0] ?? "";
    if (!first.startsWith('{"kind":"header"')) return false;
    try {
      return (JSON.parse(first) as HeaderRecord).format === SAMPLE_FILE_FORMAT;
    } catch {
      return false;
    }
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Writing

/** A state the file holds: its id, the object it was written from, and how many deltas lead to it. */
interface Written {
  id: string;
  object: unknown;
  depth: number;
  /** The trajectory whose end releases it; none for start states, which stay. */
  owner?: string;
}

/** An open trajectory of a writer. */
export interface TrajectoryHandle {
  readonly id: string;
  readonly environment: EnvironmentRecord;
  readonly taskId: string;
  readonly task?: string;
  /** Samples written so far. */
  samples: number;
  /** @internal the latest state of the trajectory */
  current: Written;
  /** @internal states written for this trajectory alone (released at its end) */
  created: Written[];
  /** @internal the prefixes a reader will imply (Python environments) */
  prefixes?: PrefixTracker;
}

export interface SampleWriterOptions {
  /** A delta chain is cut by a full state after this many deltas (default 1000). */
  fullStateEvery?: number;
  /** Pending output is written out once it reaches this many bytes (default 1 MiB), and at each trajectory's end. */
  flushBytes?: number;
}

/** What `SampleWriter.resume` found in the file it continues. */
export interface ResumeInfo {
  /** Finished trajectories, as `trajectoryKey(environment reference, taskId)`. */
  finished: Set<string>;
  /** Samples in the finished trajectories. */
  samples: number;
  /** Bytes cut from the end (an unfinished trajectory, a line cut short). */
  truncatedBytes: number;
  /**
   * Trajectories that had ended with an error (the agent model failed): taken out of the file, with their
   * samples, to be collected again.
   */
  retried: number;
}

export function trajectoryKey(reference: string, taskId: string): string {
  return `${reference}\u0000${taskId}`;
}

/** A delta larger than this many changes is written as a full state instead. */
const MAX_DELTA_CHANGES = 256;

/**
 * Writes a v2 sample file as a collection goes: records are appended as they are made (buffered up to
 * `flushBytes`, flushed at every trajectory's end), and only each open trajectory's latest state is kept.
 */
export class SampleWriter {
  private readonly buffer: string[] = [];
  private buffered = 0;
  private written = 0;
  private nextState = 1;
  private nextTrajectory = 1;
  private nextEnvironment = 1;
  private closed = false;
  /** States that are written and not released, by object (so a state met again is referred to). */
  private readonly known = new WeakMap<object, Written>();
  /** Start states shared by trajectories (never released), by content hash. */
  private readonly shared = new Map<string, Written>();
  /** The latest shared state per environment: a new start state is written as its delta when they are close. */
  private readonly lastShared = new Map<string, Written>();
  private readonly environments = new Map<string, EnvironmentRecord[]>();
  private readonly fullStateEvery: number;
  private readonly flushBytes: number;

  private constructor(
    private readonly fd: number,
    readonly file: string,
    options: SampleWriterOptions,
  ) {
    this.fullStateEvery = Math.max(1, options.fullStateEvery ?? 1000);
    this.flushBytes = options.flushBytes ?? 1 << 20;
  }

  /** A new file (an existing one is replaced), starting with its header. */
  static create(
    file: string,
    options: SampleWriterOptions & { collection?: CollectionSettings } = {},
  ): SampleWriter {
    const writer = new SampleWriter(openFile(file, "w"), file, options);
    const header: HeaderRecord = {
      kind: "header",
      schemaVersion: SAMPLE_FILE_SCHEMA_VERSION,
      format: SAMPLE_FILE_FORMAT,
      ...(options.collection ? { collection: options.collection } : {}),
    };
    writer.emit(header);
    writer.flush();
    return writer;
  }

  /**
   * Continues a collection's file: what follows its last finished trajectory (an unfinished one, a line
   * cut short by a crash) is cut off, trajectories that ended with an error are taken out (the file is
   * rewritten without them) so that they are collected again, and new records are appended. A missing or
   * empty file is created. The file must have been written by a collection with the same settings.
   */
  static resume(
    file: string,
    options: SampleWriterOptions & { collection: CollectionSettings },
  ): { writer: SampleWriter; resumed: ResumeInfo } {
    if (!existsSync(file) || statSync(file).size === 0)
      return {
        writer: SampleWriter.create(file, options),
        resumed: { finished: new Set(), samples: 0, truncatedBytes: 0, retried: 0 },
      };
    const scan = scanForResume(file, options.collection);
    const size = statSync(file).size;
    if (scan.cut < size) truncateSync(file, scan.cut);
    if (scan.errored.size > 0) dropTrajectories(file, scan.errored, scan.erroredStates);
    const writer = new SampleWriter(openFile(file, "a"), file, options);
    writer.nextState = scan.nextState;
    writer.nextTrajectory = scan.nextTrajectory;
    writer.nextEnvironment = scan.nextEnvironment;
    for (const environment of scan.environments) writer.addEnvironment(environment);
    for (const [hash, state] of scan.shared) {
      const written: Written = { id: state.id, object: state.object, depth: 0 };
      writer.shared.set(hash, written);
      writer.remember(written);
      writer.lastShared.set(state.environment, written);
    }
    return {
      writer,
      resumed: {
        finished: scan.finished,
        samples: scan.samples,
        truncatedBytes: size - scan.cut,
        retried: scan.errored.size,
      },
    };
  }

  /** The environment's record, written the first time it is named (by reference and code). */
  environment(environment: {
    name: string;
    reference: string;
    envKind: string;
    code: string;
  }): EnvironmentRecord {
    const existing = this.environments
      .get(environment.reference)
      ?.find(
        (e) =>
          e.code === environment.code && e.name === environment.name && e.envKind === environment.envKind,
      );
    if (existing) return existing;
    const record: EnvironmentRecord = {
      kind: "environment",
      id: `e${this.nextEnvironment++}`,
      ...environment,
    };
    this.addEnvironment(record);
    this.emit(record);
    return record;
  }

  /** Starts a trajectory at its setup state (step 0). */
  beginTrajectory(
    environment: EnvironmentRecord,
    trajectory: { taskId: string; task?: string; seed?: string; state: unknown },
  ): TrajectoryHandle {
    const start = this.sharedState(environment.id, trajectory.state);
    const handle: TrajectoryHandle = {
      id: `t${this.nextTrajectory++}`,
      environment,
      taskId: trajectory.taskId,
      ...(trajectory.task !== undefined ? { task: trajectory.task } : {}),
      samples: 0,
      current: start,
      created: [],
      ...(tracksPrefix(environment.envKind) ? { prefixes: new PrefixTracker() } : {}),
    };
    const record: TrajectoryRecord = {
      kind: "trajectory",
      id: handle.id,
      environment: environment.id,
      taskId: trajectory.taskId,
      ...(trajectory.task !== undefined ? { task: trajectory.task } : {}),
      ...(trajectory.seed !== undefined ? { seed: trajectory.seed } : {}),
      state: start.id,
    };
    this.emit(record);
    return handle;
  }

  /** Appends a sample of the trajectory; its states are written as deltas from the trajectory's latest. */
  sample(handle: TrajectoryHandle, sample: EnvSimSample): void {
    const before = this.stateAfter(handle, sample.before);
    handle.current = before;
    const after = this.stateAfter(handle, sample.after);
    handle.current = after;
    const observationText = JSON.stringify(sample.observation);
    // The prefix is stored only where a reader would not imply the same one from the samples before.
    const implied = handle.prefixes?.implied(sample.step);
    const prefix = handle.prefixes ? sample.prefix : undefined;
    const stated = prefix !== undefined && !(implied && jsonEqual(implied, prefix));
    handle.prefixes?.advance(sample.step, stated ? prefix : implied, sample.call, sample.seed);
    const record: SampleRecord = {
      kind: "sample",
      trajectory: handle.id,
      id: sample.id,
      step: sample.step,
      call: sample.call,
      observation: sample.observation,
      ...(sample.observationText !== observationText ? { observationText: sample.observationText } : {}),
      before: before.id,
      after: after.id,
      changes: sample.changes,
      delta: sample.delta,
      success: sample.success,
      argCount: sample.argCount,
      ...(sample.seed !== undefined ? { seed: sample.seed } : {}),
      ...(stated ? { prefix } : {}),
    };
    this.emit(record);
    handle.samples++;
  }

  /** Records a step that could not be made (the trajectory usually ends after it). */
  error(handle: TrajectoryHandle, step: number, error: string): void {
    const record: ErrorRecord = { kind: "error", trajectory: handle.id, step, error };
    this.emit(record);
  }

  /** Ends a trajectory: its own states are released, and everything so far is written out. */
  endTrajectory(handle: TrajectoryHandle): void {
    const release = handle.created.map((state) => state.id);
    for (const state of handle.created)
      if (state.object !== null && typeof state.object === "object" && this.known.get(state.object) === state)
        this.known.delete(state.object);
    handle.created = [];
    const record: EndRecord = {
      kind: "end",
      trajectory: handle.id,
      samples: handle.samples,
      ...(release.length > 0 ? { release } : {}),
    };
    this.emit(record);
    this.flush();
  }

  /** Writes out what is pending. */
  flush(): void {
    if (this.buffer.length === 0) return;
    const text = this.buffer.join("");
    this.buffer.length = 0;
    this.buffered = 0;
    writeSync(this.fd, text);
    this.written += Buffer.byteLength(text);
  }

  /** Bytes this writer has written (not counting what a resumed file held), pending output included. */
  size(): number {
    this.flush();
    return this.written;
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    closeSync(this.fd);
    this.closed = true;
  }

  private addEnvironment(record: EnvironmentRecord): void {
    const list = this.environments.get(record.reference) ?? [];
    list.push(record);
    this.environments.set(record.reference, list);
  }

  /** A start state: one already written (same object or same content), a delta from the environment's last start state, or a full state. */
  private sharedState(environmentId: string, state: unknown): Written {
    const known = this.lookup(state);
    if (known && known.owner === undefined) return known;
    const hash = hashJson(state);
    const existing = this.shared.get(hash);
    if (existing) {
      this.remember({ ...existing, object: state });
      return existing;
    }
    const written = this.writeState(state, this.lastShared.get(environmentId));
    this.shared.set(hash, written);
    this.lastShared.set(environmentId, written);
    return written;
  }

  /** The state `object` as reached from the trajectory's latest state. */
  private stateAfter(handle: TrajectoryHandle, object: unknown): Written {
    const current = handle.current;
    if (object === current.object) return current;
    // A state another open trajectory wrote may be released before this one is done with it.
    const known = this.lookup(object);
    if (known && (known.owner === undefined || known.owner === handle.id)) return known;
    const changes = diffJson(current.object, object);
    if (changes.length === 0) return current;
    const written = this.writeState(object, current, changes, handle.id);
    handle.created.push(written);
    return written;
  }

  private lookup(object: unknown): Written | undefined {
    return object !== null && typeof object === "object" ? this.known.get(object) : undefined;
  }

  private remember(written: Written): void {
    if (written.object !== null && typeof written.object === "object")
      this.known.set(written.object, written);
  }

  private writeState(
    object: unknown,
    base: Written | undefined,
    changes?: JsonChange[],
    owner?: string,
  ): Written {
    const id = `s${this.nextState++}`;
    let written: Written | undefined;
    if (base && base.depth + 1 < this.fullStateEvery) {
      const delta = changes ?? diffJson(base.object, object);
      if (delta.length <= MAX_DELTA_CHANGES) {
        const record: StateRecord = {
          kind: "state",
          id,
          base: base.id,
          changes: delta.map((change) =>
            change.op === "remove"
              ? { op: "remove", path: change.path }
              : { op: change.op, path: change.path, value: change.after },
          ),
        };
        this.emit(record);
        written = { id, object, depth: base.depth + 1, ...(owner ? { owner } : {}) };
      }
    }
    if (!written) {
      const record: StateRecord = { kind: "state", id, state: object };
      this.emit(record);
      written = { id, object, depth: 0, ...(owner ? { owner } : {}) };
    }
    this.remember(written);
    return written;
  }

  private emit(record: SampleFileRecord): void {
    if (this.closed) throw new TerrariumError("INVALID_INPUT", "the sample file is closed");
    const line = `${JSON.stringify(record)}\n`;
    this.buffer.push(line);
    this.buffered += line.length;
    if (this.buffered >= this.flushBytes) this.flush();
  }
}

interface ResumeScan {
  /** Byte offset after the last finished trajectory (or the header). */
  cut: number;
  finished: Set<string>;
  samples: number;
  nextState: number;
  nextTrajectory: number;
  nextEnvironment: number;
  environments: EnvironmentRecord[];
  /** Start states of finished trajectories (never released), by content hash, rebuilt as a reader does. */
  shared: Map<string, { id: string; object: unknown; environment: string }>;
  /** Finished trajectories that recorded an error, to be taken out and collected again. */
  errored: Set<string>;
  /** The states those trajectories alone used (their `end` record releases them). */
  erroredStates: Set<string>;
}

/** Reads a file to continue: what its finished trajectories hold, and where the unfinished part begins. */
function scanForResume(file: string, collection: CollectionSettings): ResumeScan {
  const decoder = new SampleDecoder(file);
  const scan: ResumeScan = {
    cut: 0,
    finished: new Set(),
    samples: 0,
    nextState: 1,
    nextTrajectory: 1,
    nextEnvironment: 1,
    environments: [],
    shared: new Map(),
    errored: new Set(),
    erroredStates: new Set(),
  };
  const failed = new Set<string>();
  const refuse = (message: string) =>
    new TerrariumError("INVALID_INPUT", `cannot resume: ${message}`, { where: { file } });
  const number = (id: string) => Number(id.slice(1)) || 0;
  const environments = new Map<string, EnvironmentRecord>();
  const environmentLines = new Map<string, number>();
  const trajectories = new Map<string, TrajectoryRecord>();
  // Start states by id, hashed once; they count only once a trajectory that starts there has finished.
  const starts = new Map<string, { hash: string; object: unknown; environment: string; finished: boolean }>();
  let first = true;
  for (const line of linesSync(file)) {
    if (!line.complete) break; // a line cut short by a crash: it lies after the cut
    if (line.text.trim() === "") continue;
    const record = parseLine(line, file) as SampleFileRecord;
    if (first) {
      first = false;
      if ((record as { kind?: unknown }).kind !== "header")
        throw refuse(
          `it is not a terrarium sample file (schemaVersion ${SAMPLE_FILE_SCHEMA_VERSION}); collect again without --resume`,
        );
      const was = (record as HeaderRecord).collection;
      if (!was) throw refuse("the file was not written by envsim collect");
      const differs = (["source", "seed", "steps", "model"] as const).filter(
        (key) => String(was[key] ?? "") !== String(collection[key] ?? ""),
      );
      if (differs.length > 0)
        throw refuse(
          `the file was collected with ${differs.map((key) => `--${key} ${was[key] ?? "(none)"}`).join(", ")}, ` +
            `not ${differs.map((key) => `--${key} ${collection[key] ?? "(none)"}`).join(", ")}`,
        );
      decoder.decode(record, line.number);
      scan.cut = line.end;
      continue;
    }
    decoder.decode(record, line.number);
    switch (record.kind) {
      case "environment":
        environments.set(record.id, record);
        environmentLines.set(record.id, line.start);
        scan.nextEnvironment = Math.max(scan.nextEnvironment, number(record.id) + 1);
        break;
      case "state":
        scan.nextState = Math.max(scan.nextState, number(record.id) + 1);
        break;
      case "trajectory":
        trajectories.set(record.id, record);
        scan.nextTrajectory = Math.max(scan.nextTrajectory, number(record.id) + 1);
        if (!starts.has(record.state)) {
          const object = decoder.setupState(record.id);
          starts.set(record.state, {
            hash: hashJson(object),
            object,
            environment: record.environment,
            finished: false,
          });
        }
        break;
      case "error":
        failed.add(record.trajectory);
        break;
      case "end": {
        const trajectory = trajectories.get(record.trajectory);
        if (!trajectory) break;
        // Its start state stays in the file either way (later trajectories may start there too).
        (starts.get(trajectory.state) as { finished: boolean }).finished = true;
        scan.cut = line.end;
        if (failed.has(record.trajectory)) {
          scan.errored.add(record.trajectory);
          for (const id of record.release ?? []) scan.erroredStates.add(id);
          break;
        }
        const environment = environments.get(trajectory.environment) as EnvironmentRecord;
        scan.finished.add(trajectoryKey(environment.reference, trajectory.taskId));
        scan.samples += record.samples;
        break;
      }
      default:
        break;
    }
  }
  // What lies after the cut is written again: keep only the environment records before it.
  scan.environments = [...environments.values()].filter(
    (e) => (environmentLines.get(e.id) as number) < scan.cut,
  );
  for (const [id, start] of starts)
    if (start.finished && !scan.shared.has(start.hash))
      scan.shared.set(start.hash, { id, object: start.object, environment: start.environment });
  return scan;
}

/** The record kind and id (or trajectory) a writer's line starts with: `{"kind":…,"id"|"trajectory":…`. */
const RECORD_HEAD = /^\{"kind":"(\w+)","(?:id|trajectory)":"((?:[^"\\]|\\.)*)"/;

/**
 * Rewrites a sample file without some trajectories: their trajectory, sample, error and end records and
 * the states they alone used (start states stay: other trajectories may refer to them). The new file
 * replaces the old one only once it is complete, so a crash here leaves the old file as it was.
 */
function dropTrajectories(file: string, trajectories: Set<string>, states: Set<string>): void {
  const temporary = `${file}.resume-${process.pid}`;
  const fd = openFile(temporary, "w");
  let complete = false;
  try {
    const pending: string[] = [];
    let size = 0;
    for (const line of linesSync(file)) {
      let kind: string | undefined;
      let id: string | undefined;
      const head = RECORD_HEAD.exec(line.text);
      if (head) [, kind, id] = head;
      else if (line.text.trim() !== "") {
        const record = parseLine(line, file) as { kind?: unknown; id?: unknown; trajectory?: unknown };
        kind = typeof record.kind === "string" ? record.kind : undefined;
        id = String(kind === "state" || kind === "trajectory" ? record.id : record.trajectory);
      }
      const dropped =
        kind === "state"
          ? states.has(id as string)
          : (kind === "trajectory" || kind === "sample" || kind === "error" || kind === "end") &&
            trajectories.has(id as string);
      if (dropped) continue;
      pending.push(`${line.text}\n`);
      size += line.text.length;
      if (size >= CHUNK) {
        writeSync(fd, pending.join(""));
        pending.length = 0;
        size = 0;
      }
    }
    if (pending.length > 0) writeSync(fd, pending.join(""));
    complete = true;
  } finally {
    closeSync(fd);
    if (!complete) rmSync(temporary, { force: true });
  }
  renameSync(temporary, file);
}

/**
 * Writes samples as a v2 file, whatever produced them (a v1 file, an import): each environment and each
 * episode (environment and task id) becomes a record, and states are written as deltas within an
 * episode. Episodes stay open until the end, so memory holds each one's latest state.
 */
export async function writeSamples(
  file: string,
  samples: Iterable<EnvSimSample> | AsyncIterable<EnvSimSample>,
  options: SampleWriterOptions = {},
): Promise<{ samples: number; bytes: number }> {
  const writer = SampleWriter.create(file, options);
  const open = new Map<string, TrajectoryHandle>();
  let count = 0;
  try {
    for await (const sample of samples) {
      const environment = writer.environment({
        name: sample.envId,
        reference: environmentOf(sample),
        envKind: sample.envKind,
        code: sample.envCode,
      });
      const key = `${environment.id}\u0000${sample.taskId}`;
      let handle = open.get(key);
      if (!handle) {
        handle = writer.beginTrajectory(environment, {
          taskId: sample.taskId,
          ...(sample.task !== undefined ? { task: sample.task } : {}),
          state: sample.before,
        });
        open.set(key, handle);
      }
      writer.sample(handle, sample);
      count++;
    }
    for (const handle of open.values()) writer.endTrajectory(handle);
    return { samples: count, bytes: writer.size() };
  } finally {
    writer.close();
  }
}
