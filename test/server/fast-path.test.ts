import { Agent, request as httpRequest, type OutgoingHttpHeaders } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fastPathTaken } from "../../src/server/fast-path.js";
import { startServer } from "../../src/server/index.js";

/**
 * POST /sessions/{id}/calls and GET /sessions/{id}/state have a fast path on Node's request
 * (fast-path.ts). Two servers alike but for
 * it (TERRARIUM_HTTP_FAST_PATH=0 turns it off) get the same requests, in the same order, and must answer
 * them byte for byte alike: status, headers, body, and then the same metrics.
 */
type Server = Awaited<ReturnType<typeof startServer>>;
let fast: Server;
let slow: Server;
const TOKEN = "token-a";
const OTHER = "token-b";

beforeAll(async () => {
  const options = { sources: ["bank"], port: 0, seed: "fast", tokens: [TOKEN, OTHER] };
  fast = await startServer(options);
  process.env.TERRARIUM_HTTP_FAST_PATH = "0";
  try {
    slow = await startServer(options);
  } finally {
    delete process.env.TERRARIUM_HTTP_FAST_PATH;
  }
});
afterAll(async () => {
  await Promise.all([fast?.close(), slow?.close()]);
});

const agent = new Agent({ keepAlive: true });

interface Sent {
  path: string;
  method?: string;
  headers?: OutgoingHttpHeaders;
  /** Sent in pieces with chunked encoding (no Content-Length) when an array. */
  body?: string | Buffer | Array<string | Buffer>;
}
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The header names as sent, in order (case included). */
const orderOf = (raw: string[]) => raw.filter((_, i) => i % 2 === 0).join(" ");

function send(server: Server, sent: Sent): Promise<Answer> {
  const url = new URL(server.url);
  const body = sent.body;
  const headers: OutgoingHttpHeaders = { ...sent.headers };
  if (body !== undefined && !Array.isArray(body)) headers["content-length"] ??= Buffer.byteLength(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { agent, host: url.hostname, port: url.port, path: sent.path, method: sent.method ?? "POST", headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: { ...response.headers, "(order)": orderOf(response.rawHeaders) },
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        response.on("error", reject);
      },
    );
    req.on("error", reject);
    if (Array.isArray(body)) {
      for (const piece of body) req.write(piece);
      req.end();
    } else {
      req.end(body);
    }
  });
}

/** The same request to both servers; their answers, with what may differ (date, a new request id) set aside. */
async function both(sent: Sent): Promise<{ fast: Answer; slow: Answer }> {
  const a = await send(fast, sent);
  const b = await send(slow, sent);
  for (const answer of [a, b]) {
    delete answer.headers.date;
    const id = answer.headers["x-request-id"];
    const given = Object.entries(sent.headers ?? {}).find(
      ([name]) => name.toLowerCase() === "x-request-id",
    )?.[1];
    if (id !== given) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      answer.headers["x-request-id"] = "(new)";
    }
  }
  return { fast: a, slow: b };
}

const auth = (token = TOKEN) => ({ authorization: `Bearer ${token}`, "content-type": "application/json" });
const transfer = JSON.stringify({
  name: "transfer",
  arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 },
});

let mine = "";
let theirs = "";

