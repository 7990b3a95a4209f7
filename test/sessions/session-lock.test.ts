import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { type HistoryEntry, MemoryStore, type Snapshot } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";

/** A memory store that says which of its reads and writes happened under `withSessionLock`. */
class LockingStore extends MemoryStore {
  readonly log: string[] = [];
  private held = new Set<string>();

  async withSessionLock<T>(id: string, run: () => Promise<T>): Promise<T> {
    expect(this.held.has(id)).toBe(false); // never taken twice at once for one session
    this.held.add(id);
    this.log.push("lock");
    try {
      return await run();
    } finally {
      this.held.delete(id);
      this.log.push("unlock");
    }
  }

  private note(what: string, id: string): void {
    this.log.push(`${what}${this.held.has(id) ? "" : " (unlocked)"}`);
  }

  override async latestSnapshot(id: string): Promise<Snapshot> {
    this.note("read", id);
    return super.latestSnapshot(id);
  }

  override async appendStep(
    id: string,
    entry: Omit<HistoryEntry, "index" | "snapshot">,
    state?: { state: unknown; reason: Snapshot["reason"] },
  ): Promise<HistoryEntry> {
    this.note("write", id);
    return super.appendStep(id, entry, state);
  }

  override async appendSnapshot(id: string, state: unknown, reason: Snapshot["reason"], at: string) {
    this.note("set", id);
    return super.appendSnapshot(id, state, reason, at);
  }
}

describe("the engine under a store's session lock", () => {
  it("reads the latest state, simulates and writes each call inside the lock, one call at a time", async () => {
    const bank = BUILTIN_ENVIRONMENTS.bank as NonNullable<(typeof BUILTIN_ENVIRONMENTS)["bank"]>;
    const store = new LockingStore();
    const engine = new Engine({
      catalog: new Catalog(bank.tools),
      simulators: [new CodeSimulator(bank)],
      store,
    });
    const session = await engine.createSession({ state: await bank.initialState() });
    store.log.length = 0;
    const transfer = { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 };
    await Promise.all(
      [1, 2, 3].map(() => engine.call(session.id, { name: "transfer", arguments: transfer })),
    );
    await engine.setState(session.id, await bank.initialState());
    expect(store.log).toEqual([
      ...[1, 2, 3].flatMap(() => ["lock", "read", "write", "unlock"]),
      "lock",
      "read",
      "set",
      "unlock",
    ]);
    await engine.close();
  });
});
