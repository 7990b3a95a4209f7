import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, startServer } from "../../src/server/index.js";
import type { Engine } from "../../src/sim/engine.js";
import { buildEngine } from "../../src/sim/index.js";
import { toolFixture } from "../helpers/paths.js";

/** Requests built to hurt: every one gets a 4xx that names the problem, and leaves no session behind. */
let engine: Engine;
let app: ReturnType<typeof createApp>;
let pets: Awaited<ReturnType<typeof startServer>>;
let live: Awaited<ReturnType<typeof startServer>>;

beforeAll(async () => {
  engine = (await buildEngine({ sources: ["bank"], seed: "1" })).engine;
  app = createApp(engine, { maxBodyBytes: 1_000_000 });
  pets = await startServer({ sources: [toolFixture("petstore.openapi.yaml")], port: 0, seed: "1" });
  live = await startServer({ sources: ["bank"], port: 0, seed: "1" });
});
afterAll(async () => {
  await Promise.all([engine.close(), pets.close(), live.close()]);
});

async function call(
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
  target: Target = app,
) {
  const response = await target.request(path, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await response.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: response.status, body: parsed };
}

type Target = { request: (path: string, init: RequestInit) => Response | Promise<Response> };
/** A started server as a request target, like the in-process app. */
const over = (server: { url: string }): Target => ({
  request: (path, init) => fetch(server.url + path, init),
});
/** The sentence of an error body, whichever API's shape it has. */
const errorText = (body: any): string =>
  body?.error?.message ?? body?.detail?.error_message ?? body?.detail ?? body?.error ?? "";
const nested = (depth: number, inner = "1") => `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`;
const sessionCount = async () => (await engine.store.listSessions()).length;
const newSession = async () => (await call("POST", "/sessions")).body.id as string;

describe("deeply nested JSON", () => {
  it("is refused with 400 naming the depth limit on every kind of endpoint, at 3,000 and 100,000 levels", async () => {
    const id = await newSession();
    const before = await sessionCount();
    for (const depth of [3_000, 100_000]) {
      const deep = nested(depth);
      const bodies: Array<[string, string, string, Record<string, string>?]> = [
        ["POST", "/sessions", `{"state":{"a":${deep}}}`],
        ["POST", `/sessions/${id}/calls`, `{"name":"get_account","arguments":{"account_id":${deep}}}`],
        ["PUT", `/sessions/${id}/state`, `{"accounts":${deep}}`],
        ["POST", `/sessions/${id}/fork`, `{"snapshot":${deep}}`],
        ["POST", "/sessions/import", `{"schemaVersion":1,"session":${deep}}`],
        ["POST", `/sessions/${id}/replay`, `{"simulator":${deep}}`],
        ["POST", "/set-session-state", `{"state":{"x":${deep}}}`, { "x-session-id": id }],
        ["POST", "/update-state-from-real", `{"tool_calls":${deep}}`, { "x-session-id": id }],
        ["POST", "/transfer", `{"amount":${deep}}`, { "x-session-id": id }],
      ];
      for (const [method, path, body, headers] of bodies) {
        const answer = await call(method, path, body, headers);
        // Each route answers in its API's shape: terrarium's {error: {message}}, Gecko's {error},
        // {detail} and, for tool calls, 422 {detail: {error_message}}.
        expect(answer.status, `${method} ${path} at depth ${depth}`).toBe(path === "/transfer" ? 422 : 400);
        expect(errorText(answer.body)).toMatch(/deeper than the limit of 256 levels \(at \/.*\)/);
      }
      const mcp = await call(
        "POST",
        "/mcp",
        `{"jsonrpc":"2.0","id":1,"method":"initialize","params":${deep}}`,
        {
          accept: "application/json, text/event-stream",
        },
      );
      expect(mcp.status).toBe(400);
      expect(mcp.body.error.message).toMatch(/deeper than the limit of 256 levels/);
    }
    expect(await sessionCount()).toBe(before);
    expect((await call("GET", `/sessions/${id}/history`)).body).toEqual([]);
  });

  it("names where the limit was crossed, and the limit is an option of the app", async () => {
    const strict = createApp(engine, { maxJsonDepth: 4 });
    const id = await newSession();
    const path = `/sessions/${id}/calls`;
    const ok = await call("POST", path, '{"name":"get_account","arguments":{"a":[[1]]}}', {}, strict);
    expect(ok.status).toBe(200); // depth 4: the body, arguments, a, and the inner array
    const deep = await call("POST", path, '{"name":"get_account","arguments":{"a":[[[1]]]}}', {}, strict);
    expect(deep).toMatchObject({
      status: 400,
      body: {
        error: {
          code: "INVALID_INPUT",
          message:
            "the body nests arrays and objects deeper than the limit of 4 levels (at /arguments/a/0/0)",
        },
      },
    });
  });
});

