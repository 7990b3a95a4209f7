import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRandom, type Random } from "../../src/core/random.js";
import { startServer } from "../../src/server/index.js";

/**
 * A seeded fuzzer against a real server (loopback, random port, a bearer token): a few hundred malformed
 * requests to every kind of endpoint. None may get a 5xx, and the server must be healthy afterwards with no
 * sessions left behind by the requests it refused. A failure prints the request. To explore:
 * TERRARIUM_FUZZ_SEED=<any> TERRARIUM_FUZZ_REQUESTS=2000 TERRARIUM_FUZZ_VERBOSE=1 (prints the statuses seen).
 */
const SEED = process.env.TERRARIUM_FUZZ_SEED ?? "terrarium-fuzz-1";
const REQUESTS = Number(process.env.TERRARIUM_FUZZ_REQUESTS ?? 500);
const TOKEN = "fuzz-token";
const OTHER = "other-token";

let server: Awaited<ReturnType<typeof startServer>>;
let host: string;
let port: number;

beforeAll(async () => {
  server = await startServer({ sources: ["bank"], port: 0, seed: "fuzz", tokens: [TOKEN, OTHER] });
  const url = new URL(server.url);
  host = url.hostname;
  port = Number(url.port);
});
afterAll(() => server.close());

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** Sent in pieces without Content-Length (Transfer-Encoding: chunked). */
  chunked?: boolean;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function send(request: FuzzRequest): Promise<Answer> {
  return new Promise((resolve) => {
    const body =
      request.body === undefined
        ? undefined
        : typeof request.body === "string"
          ? Buffer.from(request.body, "utf8")
          : Buffer.from(request.body);
    const headers = { ...request.headers };
    if (body && !request.chunked) headers["content-length"] = String(body.length);
    // Node frames GET/DELETE/OPTIONS bodies as chunked only when asked to (otherwise it sends them bare).
    if (body && request.chunked) headers["transfer-encoding"] = "chunked";
    const outgoing = httpRequest(
      { host, port, method: request.method, path: request.path, headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        response.on("error", (error) =>
          resolve({ status: -1, headers: {}, text: `connection error: ${error.message}` }),
        );
      },
    );
    // A reset connection is a finding too (status -1), reported with the request like a 5xx.
    outgoing.on("error", (error) =>
      resolve({ status: -1, headers: {}, text: `connection error: ${error.message}` }),
    );
    // A request the server never answers is a finding too (status 0).
    outgoing.setTimeout(10_000, () => {
      outgoing.destroy();
      resolve({ status: 0, headers: {}, text: "no answer within 10 s" });
    });
    if (body && request.chunked) {
      const piece = Math.max(1, Math.ceil(body.length / 7));
      for (let offset = 0; offset < body.length; offset += piece)
        outgoing.write(body.subarray(offset, offset + piece));
    } else if (body) {
      outgoing.write(body);
    }
    outgoing.end();
  });
}

/** What a failing request looked like, short enough to read in a test report. */
function describeRequest(request: FuzzRequest): string {
  const body =
    request.body === undefined
      ? "(no body)"
      : typeof request.body === "string"
        ? request.body.length > 300
          ? `${request.body.slice(0, 300)}… (${request.body.length} chars)`
          : request.body
        : `<${request.body.length} bytes>`;
  return `${request.method} ${request.path.slice(0, 200)}${request.chunked ? " [chunked]" : ""}\n  headers: ${JSON.stringify(
    request.headers,
  ).slice(0, 400)}\n  body: ${body}`;
}

// --- generators -----------------------------------------------------------------------------------------

const WEIRD_STRINGS = [
  "",
  " ",
  "null",
  "undefined",
  "__proto__",
  "constructor",
  "toString",
  "-1",
  "1e999",
  "NaN",
  "ACC-1001",
  "😀",
  '"quoted"',
  "\\",
  "x".repeat(3000),
  "<script>",
  "' OR 1=1 --",
];

function randomString(random: Random): string {
  return random.next() < 0.5
    ? random.pick(WEIRD_STRINGS)
    : Array.from({ length: random.int(0, 12) }, () => String.fromCharCode(random.int(32, 0x2fff))).join("");
}

