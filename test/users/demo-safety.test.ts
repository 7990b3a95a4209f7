import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerUsersDemoCommand } from "../../src/cli/commands/users/demo.js";
import { Models } from "../../src/models/hub.js";
import { allowedHostNames, hostOfHeader, type ShopDemo, startShopDemo } from "../../src/users/demo/index.js";

const ROOT = join(import.meta.dirname, "..", "..");
const EMAIL = "yusuf.rossi7301@example.com";
const ORDER = "#W2378156";
const TOKEN = "demo-safety-token";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** One request with exactly these headers (fetch would not let a test set Host). */
function send(
  demo: ShopDemo,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  const { hostname, port } = new URL(demo.url);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: keep the text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** `send` on a URL rather than a started demo (the CLI's child process). */
const sendTo = (
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
) => send({ url } as ShopDemo, method, path, headers, body);

/** A chat message (a new chat without `sessionId`). */
const chat = (demo: ShopDemo, message: string, sessionId?: string) =>
  send(
    demo,
    "POST",
    "/api/chat",
    { "content-type": "application/json" },
    JSON.stringify(sessionId ? { sessionId, message } : { message }),
  );

const engineSessions = async (demo: ShopDemo) => (await demo.engine.store.listSessions()).length;

describe("users demo: answers only its own host names (DNS rebinding)", () => {
  let models: Models;
  let demo: ShopDemo;

  beforeAll(async () => {
    models = new Models();
    demo = await startShopDemo({ port: 0, models, allowedHosts: ["Shop.Example.test"] });
  }, 30_000);
  afterAll(async () => {
    await demo?.close();
    await models?.close();
  });

  it("refuses a foreign Host header with 403 and says how to allow it, on every route", async () => {
    const port = new URL(demo.url).port;
    for (const path of ["/", "/chat.html", "/api/products", "/api/info", "/terrarium/tools"]) {
      const answer = await send(demo, "GET", path, { host: `attacker.example:${port}` });
      expect(answer.status, path).toBe(403);
      expect(answer.body.error).toEqual({
        code: "HOST_NOT_ALLOWED",
        message: expect.stringMatching(/does not answer for host "attacker\.example".*--allowed-host/),
      });
    }
    // A rebinding page cannot even start a chat (nor create an engine session).
    const before = await engineSessions(demo);
    const posted = await send(
      demo,
      "POST",
      "/api/chat",
      { host: "attacker.example", "content-type": "application/json" },
      JSON.stringify({ message: "hello" }),
    );
    expect(posted.status).toBe(403);
    expect(await engineSessions(demo)).toBe(before);
    for (const host of ["127.0.0.1.attacker.example", "localhost.attacker.example", "[::2]"])
      expect((await send(demo, "GET", "/api/info", { host })).status, host).toBe(403);
    // A Host header that is not even a name is refused too (by the HTTP layer or by the shop).
    for (const host of ["bad host", "localhost@attacker.example"])
      expect((await send(demo, "GET", "/api/info", { host })).status, host).toBeOneOf([400, 403]);
  });

  it("refuses a request without a Host header", async () => {
    const { port } = new URL(demo.url);
    const socket = connect({ host: "127.0.0.1", port: Number(port) });
    await once(socket, "connect");
    socket.write("GET /api/info HTTP/1.0\r\n\r\n");
    let text = "";
    socket.on("data", (chunk: Buffer) => (text += chunk.toString()));
    await once(socket, "end");
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.[01] 403/);
  });

  it("answers localhost, 127.0.0.1, [::1] and the names given, with any port and in any case", async () => {
    const port = new URL(demo.url).port;
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      "LOCALHOST",
      `shop.example.test:${port}`,
      "SHOP.example.test.",
    ]) {
      const answer = await send(demo, "GET", "/api/info", { host });
      expect(answer.status, host).toBe(200);
      expect(answer.body.environment).toBe("tau2-retail");
    }
    expect(demo.allowedHosts).toEqual(["localhost", "127.0.0.1", "[::1]", "shop.example.test"]);
  });

  it("parses Host headers and allowed names strictly", () => {
    expect(hostOfHeader("Example.COM:8090")).toBe("example.com");
    expect(hostOfHeader("[::1]:80")).toBe("[::1]");
    expect(hostOfHeader("[::1]")).toBe("[::1]");
    expect(hostOfHeader("")).toBeUndefined();
    expect(hostOfHeader("a b")).toBeUndefined();
    expect(hostOfHeader("evil.com:80:80")).toBeUndefined();
    expect(hostOfHeader("user@evil.com")).toBeUndefined();
    expect(hostOfHeader("-evil.com")).toBeUndefined();
    // The address listened on counts, a wildcard does not; IPv6 names are kept in brackets.
    expect(allowedHostNames("10.0.0.5")).toContain("10.0.0.5");
    expect(allowedHostNames("0.0.0.0")).toEqual(["localhost", "127.0.0.1", "[::1]"]);
    expect(allowedHostNames("::")).toEqual(["localhost", "127.0.0.1", "[::1]"]);
    expect(allowedHostNames("127.0.0.1", ["fe80::1", "[2001:db8::1]"])).toEqual([
      "localhost",
      "127.0.0.1",
      "[::1]",
      "[fe80::1]",
      "[2001:db8::1]",
    ]);
    expect(() => allowedHostNames("127.0.0.1", ["*.example.com"])).toThrow(/not a host name/);
    expect(() => allowedHostNames("127.0.0.1", ["example.com:443"])).toThrow(/without a port/);
  });
});

