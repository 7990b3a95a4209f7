import { describe, expect, it } from "vitest";
import type { PostgresStore } from "../../src/sessions/postgres-store.js";
import {
  bumpSteps,
  postgresAvailable,
  recordStatements,
  scratchStores,
  sessionRecord,
} from "../helpers/postgres.js";

/**
 * A server reads a session's record before every call (whose session is it?). While the replica holds the
 * session's lock (a call of its own runs under it, or it keeps it between calls), that read needs no
 * round trip: nobody else may delete the session meanwhile, since deleting takes the lock too. So a call
 * through the server costs one statement with a kept lock, and a deletion on another replica is still seen.
 */
const withPostgres = postgresAvailable("Postgres store: the record read under a held lock");
const scratch = scratchStores("terrarium_pgheld", withPostgres);
let schemas = 0;

const store = (schema: string, leaseMs: number): Promise<PostgresStore> =>
  scratch.open({ schema, poolSize: 2, lockPoolSize: 4, leaseMs });

interface State {
  n: number;
}
const step = bumpSteps();

/** One call as the server makes it: the record first (outside the lock), then the call under the lock. */
async function serverCall(target: PostgresStore, id: string): Promise<boolean> {
  const record = await target.getSession(id);
  if (!record) return false;
  await target.withSessionLock(id, async () => {
    const head = await target.head(id);
    const n = (head.snapshot.state as State).n;
    await target.appendStep(id, step(n), { state: { n: n + 1 }, reason: "step" });
  });
  return true;
}

describe.runIf(withPostgres)("the Postgres store's record read under a held lock", () => {
  it("a server's call on a kept session is one statement, record read included", async () => {
    const schema = `held_${++schemas}`;
    const target = await store(schema, 60_000);
    await target.createSession(sessionRecord("k"), { n: 0 });
    await serverCall(target, "k");
    const sent = recordStatements(target);
    const perCall: number[] = [];
    for (let i = 0; i < 30; i++) {
      const before = sent.length;
      expect(await serverCall(target, "k")).toBe(true);
      perCall.push(sent.length - before);
    }
    expect(new Set(perCall)).toEqual(new Set([1]));
    expect(sent.some((name) => name.includes("SELECT record"))).toBe(false);
  });

  it("the record read while a call of this replica holds the lock asks nobody, and is the stored one", async () => {
    const schema = `held_${++schemas}`;
    const target = await store(schema, 0);
    await target.createSession({ ...sessionRecord("h"), owner: "tenant" }, { n: 0 });
    const sent = recordStatements(target);
    // Another request of the same replica reads the record while the call runs: started from outside the
    // call (its continuation belongs to the request that registered it, not to the call).
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let before = -1;
    let after = -1;
    const during = gate.then(async () => {
      before = sent.length;
      const record = await target.getSession("h");
      after = sent.length;
      return record;
    });
    await target.withSessionLock("h", async () => {
      await target.head("h");
      open();
      await during;
    });
    expect(await during).toEqual({ ...sessionRecord("h"), owner: "tenant" });
    expect(after).toBe(before);
    // Without a lock held, the record is read from the database.
    const asked = sent.length;
    expect(await target.getSession("h")).toEqual({ ...sessionRecord("h"), owner: "tenant" });
    expect(sent.length).toBe(asked + 1);
  });

  it("another replica's deletion waits for the kept lock, and then the session is gone for the keeper too", async () => {
    const schema = `held_${++schemas}`;
    const [a, b] = [await store(schema, 60_000), await store(schema, 60_000)];
    await a.createSession(sessionRecord("d"), { n: 0 });
    for (let i = 0; i < 3; i++) expect(await serverCall(a, "d")).toBe(true);
    // a keeps the lock (for a minute): b's deletion waits until a sees it waiting at its next write.
    let deleted: boolean | undefined;
    const deletion = b.deleteSession("d").then((value) => {
      deleted = value;
    });
    let calls = 0;
    while (deleted === undefined && calls < 200) {
      await serverCall(a, "d").catch(() => undefined);
      calls++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await deletion;
    expect(deleted).toBe(true);
    // a no longer holds the lock, so it asks the database: the session is gone.
    expect(await a.getSession("d")).toBeUndefined();
    expect(await serverCall(a, "d")).toBe(false);
  });

  it("a deletion on the replica that keeps the lock is immediate, and a session made again is read afresh", async () => {
    const schema = `held_${++schemas}`;
    const target = await store(schema, 60_000);
    await target.createSession({ ...sessionRecord("r"), owner: "first" }, { n: 0 });
    await serverCall(target, "r");
    expect(await target.deleteSession("r")).toBe(true);
    expect(await target.getSession("r")).toBeUndefined();
    await target.createSession({ ...sessionRecord("r"), owner: "second" }, { n: 5 });
    expect((await target.getSession("r"))?.owner).toBe("second");
    await serverCall(target, "r");
    expect((await target.getSession("r"))?.owner).toBe("second");
    const head = await target.withSessionLock("r", () => target.head("r"));
    expect((head.snapshot.state as State).n).toBe(6);
  });
});
