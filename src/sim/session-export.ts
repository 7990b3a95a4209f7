import { z } from "zod";
import { TerrariumError } from "../core/errors.js";
import { formatPointer } from "../core/json-pointer.js";
import { SESSION_SCHEMA_VERSION, type SessionRecord, type Snapshot } from "../sessions/types.js";

/** The session export document (`GET /sessions/:id/export`), checked before anything is stored. */
const SnapshotSchema = z.object({
  index: z.number().int().min(0),
  at: z.string(),
  reason: z.enum(["initial", "step", "set", "reset", "fork", "real"]),
  state: z.unknown(),
});

// Entries may carry fields added by newer simulators; they are kept as they are.
const HistoryEntrySchema = z.looseObject({
  index: z.number().int().min(0),
  at: z.string(),
  request: z.object({ name: z.string(), arguments: z.unknown() }),
  result: z.looseObject({
    status: z.enum(["ok", "invalid", "tool_error", "error"]),
    observation: z.unknown(),
    changes: z.array(z.unknown()),
    errors: z.array(z.unknown()),
  }),
  simulator: z.string(),
  usage: z.record(z.string(), z.unknown()).optional(),
  snapshot: z.number().int().min(1).optional(),
  semantic: z.object({ status: z.enum(["failed", "error"]), message: z.string().optional() }).optional(),
});

// The document's frame; its snapshots and history entries are checked one by one (see readExport).
const SessionExportSchema = z.object({
  schemaVersion: z.literal(SESSION_SCHEMA_VERSION),
  session: z.looseObject({
    id: z.string(),
    createdAt: z.string(),
    seed: z.string(),
    owner: z.string().optional(),
    parent: z.object({ session: z.string(), snapshot: z.number().int().min(0) }).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  }),
  snapshots: z.array(z.unknown()).min(1),
  history: z.array(z.unknown()),
});

export interface ParsedSessionExport {
  session: SessionRecord;
  snapshots: Snapshot[];
  history: z.infer<typeof HistoryEntrySchema>[];
}

/**
 * Checks a session export: its shape (zod), then that it is consistent: snapshots and history entries
 * numbered 0, 1, 2…, each snapshot after the first produced by at most one entry, every entry's
 * snapshot one that exists. Errors name the JSON Pointer of the first problem.
 */
export function parseSessionExport(document: unknown): ParsedSessionExport {
  const reading = readExport(document);
  for (let step = reading.next(); ; step = reading.next()) if (step.done) return step.value;
}

/**
 * `parseSessionExport` for long documents: `pause` is awaited between snapshots and entries, so that a
 * caller can give the event loop a turn while thousands of them are checked.
 */
export async function readSessionExport(
  document: unknown,
  pause: () => Promise<void>,
): Promise<ParsedSessionExport> {
  const reading = readExport(document);
  for (let step = reading.next(); ; step = reading.next()) {
    if (step.done) return step.value;
    await pause();
  }
}

/** The checks, yielding after each snapshot and entry. */
function* readExport(document: unknown): Generator<void, ParsedSessionExport> {
  const frame = SessionExportSchema.safeParse(document);
  if (!frame.success) throw shapeError(frame.error, []);
  const { session } = frame.data;
  const snapshots: Snapshot[] = [];
  for (const [i, item] of frame.data.snapshots.entries()) {
    const parsed = SnapshotSchema.safeParse(item);
    if (!parsed.success) throw shapeError(parsed.error, ["snapshots", i]);
    const snapshot = parsed.data as Snapshot;
    if (snapshot.index !== i)
      throw invalid(`/snapshots/${i}/index`, `snapshot ${i} has index ${snapshot.index}`);
    snapshots.push(snapshot);
    yield;
  }
  const history: z.infer<typeof HistoryEntrySchema>[] = [];
  const produced = new Set<number>();
  for (const [i, item] of frame.data.history.entries()) {
    const parsed = HistoryEntrySchema.safeParse(item);
    if (!parsed.success) throw shapeError(parsed.error, ["history", i]);
    const entry = parsed.data;
    if (entry.index !== i)
      throw invalid(`/history/${i}/index`, `history entry ${i} has index ${entry.index}`);
    if (entry.snapshot !== undefined) {
      if (entry.snapshot >= snapshots.length || produced.has(entry.snapshot))
        throw invalid(
          `/history/${i}/snapshot`,
          `history entry ${i} names snapshot ${entry.snapshot}, which is missing or taken`,
        );
      produced.add(entry.snapshot);
    }
    history.push(entry);
    yield;
  }
  return { session: session as SessionRecord, snapshots, history };
}

/** The first issue zod found, located in the whole document (`prefix` is where the checked part sits). */
function shapeError(error: z.ZodError, prefix: Array<string | number>): TerrariumError {
  const issue = error.issues[0] as z.core.$ZodIssue;
  const pointer = formatPointer([...prefix, ...issue.path].map((part) => String(part)));
  return invalid(
    pointer,
    pointer === "/schemaVersion"
      ? `schemaVersion must be ${SESSION_SCHEMA_VERSION}`
      : `${pointer || "the document"}: ${issue.message}`,
  );
}

function invalid(pointer: string, message: string): TerrariumError {
  return new TerrariumError("INVALID_INPUT", `not a valid terrarium session export: ${message}`, {
    where: { pointer },
  });
}
