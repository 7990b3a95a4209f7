import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, describe, expect, it } from "vitest";
import { loadToolSources } from "../../src/mcp/index.js";
import { startServer } from "../../src/server/index.js";
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
