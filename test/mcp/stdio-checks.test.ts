import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkMessage, idOfText, paramsError, readMessageText } from "../../src/mcp/messages.js";
import { createApp } from "../../src/server/index.js";
import { buildEngine } from "../../src/sim/index.js";
import { type CliProcess, spawnCli } from "../helpers/cli.js";

/**
 * `terrarium mcp` over stdio makes the checks of `/mcp` over HTTP: the same parse errors (-32700), invalid
 * messages (-32600), invalid params in words (-32602, never a zod dump), the same size limit (answered, and
 * the process goes on), and the same verdict as REST for an argument named `__proto__`. The process is
 * driven with raw lines, as a hostile or broken client would write them.
 */

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
const INITIALIZED = { jsonrpc: "2.0", method: "notifications/initialized" };
const call = (id: number, name: string, args: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
const TRANSFER = { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 };

/** `terrarium mcp bank` in its own process, written to line by line; each answer line as it comes. */
class StdioPeer {
  readonly run: CliProcess;
  private readonly lines: string[] = [];
  private waiting: { resolve: (line: string) => void; reject: (error: Error) => void } | undefined;
  private rest = "";
  private ended = false;

  constructor(args: string[] = []) {
    this.run = spawnCli(["mcp", "bank", "--seed", "1", ...args]);
    this.run.child.stdout?.on("data", (chunk: Buffer) => {
      this.rest += chunk.toString("utf8");
      let newline = this.rest.indexOf("\n");
      while (newline >= 0) {
        this.lines.push(this.rest.slice(0, newline));
        this.rest = this.rest.slice(newline + 1);
        newline = this.rest.indexOf("\n");
      }
      this.deliver();
    });
    this.run.child.on("close", () => {
      this.ended = true;
      this.deliver();
    });
  }

  /** The next answer line, parsed; fails if the process ends first (the old transport just stopped). */
  next(): Promise<Record<string, any>> {
    return new Promise<string>((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.deliver();
    }).then((line) => JSON.parse(line));
  }

  /** Writes one raw line and reads the one answer it gets. */
  async ask(line: string): Promise<Record<string, any>> {
    this.write(line);
    return this.next();
  }

  write(line: string): void {
    this.run.child.stdin?.write(`${line}\n`);
  }

  async start(): Promise<void> {
    expect((await this.ask(JSON.stringify(INITIALIZE))).result.serverInfo.name).toBe("terrarium");
    this.write(JSON.stringify(INITIALIZED));
  }

  /** Ends stdin and waits for the exit code. */
  async end(): Promise<number | null> {
    this.run.child.stdin?.end();
    return this.run.exit;
  }

  private deliver(): void {
    if (!this.waiting) return;
    const line = this.lines.shift();
    if (line !== undefined) {
      const { resolve } = this.waiting;
      this.waiting = undefined;
      resolve(line);
    } else if (this.ended) {
      const { reject } = this.waiting;
      this.waiting = undefined;
      reject(
        new Error(
          `the process ended without answering (code ${this.run.child.exitCode}): ${this.run.stderr()}`,
        ),
      );
    }
  }
}

const textOf = (answer: Record<string, any>) => JSON.parse(answer.result.content[0].text);

describe("terrarium mcp over stdio checks what /mcp checks", () => {
  let peer: StdioPeer;
  beforeAll(async () => {
    peer = new StdioPeer();
    await peer.start();
  }, 60_000);
  afterAll(() => {
    if (peer.run.child.exitCode === null) peer.run.child.kill();
  });

  it("refuses numbers JSON cannot hold, with the request's id, and changes nothing", async () => {
    const before = textOf(await peer.ask(call(1, "list_accounts", {})));
    const huge = await peer.ask(
      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"open_account","arguments":{"owner":"Eve","deposit":1e400}}}`,
    );
    expect(huge.id).toBe(2);
    expect(huge.error.code).toBe(-32700);
    expect(huge.error.message).toMatch(/\/params\/arguments\/deposit.*1e400/);
    const rounded = await peer.ask(
      `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"transfer","arguments":{"from_account":"ACC-1001","to_account":"ACC-1002","amount":9007199254740993}}}`,
    );
    expect(rounded.id).toBe(3);
    expect(rounded.error.code).toBe(-32700);
    expect(rounded.error.message).toMatch(/9007199254740993 would be rounded/);
    // Nothing was stored: the same accounts, the same balance (no account with a null balance).
    expect(textOf(await peer.ask(call(4, "list_accounts", {})))).toEqual(before);
    expect(textOf(await peer.ask(call(5, "get_account", { account_id: "ACC-1001" }))).balance).toBe(2500);
  }, 60_000);

  it("answers a line that is not JSON with -32700 and id null, and one that is not JSON-RPC with -32600", async () => {
    const garbage = await peer.ask("{garbage");
    expect(garbage).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    const notRpc = await peer.ask('{"id":6,"method":"ping"}');
    expect(notRpc).toMatchObject({
      id: 6,
      error: { code: -32600, message: expect.stringMatching(/jsonrpc/) },
    });
    // An error answer from the client is not answered back: the next line out is the ping's.
    peer.write('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"yours"}}');
    expect(await peer.ask('{"jsonrpc":"2.0","id":7,"method":"ping"}')).toMatchObject({ id: 7, result: {} });
  }, 60_000);

  it("answers invalid params with -32602 and the violations in words, never a zod dump", async () => {
    const noName = await peer.ask('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{}}}');
    expect(noName.id).toBe(8);
    expect(noName.error.code).toBe(-32602);
    expect(noName.error.message).toMatch(/^invalid params for tools\/call: \/params\/name: /);
    expect(noName.error.message).not.toMatch(/^\[|"code":|\n/);
    expect(noName.error.data.violations).toEqual([
      { path: "/params/name", rule: "invalid_type", message: expect.stringMatching(/expected string/) },
    ]);
    const notObject = await peer.ask('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":5}');
    expect(notObject).toMatchObject({ id: 9, error: { code: -32602 } });
    const cursor = await peer.ask('{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"cursor":5}}');
    expect(cursor).toMatchObject({ id: 10, error: { code: -32602 } });
    expect(cursor.error.message).not.toMatch(/^\[|\n/);
  }, 60_000);

  it("refuses an argument named __proto__ as REST does: an unknown argument", async () => {
    const answer = await peer.ask(
      call(11, "get_account", JSON.parse('{"account_id":"ACC-1001","__proto__":{"x":1}}')),
    );
    expect(answer.result.isError).toBe(true);
    expect(textOf(answer)).toMatchObject({
      status: "invalid",
      violations: [{ path: "/__proto__", rule: "unknown_argument" }],
    });
  }, 60_000);

  it("answers a 12 MB line with an error, goes on, and exits 0 only when stdin ends", async () => {
    const big = `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"transfer","arguments":{"pad":"${"x".repeat(12_000_000)}"}}}`;
    const tooLarge = await peer.ask(big);
    expect(tooLarge).toMatchObject({
      id: 12,
      error: { code: -32000, data: { code: "TOO_LARGE", maxBytes: 1_000_000 } },
    });
    // Still serving, in the same session.
    expect(peer.run.child.exitCode).toBeNull();
    const after = await peer.ask(call(13, "transfer", TRANSFER));
    expect(textOf(after)).toMatchObject({ from_balance: 2499 });
    // A request written just before stdin ends is still answered, then the process exits 0.
    peer.write(call(14, "get_account", { account_id: "ACC-1001" }));
    const last = peer.next();
    expect(await peer.end()).toBe(0);
    expect(textOf(await last).balance).toBe(2499);
    expect(peer.run.stderr()).not.toMatch(/\n\s+at /);
  }, 60_000);

  it("--max-message-bytes sets the limit, and a bad value is refused before anything starts", async () => {
    const small = new StdioPeer(["--max-message-bytes", "300"]);
    await small.start();
    const answer = await small.ask(call(1, "get_account", { account_id: "x".repeat(400) }));
    expect(answer).toMatchObject({ id: 1, error: { code: -32000, data: { maxBytes: 300 } } });
    expect((await small.ask('{"jsonrpc":"2.0","id":2,"method":"ping"}')).result).toEqual({});
    expect(await small.end()).toBe(0);
    const bad = spawnCli(["mcp", "bank", "--max-message-bytes", "0"]);
    bad.child.stdin?.end();
    expect(await bad.exit).toBe(2);
    expect(bad.stderr()).toMatch(/--max-message-bytes/);
  }, 60_000);
});

/**
 * The same hostile messages to both doors, HTTP `/mcp` (in process) and stdio (its own process): the same
 * verdict for each. The texts are those of the HTTP fuzzer (test/server/fuzz.test.ts, `hostileText`)
 * around a valid tools/call, plus malformed JSON-RPC and params.
 */
describe("stdio and HTTP give hostile MCP messages the same verdicts", () => {
  const valid = call(100, "transfer", TRANSFER);
  const deep = (depth: number, open: string, close: string) => `${open.repeat(depth)}1${close.repeat(depth)}`;
  const table: Array<{ label: string; text: string; verdict: string }> = [
    { label: "a valid call", text: valid, verdict: "ok" },
    { label: "truncated", text: valid.slice(0, 40), verdict: "-32700" },
    ...["{", "[1,]", "{'a':1}", "nul", '{"a":}', "{}}", "\u0000", '{"a":1', "[", "tru"].map((text) => ({
      label: `broken ${JSON.stringify(text)}`,
      text,
      verdict: "-32700",
    })),
    ...["5", '"text"', "null", "[1,2]", "true", "-0"].map((text) => ({
      label: `not a message ${text}`,
      text,
      verdict: "-32600",
    })),
    ...[300, 3_000, 20_000, 100_000].flatMap((depth) => [
      { label: `${depth} arrays deep`, text: deep(depth, "[", "]"), verdict: "-32700" },
      { label: `${depth} objects deep`, text: deep(depth, '{"a":', "}"), verdict: "-32700" },
    ]),
    ...["1e99999", "-1e400", "123456789012345678901234567890", "9007199254740993"].map((number) => ({
      label: `amount ${number}`,
      text: valid.replace('"amount":1', `"amount":${number}`),
      verdict: "-32700",
    })),
    ...["garbage", ",", "]", " {}"].map((suffix) => ({
      label: `valid + ${JSON.stringify(suffix)}`,
      text: `${valid}${suffix}`,
      verdict: "-32700",
    })),
    {
      label: "over the size limit",
      text: `{"jsonrpc":"2.0","id":101,"method":"ping","params":{"pad":"${"x".repeat(1_100_000)}"}}`,
      verdict: "too-large",
    },
    { label: "jsonrpc 1.0", text: valid.replace('"2.0"', '"1.0"'), verdict: "-32600" },
    { label: "an object id", text: valid.replace('"id":100', '"id":{"x":1}'), verdict: "-32600" },
    { label: "an unknown member", text: valid.replace('"id":100', '"id":100,"extra":1'), verdict: "-32600" },
    {
      label: "params a number",
      text: '{"jsonrpc":"2.0","id":102,"method":"tools/call","params":5}',
      verdict: "-32602",
    },
    {
      label: "params an array",
      text: '{"jsonrpc":"2.0","id":103,"method":"tools/call","params":[]}',
      verdict: "-32602",
    },
    {
      label: "no tool name",
      text: '{"jsonrpc":"2.0","id":104,"method":"tools/call","params":{"arguments":{}}}',
      verdict: "-32602",
    },
    { label: "arguments an array", text: call(105, "transfer", [1]), verdict: "-32602" },
    { label: "arguments a string", text: call(106, "transfer", "{}"), verdict: "-32602" },
    {
      label: "a numeric cursor",
      text: '{"jsonrpc":"2.0","id":107,"method":"tools/list","params":{"cursor":5}}',
      verdict: "-32602",
    },
    {
      label: "a bad cursor",
      text: '{"jsonrpc":"2.0","id":108,"method":"tools/list","params":{"cursor":"x"}}',
      verdict: "-32602",
    },
    { label: "an unknown method", text: '{"jsonrpc":"2.0","id":109,"method":"nope"}', verdict: "-32601" },
    { label: "an unknown tool", text: call(110, "nope", {}), verdict: "tool-error" },
    { label: "invalid arguments", text: call(111, "transfer", { amount: -1 }), verdict: "tool-error" },
    {
      label: "an argument named __proto__",
      text: call(112, "get_account", JSON.parse('{"account_id":"ACC-1001","__proto__":{"polluted":true}}')),
      verdict: "tool-error",
    },
    {
      label: "a nested __proto__",
      text: call(113, "transfer", JSON.parse('{"from_account":{"__proto__":{"polluted":true}}}')),
      verdict: "tool-error",
    },
  ];

  /** What an answer says, as one word: the JSON-RPC error code, a tool error, ok, or too large. */
  const verdictOf = (answer: Record<string, any>, status?: number): string => {
    if (status === 413 || answer.error?.data?.code === "TOO_LARGE") return "too-large";
    if (answer.error) return String(answer.error.code);
    return answer.result?.isError ? "tool-error" : "ok";
  };
  const answers = new Map<string, { http: Record<string, any>; stdio: Record<string, any> }>();

  beforeAll(async () => {
    const { engine } = await buildEngine({ sources: ["bank"], seed: "1" });
    const app = createApp(engine);
    const post = (body: string, headers: Record<string, string> = {}) =>
      app.request("/mcp", {
        method: "POST",
        body,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
      });
    const init = await post(JSON.stringify(INITIALIZE));
    const session = {
      "mcp-session-id": init.headers.get("mcp-session-id") ?? "",
      "mcp-protocol-version": "2025-06-18",
    };
    expect((await post(JSON.stringify(INITIALIZED), session)).status).toBe(202);
    const peer = new StdioPeer();
    await peer.start();
    for (const row of table) {
      const response = await post(row.text, session);
      const body = (await response.json()) as Record<string, any>;
      answers.set(row.label, {
        http: { verdict: verdictOf(body, response.status), body },
        stdio: await peer.ask(row.text).then((body) => ({ verdict: verdictOf(body), body })),
      });
    }
    expect(await peer.end()).toBe(0);
    // REST's verdict on the same __proto__ argument, for the row below.
    const rest = await app.request("/sessions", { method: "POST" });
    const id = ((await rest.json()) as { id: string }).id;
    const restCall = await app.request(`/sessions/${id}/calls`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"name":"get_account","arguments":{"account_id":"ACC-1001","__proto__":{"polluted":true}}}',
    });
    answers.set("REST __proto__", { http: (await restCall.json()) as Record<string, any>, stdio: {} });
    await engine.close();
  }, 180_000);

  it.each(table.map((row) => [row.label, row.verdict]))("%s: %s on both", (label, verdict) => {
    const { http, stdio } = answers.get(label as string) ?? { http: {}, stdio: {} };
    expect({ http: http.verdict, stdio: stdio.verdict }).toEqual({ http: verdict, stdio: verdict });
    // Errors are sentences, never a zod issue dump or a stack.
    for (const body of [http.body, stdio.body])
      if (body.error) expect(body.error.message ?? "").not.toMatch(/^\[|\n|"code":/);
  });

  it("the __proto__ argument gets the same violations over REST, /mcp and stdio; nothing is polluted", () => {
    const rest = answers.get("REST __proto__")?.http ?? {};
    const row = answers.get("an argument named __proto__") ?? { http: {}, stdio: {} };
    const violations = rest.observation?.violations;
    expect(violations).toEqual([expect.objectContaining({ path: "/__proto__", rule: "unknown_argument" })]);
    expect(textOf(row.http.body).violations).toEqual(violations);
    expect(textOf(row.stdio.body).violations).toEqual(violations);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("a refused request is answered with its own id on both doors when the text names one", () => {
    for (const label of ["amount -1e400", "jsonrpc 1.0", "params a number", "no tool name"]) {
      const row = answers.get(label);
      expect(row?.http.body.id, label).toEqual(row?.stdio.body.id);
      expect(row?.stdio.body.id, label).not.toBeNull();
    }
  });
});

describe("the message checks both doors share", () => {
  it("idOfText reads the top-level id from the start of a message only", () => {
    expect(idOfText('{"jsonrpc":"2.0","id":7,"method":"x","params":{"pad":"xxxx')).toBe(7);
    expect(idOfText(' { "method":"x", "id" : "a\\"b", "params":{')).toBe('a"b');
    // An "id" inside params is not the message's; a cut-off text names none.
    expect(idOfText('{"params":{"id":3},"pad":"xx')).toBeNull();
    expect(idOfText('{"params":{"id":3},"id":4')).toBe(4);
    expect(idOfText('{"method":"x","params":{"text":"\\"id\\":5"},"id":"ab')).toBeNull();
    expect(idOfText('{"id":1.5}')).toBeNull();
    expect(idOfText('{"id":123456789012345678}')).toBeNull();
    expect(idOfText("[1]")).toBeNull();
  });

  it("a notification or a response is refused without an answer on stdio; a request with its id", () => {
    const notification = checkMessage({ jsonrpc: "2.0", method: "tools/call", params: 5 });
    expect(notification).toMatchObject({ ok: false, silent: true });
    // Another peer's error answer is never answered back (two such peers would echo errors forever).
    const response = checkMessage({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "no" } });
    expect(response).toMatchObject({ ok: false, silent: true, reply: { error: { code: -32600 } } });
    const request = checkMessage({ jsonrpc: "2.0", id: "r", method: "tools/call", params: [] });
    expect(request).toMatchObject({
      ok: false,
      silent: false,
      reply: { id: "r", error: { code: -32602 } },
    });
    expect(readMessageText('{"jsonrpc":"2.0","id":1,"method":"ping"}')).toMatchObject({ ok: true });
    // Too deep for the HTTP body check is too deep here too, answered with the id JSON.parse still finds.
    const deep = readMessageText(
      `{"jsonrpc":"2.0","id":9,"method":"ping","params":${"[".repeat(300)}${"]".repeat(300)}}`,
    );
    expect(deep).toMatchObject({ ok: false, reply: { id: 9, error: { code: -32700 } } });
  });

  it("paramsError names every violation (up to ten) in one line", () => {
    const error = paramsError("initialize", {});
    expect(error?.code).toBe(-32602);
    expect(error?.message).toMatch(
      /^invalid params for initialize: \/params\/protocolVersion: .*; \/params\/capabilities: /,
    );
    expect(paramsError("tools/call", { name: "x", arguments: {} })).toBeUndefined();
    expect(paramsError("something/else", 5)).toBeUndefined();
  });
});
