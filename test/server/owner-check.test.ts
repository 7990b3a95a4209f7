import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/catalog.js";
import { bank } from "../../src/envs/corpus/bank.js";
import { sessionCall } from "../../src/server/terrarium-routes.js";
import { MemoryStore } from "../../src/sessions/index.js";
import { Engine } from "../../src/sim/engine.js";
import { CodeSimulator } from "../../src/sim/simulators/code.js";

/**
 * `POST /sessions/{id}/calls` checks that the session is the caller's before anything else. The engine
 * keeps the owners it has read (an owner never changes), so a loop of calls reads the session's record
 * once, not once per call (for Postgres, a round trip per call); the call itself checks the owner again
 * at its own read of the session, so a kept owner that went stale cannot let another token in.
 */
class CountingStore extends MemoryStore {
  recordReads = 0;
  override async getSession(id: string) {
    this.recordReads++;
    return super.getSession(id);
  }
}

async function setUp() {
  const store = new CountingStore();
  const engine = new Engine({
    catalog: new Catalog(bank.tools),
    store,
    simulators: [new CodeSimulator(bank)],
    initialState: await bank.initialState(),
  });
  return { store, engine };
}

const body = (amount: number) => ({
  text: JSON.stringify({
    name: "transfer",
    arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount },
  }),
  error: undefined,
  contentType: "application/json",
  maxDepth: 64,
});

describe("the owner check of a session call", () => {
  it("reads the session's record once for a loop of calls, and refuses other tokens every time", async () => {
    const { store, engine } = await setUp();
    const { id } = await engine.createSession({ owner: "hash-a" });
    store.recordReads = 0;
    for (let i = 0; i < 20; i++) {
      const outcome = await sessionCall(engine, "hash-a", id, body(1));
      expect(outcome.status).toBe("ok");
    }
    expect(store.recordReads).toBe(1);
    for (const other of ["hash-b", undefined])
      await expect(sessionCall(engine, other, id, body(1))).rejects.toMatchObject({
        code: "UNKNOWN_SESSION",
      });
    await expect(sessionCall(engine, "hash-a", "missing", body(1))).rejects.toMatchObject({
      code: "UNKNOWN_SESSION",
    });
    // A bad body on a session that is not the caller's is still refused as unknown first.
    await expect(sessionCall(engine, "hash-b", id, { ...body(1), text: "not json" })).rejects.toMatchObject({
      code: "UNKNOWN_SESSION",
    });
    expect((await engine.history(id)).length).toBe(20);
  });

  it("refuses a call when the kept owner went stale (the id now belongs to someone else)", async () => {
    const { store, engine } = await setUp();
    const { id } = await engine.createSession({ owner: "hash-a" });
    expect(await engine.sessionOwner(id)).toEqual({ owner: "hash-a" });
    // Another replica deleted the session and a new one got the same id for another token (ids are
    // seeded per engine, so two engines with one seed can do this): only the store knows.
    const record = await store.getSession(id);
    if (!record) throw new Error("the session was not stored");
    await store.deleteSession(id);
    await store.createSession({ ...record, owner: "hash-b" }, await bank.initialState());
    await expect(sessionCall(engine, "hash-a", id, body(1))).rejects.toMatchObject({
      code: "UNKNOWN_SESSION",
    });
    // Nothing was recorded, and the stale owner was dropped: the next check reads the record again.
    expect(await store.history(id)).toEqual([]);
    expect(await engine.sessionOwner(id)).toEqual({ owner: "hash-b" });
    expect((await sessionCall(engine, "hash-b", id, body(1))).status).toBe("ok");
  });

  it("forgets the owner of a session it deletes", async () => {
    const { engine } = await setUp();
    const { id } = await engine.createSession({ owner: "hash-a" });
    await sessionCall(engine, "hash-a", id, body(1));
    await engine.deleteSession(id);
    expect(await engine.sessionOwner(id)).toBeUndefined();
    await expect(sessionCall(engine, "hash-a", id, body(1))).rejects.toMatchObject({
      code: "UNKNOWN_SESSION",
    });
  });

  it("does not lock the real owner out with a kept owner gone stale", async () => {
    const { store, engine } = await setUp();
    const { id } = await engine.createSession({ owner: "hash-a" });
    expect((await sessionCall(engine, "hash-a", id, body(1))).status).toBe("ok");
    // Elsewhere the session is deleted and its id made again for another token: only the store knows.
    const record = await store.getSession(id);
    if (!record) throw new Error("the session was not stored");
    await store.deleteSession(id);
    await store.createSession({ ...record, owner: "hash-b" }, await bank.initialState());
    // The new owner gets in at once (the kept "hash-a" is read again before a refusal)…
    expect((await sessionCall(engine, "hash-b", id, body(1))).status).toBe("ok");
    // …the old one is refused, and an open server's caller (no token) too.
    for (const other of ["hash-a", undefined])
      await expect(sessionCall(engine, other, id, body(1))).rejects.toMatchObject({
        code: "UNKNOWN_SESSION",
      });
    // A session that does not exist is unknown to a caller without a token as well.
    expect(await engine.ownsSession("no-such-session", undefined)).toBe(false);
  });
});
