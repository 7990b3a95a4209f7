import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import type { HistoryEntry } from "../../src/sessions/types.js";

/** `file()` gives a fresh SQLite path in a folder of its own; the folders are removed after the file's tests. */
export function scratchSqliteFiles(prefix: string): () => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return join(dir, "sessions.sqlite");
  };
}

/** The `n`th history entry of a counter's session, as a store is given it (one second apart). */
export const counterStep = (n: number): Omit<HistoryEntry, "index" | "snapshot"> => ({
  at: new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString(),
  request: { name: "inc", arguments: { n } },
  result: { status: "ok", observation: { n }, changes: [], errors: [] },
  simulator: "code",
});

/** A session record for store tests. */
export const sessionRecordOf = (id: string) => ({ id, createdAt: "2025-01-01T00:00:00.000Z", seed: "x" });

/** A history entry of about a kilobyte, as a bank transfer's is: for tests of how the log grows. */
export const kilobyteStep = (n: number): Omit<HistoryEntry, "index" | "snapshot"> => ({
  at: "2025-01-01T00:00:01.000Z",
  request: { name: "transfer", arguments: { n } },
  result: { status: "ok", observation: { note: "x".repeat(900), n }, changes: [], errors: [] },
  simulator: "code",
});

/** The size of a SQLite file's write-ahead log (0 while there is none). */
export function walBytes(file: string): number {
  try {
    return statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}
