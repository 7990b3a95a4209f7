import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, describe, expect, it } from "vitest";
import { loadToolSources } from "../../src/mcp/index.js";
import { createApp, startServer } from "../../src/server/index.js";
import { buildEngine } from "../../src/sim/index.js";
import { cli } from "../helpers/cli.js";

/** Simulated tools over MCP, exercised with the official MCP client over stdio and streamable HTTP. */
const ROOT = join(import.meta.dirname, "..", "..");
const stdioCommand = `${process.execPath} --import tsx ${join(ROOT, "src", "cli", "main.ts")} mcp bank --seed 1`;
let http: Awaited<ReturnType<typeof startServer>> | undefined;
afterAll(() => http?.close());

const transfer = { from_account: "ACC-1001", to_account: "ACC-1002", amount: 25 };

describe("MCP", () => {
  it("stdio: lists the tools with their schemas and runs calls in one session", async () => {
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ["--import", "tsx", join(ROOT, "src", "cli", "main.ts"), "mcp", "bank", "--seed", "1"],
        cwd: ROOT,
        stderr: "ignore",
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual([
        "close_account",
        "freeze_account",
        "get_account",
        "list_accounts",
        "open_account",
        "transfer",
      ]);
      const transferTool = tools.find((tool) => tool.name === "transfer");
      expect(transferTool?.inputSchema.required).toEqual(["from_account", "to_account", "amount"]);
      expect(transferTool?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      const first = await client.callTool({ name: "transfer", arguments: transfer });
      expect(first.isError).toBeUndefined();
      expect(JSON.parse((first.content as Array<{ text: string }>)[0]?.text ?? "")).toMatchObject({
        from_balance: 2475,
        to_balance: 145.5,
      });
      // The same session: the balance moved.
      const account = await client.callTool({ name: "get_account", arguments: { account_id: "ACC-1001" } });
      expect(JSON.parse((account.content as Array<{ text: string }>)[0]?.text ?? "").balance).toBe(2475);
      const invalid = await client.callTool({ name: "transfer", arguments: { amount: -1 } });
      expect(invalid.isError).toBe(true);
      expect((invalid.content as Array<{ text: string }>)[0]?.text).toContain('"status":"invalid"');
    } finally {
      await client.close();
    }
  }, 30_000);

  it("streamable HTTP at /mcp: one session per connection", async () => {
    http = await startServer({ sources: ["bank"], port: 0, seed: "1" });
    const connect = async () => {
      const client = new Client({ name: "test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${http?.url}/mcp`)));
      return client;
    };
    const a = await connect();
    const b = await connect();
    try {
      expect((await a.listTools()).tools).toHaveLength(6);
      await a.callTool({ name: "transfer", arguments: transfer });
      await a.callTool({ name: "transfer", arguments: transfer });
      const seenByA = await a.callTool({ name: "get_account", arguments: { account_id: "ACC-1001" } });
      const seenByB = await b.callTool({ name: "get_account", arguments: { account_id: "ACC-1001" } });
      expect(JSON.parse((seenByA.content as Array<{ text: string }>)[0]?.text ?? "").balance).toBe(2450);
      expect(JSON.parse((seenByB.content as Array<{ text: string }>)[0]?.text ?? "").balance).toBe(2500);
      // A running MCP server over HTTP works as a tool source too.
      const catalog = await loadToolSources([`mcp+http:${http?.url}/mcp`]);
      expect(catalog.size).toBe(6);
      expect(catalog.get("transfer")?.origin).toMatchObject({
        format: "mcp",
        file: `mcp+http:${http?.url}/mcp`,
      });
    } finally {
      await a.close();
      await b.close();
    }
  }, 30_000);

  it("stdio with --strict refuses tool files with skipped operations before serving", async () => {
    const run = await cli([
      "mcp",
      join(ROOT, "test", "fixtures", "tools", "bad", "unknown-format.json"),
      "--strict",
    ]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/1 operation was skipped \(strict mode\)[\s\S]*\[CATALOG_INCOMPLETE\]/);
  });

  it("reads a running MCP server's tools as a tool source, without calling them", async () => {
    const catalog = await loadToolSources([`mcp+stdio:${stdioCommand}`]);
    expect(catalog.names.sort()).toEqual([
      "close_account",
      "freeze_account",
      "get_account",
      "list_accounts",
      "open_account",
      "transfer",
    ]);
    expect(catalog.get("get_account")).toMatchObject({
      effect: "read",
      effectSource: "declared",
      origin: { format: "mcp", file: `mcp+stdio:${stdioCommand}` },
    });
    const listed = await cli(["tools", "list", `mcp+stdio:${stdioCommand}`, "--json"]);
    expect(JSON.parse(listed.stdout).tools).toHaveLength(6);
  }, 30_000);
});

describe("MCP over HTTP treats every request as hostile", () => {
  const servers: Array<Awaited<ReturnType<typeof startServer>>> = [];
  afterAll(() => Promise.all(servers.map((server) => server.close())));
  const MCP_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" };
  const rpc = (url: string, body: unknown, headers: Record<string, string> = {}, method = "POST") =>
    fetch(`${url}/mcp`, {
      method,
      headers: { ...MCP_HEADERS, ...headers },
      ...(method === "POST" ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    });
  const initialize = {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
  const connect = async (url: string, token?: string) => {
    const client = new Client({ name: "test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      ...(token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {}),
    });
    await client.connect(transport);
    return { client, transport };
  };
  const balance = async (client: Client) => {
    const result = await client.callTool({ name: "get_account", arguments: { account_id: "ACC-1001" } });
    return JSON.parse((result.content as Array<{ text: string }>)[0]?.text ?? "").balance as number;
  };

  it("an MCP session belongs to the token that initialised it: another token cannot use its id", async () => {
    const server = await startServer({ sources: ["bank"], port: 0, seed: "1", tokens: ["alpha", "beta"] });
    servers.push(server);
    const a = await connect(server.url, "alpha");
    try {
      const stolen = a.transport.sessionId as string;
      expect(stolen).toMatch(/^[0-9a-f-]{36}$/);
      const hijack = await rpc(
        server.url,
        { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "transfer", arguments: transfer } },
        { authorization: "Bearer beta", "mcp-session-id": stolen },
      );
      expect(hijack.status).toBe(404);
      expect(await hijack.json()).toEqual({
        jsonrpc: "2.0",
        error: { code: -32001, message: `no MCP session ${stolen}; initialize a new one` },
        id: null,
      });
      // Nor can beta end it.
      const ended = await rpc(
        server.url,
        undefined,
        { authorization: "Bearer beta", "mcp-session-id": stolen },
        "DELETE",
      );
      expect(ended.status).toBe(404);
      expect(await balance(a.client)).toBe(2500);
      // Without a token the request never reaches MCP.
      expect((await rpc(server.url, initialize)).status).toBe(401);
    } finally {
      await a.client.close();
    }
  });

  it("rejected requests and initialize store nothing; the first call makes the engine session, DELETE /mcp deletes it", async () => {
    const server = await startServer({ sources: ["bank"], port: 0, seed: "1" });
    servers.push(server);
    const stored = async () => (await server.engine.store.listSessions()).length;
    for (let i = 0; i < 200; i++) expect((await fetch(`${server.url}/mcp`)).status).toBe(405);
    expect((await rpc(server.url, undefined, {}, "DELETE")).status).toBe(400);
    expect((await rpc(server.url, { jsonrpc: "2.0", id: 1, method: "tools/list" })).status).toBe(400);
    expect((await rpc(server.url, { ...initialize, params: { nonsense: true } })).status).toBe(400);
    expect((await rpc(server.url, "{broken")).status).toBe(400);
    expect((await rpc(server.url, initialize, { accept: "text/html" })).status).toBe(406);
    expect((await rpc(server.url, initialize, { "mcp-session-id": "made-up" })).status).toBe(404);
    expect(await stored()).toBe(0);
    const a = await connect(server.url);
    await a.client.listTools();
    expect(await stored()).toBe(0);
    await a.client.callTool({ name: "transfer", arguments: transfer });
    expect(await stored()).toBe(1);
    const [record] = await server.engine.store.listSessions();
    expect(record?.metadata).toEqual({ mcpSession: a.transport.sessionId });
    expect(await balance(a.client)).toBe(2475);
    await a.transport.terminateSession();
    expect(await stored()).toBe(0);
    await a.client.close();
  });

  it("live MCP sessions are capped: past the limit a new initialize gets a 503 until one ends", async () => {
    const { engine } = await buildEngine({ sources: ["bank"], seed: "1" });
    const app = createApp(engine, { mcp: { maxSessions: 2 } });
    const init = () =>
      app.request("/mcp", { method: "POST", headers: MCP_HEADERS, body: JSON.stringify(initialize) });
    const first = await init();
    expect(first.status).toBe(200);
    expect((await init()).status).toBe(200);
    const refused = await init();
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({
      jsonrpc: "2.0",
      error: {
        code: -32000,
        message: "too many MCP sessions (limit 2); end unused ones with DELETE /mcp and try again",
      },
      id: null,
    });
    // Initialize stores nothing (the engine session waits for the first call).
    expect(await engine.store.listSessions()).toHaveLength(0);
    const id = first.headers.get("mcp-session-id") as string;
    const ended = await app.request("/mcp", { method: "DELETE", headers: { "mcp-session-id": id } });
    expect(ended.status).toBe(200);
    expect((await init()).status).toBe(200);
    // Idle sessions are reclaimed when room is needed.
    const eager = createApp(engine, { mcp: { maxSessions: 1, idleMs: 1 } });
    const again = () =>
      eager.request("/mcp", { method: "POST", headers: MCP_HEADERS, body: JSON.stringify(initialize) });
    const old = await again();
    // The first session must have been idle past 1 ms (Date.now's resolution) before room is needed.
    const usedAt = Date.now();
    while (Date.now() <= usedAt + 1) await new Promise((resolve) => setImmediate(resolve));
    expect((await again()).status).toBe(200);
    const stale = await eager.request("/mcp", {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": old.headers.get("mcp-session-id") as string },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(stale.status).toBe(404);
    expect(await engine.store.listSessions()).toHaveLength(0);
    await engine.close();
  });
});
