import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/cli/commands/serve.js";
import { startServer } from "../../src/server/start.js";
import type { CodeSimulator } from "../../src/sim/index.js";
import { buildEngine } from "../../src/sim/index.js";
import { cli } from "../helpers/cli.js";
import { toolFixture } from "../helpers/paths.js";
import { startScriptedLlmServer, writeScriptedConfig } from "../helpers/scripted-llm-server.js";

/** `terrarium serve` failing to listen says why in one line and exits non-zero. */
let blocker: Server;
let taken: number;

beforeAll(async () => {
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  taken = (blocker.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

describe("terrarium serve", () => {
  it("a port already in use is a one-line error, no stack trace, non-zero exit", async () => {
    const run = await cli(["serve", "bank", "--port", String(taken)]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toBe(
      `terrarium: port ${taken} on 127.0.0.1 is already in use; stop what holds it or choose another with --port [INVALID_INPUT]\n`,
    );
    expect(run.stdout).toBe("");
  });

  it("a port that is not a port is refused before anything starts", async () => {
    for (const port of ["abc", "70000", "-5"]) {
      const run = await cli(["serve", "bank", "--port", port]);
      expect(run.code, port).toBe(2);
      expect(run.stderr.trim().split("\n"), port).toHaveLength(1);
      expect(run.stderr).toMatch(/--port must be an integer from 0 to 65535/);
    }
  });

  it("--live-instances bounds the live environment instances, and bad values are refused first", async () => {
    for (const value of ["0", "abc", "-1"]) {
      const run = await cli(["serve", "bank", "--live-instances", value]);
      expect(run.code, value).toBe(2);
      expect(run.stderr).toMatch(/--live-instances must be an integer of at least 1/);
    }
    const { engine } = await buildEngine({ sources: ["bank"], seed: "s", liveInstances: 2 });
    const code = engine.simulatorFor(engine.catalog.get("transfer") as never) as CodeSimulator;
    const call = {
      name: "transfer",
      arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 },
    };
    const sessions = [];
    for (let i = 0; i < 4; i++) sessions.push(await engine.createSession());
    for (const session of sessions) expect((await engine.call(session.id, call)).status).toBe("ok");
    expect(code.liveInstances).toBe(2);
    // An evicted session is rebuilt from the store and goes on where it was.
    expect((await engine.call(sessions[0]?.id as string, call)).status).toBe("ok");
    expect(
      ((await engine.state(sessions[0]?.id as string)) as { accounts: Record<string, { balance: number }> })
        .accounts["ACC-1001"]?.balance,
    ).toBe(
      (((await engine.state(sessions[1]?.id as string)) as { accounts: Record<string, { balance: number }> })
        .accounts["ACC-1001"]?.balance as number) - 1,
    );
    await engine.close();
  });

  it("prints the catalog's load summary at start-up, and --strict refuses a catalog with skips", async () => {
    const files = [toolFixture("bad/unknown-format.json"), toolFixture("slackish.swagger.json")];
    const strict = await cli(["serve", ...files, "--port", "0", "--strict"]);
    expect(strict.code).toBe(2);
    expect(strict.stderr).toMatch(/1 operation was skipped \(strict mode\)/);
    expect(strict.stderr).toMatch(/unknown-format\.json#\/tools\/1: UNKNOWN_FORMAT/);

    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "serve", ...files, "--port", "0"],
      {
        cwd: join(import.meta.dirname, "..", ".."),
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    try {
      const stderr = await new Promise<string>((resolve, reject) => {
        let text = "";
        child.stderr?.on("data", (chunk: Buffer) => {
          text += chunk.toString();
          if (text.includes("terrarium serving")) resolve(text);
        });
        child.on("exit", (code) => reject(new Error(`serve exited early (${code}): ${text}`)));
      });
      const lines = stderr.split("\n");
      expect(lines[0]).toMatch(/^6 tools; 1 operation skipped: 1 UNKNOWN_FORMAT; \d+ warnings \(/);
      expect(lines[1]).toMatch(/^ {2}skipped .*unknown-format\.json#\/tools\/1: UNKNOWN_FORMAT/);
      expect(stderr).toMatch(/terrarium serving 6 tools at http:\/\/127\.0\.0\.1:\d+/);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

const PETS = toolFixture("petstore.openapi.yaml");
const ROOT = join(import.meta.dirname, "..", "..");

/** A config file naming no model for any role. */
function emptyConfig(): string {
  const file = join(mkdtempSync(join(tmpdir(), "terrarium-serve-")), "terrarium.config.yaml");
  writeFileSync(file, "roles: {}\n");
  return file;
}

/** A stand-in for the real API: answers from the request, and records what it was asked. */
async function fakeRealApi(): Promise<{ url: string; requests: string[]; close: () => Promise<void> }> {
  const requests: string[] = [];
  const server = createHttpServer((req: IncomingMessage, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify(
        req.url?.startsWith("/v1/pets/") ? { id: 7, name: "Real Rex" } : [{ id: 7, name: "Real Rex" }],
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** `terrarium serve` as a process; resolves with its start-up lines and URL once it listens. */
async function spawnServe(args: string[]): Promise<{ child: ChildProcess; stderr: string; url: string }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "src/cli/main.ts", "serve", ...args, "--port", "0"],
    {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  const stderr = await new Promise<string>((resolve, reject) => {
    let text = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes("  try: ")) resolve(text);
    });
    child.on("exit", (code) => reject(new Error(`serve exited early (${code}): ${text}`)));
  });
  const url = /terrarium serving \d+ tools at (\S+)/.exec(stderr)?.[1] as string;
  return { child, stderr, url };
}

describe("serve --policy and --proxy", () => {
  it("reads a policy by effect and by tool, auto leaving a key to the automatic choice", () => {
    expect(parsePolicy("read=proxy,write=llm")).toEqual({ read: "proxy", write: "llm" });
    expect(parsePolicy(" read = proxy , send_email=schema,default=code,unknown=auto")).toEqual({
      read: "proxy",
      default: "code",
      tools: { send_email: "schema" },
    });
  });

  it("refuses bad values before anything starts, naming the value and what is valid", async () => {
    const config = emptyConfig();
    const refusals: Array<[string[], RegExp]> = [
      [
        ["--policy", "read=oracle"],
        /--policy entry "read=oracle": "oracle" is not a simulator \(valid: code, llm, schema, proxy, auto\)/,
      ],
      [
        ["--policy", "read"],
        /--policy entry "read" is not <key>=<simulator>; .*effects: read, write, unknown, default; simulators: code, llm, schema, proxy, auto/,
      ],
      [["--policy", "read=proxy,read=llm"], /--policy names "read" twice/],
      [["--policy", ""], /--policy is empty/],
      [["--policy", "read=schema,"], /--policy "read=schema," has an empty entry/],
      [
        ["--policy", "reed=proxy"],
        /the policy names "reed", which is neither an effect \(read, write, unknown, default\) nor a tool/,
      ],
      [["--policy", "listPet=schema"], /names "listPet".*closest tools: listPets/],
      [["--proxy", "not a url"], /--proxy "not a url" is not an http\(s\) base URL/],
      [["--proxy", "ftp://example.com"], /--proxy "ftp:\/\/example.com" is not an http\(s\) base URL/],
      [
        ["--policy", "write=llm"],
        /the policy sends createPet, deletePet, updatePet to the llm simulator, which needs a model: pass --model, or set roles.simulator or roles.default/,
      ],
      [["--policy", "write=code"], /to the code simulator, which answers only the tools of an environment/],
      [
        ["--simulator", "magic"],
        /--simulator "magic" is not a simulator \(valid: auto, code, llm, schema, proxy\)/,
      ],
      [
        ["--simulator", "llm", "--policy", "default=schema"],
        /--simulator llm and --policy default=schema both name the default/,
      ],
      [["--llm-mode", "fast"], /--llm-mode "fast" is not a mode \(valid: merged, gecko\)/],
    ];
    for (const [args, message] of refusals) {
      const run = await cli(["--config", config, "serve", PETS, ...args, "--port", "0"]);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stdout, args.join(" ")).toBe("");
      expect(run.stderr, args.join(" ")).toMatch(message);
      // One line: the catalog's load summary is printed only once the server runs.
      expect(run.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
    }
    // Tools with no HTTP binding cannot be forwarded; tools with no server need --proxy.
    const functions = await cli([
      "--config",
      config,
      "serve",
      toolFixture("openai-tools.json"),
      "--policy",
      "read=proxy",
      "--port",
      "0",
    ]);
    expect(functions.code).toBe(2);
    expect(functions.stderr).toMatch(
      /sends get_weather.* to the proxy simulator, which forwards only OpenAPI operations to a server: give --proxy <baseURL>/,
    );
  });

  it("forwards reads to the real API at --proxy and answers writes with the policy's simulator", async () => {
    const real = await fakeRealApi();
    const server = await startServer({
      sources: [PETS],
      config: emptyConfig(),
      simulator: parsePolicy("read=proxy,write=schema"),
      proxy: real.url,
      port: 0,
      seed: "1",
    });
    try {
      const { session_id } = (await (await fetch(`${server.url}/session-id`)).json()) as {
        session_id: string;
      };
      const headers = { "x-session-id": session_id, "content-type": "application/json" };
      const listed = await fetch(`${server.url}/pets?limit=2`, { headers });
      expect(await listed.json()).toEqual([{ id: 7, name: "Real Rex" }]);
      const shown = await fetch(`${server.url}/Petstore/showPetById`, {
        method: "POST",
        headers,
        body: JSON.stringify({ petId: 7 }),
      });
      expect(await shown.json()).toEqual({ id: 7, name: "Real Rex" });
      expect(real.requests).toEqual(["GET /v1/pets?limit=2", "GET /v1/pets/7"]);
      const created = await fetch(`${server.url}/pets`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: "Tom" }),
      });
      expect(created.status).toBe(200);
      expect(real.requests).toHaveLength(2);
      const history = (await (await fetch(`${server.url}/sessions/${session_id}/history`)).json()) as Array<{
        simulator: string;
      }>;
      expect(history.map((entry) => entry.simulator)).toEqual(["proxy", "proxy", "schema"]);
      // The real answers are kept in the state for later simulated calls.
      const { state } = (await (await fetch(`${server.url}/get-session-state`, { headers })).json()) as any;
      expect(state.runtime_state.real_results).toHaveLength(2);
    } finally {
      await server.close();
      await real.close();
    }
  });

  it("prints the policy and the proxy at start-up", async () => {
    const real = await fakeRealApi();
    const { child, stderr, url } = await spawnServe([
      PETS,
      "--config",
      emptyConfig(),
      "--policy",
      "read=proxy,deletePet=schema",
      "--simulator",
      "schema",
      "--proxy",
      real.url,
    ]);
    try {
      expect(stderr).toContain(`  simulators: proxy, schema; no model configured; proxy to ${real.url}\n`);
      expect(stderr).toContain("  policy: read=proxy, deletePet=schema, else schema\n");
      const health = (await (await fetch(`${url}/health`)).json()) as any;
      expect(health).toMatchObject({
        simulators: ["proxy", "schema"],
        policy: "read=proxy, deletePet=schema, else schema",
      });
    } finally {
      child.kill("SIGKILL");
      await real.close();
    }
  });
});

describe("semantic validation at start-up and in /health", () => {
  it("both say whether it is on and which model serves it, roles.default included", async () => {
    const llm = await startScriptedLlmServer();
    const dir = mkdtempSync(join(tmpdir(), "terrarium-serve-"));
    const withDefault = writeScriptedConfig(dir, llm.baseURL, { default: "scripted:judge-model" });
    const runs = [
      { config: withDefault, on: true },
      { config: emptyConfig(), on: false },
    ];
    try {
      for (const run of runs) {
        const { child, stderr, url } = await spawnServe(["bank", "--config", run.config]);
        try {
          const health = (await (await fetch(`${url}/health`)).json()) as any;
          if (run.on) {
            expect(stderr).toContain(
              "  semantic validation: on (scripted:judge-model, from roles.default)\n",
            );
            expect(health.semanticValidation).toEqual({
              enabled: true,
              model: "scripted:judge-model",
              source: "roles.default",
            });
            expect(health.config.validation_model).toBe("scripted:judge-model");
          } else {
            expect(stderr).toContain("  semantic validation: off (no model serves the validator role");
            expect(health.semanticValidation).toEqual({ enabled: false, model: null, source: null });
            expect(health.config.validation_model).toBeNull();
          }
        } finally {
          child.kill("SIGKILL");
        }
      }
    } finally {
      await llm.close();
    }
  });
});
