import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Command, CommanderError } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerUsersDemoCommand } from "../../src/cli/commands/users/demo.js";
import { Models } from "../../src/models/hub.js";
import { lookupStatic, type ShopDemo, startShopDemo } from "../../src/users/demo/index.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";

const ROOT = join(import.meta.dirname, "..", "..");
const EMAIL = "yusuf.rossi7301@example.com";
const ORDER = "#W2378156";

/** The demo's responses as status and parsed JSON (or text). */
async function get(demo: ShopDemo, path: string) {
  const response = await fetch(new URL(path, demo.url));
  const text = await response.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body, text };
}

async function chat(demo: ShopDemo, body: unknown, contentType = "application/json") {
  const response = await fetch(new URL("/api/chat", demo.url), {
    method: "POST",
    headers: { "content-type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** A request whose path is sent exactly as written (fetch would normalise `..` and `%2e`). */
function rawGet(url: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method: "GET" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("users demo: the shop without a model (scripted agent)", () => {
  let demo: ShopDemo;
  let models: Models;

  beforeAll(async () => {
    // Models of an empty config: no role names a model, whatever the machine's terrarium.config.yaml says.
    models = new Models();
    demo = await startShopDemo({ port: 0, models, seed: "7" });
  }, 30_000);
  afterAll(async () => {
    await demo?.close();
    await models?.close();
  });

  it("serves the pages, each with the chat widget in an iframe", async () => {
    expect(demo.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(demo.mode).toBe("scripted");
    for (const page of ["/", "/index.html", "/order.html", "/returns.html"]) {
      const answer = await get(demo, page);
      expect(answer.status, page).toBe(200);
      expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
      expect(answer.headers.get("content-security-policy")).toContain("default-src 'self'");
      expect(answer.text).toContain('<iframe id="chat" src="/chat.html"');
    }
    const returns = await get(demo, "/returns.html");
    expect(returns.text).toMatch(/<select id="return-reason"/);
    const widget = await get(demo, "/chat.html");
    expect(widget.text).toContain('id="chat-root"');
    expect(widget.text).toMatch(/<input id="chat-input"[^>]*placeholder="[^"]+"/);
    expect(widget.text).toMatch(/<button id="chat-send" type="submit">Send<\/button>/);
    const script = await get(demo, "/chat.js");
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(script.text).toContain("data-chat-role");
    expect(script.text).toContain("data-session-id");
    expect((await get(demo, "/shop.css")).status).toBe(200);
    expect((await get(demo, "/nope.html")).status).toBe(404);
  });

  it("answers products and orders from the tau2-retail store", async () => {
    const products = await get(demo, "/api/products");
    expect(products.status).toBe(200);
    expect(products.body.products).toHaveLength(50);
    const names = products.body.products.map((product: any) => product.name);
    expect(names).toEqual([...names].sort());
    const first = products.body.products[0];
    expect(first).toMatchObject({ product_id: expect.any(String), variants: expect.any(Number) });
    const product = await get(demo, `/api/products/${first.product_id}`);
    expect(product.body.variants).toHaveLength(first.variants);
    expect((await get(demo, "/api/products/abc")).status).toBe(400);
    expect((await get(demo, "/api/products/123")).status).toBe(404);

    const order = await get(demo, `/api/orders/${encodeURIComponent(ORDER)}`);
    expect(order.status).toBe(200);
    expect(order.body).toMatchObject({ order_id: ORDER, status: "delivered" });
    expect(order.body.items.map((item: any) => item.name)).toContain("Headphones");
    expect(order.body).not.toHaveProperty("user_id");
    expect((await get(demo, "/api/orders/w2378156")).body.order_id).toBe(ORDER);
    expect((await get(demo, "/api/orders/W0000000")).status).toBe(404);
    expect((await get(demo, "/api/orders/DROP%20TABLE")).status).toBe(400);
    expect((await get(demo, "/api/info")).body).toMatchObject({
      agent: "scripted",
      environment: "tau2-retail",
    });
    expect((await get(demo, "/api/nothing")).status).toBe(404);
  });

  it("holds a conversation whose tool calls are real tau2-retail calls in the session's history", async () => {
    const first = await chat(demo, {
      message: `Hi, I want to return the headphones from order ${ORDER}. My email is ${EMAIL}.`,
    });
    expect(first.status).toBe(200);
    const id = first.body.sessionId as string;
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(first.body.reply).toMatch(/To confirm: return Headphones \(item 4202497723\)/);
    expect(first.body.reply).toMatch(/yes or no/);

    const second = await chat(demo, { sessionId: id, message: "Yes, please go ahead." });
    expect(second.body).toMatchObject({ sessionId: id });
    expect(second.body.reply).toMatch(/return of 1 item\(s\) from order #W2378156 is requested/);

    const history = await get(demo, `/terrarium/sessions/${id}/history`);
    expect(history.status).toBe(200);
    const calls = history.body.map((entry: any) => entry.request.name);
    expect(calls).toEqual([
      "find_user_id_by_email",
      "get_order_details",
      "get_user_details",
      "return_delivered_order_items",
    ]);
    expect(history.body[0]).toMatchObject({
      request: { arguments: { email: EMAIL } },
      result: { status: "ok", observation: "yusuf_rossi_9620" },
      simulator: "code",
    });
    expect(history.body[3].request.arguments).toEqual({
      order_id: ORDER,
      item_ids: ["4202497723"],
      payment_method_id: "credit_card_9513926",
    });
    const state = await get(demo, `/terrarium/sessions/${id}/state`);
    expect(state.body.orders[ORDER]).toMatchObject({
      status: "return requested",
      return_items: ["4202497723"],
    });
    // Only what reads a chat is exposed: Gecko's view of the session is not.
    const gecko = await fetch(new URL("/terrarium/get-session-history", demo.url), {
      headers: { "X-Session-ID": id },
    });
    expect(gecko.status).toBe(404);

    // The widget reloads the conversation from here; the order page reads the session's state.
    const transcript = await get(demo, `/api/chat/${id}`);
    expect(transcript.body.messages.map((message: any) => message.role)).toEqual([
      "user",
      "agent",
      "user",
      "agent",
    ]);
    expect(transcript.body.messages[2].text).toBe("Yes, please go ahead.");
    const seen = await get(demo, `/api/orders/${encodeURIComponent(ORDER)}?session=${id}`);
    expect(seen.body).toMatchObject({ status: "return requested", return_items: ["4202497723"] });
    expect((await get(demo, `/api/orders/${encodeURIComponent(ORDER)}`)).body.status).toBe("delivered");
    expect((await get(demo, `/api/orders/${encodeURIComponent(ORDER)}?session=unknown-id`)).body.status).toBe(
      "delivered",
    );
  });

  it("asks who the customer is before acting, asks which item, and does nothing on a no", async () => {
    const start = await chat(demo, { message: `I'd like to return something from ${ORDER}` });
    const id = start.body.sessionId;
    expect(start.body.reply).toMatch(/email/);
    const which = await chat(demo, { sessionId: id, message: `It's ${EMAIL}` });
    expect(which.body.reply).toMatch(/Which item\(s\) of #W2378156/);
    const proposal = await chat(demo, { sessionId: id, message: "the smart watch, to a gift card please" });
    // No gift card on this account: the refund goes back to the original card.
    expect(proposal.body.reply).toMatch(/Smart Watch \(item 9408160950\).*mastercard card ending in 2478/);
    const no = await chat(demo, { sessionId: id, message: "no, not now" });
    expect(no.body.reply).toMatch(/not changed anything/);
    const status = await chat(demo, { sessionId: id, message: `What's the status of ${ORDER}?` });
    expect(status.body.reply).toMatch(/is delivered\. It has 5 item/);
    const calls = (await get(demo, `/terrarium/sessions/${id}/history`)).body.map((e: any) => e.request.name);
    expect(calls).not.toContain("return_delivered_order_items");
    const stranger = await chat(demo, { message: "My email is nobody@example.com" });
    expect(stranger.body.reply).toMatch(/could not find an account/);
  });

  it("remembers what the customer said earlier in the request", async () => {
    const start = await chat(demo, { message: "I'd like to return my headphones" });
    const id = start.body.sessionId;
    expect(start.body.reply).toMatch(/email/);
    const which = await chat(demo, { sessionId: id, message: `My email is ${EMAIL}` });
    expect(which.body.reply).toMatch(/Which order/);
    const proposal = await chat(demo, { sessionId: id, message: `It's order ${ORDER}` });
    expect(proposal.body.reply).toMatch(/To confirm: return Headphones \(item 4202497723\)/);
    const aside = await chat(demo, { sessionId: id, message: "Okay, and is it still delivered?" });
    expect(aside.body.reply).not.toMatch(/is requested/);
    const done = await chat(demo, { sessionId: id, message: "Please go ahead" });
    expect(done.body.reply).toMatch(/is requested/);
    const cancel = await chat(demo, {
      sessionId: id,
      message: "Can you cancel order #W6247578? I ordered it by mistake",
    });
    expect(cancel.body.reply).toMatch(
      /^(To confirm: cancel order #W6247578 .*ordered by mistake|The order #W6247578 is)/,
    );
  });

  it("keeps chat sessions apart: own engine session, own state, own memory", async () => {
    const a = await chat(demo, { message: `Return the headphones of ${ORDER}, email ${EMAIL}` });
    const b = await chat(demo, { message: "hello" });
    expect(a.body.sessionId).not.toBe(b.body.sessionId);
    // b never identified itself: a's pending return is not b's.
    const yes = await chat(demo, { sessionId: b.body.sessionId, message: "yes" });
    expect(yes.body.reply).not.toMatch(/requested/);
    await chat(demo, { sessionId: a.body.sessionId, message: "yes" });
    const stateA = (await get(demo, `/terrarium/sessions/${a.body.sessionId}/state`)).body;
    const stateB = (await get(demo, `/terrarium/sessions/${b.body.sessionId}/state`)).body;
    expect(stateA.orders[ORDER].status).toBe("return requested");
    expect(stateB.orders[ORDER].status).toBe("delivered");
    expect((await get(demo, `/terrarium/sessions/${b.body.sessionId}/history`)).body).toEqual([]);
    expect((await get(demo, `/api/chat/${b.body.sessionId}`)).body.messages).toHaveLength(4);
  });

  it("refuses bad bodies with 400 (413 when too large, 415 when not JSON), unknown sessions with 404", async () => {
    const bad = async (body: unknown, status: number, pattern?: RegExp, contentType?: string) => {
      const answer = await chat(demo, body, contentType);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(answer.body.error.code).toEqual(expect.any(String));
      if (pattern) expect(answer.body.error.message).toMatch(pattern);
    };
    await bad("{not json", 400, /not JSON/);
    await bad("[]", 400);
    await bad("null", 400);
    await bad({}, 400);
    await bad({ message: "   " }, 400, /empty/);
    await bad({ message: 42 }, 400);
    await bad({ message: "x".repeat(4001) }, 400, /longer than 4000/);
    await bad({ message: "hi", extra: true }, 400, /extra/);
    await bad('{"message":"hi","__proto__":{"polluted":true}}', 400, /__proto__/);
    await bad('{"message":"hi","constructor":{"prototype":{"polluted":true}}}', 400, /constructor/);
    await bad({ message: "hi", sessionId: "../etc" }, 400);
    await bad({ message: "hi", sessionId: "no-such-session" }, 404);
    await bad({ message: "y".repeat(20_000) }, 413);
    await bad({ message: "hi" }, 415, /application\/json/, "text/plain");
    expect(({} as any).polluted).toBeUndefined();
    expect((await get(demo, "/api/chat/no-such-session")).status).toBe(404);
    expect((await get(demo, "/api/chat/bad%20id")).status).toBe(400);
    const put = await fetch(new URL("/api/chat", demo.url), { method: "PUT", body: "{}" });
    expect(put.status).toBe(404);
    const postPage = await fetch(new URL("/index.html", demo.url), { method: "POST", body: "{}" });
    expect(postPage.status).toBe(405);
  });

  it("never serves a file outside examples/shop", async () => {
    const secret = /"name": "terrarium"|root:x:0/;
    for (const path of [
      "/../package.json",
      "/../../../../etc/passwd",
      "/%2e%2e/package.json",
      "/%2e%2e%2fpackage.json",
      "/..%2f..%2f..%2fpackage.json",
      "/..%5c..%5cpackage.json",
      "/%2E%2E/%2E%2E/package.json",
      "/.%2e/.%2e/package.json",
      "/foo/..%2f..%2f..%2fpackage.json",
      "/index.html%00.js",
      "/%252e%252e/package.json",
      "/.git/config",
      "/%c0%ae%c0%ae/package.json",
    ]) {
      const answer = await rawGet(demo.url, path);
      expect(answer.status, path).not.toBe(200);
      expect(answer.body, path).not.toMatch(secret);
    }
    expect((await rawGet(demo.url, "/..%2f..%2fpackage.json")).status).toBe(400);
    expect((await rawGet(demo.url, "/README.md")).status).toBe(404);
  });

  it("refuses an unknown model provider, a taken port and a bad port before serving", async () => {
    await expect(startShopDemo({ port: 0, models, agentModel: "nosuch:model" })).rejects.toThrow(/nosuch/);
    const port = Number(new URL(demo.url).port);
    await expect(startShopDemo({ port, models })).rejects.toThrow(/already in use/);
    await expect(startShopDemo({ port: 70_000, models })).rejects.toThrow(/0 to 65535/);
    await expect(startShopDemo({ port: 0, models, host: "not a host!" })).rejects.toThrow(/IP address/);
    await expect(startShopDemo({ port: 0, models, allowedHosts: ["shop.test:80"] })).rejects.toThrow(
      /without a port/,
    );
    await expect(startShopDemo({ port: 0, models, tokens: ["two words"] })).rejects.toThrow(/token/);
    await expect(startShopDemo({ port: 0, models, maxChatSessions: 0 })).rejects.toThrow(/live chats/);
    await expect(startShopDemo({ port: 0, models, chatIdleMs: -1 })).rejects.toThrow(/idle timeout/);
  });

  it("serves only the part of terrarium's API that reads a chat under /terrarium", async () => {
    const tools = await get(demo, "/terrarium/tools");
    expect(tools.body.tools.map((tool: any) => tool.name)).toContain("return_delivered_order_items");
    const created = await fetch(new URL("/terrarium/sessions", demo.url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(created.status).toBe(404);
    expect(((await created.json()) as any).error.message).toMatch(/exposes only GET \/terrarium\/tools/);
    expect((await get(demo, "/terrarium/health")).status).toBe(404);
    expect((await get(demo, "/terrarium/sessions/nope/history")).status).toBe(404);
  });
});

describe("users demo: with a model, terrarium's planner answers", () => {
  let llm: ScriptedLlmServer;
  let dir: string;
  let demo: ShopDemo;

  beforeAll(async () => {
    llm = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    dir = mkdtempSync(join(tmpdir(), "users-demo-"));
    // roles.agent names the planner's model; no roles.default, so no semantic validation calls.
    const config = writeScriptedConfig(dir, llm.baseURL, { agent: "scripted:agent" });
    demo = await startShopDemo({ port: 0, config, seed: "3" });
  }, 30_000);
  afterAll(async () => {
    await demo?.close();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs the planner on tau2-retail; its tool call is in the chat session's history", async () => {
    expect(demo.mode).toBe("planner");
    expect(demo.agentModel).toBe("scripted:agent");
    expect((await get(demo, "/api/info")).body).toMatchObject({ agent: "planner", model: "scripted:agent" });
    const answer = await chat(demo, { message: `I want to return my headphones, email ${EMAIL}` });
    expect(answer.status).toBe(200);
    expect(answer.body.reply).toBe("I found your account. Which item would you like to return?");
    const history = await get(demo, `/terrarium/sessions/${answer.body.sessionId}/history`);
    expect(history.body).toHaveLength(1);
    expect(history.body[0]).toMatchObject({
      request: { name: "find_user_id_by_email", arguments: { email: EMAIL } },
      result: { status: "ok", observation: "yusuf_rossi_9620" },
    });
    // The model saw the tau2-retail tools and the user's message.
    const asked = llm.requests.find((entry) => entry.body?.model === "agent");
    expect(asked?.body.tools.map((tool: any) => tool.function.name)).toContain("get_order_details");
    const second = await chat(demo, { sessionId: answer.body.sessionId, message: "The headphones." });
    expect(second.status).toBe(200);
    expect((await get(demo, `/api/chat/${answer.body.sessionId}`)).body.messages).toHaveLength(4);
  });

  it("answers 502 when the agent's model fails, and the conversation goes on", async () => {
    llm.push({ status: 500, error: { message: "the model is down" } });
    llm.push({ status: 500, error: { message: "the model is down" } });
    llm.push({ status: 500, error: { message: "the model is down" } });
    llm.push({ status: 500, error: { message: "the model is down" } });
    const failed = await chat(demo, { message: "hello?" });
    expect(failed.status).toBe(502);
    expect(failed.body.error).toMatchObject({ code: "AGENT_ERROR", message: expect.stringMatching(/model/) });
    // The answer names the conversation, which goes on once the model answers again.
    const id = failed.body.sessionId as string;
    expect(id).toEqual(expect.any(String));
    const again = await chat(demo, { sessionId: id, message: `email ${EMAIL}` });
    expect(again.body).toMatchObject({ sessionId: id, reply: expect.any(String) });
    expect((await get(demo, `/api/chat/${id}`)).body.messages.map((m: any) => m.role)).toEqual([
      "user",
      "user",
      "agent",
    ]);
  }, 60_000);
});

describe("lookupStatic", () => {
  it("refuses a symbolic link that leads out of the folder", () => {
    const dir = mkdtempSync(join(tmpdir(), "users-demo-static-"));
    try {
      const root = join(dir, "shop");
      mkdirSync(root);
      writeFileSync(join(dir, "secret.html"), "secret");
      writeFileSync(join(root, "index.html"), "home");
      symlinkSync(join(dir, "secret.html"), join(root, "link.html"));
      expect(lookupStatic(root, "/")).toMatchObject({ kind: "file" });
      expect(lookupStatic(root, "/link.html")).toMatchObject({ kind: "refused" });
      expect(lookupStatic(root, "/%E0%A4%A")).toMatchObject({ kind: "refused" });
      expect(lookupStatic(root, "/missing.html")).toEqual({ kind: "missing" });
      expect(lookupStatic(root, "/index.exe")).toEqual({ kind: "missing" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The environment without TERRARIUM_CONFIG, so the child reads no config (its cwd has none). */
function withoutConfig(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.TERRARIUM_CONFIG;
  return env;
}

describe("terrarium users demo (CLI)", () => {
  /** A program with only `users demo`, as the lead's users command registers it. */
  const parse = async (args: string[]) => {
    const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
    program.option("--config <file>");
    const users = program.command("users").exitOverride();
    registerUsersDemoCommand(users, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
    for (const command of users.commands)
      command.exitOverride().configureOutput({ writeErr: () => undefined });
    return program.parseAsync(["node", "terrarium", ...args]);
  };

  it("refuses bad values before starting", async () => {
    for (const args of [
      ["--port", "abc"],
      ["--port", "70000"],
      ["--port", "-1"],
      ["--port", "8.5"],
      ["--agent-model", "gpt4"],
    ]) {
      await expect(parse(["users", "demo", ...args]), args.join(" ")).rejects.toBeInstanceOf(CommanderError);
    }
  });

  it("has examples in --help", () => {
    const program = new Command();
    const users = program.command("users");
    registerUsersDemoCommand(users, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
    const demo = users.commands.find((command) => command.name() === "demo");
    let help = "";
    demo?.configureOutput({ writeOut: (text) => (help += text) });
    demo?.outputHelp();
    expect(help).toMatch(/--port <port>/);
    expect(help).toMatch(/--agent-model <model>/);
  });

  it("starts, prints the URL and that answers are scripted, and stops on SIGTERM", async () => {
    const loader = pathToFileURL(join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
    const commander = pathToFileURL(join(ROOT, "node_modules", "commander", "esm.mjs")).href;
    const module = pathToFileURL(join(ROOT, "src", "cli", "commands", "users", "demo.ts")).href;
    const script = [
      `import { Command } from ${JSON.stringify(commander)};`,
      `import { registerUsersDemoCommand } from ${JSON.stringify(module)};`,
      `const program = new Command(); const users = program.command("users");`,
      `registerUsersDemoCommand(users, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });`,
      `await program.parseAsync(["node", "terrarium", "users", "demo", "--port", "0", "--seed", "1"]);`,
    ].join("\n");
    const dir = mkdtempSync(join(tmpdir(), "users-demo-cli-"));
    const child: ChildProcess = spawn(
      process.execPath,
      ["--import", loader, "--input-type=module", "-e", script],
      { cwd: dir, stdio: ["ignore", "pipe", "pipe"], env: withoutConfig() },
    );
    try {
      let text = "";
      const url = await new Promise<string>((resolve, reject) => {
        child.stderr?.on("data", (chunk: Buffer) => {
          text += chunk.toString();
          const match = /demo shop at (http:\/\/\S+)/.exec(text);
          if (match && /scripted answers/.test(text)) resolve(match[1] as string);
        });
        child.on("exit", (code) => reject(new Error(`exited (${code}) before serving:\n${text}`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      expect((await fetch(url)).status).toBe(200);
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(text).toMatch(/demo shop stopped/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