describe("the fast path answers POST /sessions/{id}/calls as the app does", () => {
  it("creates the same sessions on both servers", async () => {
    const created = await both({ path: "/sessions", headers: auth() });
    expect(created.fast).toEqual(created.slow);
    mine = JSON.parse(created.fast.body).id;
    const other = await both({ path: "/sessions", headers: auth(OTHER) });
    expect(other.fast).toEqual(other.slow);
    theirs = JSON.parse(other.fast.body).id;
  });

  const cases: Array<[string, () => Sent, number, boolean]> = [
    ["a transfer", () => ({ path: `/sessions/${mine}/calls`, headers: auth(), body: transfer }), 200, true],
    [
      "a transfer with the client's request id",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: { ...auth(), "x-request-id": "trace-1234" },
        body: transfer,
      }),
      200,
      true,
    ],
    [
      "a request id that is not sane (a new one is made)",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: { ...auth(), "x-request-id": "a b" },
        body: transfer,
      }),
      200,
      true,
    ],
    [
      "headers named in capitals, a Content-Type with parameters",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: {
          Authorization: `bearer   ${TOKEN}`,
          "Content-Type": "application/json; charset=utf-8",
          "X-Request-Id": "Trace-9",
        },
        body: transfer,
      }),
      200,
      true,
    ],
    [
      "two request ids (joined, so not sane: a new one)",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: { ...auth(), "x-request-id": ["one", "two"] },
        body: transfer,
      }),
      200,
      true,
    ],
    [
      "invalid arguments",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: auth(),
        body: JSON.stringify({ name: "transfer", arguments: { from_account: 5 } }),
      }),
      200,
      true,
    ],
    [
      "an unknown tool",
      () => ({ path: `/sessions/${mine}/calls`, headers: auth(), body: JSON.stringify({ name: "nope" }) }),
      200,
      true,
    ],
    [
      "an unknown session",
      () => ({ path: "/sessions/no-such-session/calls", headers: auth(), body: transfer }),
      404,
      true,
    ],
    [
      "another token's session",
      () => ({ path: `/sessions/${theirs}/calls`, headers: auth(), body: transfer }),
      404,
      true,
    ],
    [
      "a token not accepted",
      () => ({ path: `/sessions/${mine}/calls`, headers: auth("nope"), body: transfer }),
      401,
      false,
    ],
    [
      "no token",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: { "content-type": "application/json" },
        body: transfer,
      }),
      401,
      false,
    ],
    [
      "two Authorization headers (the app reads them joined)",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: {
          authorization: [`Bearer ${TOKEN}`, `Bearer ${OTHER}`],
          "content-type": "application/json",
        },
        body: transfer,
      }),
      401,
      false,
    ],
    [
      "a declared body over the limit",
      () => ({ path: `/sessions/${mine}/calls`, headers: auth(), body: `"${"x".repeat(1_000_100)}"` }),
      413,
      false,
    ],
    [
      "a chunked body over the limit",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: auth(),
        body: [`{"name": "transfer", "pad": "`, "x".repeat(600_000), "x".repeat(600_000), `"}`],
      }),
      413,
      true,
    ],
    [
      "a chunked body within the limit",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: auth(),
        body: [transfer.slice(0, 10), transfer.slice(10)],
      }),
      200,
      true,
    ],
    [
      "a body nested too deep",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: auth(),
        body: `{"name": "transfer", "arguments": {"x": ${"[".repeat(3000)}${"]".repeat(3000)}}}`,
      }),
      400,
      true,
    ],
    [
      "not JSON",
      () => ({ path: `/sessions/${mine}/calls`, headers: auth(), body: "{name: transfer" }),
      400,
      true,
    ],
    ["no body", () => ({ path: `/sessions/${mine}/calls`, headers: auth() }), 400, true],
    [
      "a body that is not UTF-8",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: auth(),
        body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
      }),
      400,
      true,
    ],
    [
      "a body of another type",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: { ...auth(), "content-type": "text/plain" },
        body: transfer,
      }),
      400,
      true,
    ],
    ["an array", () => ({ path: `/sessions/${mine}/calls`, headers: auth(), body: "[1]" }), 400, true],
    [
      "no tool name",
      () => ({ path: `/sessions/${mine}/calls`, headers: auth(), body: JSON.stringify({ arguments: {} }) }),
      400,
      true,
    ],
    [
      "a number JSON cannot hold",
      () => ({
        path: `/sessions/${mine}/calls`,
        headers: auth(),
        body: '{"name": "transfer", "n": 1e99999}',
      }),
      400,
      true,
    ],
    [
      "a path with a trailing slash (left to the app)",
      () => ({ path: `/sessions/${mine}/calls/`, headers: auth(), body: transfer }),
      200,
      false,
    ],
    [
      "a percent-encoded path (left to the app)",
      () => ({
        path: `/sessions/${mine.replace(/^./, (c) => `%${c.charCodeAt(0).toString(16)}`)}/calls`,
        headers: auth(),
        body: transfer,
      }),
      200,
      false,
    ],
    ["GET state", () => ({ path: `/sessions/${mine}/state`, method: "GET", headers: auth() }), 200, true],
    [
      "GET state of an unknown session",
      () => ({ path: "/sessions/nope/state", method: "GET", headers: auth() }),
      404,
      true,
    ],
    [
      "GET state of another token's session",
      () => ({ path: `/sessions/${theirs}/state`, method: "GET", headers: auth() }),
      404,
      true,
    ],
    [
      "GET state without a token (left to the app)",
      () => ({ path: `/sessions/${mine}/state`, method: "GET" }),
      401,
      false,
    ],
    [
      "HEAD state (left to the app)",
      () => ({ path: `/sessions/${mine}/state`, method: "HEAD", headers: auth() }),
      200,
      false,
    ],
    [
      "GET state with a query (left to the app)",
      () => ({ path: `/sessions/${mine}/state?x=1`, method: "GET", headers: auth() }),
      200,
      false,
    ],
    [
      "a GET (left to the app)",
      () => ({ path: `/sessions/${mine}/calls`, method: "GET", headers: auth() }),
      405,
      false,
    ],
  ];

  for (const [name, make, status, takesFastPath] of cases)
    it(`${name}: ${status}, alike`, async () => {
      const before = fastPathTaken();
      const answers = await both(make());
      expect(fastPathTaken() - before).toBe(takesFastPath ? 1 : 0);
      expect(answers.fast.status).toBe(status);
      expect(answers.fast).toEqual(answers.slow);
    });

  it("leaves both sessions in the same state, and counts the same metrics", async () => {
    const state = await both({ path: `/sessions/${mine}/state`, method: "GET", headers: auth() });
    expect(state.fast.status).toBe(200);
    expect(state.fast).toEqual(state.slow);
    expect(JSON.parse(state.fast.body).stats.transfer_count).toBeGreaterThan(0);
    const history = await both({ path: `/sessions/${mine}/history`, method: "GET", headers: auth() });
    expect(history.fast.body).toBe(history.slow.body);
    const counted = async (server: Server) =>
      (await server.metrics.render())
        .split("\n")
        .filter((line) => /^terrarium_(http_requests_total|errors_total|tool_calls_total)\{/.test(line))
        .sort();
    const fastLines = await counted(fast);
    expect(fastLines.some((line) => line.includes('route="/sessions/{id}/calls",status="200"'))).toBe(true);
    expect(fastLines).toEqual(await counted(slow));
  });

  it("once the server drains, a call is refused alike: 503 SHUTTING_DOWN, Connection: close", async () => {
    const refused = async (server: Server) => {
      const { hostname, port } = new URL(server.url);
      const socket = connect({ host: hostname, port: Number(port) });
      await new Promise((resolve) => socket.once("connect", resolve));
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => {
        text += chunk;
      });
      const ended = new Promise((resolve) => socket.once("close", resolve));
      const stopped = new Promise<void>((resolve) => {
        void server.close({
          drainTimeoutMs: 30_000,
          progress: (step) => {
            if (step.stage === "listening-stopped") resolve();
          },
        });
      });
      await stopped;
      socket.write(
        `POST /sessions/${mine}/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
          `Content-Type: application/json\r\nX-Request-Id: drain-1\r\nContent-Length: ${Buffer.byteLength(transfer)}\r\n\r\n${transfer}`,
      );
      await ended;
      return text.replace(/^date: .*\r\n/im, "");
    };
    const before = fastPathTaken();
    const [a, b] = [await refused(fast), await refused(slow)];
    expect(fastPathTaken()).toBe(before);
    expect(a).toMatch(/^HTTP\/1\.1 503 /);
    expect(a.toLowerCase()).toContain("connection: close");
    expect(a).toContain('"SHUTTING_DOWN"');
    expect(a).toBe(b);
  });
});