describe("numbers JSON cannot hold", () => {
  it("refuses a number that overflows to Infinity, naming its JSON Pointer", async () => {
    const id = await newSession();
    const answer = await call(
      "POST",
      `/sessions/${id}/calls`,
      '{"name":"transfer","arguments":{"from_account":"ACC-1001","to_account":"ACC-1002","amount":1e99999}}',
    );
    expect(answer).toMatchObject({
      status: 400,
      body: {
        error: {
          message:
            "the body has a number at /arguments/amount that JSON cannot hold: 1e99999 is beyond the largest double (about 1.8e308)",
        },
      },
    });
    const negative = await call("PUT", `/sessions/${id}/state`, '{"a":{"b":[0,-1E400]}}');
    expect(negative.status).toBe(400);
    expect(negative.body.error.message).toMatch(/^the body has a number at \/a\/b\/1 that JSON cannot hold/);
    expect((await call("GET", `/sessions/${id}/history`)).body).toEqual([]);
  });

  it("refuses integers a double cannot hold exactly, and keeps those it can", async () => {
    const id = await newSession();
    const big = await call("PUT", `/sessions/${id}/state`, '{"ids":{"k~/x":123456789012345678901234567890}}');
    expect(big).toMatchObject({
      status: 400,
      body: {
        error: {
          message:
            "the body has an integer at /ids/k~0~1x that cannot be held exactly: 123456789012345678901234567890 would be rounded to 1.2345678901234568e+29 (send integers beyond 2^53 as strings)",
        },
      },
    });
    expect((await call("PUT", `/sessions/${id}/state`, '{"n":9007199254740993}')).status).toBe(400);
    // Exactly representable integers (and what JSON.stringify itself writes) read back unchanged.
    const fine = '{"a":9007199254740992,"b":10000000000000000000000,"c":123456789012345680000,"d":-1.5e300}';
    expect((await call("PUT", `/sessions/${id}/state`, fine)).status).toBe(200);
    expect((await call("GET", `/sessions/${id}/state`)).body).toEqual(JSON.parse(fine));
  });

  it("refuses the same numbers in query parameters of tools at their paths", async () => {
    const { session_id } = (await call("GET", "/session-id", undefined, {}, over(pets))).body;
    const headers = { "x-session-id": session_id };
    const infinite = await call("GET", "/pets?limit=1e99999", undefined, headers, over(pets));
    // Tool routes answer a request they cannot read as Gecko does: 422 {detail: {error_message}}.
    expect(infinite).toMatchObject({
      status: 422,
      body: {
        detail: {
          error_message: expect.stringMatching(/^parameter "limit" has a number that JSON cannot hold/),
        },
      },
    });
    const rounded = await call("GET", "/pets/123456789012345678901234567890", undefined, headers, over(pets));
    expect(rounded.status).toBe(422);
    expect(rounded.body.detail.error_message).toMatch(
      /^parameter "petId" has an integer that cannot be held exactly/,
    );
    expect((await call("GET", "/get-session-history", undefined, headers, over(pets))).body).toEqual({
      history: [],
    });
  });
});