function randomJson(random: Random, depth = 0): unknown {
  const kind = random.int(0, depth > 3 ? 4 : 7);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return random.next() < 0.5;
    case 2:
      return random.pick([0, -1, 1.5, 2 ** 53 - 1, -(2 ** 31), 1e308, 5e-324, random.int(-1000, 1000)]);
    case 3:
    case 4:
      return randomString(random);
    case 5:
      return Array.from({ length: random.int(0, 4) }, () => randomJson(random, depth + 1));
    default: {
      const value: Record<string, unknown> = {};
      for (let i = random.int(0, 4); i > 0; i--)
        Object.defineProperty(value, randomString(random), {
          value: randomJson(random, depth + 1),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      return value;
    }
  }
}

/** Raw texts JSON.parse refuses, accepts as non-objects, or accepts but terrarium must refuse. */
function hostileText(random: Random, valid: string): string {
  switch (random.int(0, 9)) {
    case 0:
      return valid.slice(0, random.int(0, Math.max(0, valid.length - 1))); // truncated
    case 1:
      return random.pick(["{", "[1,]", "{'a':1}", "nul", '{"a":}', "{}}", "\u0000", '{"a":1', "[", "tru"]);
    case 2:
      return random.pick(["5", '"text"', "null", "[1,2]", "true", "-0"]);
    case 3: {
      const depth = random.pick([300, 3_000, 20_000, 100_000]);
      const open = random.next() < 0.5 ? "[" : '{"a":';
      const close = open === "[" ? "]" : "}";
      return `${open.repeat(depth)}1${close.repeat(depth)}`;
    }
    case 4:
      return valid.replace(
        /\d+(\.\d+)?/,
        random.pick(["1e99999", "-1e400", "123456789012345678901234567890"]),
      );
    case 5:
      return `{"pad":"${"x".repeat(1_100_000)}"}`; // over the 1 MB limit
    case 6:
      return `${valid}${random.pick(["garbage", ",", "]", " {}"])}`;
    default:
      return valid;
  }
}

describe("HTTP fuzzing", () => {
  it(`${REQUESTS} malformed requests (seed ${SEED}): no 5xx, nothing left behind, still healthy`, async () => {
    const random = createRandom(SEED);
    const auth = { authorization: `Bearer ${TOKEN}` };
    const json = { ...auth, "content-type": "application/json" };
    const newSession = async () =>
      JSON.parse((await send({ method: "POST", path: "/sessions", headers: json, body: "{}" })).text)
        .id as string;
    const transfer = (session: string, amount: number) =>
      send({
        method: "POST",
        path: `/sessions/${session}/calls`,
        headers: json,
        body: JSON.stringify({
          name: "transfer",
          arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount },
        }),
      });
    const mine = await newSession();
    await transfer(mine, 1);
    const theirs = JSON.parse(
      (await send({ method: "POST", path: "/sessions", headers: { authorization: `Bearer ${OTHER}` } })).text,
    ).id as string;
    const exported = (await send({ method: "GET", path: `/sessions/${mine}/export`, headers: auth })).text;
    const mcpInit = await send({
      method: "POST",
      path: "/mcp",
      headers: { ...json, accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "fuzz", version: "1" },
        },
      }),
    });
    const mcpSession = mcpInit.headers["mcp-session-id"] as string;
    expect(mcpSession).toBeTruthy();
    const sessionsBefore = (await server.engine.store.listSessions()).length;

    const tools = server.engine.catalog.names;
    const sessionIds = [
      ...Array.from({ length: 8 }, () => mine),
      theirs,
      "nope",
      "../../etc/passwd",
      "%ZZ",
      "x".repeat(2000),
      mcpSession,
    ];
    const segment = () => encodeURIComponent(random.pick(sessionIds.concat(WEIRD_STRINGS.slice(0, 10))));
    const raw = () => random.pick(["%ZZ", "%", "..%2F..", "%00", "a%2Fb", "%E2%82", ";", "~"]);

    const routes: Array<
      () => { method: string; path: string; valid: unknown; headers?: Record<string, string> }
    > = [
      () => ({ method: "POST", path: "/sessions", valid: { state: randomJson(random) } }),
      () => ({ method: "GET", path: `/sessions/${segment()}`, valid: undefined }),
      () => ({ method: "PUT", path: `/sessions/${segment()}/state`, valid: randomJson(random) }),
      () => ({
        method: "POST",
        path: `/sessions/${segment()}/fork`,
        valid: { snapshot: randomJson(random) },
      }),
      () => ({ method: "POST", path: `/sessions/${segment()}/reset`, valid: undefined }),
      () => ({ method: "GET", path: `/sessions/${segment()}/history`, valid: undefined }),
      () => ({ method: "GET", path: `/sessions/${segment()}/export`, valid: undefined }),
      () => ({
        method: "POST",
        path: `/sessions/${segment()}/replay`,
        valid: { simulator: randomJson(random) },
      }),
      () => ({
        method: "POST",
        path: `/sessions/${segment()}/calls`,
        valid: { name: random.pick([...tools, randomString(random)]), arguments: randomJson(random) },
      }),
      () => ({
        method: "DELETE",
        path: `/sessions/${random.pick([theirs, "nope", raw()])}`,
        valid: undefined,
      }),
      () => {
        // A real export with one field broken.
        const document = JSON.parse(exported) as Record<string, any>;
        const target = random.pick(["schemaVersion", "session", "snapshots", "history"]);
        if (random.next() < 0.5) document[target] = randomJson(random);
        else if (Array.isArray(document[target]) && document[target].length > 0)
          document[target][0][
            random.pick(["index", "state", "at", "reason", "request", "result", "snapshot"])
          ] = randomJson(random);
        else delete document[target];
        return { method: "POST", path: "/sessions/import", valid: document };
      },
      () => ({ method: random.pick(["GET", "POST"]), path: "/session-id", valid: undefined }),
      () => ({
        method: "POST",
        path: "/set-session-state",
        valid: { state: randomJson(random), bootstrap_mode: random.pick(["skip", "auto", "force", "x", 5]) },
        headers: random.next() < 0.7 ? { "x-session-id": random.pick(sessionIds) } : {},
      }),
      () => ({
        method: "POST",
        path: "/update-state-from-real",
        valid: { tool_calls: random.next() < 0.5 ? [randomJson(random)] : randomJson(random) },
        headers: random.next() < 0.7 ? { "x-session-id": random.pick(sessionIds) } : {},
      }),
      () => ({
        method: "GET",
        path: random.pick(["/get-session-state", "/get-session-history", "/get-session-llm-usage"]),
        valid: undefined,
        headers: random.next() < 0.5 ? { "x-session-id": random.pick(sessionIds) } : {},
      }),
      () => ({
        method: random.pick(["POST", "POST", "GET", "PUT"]),
        path: `/${random.pick(tools)}`,
        valid: randomJson(random),
        headers: random.next() < 0.7 ? { "x-session-id": random.pick(sessionIds) } : {},
      }),
      () => {
        const message = {
          jsonrpc: random.pick(["2.0", "2.0", "1.0", 2]),
          id: random.pick([1, "a", null, { x: 1 }]),
          method: random.pick([
            "initialize",
            "tools/list",
            "tools/call",
            "ping",
            "notifications/initialized",
            "nope",
          ]),
          params:
            random.next() < 0.5
              ? { name: random.pick([...tools, "nope"]), arguments: randomJson(random) }
              : randomJson(random),
        };
        const headers: Record<string, string> = {
          accept: random.pick(["application/json, text/event-stream", "text/html", "*/*"]),
        };
        if (random.next() < 0.7)
          headers["mcp-session-id"] = random.pick([
            mcpSession,
            mcpSession,
            "garbage",
            randomString(random).replace(/[^\x21-\x7e]/g, "x") || "y",
          ]);
        if (random.next() < 0.3)
          headers["mcp-protocol-version"] = random.pick(["2025-06-18", "1999-01-01", "x"]);
        return {
          method: random.pick(["POST", "POST", "POST", "GET", "DELETE", "PUT"]),
          path: "/mcp",
          valid: random.next() < 0.2 ? [message, message] : message,
          headers,
        };
      },
      () => ({
        method: random.pick(["GET", "POST", "PATCH", "OPTIONS"]),
        path: `/${raw()}/${segment()}`,
        valid: randomJson(random),
      }),
      () => ({
        method: random.pick(["PATCH", "OPTIONS", "HEAD", "PROPFIND"]),
        path: random.pick(["/sessions", "/tools", "/health", "/mcp"]),
        valid: undefined,
      }),
    ];

    const authVariants: Array<Record<string, string>> = [
      ...Array.from({ length: 14 }, () => auth),
      {},
      { authorization: "Bearer wrong" },
      { authorization: `Bearer ${OTHER}` },
      { authorization: "Basic Zm9vOmJhcg==" },
      { authorization: "Bearer " },
      { authorization: `bearer   ${TOKEN}  ` },
      { authorization: `Bearer ${"t".repeat(10_000)}` },
    ];
    const contentTypes = [
      "application/json",
      "application/json",
      "application/json; charset=utf-8",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "",
    ];

    const creating = (request: FuzzRequest, answer: Answer) =>
      (answer.status === 201 && /^\/sessions(\/import|\/[^/]+\/(fork|replay))?$/.test(request.path)) ||
      (answer.status === 200 && request.path === "/session-id") ||
      (request.path === "/mcp" && answer.status === 200 && !request.headers["mcp-session-id"]);

    let made = 0;
    let deleted = 0;
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (let i = 0; i < REQUESTS; i++) {
      const route = random.pick(routes)();
      const headers: Record<string, string> = { ...random.pick(authVariants), ...(route.headers ?? {}) };
      const type = random.pick(contentTypes);
      if (type) headers["content-type"] = type;
      let body: string | Uint8Array | undefined;
      if (route.valid !== undefined || random.next() < 0.2) {
        const roll = random.next();
        body =
          roll < 0.05
            ? new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) // not UTF-8
            : hostileText(random, JSON.stringify(route.valid ?? {}) ?? "null");
      }
      if (route.method === "GET" || route.method === "HEAD") body = random.next() < 0.1 ? body : undefined;
      const request: FuzzRequest = {
        method: route.method,
        path: route.path,
        headers,
        ...(body !== undefined ? { body } : {}),
        ...(body !== undefined && random.next() < 0.25 ? { chunked: true } : {}),
      };
      const answer = await send(request);
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      if (answer.status >= 500 || answer.status <= 0)
        failures.push(`${answer.status} ${answer.text.slice(0, 300)}\n  ${describeRequest(request)}`);
      if (creating(request, answer)) made++;
      if (
        request.method === "DELETE" &&
        (answer.status === 204 || (request.path === "/mcp" && answer.status === 200))
      )
        deleted++;
      // Errors are JSON with a sentence, never HTML or a stack trace.
      if (answer.status >= 400 && request.method !== "HEAD") {
        expect(() => JSON.parse(answer.text), describeRequest(request)).not.toThrow();
        expect(answer.text, describeRequest(request)).not.toMatch(/\n\s+at /);
      }
    }
    if (process.env.TERRARIUM_FUZZ_VERBOSE) console.log(JSON.stringify([...statuses].sort(), null, 0));
    if (failures.length > 0)
      console.error(`fuzz (seed ${SEED}) found 5xx answers:\n${failures.join("\n\n")}`);
    expect(failures).toEqual([]);
    // The mix reached the code behind the checks, not only the 401 in front of them.
    expect([...statuses.keys()].filter((status) => status >= 400).length).toBeGreaterThan(4);
    expect([...statuses.entries()].filter(([status]) => status < 300).length).toBeGreaterThan(0);

    // Healthy afterwards: health, a normal call, and no sessions from refused requests.
    const health = await send({ method: "GET", path: "/health", headers: {} });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toMatchObject({ ok: true, tools: 6 });
    const normal = await transfer(await newSession(), 5);
    expect(normal.status).toBe(200);
    expect(JSON.parse(normal.text)).toMatchObject({ status: "ok", observation: { from_balance: 2495 } });
    const sessionsAfter = (await server.engine.store.listSessions()).length;
    expect(sessionsAfter).toBe(sessionsBefore + made - deleted + 1);
  }, 120_000);
});
