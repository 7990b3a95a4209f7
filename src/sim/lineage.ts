import { same } from "../core/json-diff.js";
import type { HistoryEntry, Snapshot, Store } from "../sessions/types.js";
import type { SessionLineage } from "./types.js";

type Event = { entry: HistoryEntry } | { snapshot: Snapshot };

/**
 * How a session reached its latest state, from the store: the base state and the replayable calls since,
 * oldest first. Walking back from the end, a call that is not replayable but changed the state, or a state
 * set from outside, is the base; a reset (or a state set back to one the session had) continues from that
 * snapshot; the first snapshot of a fork continues with the parent's lineage up to the forked snapshot.
 */
export async function sessionLineage(
  store: Store,
  sessionId: string,
  replayable: (entry: HistoryEntry) => boolean,
): Promise<SessionLineage> {
  return lineageOf(store, sessionId, undefined, replayable, 0);
}

async function lineageOf(
  store: Store,
  sessionId: string,
  /** Stop at this snapshot (a fork point), and take calls that changed nothing only up to `until`. */
  cut: { snapshot: number; until: string } | undefined,
  replayable: (entry: HistoryEntry) => boolean,
  depth: number,
): Promise<SessionLineage> {
  const [record, snapshots, history] = await Promise.all([
    store.getSession(sessionId),
    store.snapshots(sessionId),
    store.history(sessionId),
  ]);
  const first = snapshots[0];
  if (!record || !first) return { base: undefined, entries: [] };
  let events = timeline(snapshots, history);
  if (cut) events = upTo(events, cut);
  const stateOf = (index: number) => snapshots.find((snapshot) => snapshot.index === index)?.state;

  /** The lineage of the first snapshot: the parent's at the fork point, or the first state itself. */
  const start = async (): Promise<SessionLineage> => {
    // Forks of forks are followed; the depth bound only guards against a corrupt parent cycle.
    if (record.parent && depth < 1000 && (await store.getSession(record.parent.session)))
      return lineageOf(
        store,
        record.parent.session,
        { snapshot: record.parent.snapshot, until: record.createdAt },
        replayable,
        depth + 1,
      );
    return { base: first.state, entries: [] };
  };

  const entries: HistoryEntry[] = [];
  const withEntries = (lineage: SessionLineage): SessionLineage => ({
    base: lineage.base,
    entries: [...lineage.entries, ...entries],
  });
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as Event;
    if ("entry" in event) {
      if (replayable(event.entry)) entries.unshift(event.entry);
      else if (event.entry.snapshot !== undefined) return { base: stateOf(event.entry.snapshot), entries };
      continue;
    }
    const snapshot = event.snapshot;
    if (snapshot.index === 0 || same(snapshot.state, first.state)) return withEntries(await start());
    // A state set back to one the session had before (an undo, a state read and written back) continues
    // from that snapshot's lineage.
    const earlier = snapshots.findLast(
      (candidate) => candidate.index < snapshot.index && same(candidate.state, snapshot.state),
    );
    if (earlier && depth < 1000)
      return withEntries(
        await lineageOf(
          store,
          sessionId,
          { snapshot: earlier.index, until: snapshot.at },
          replayable,
          depth + 1,
        ),
      );
    return { base: snapshot.state, entries };
  }
  return withEntries(await start());
}

/**
 * The session's calls and the snapshots no call produced, in the order they happened. A call that made a
 * snapshot sits at it; a call that changed nothing is placed among the other snapshots by its time
 * (the engine never records a time earlier than the session's last record).
 */
function timeline(snapshots: Snapshot[], history: HistoryEntry[]): Event[] {
  const produced = new Set(
    history.flatMap((entry) => (entry.snapshot === undefined ? [] : [entry.snapshot])),
  );
  const standalone = snapshots.filter((snapshot) => !produced.has(snapshot.index));
  const events: Event[] = [];
  let s = 0;
  for (const entry of history) {
    while (s < standalone.length) {
      const snapshot = standalone[s] as Snapshot;
      const before = entry.snapshot !== undefined ? snapshot.index < entry.snapshot : snapshot.at < entry.at;
      if (!before) break;
      events.push({ snapshot });
      s++;
    }
    events.push({ entry });
  }
  for (; s < standalone.length; s++) events.push({ snapshot: standalone[s] as Snapshot });
  return events;
}

/** The events up to a snapshot, with the calls that changed nothing after it but before `until`. */
function upTo(events: Event[], cut: { snapshot: number; until: string }): Event[] {
  const kept: Event[] = [];
  let reached = false;
  for (const event of events) {
    const index = "snapshot" in event ? event.snapshot.index : event.entry.snapshot;
    if (index !== undefined) {
      if (reached || index > cut.snapshot) break;
      if (index === cut.snapshot) reached = true;
      kept.push(event);
      continue;
    }
    if (reached && (event as { entry: HistoryEntry }).entry.at > cut.until) break;
    kept.push(event);
  }
  return kept;
}