describe("users demo: /terrarium takes a bearer token and serves only what reads a chat", () => {
  let models: Models;
  let demo: ShopDemo;
  const auth = { authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    models = new Models();
    demo = await startShopDemo({ port: 0, models, tokens: ["other-token", TOKEN] });
  }, 30_000);
  afterAll(async () => {
    await demo?.close();
    await models?.close();
  });

  it("answers 401 without the token, and 200 with it", async () => {
    const started = await chat(demo, `Return the headphones of ${ORDER}, email ${EMAIL}`);
    expect(started.status).toBe(200);
    const id = started.body.sessionId as string;
    for (const path of [
      "/terrarium/tools",
      `/terrarium/sessions/${id}/history`,
      `/terrarium/sessions/${id}/state`,
    ]) {
      const missing = await send(demo, "GET", path);
      expect(missing.status, path).toBe(401);
      expect(missing.body.error).toEqual({
        code: "UNAUTHORIZED",
        message: "send Authorization: Bearer <token>",
      });
      expect(missing.headers["www-authenticate"]).toMatch(/^Bearer /);
      const wrong = await send(demo, "GET", path, { authorization: "Bearer not-the-token" });
      expect(wrong.status, path).toBe(401);
      expect(wrong.body.error.message).toMatch(/not accepted/);
      expect((await send(demo, "GET", path, auth)).status, path).toBe(200);
    }
    const history = await send(demo, "GET", `/terrarium/sessions/${id}/history`, auth);
    expect(history.body.map((entry: any) => entry.request.name)).toEqual([
      "find_user_id_by_email",
      "get_order_details",
      "get_user_details",
    ]);
    // Unknown routes say nothing without the token either.
    expect((await send(demo, "POST", "/terrarium/sessions", {}, "{}")).status).toBe(401);
  });

  it("never asks the pages or the shop's API (what the widget calls) for the token", async () => {
    for (const path of ["/", "/chat.html", "/chat.js", "/api/info", "/api/products"])
      expect((await send(demo, "GET", path)).status, path).toBe(200);
    const started = await chat(demo, "hello");
    expect(started.status).toBe(200);
    const id = started.body.sessionId as string;
    expect((await send(demo, "GET", `/api/chat/${id}`)).status).toBe(200);
    expect((await send(demo, "GET", `/api/orders/${encodeURIComponent(ORDER)}?session=${id}`)).status).toBe(
      200,
    );
    // The widget's script never calls /terrarium nor sends a token.
    const script = await send(demo, "GET", "/chat.js");
    expect(script.body).toMatch(/fetch\("\/api\/chat"/);
    expect(script.body).not.toMatch(/fetch\(\s*[`"']\/terrarium|authorization|bearer/i);
  });

  it("answers 404 for every other route of terrarium's API, even with the token, and changes nothing", async () => {
    const started = await chat(demo, `Return the headphones of ${ORDER}, email ${EMAIL}`);
    const id = started.body.sessionId as string;
    const engineId = demo.chats.engineSession(id) as string;
    const json = { ...auth, "content-type": "application/json" };
    const call = JSON.stringify({
      name: "cancel_pending_order",
      arguments: { order_id: "#W6247578", reason: "no longer needed" },
    });
    const routes: Array<[string, string, string?]> = [
      ["GET", "/terrarium"],
      ["GET", "/terrarium/"],
      ["GET", "/terrarium/health"],
      ["GET", "/terrarium/metrics"],
      ["GET", "/terrarium/openapi.json"],
      ["GET", "/terrarium/docs"],
      ["POST", "/terrarium/sessions", "{}"],
      ["POST", "/terrarium/sessions/import", "{}"],
      ["GET", `/terrarium/sessions/${id}`],
      ["GET", `/terrarium/sessions/${id}/export`],
      ["PUT", `/terrarium/sessions/${id}/state`, "{}"],
      ["POST", `/terrarium/sessions/${id}/calls`, call],
      ["POST", `/terrarium/sessions/${id}/reset`, "{}"],
      ["POST", `/terrarium/sessions/${id}/fork`, "{}"],
      ["POST", `/terrarium/sessions/${id}/replay`, "{}"],
      ["DELETE", `/terrarium/sessions/${id}`],
      ["POST", `/terrarium/sessions/${engineId}/calls`, call],
      ["POST", "/terrarium/mcp", "{}"],
      ["POST", "/terrarium/tools/cancel_pending_order", "{}"],
      ["POST", "/terrarium/start-session", "{}"],
      ["GET", "/terrarium/get-session-history"],
      ["POST", "/terrarium/tools", "{}"],
    ];
    for (const [method, path, body] of routes) {
      const answer = await send(demo, method, path, body ? json : auth, body);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.error.message, `${method} ${path}`).toMatch(/exposes only GET \/terrarium\/tools/);
    }
    // The engine's own session id addresses nothing: only chat ids do.
    const byEngineId = await send(demo, "GET", `/terrarium/sessions/${engineId}/history`, auth);
    expect(byEngineId.status).toBe(404);
    expect(byEngineId.body.error.code).toBe("UNKNOWN_SESSION");
    // The chat is still there, its store untouched by the refused calls.
    const state = await send(demo, "GET", `/terrarium/sessions/${id}/state`, auth);
    expect(state.status).toBe(200);
    expect(state.body.orders["#W6247578"].status).toBe("pending");
    expect((await send(demo, "GET", `/terrarium/sessions/${id}/history`, auth)).body).toHaveLength(3);
  });
});

describe("users demo: chat ids are random even with --seed, the simulation is not", () => {
  it("gives the same seed's first chat a different id in two runs, with the same tool calls", async () => {
    const models = new Models();
    const runs: Array<{ id: string; history: any[] }> = [];
    try {
      for (let run = 0; run < 2; run++) {
        const demo = await startShopDemo({ port: 0, models, seed: "42" });
        try {
          const first = await chat(demo, `Return the headphones of ${ORDER}, email ${EMAIL}`);
          const id = first.body.sessionId as string;
          const history = await send(demo, "GET", `/terrarium/sessions/${id}/history`);
          runs.push({ id, history: history.body });
        } finally {
          await demo.close();
        }
      }
    } finally {
      await models.close();
    }
    const [a, b] = runs as [(typeof runs)[0], (typeof runs)[0]];
    expect(a.id).not.toBe(b.id);
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(b.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // The seed still fixes what the simulation did, timestamps included.
    expect(a.history).toHaveLength(3);
    expect(b.history).toEqual(a.history);
  }, 60_000);
});

describe("users demo: closed, idle and surplus chats", () => {
  let models: Models;

  beforeAll(() => {
    models = new Models();
  });
  afterAll(async () => {
    await models?.close();
  });

  it("frees a chat's engine session when it is closed: 3,000 chats leave none behind", async () => {
    const demo = await startShopDemo({ port: 0, models, seed: "1" });
    try {
      const baseline = await engineSessions(demo);
      let most = 0;
      for (let round = 0; round < 30; round++) {
        // 100 chats open at once, then closed as the widget's "New chat" button does.
        const ids = await Promise.all(
          Array.from({ length: 100 }, async () => {
            const answer = await chat(demo, "hello");
            expect(answer.status).toBe(200);
            return answer.body.sessionId as string;
          }),
        );
        most = Math.max(most, await engineSessions(demo));
        for (const id of ids) expect((await send(demo, "DELETE", `/api/chat/${id}`)).status).toBe(204);
        expect(await engineSessions(demo)).toBe(baseline);
      }
      expect(most).toBe(baseline + 100);
      expect(demo.chats.size).toBe(0);
    } finally {
      await demo.close();
    }
  }, 120_000);

  it("forgets a closed chat everywhere: its messages, its tool calls, its state", async () => {
    const demo = await startShopDemo({ port: 0, models });
    try {
      const answer = await chat(demo, `Return the headphones of ${ORDER}, email ${EMAIL}`);
      const id = answer.body.sessionId as string;
      const engineId = demo.chats.engineSession(id) as string;
      const closed = once(demo.chats, "closed");
      expect((await send(demo, "DELETE", `/api/chat/${id}`)).status).toBe(204);
      expect(await closed).toEqual([{ id, reason: "closed" }]);
      expect(await demo.engine.store.getSession(engineId)).toBeUndefined();
      expect((await send(demo, "GET", `/api/chat/${id}`)).status).toBe(404);
      expect((await send(demo, "GET", `/terrarium/sessions/${id}/history`)).status).toBe(404);
      expect((await chat(demo, "yes", id)).status).toBe(404);
      expect((await send(demo, "DELETE", `/api/chat/${id}`)).status).toBe(404);
      expect((await send(demo, "DELETE", "/api/chat/bad%20id")).status).toBe(400);
    } finally {
      await demo.close();
    }
  }, 60_000);

  it("reclaims a chat nobody writes to after the idle timeout, with its engine session", async () => {
    const demo = await startShopDemo({ port: 0, models, chatIdleMs: 200 });
    try {
      const baseline = await engineSessions(demo);
      const closed = once(demo.chats, "closed");
      const answer = await chat(demo, `I want to return something, my email is ${EMAIL}`);
      expect(answer.status).toBe(200);
      const id = answer.body.sessionId as string;
      expect(await closed).toEqual([{ id, reason: "idle" }]);
      expect(await engineSessions(demo)).toBe(baseline);
      expect(demo.chats.size).toBe(0);
      expect((await send(demo, "GET", `/api/chat/${id}`)).status).toBe(404);
      // The widget starts afresh on 404; the shop keeps working.
      const again = await chat(demo, "hello");
      expect(again.status).toBe(200);
      expect(again.body.sessionId).not.toBe(id);
    } finally {
      await demo.close();
    }
  }, 60_000);

  it("refuses a new chat politely past the cap (503, Retry-After) and takes one again once a chat ends", async () => {
    const demo = await startShopDemo({ port: 0, models, maxChatSessions: 5 });
    try {
      const baseline = await engineSessions(demo);
      const ids: string[] = [];
      for (let k = 0; k < 5; k++) ids.push((await chat(demo, "hello")).body.sessionId);
      for (let k = 0; k < 3; k++) {
        const refused = await chat(demo, "hello");
        expect(refused.status).toBe(503);
        expect(refused.headers["retry-after"]).toBe("60");
        expect(refused.body.error).toEqual({
          code: "QUOTA_EXCEEDED",
          message: expect.stringMatching(/too many customers right now.*try again/i),
        });
      }
      expect(await engineSessions(demo)).toBe(baseline + 5);
      // Live chats go on past the cap; they are never evicted for a newcomer.
      expect((await chat(demo, `my email is ${EMAIL}`, ids[0])).status).toBe(200);
      expect((await send(demo, "DELETE", `/api/chat/${ids[1]}`)).status).toBe(204);
      expect((await chat(demo, "hello")).status).toBe(200);
      expect(await engineSessions(demo)).toBe(baseline + 5);
    } finally {
      await demo.close();
    }
  }, 60_000);

  it("deletes every chat's engine session when the shop stops", async () => {
    const demo = await startShopDemo({ port: 0, models });
    const baseline = await engineSessions(demo);
    for (let k = 0; k < 3; k++) await chat(demo, "hello");
    expect(await engineSessions(demo)).toBe(baseline + 3);
    const reasons: string[] = [];
    demo.chats.on("closed", ({ reason }) => reasons.push(reason));
    await demo.close();
    expect(reasons).toEqual(["shutdown", "shutdown", "shutdown"]);
  }, 60_000);
});

describe("terrarium users demo (CLI): the safety flags", () => {
  it("lists them in --help with their defaults", () => {
    const program = new Command();
    const users = program.command("users");
    registerUsersDemoCommand(users, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
    const demo = users.commands.find((command) => command.name() === "demo");
    let help = "";
    demo?.configureOutput({ writeOut: (text) => (help += text) });
    demo?.outputHelp();
    for (const flag of [
      /--host <address>/,
      /--allowed-host <name>/,
      /--token <token>/,
      /--token-file <file>/,
      /--max-chats <n>[\s\S]*default:\s+500/,
      /--chat-idle-timeout <seconds>[\s\S]*default:\s+1800/,
    ])
      expect(help).toMatch(flag);
  });

  it("starts with --token-file, --allowed-host, --max-chats and --chat-idle-timeout in effect", async () => {
    const dir = mkdtempSync(join(tmpdir(), "users-demo-safety-cli-"));
    const tokenFile = join(dir, "tokens.txt");
    writeFileSync(tokenFile, `# the harness's token\n${TOKEN}\n`);
    const loader = pathToFileURL(join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
    const commander = pathToFileURL(join(ROOT, "node_modules", "commander", "esm.mjs")).href;
    const module = pathToFileURL(join(ROOT, "src", "cli", "commands", "users", "demo.ts")).href;
    const argv = ["--port", "0", "--token-file", tokenFile, "--allowed-host", "shop.internal"];
    argv.push("--max-chats", "1", "--chat-idle-timeout", "0.5");
    const script = [
      `import { Command } from ${JSON.stringify(commander)};`,
      `import { registerUsersDemoCommand } from ${JSON.stringify(module)};`,
      `const program = new Command(); const users = program.command("users");`,
      `registerUsersDemoCommand(users, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });`,
      `await program.parseAsync(["node", "terrarium", "users", "demo", ...${JSON.stringify(argv)}]);`,
    ].join("\n");
    const env = { ...process.env };
    delete env.TERRARIUM_CONFIG;
    const child: ChildProcess = spawn(
      process.execPath,
      ["--import", loader, "--input-type=module", "-e", script],
      {
        cwd: dir,
        stdio: ["ignore", "pipe", "pipe"],
        env,
      },
    );
    try {
      let text = "";
      const url = await new Promise<string>((resolve, reject) => {
        child.stderr?.on("data", (chunk: Buffer) => {
          text += chunk.toString();
          const match = /demo shop at (http:\/\/\S+)[\s\S]*Ctrl-C/.exec(text);
          if (match) resolve(match[1] as string);
        });
        child.on("exit", (code) => reject(new Error(`exited (${code}) before serving:\n${text}`)));
      });
      expect(text).toMatch(/answers for hosts: localhost, 127\.0\.0\.1, \[::1\], shop\.internal/);
      expect(text).toMatch(/bearer token required/);
      expect((await sendTo(url, "GET", "/api/info", { host: "shop.internal" })).status).toBe(200);
      expect((await sendTo(url, "GET", "/api/info", { host: "elsewhere.example" })).status).toBe(403);
      expect((await sendTo(url, "GET", "/terrarium/tools")).status).toBe(401);
      expect(
        (await sendTo(url, "GET", "/terrarium/tools", { authorization: `Bearer ${TOKEN}` })).status,
      ).toBe(200);
      const json = { "content-type": "application/json" };
      const first = await sendTo(url, "POST", "/api/chat", json, JSON.stringify({ message: "hello" }));
      expect(first.status).toBe(200);
      expect((await sendTo(url, "POST", "/api/chat", json, JSON.stringify({ message: "hi" }))).status).toBe(
        503,
      );
      // Idle for half a second, the chat is reclaimed (polled, with a generous deadline).
      const deadline = Date.now() + 30_000;
      let status = 200;
      while (status === 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (await sendTo(url, "GET", `/api/chat/${first.body.sessionId}`)).status;
      }
      expect(status).toBe(404);
      expect((await sendTo(url, "POST", "/api/chat", json, JSON.stringify({ message: "hi" }))).status).toBe(
        200,
      );
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("refuses bad values of the safety flags before starting", async () => {
    const { CommanderError } = await import("commander");
    const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
    const users = program.command("users").exitOverride();
    registerUsersDemoCommand(users, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
    for (const command of users.commands)
      command.exitOverride().configureOutput({ writeErr: () => undefined });
    for (const args of [
      ["--max-chats", "0"],
      ["--max-chats", "many"],
      ["--chat-idle-timeout", "0"],
      ["--chat-idle-timeout", "-5"],
      ["--chat-idle-timeout", "forever"],
      ["--chat-idle-timeout", "9999999"],
    ])
      await expect(
        program.parseAsync(["node", "terrarium", "users", "demo", ...args]),
        args.join(" "),
      ).rejects.toBeInstanceOf(CommanderError);
  });
});
