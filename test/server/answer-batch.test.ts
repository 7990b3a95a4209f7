import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { AnswerBatch } from "../../src/server/fast-path.js";
import type { Drain } from "../../src/server/shutdown.js";

/** A response that records what was written to it; `gone` makes the write throw as a destroyed one may. */
function fakeResponse(log: string[], name: string, gone = false) {
  const response = {
    headersSent: false,
    destroyed: false,
    headers: undefined as string[] | undefined,
    body: undefined as string | undefined,
    writeHead(status: number, headers: string[]) {
      if (gone) throw new Error("socket gone");
      log.push(`${name}:head:${status}`);
      response.headers = headers;
      response.headersSent = true;
    },
    end(text: string) {
      log.push(`${name}:end`);
      response.body = text;
    },
    destroy() {
      log.push(`${name}:destroy`);
      response.destroyed = true;
    },
  };
  return response;
}

const asResponse = (fake: object) => fake as unknown as ServerResponse;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the fast path's answers of one turn go out together", () => {
  it("writes nothing while the turn runs, then every answer in order with its headers", async () => {
    const log: string[] = [];
    const batch = new AnswerBatch(undefined);
    const a = fakeResponse(log, "a");
    const b = fakeResponse(log, "b");
    batch.add(asResponse(a), "req-a", '{"x":1}');
    await Promise.resolve();
    batch.add(asResponse(b), "req-b", '{"é":2}');
    expect(log).toEqual([]);
    await nextTurn();
    expect(log).toEqual(["a:head:200", "a:end", "b:head:200", "b:end"]);
    expect(a.headers).toEqual([
      "content-type",
      "application/json",
      "x-request-id",
      "req-a",
      "Content-Length",
      "7",
    ]);
    // The length counts UTF-8 bytes, not characters.
    expect(b.headers?.[5]).toBe(String(Buffer.byteLength('{"é":2}')));
    expect(b.body).toBe('{"é":2}');
  });

  it("keeps going past a client that is gone, and starts a new batch in the next turn", async () => {
    const log: string[] = [];
    const batch = new AnswerBatch(undefined);
    batch.add(asResponse(fakeResponse(log, "gone", true)), "r1", "{}");
    batch.add(asResponse(fakeResponse(log, "ok")), "r2", "{}");
    await nextTurn();
    expect(log).toEqual(["gone:destroy", "ok:head:200", "ok:end"]);
    batch.add(asResponse(fakeResponse(log, "later")), "r3", "{}");
    await nextTurn();
    expect(log.slice(3)).toEqual(["later:head:200", "later:end"]);
  });

  it("closes the connection of an answer written once a drain has begun, even if it was ready before", async () => {
    const drain = { isDraining: false } as unknown as Drain;
    const batch = new AnswerBatch(drain);
    const response = fakeResponse([], "a");
    batch.add(asResponse(response), "req", "{}");
    (drain as { isDraining: boolean }).isDraining = true;
    await nextTurn();
    expect(response.headers?.slice(-2)).toEqual(["connection", "close"]);
  });
});
