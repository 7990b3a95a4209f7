import { mkdtempSync, rmSync } from "node:fs";
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