describe("bodies over the limit", () => {
  it("a chunked upload (no Content-Length) over the limit gets a clean 413", async () => {
    const url = new URL(`${live.url}/sessions`);
    const answer = await new Promise<{ status: number; body: string; chunked: boolean }>(
      (resolve, reject) => {
        const request = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: "POST",
            headers: { "content-type": "application/json" },
          },
          (response) => {
            let text = "";
            response.on("data", (chunk) => {
              text += chunk;
            });
            response.on("end", () =>
              resolve({
                status: response.statusCode ?? 0,
                body: text,
                chunked: request.getHeader("content-length") === undefined,
              }),
            );
          },
        );
        request.on("error", reject);
        // 2.5 MB in 50 KB chunks, streamed: the server cannot know the size up front.
        const chunk = `"${"x".repeat(50_000)}",`;
        request.write('{"state":{"blob":[');
        let sent = 0;
        const more = () => {
          while (sent < 50) {
            sent++;
            if (!request.write(chunk)) return void request.once("drain", more);
          }
          request.end('"end"]}}');
        };
        more();
      },
    );
    expect(answer.chunked).toBe(true);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({
      error: { code: "BODY_TOO_LARGE", message: "the request body is larger than 1000000 bytes" },
    });
    expect((await fetch(`${live.url}/health`)).status).toBe(200);
  });

  it("chunked bodies over the limit, written in pieces at once, each get a 413 (not a reset)", async () => {
    const url = new URL(live.url);
    const send = (path: string, pieces: number, size: number) =>
      new Promise<{ status: number; body: string } | string>((resolve) => {
        const request = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path,
            method: "POST",
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
            },
          },
          (response) => {
            let text = "";
            response.on("data", (chunk) => {
              text += chunk;
            });
            response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
          },
        );
        request.on("error", (error) => resolve(`connection error: ${error.message}`));
        const body = Buffer.from(`{"pad":"${"x".repeat(size)}"}`);
        const piece = Math.ceil(body.length / pieces);
        for (let offset = 0; offset < body.length; offset += piece)
          request.write(body.subarray(offset, offset + piece));
        request.end();
      });
    // One after another on kept-alive connections: an oversized body left unread used to poison the next.
    for (const path of ["/sessions/import", "/sessions", "/mcp"]) {
      for (const [pieces, size] of [
        [1, 1_100_000],
        [1, 3_000_000],
        [3, 1_100_000],
        [7, 3_000_000],
        [20, 1_100_000],
      ] as const) {
        const answer = await send(path, pieces, size);
        expect(answer, `${path}: ${size} bytes in ${pieces} pieces`).toMatchObject({ status: 413 });
        expect(JSON.parse((answer as { body: string }).body).error.code).toBe("BODY_TOO_LARGE");
      }
    }
  });

  it("a streamed body under the limit is read whole", async () => {
    const encoder = new TextEncoder();
    const parts = ['{"state":', '{"greeting":', '"hello"}}'];
    const response = await fetch(`${live.url}/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        pull(controller) {
          const part = parts.shift();
          if (part === undefined) controller.close();
          else controller.enqueue(encoder.encode(part));
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(201);
    const { id } = (await response.json()) as { id: string };
    expect(await (await fetch(`${live.url}/sessions/${id}/state`)).json()).toEqual({ greeting: "hello" });
  });

  it("a body that is not UTF-8 is a 400", async () => {
    const response = await app.request("/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { code: "INVALID_INPUT", message: "the body is not UTF-8 text" },
    });
  });
});

describe("requests that used to slip through or crash", () => {
  it("a state must be an object: PUT state, POST /sessions and Gecko's set-session-state", async () => {
    const id = await newSession();
    const before = await sessionCount();
    for (const state of ["5", "null", '"text"', "[1,2]", "true"]) {
      const put = await call("PUT", `/sessions/${id}/state`, state);
      expect(put.status).toBe(400);
      expect(put.body.error.message).toBe(`the body must be a JSON object (a state), got ${state}`);
      expect((await call("POST", "/sessions", `{"state":${state}}`)).status).toBe(400);
      // Gecko's endpoint reads a null state as "no state given" (an empty one), so null is not sent there.
      if (state === "null") continue;
      const gecko = await call("POST", "/set-session-state", `{"state":${state}}`, { "x-session-id": id });
      expect(gecko.status).toBe(400);
    }
    expect(await sessionCount()).toBe(before);
    expect(
      ((await call("GET", `/sessions/${id}/state`)).body as { accounts: object }).accounts,
    ).toBeDefined();
  });

  it("fork wants a snapshot index; replay wants a policy it can run; neither leaves a session behind", async () => {
    const id = await newSession();
    await call(
      "POST",
      `/sessions/${id}/calls`,
      '{"name":"get_account","arguments":{"account_id":"ACC-1001"}}',
    );
    const before = await sessionCount();
    for (const snapshot of ['"0"', "-1", "1.5", "true", "[0]", "99"]) {
      const fork = await call("POST", `/sessions/${id}/fork`, `{"snapshot":${snapshot}}`);
      expect(fork.status, snapshot).toBe(400);
    }
    expect((await call("POST", `/sessions/${id}/fork`, '{"snapshot":"0"}')).body.error.message).toBe(
      '"snapshot" must be a snapshot index (an integer ≥ 0), got "0"',
    );
    for (const policy of [
      '"magic"',
      "5",
      "null",
      '{"read":"oracle"}',
      '{"tools":"code"}',
      '{"whatever":"code"}',
    ]) {
      const replay = await call("POST", `/sessions/${id}/replay`, `{"simulator":${policy}}`);
      expect(replay.status, policy).toBe(400);
      expect(replay.body.error.message).toMatch(/the body must name a simulator policy/);
    }
    // A policy that names a simulator this server lacks fails before the replay makes its session.
    const llm = await call("POST", `/sessions/${id}/replay`, '{"simulator":"llm"}');
    expect(llm).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringMatching(/"llm" simulator is not available/) } },
    });
    expect(await sessionCount()).toBe(before);
    expect((await call("POST", `/sessions/${id}/replay`, '{"simulator":"code"}')).status).toBe(201);
    expect(await sessionCount()).toBe(before + 1);
  });

  it("update-state-from-real copes with any state shape", async () => {
    const id = await newSession();
    await call("PUT", `/sessions/${id}/state`, '{"runtime_state":{"real_tool_results":{"not":"a list"}}}');
    const answer = await call(
      "POST",
      "/update-state-from-real",
      '{"tool_calls":[{"name":"get_account","arguments":{},"result":1}]}',
      { "x-session-id": id },
    );
    expect(answer).toMatchObject({
      status: 200,
      body: { success: true, updated_state: { runtime_state: {} } },
    });
    expect((await call("GET", `/sessions/${id}/state`)).body.runtime_state.real_tool_results).toHaveLength(1);
  });
});

describe("session import and export", () => {
  it("refuses bogus documents with 400 naming the field (the engine checks them), and stores nothing", async () => {
    const id = await newSession();
    await call(
      "POST",
      `/sessions/${id}/calls`,
      '{"name":"transfer","arguments":{"from_account":"ACC-1001","to_account":"ACC-1002","amount":5}}',
    );
    const exported = (await call("GET", `/sessions/${id}/export`)).body;
    const before = await sessionCount();
    const broken: Array<[unknown, RegExp]> = [
      [{ ...exported, session: null }, /export: \/session: .*expected object/],
      [
        { ...exported, session: { ...exported.session, seed: 7 } },
        /export: \/session\/seed: .*expected string/,
      ],
      [{ ...exported, snapshots: [] }, /export: \/snapshots: Too small/],
      [{ ...exported, snapshots: [1, 2] }, /export: \/snapshots\/0: .*expected object/],
      [
        { ...exported, snapshots: [{ ...exported.snapshots[0], state: 5 }, exported.snapshots[1]] },
        /snapshot 0: the state must be a JSON object/,
      ],
      [{ ...exported, history: "none" }, /export: \/history: .*expected array/],
      [
        { ...exported, history: [{ ...exported.history[0], snapshot: 9 }] },
        /history entry 0 names snapshot 9, which is missing/,
      ],
      [
        { ...exported, history: [{ ...exported.history[0], request: null }] },
        /export: \/history\/0\/request: .*expected object/,
      ],
      [{ ...exported, schemaVersion: 99 }, /export: schemaVersion must be 1/],
      [[exported], /the body must be a JSON object/],
    ];
    for (const [document, message] of broken) {
      const answer = await call("POST", "/sessions/import", JSON.stringify(document));
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toMatch(message);
    }
    expect(await sessionCount()).toBe(before);
    const imported = await call("POST", "/sessions/import", JSON.stringify(exported));
    expect(imported.status).toBe(201);
    expect((await call("GET", `/sessions/${imported.body.id}/state`)).body).toEqual(
      (await call("GET", `/sessions/${id}/state`)).body,
    );
  });

  it("an export over HTTP carries no owner; an import belongs to the caller, whatever the document says", async () => {
    // The engine leaves owners out of exports; this checks that nothing on the HTTP path puts one back.
    const secured = createApp(engine, { tokens: ["alpha", "beta"] });
    const alpha = { authorization: "Bearer alpha" };
    const beta = { authorization: "Bearer beta" };
    const id = (await call("POST", "/sessions", undefined, alpha, secured)).body.id;
    const exported = (await call("GET", `/sessions/${id}/export`, undefined, alpha, secured)).body;
    expect(exported.session.id).toBe(id);
    expect("owner" in exported.session).toBe(false);
    // A document claiming alpha's owner hash, imported by beta, is beta's alone.
    const alphaHash = (await engine.store.getSession(id))?.owner as string;
    expect(alphaHash).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.stringify(exported)).not.toContain(alphaHash);
    const forged = { ...exported, session: { ...exported.session, owner: alphaHash } };
    const imported = (await call("POST", "/sessions/import", JSON.stringify(forged), beta, secured)).body.id;
    expect((await call("GET", `/sessions/${imported}`, undefined, beta, secured)).status).toBe(200);
    expect((await call("GET", `/sessions/${imported}`, undefined, alpha, secured)).status).toBe(404);
    // On an open server an import has no owner at all, so it stays reachable.
    const open = (await call("POST", "/sessions/import", JSON.stringify(forged))).body.id;
    expect((await engine.store.getSession(open))?.owner).toBeUndefined();
    expect((await call("GET", `/sessions/${open}/state`)).status).toBe(200);
  });
});
