import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenEnvClient, OpenEnvClientError, webSocketUrl } from "../../src/rl/openenv/client.js";
import { startServer } from "../../src/server/index.js";

/** The library's OpenEnv client against `startServer`'s /openenv/ws: episodes, errors, tokens, capacity. */
type Started = Awaited<ReturnType<typeof startServer>>;
let open: Started;
let secured: Started;
let small: Started;
beforeAll(async () => {
  [open, secured, small] = await Promise.all([
    startServer({ sources: ["bank"], port: 0, seed: "1" }),
    startServer({ sources: ["bank"], port: 0, tokens: ["alpha"] }),
    startServer({ sources: ["bank"], port: 0, openenv: { maxEpisodes: 1 } }),
  ]);
});
afterAll(async () => {
  await Promise.all([open.close(), secured.close(), small.close()]);
});

const TRANSFER = { from_account: "ACC-1001", to_account: "ACC-1002", amount: 100 };

describe("OpenEnvClient", () => {
  it("derives the WebSocket URL from OpenEnv's base_url", () => {
    expect(webSocketUrl("http://h:1/openenv")).toBe("ws://h:1/openenv/ws");
    expect(webSocketUrl("https://h/openenv/")).toBe("wss://h/openenv/ws");
    expect(webSocketUrl("ws://h:2/ws")).toBe("ws://h:2/ws");
    expect(() => webSocketUrl("ftp://h")).toThrow(OpenEnvClientError);
  });

  it("reset, list_tools, call_tool (valid and invalid), state; the engine session holds the calls", async () => {
    const client = await OpenEnvClient.connect(`${open.url}/openenv`);
    try {
      const reset = await client.reset({ seed: 3, episodeId: "client-1" });
      expect(reset).toMatchObject({ reward: null, done: false });
      const metadata = reset.observation.metadata as Record<string, unknown>;
      expect(metadata.episode_id).toBe("client-1");
      const sessionId = metadata.session_id as string;

      const tools = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain("transfer");

      const call = await client.callTool("transfer", TRANSFER);
      expect(call.done).toBe(false);
      expect(call.observation.tool_name).toBe("transfer");
      expect(call.observation.error).toBeNull();

      const invalid = await client.callTool("transfer", { from_account: "ACC-1001" });
      expect(invalid.observation.error?.error_type).toBe("invalid_args");

      const state = await client.state();
      expect(state).toMatchObject({ episode_id: "client-1", step_count: 3, session_id: sessionId });
      const history = await open.engine.history(sessionId);
      expect(history.map((entry) => entry.request.name)).toEqual(["transfer", "transfer"]);
    } finally {
      await client.close();
    }
  });

  it("queues requests made together: each gets its own answer, in order", async () => {
    const client = await OpenEnvClient.connect(`${open.url}/openenv`);
    try {
      await client.reset({ episodeId: "client-queue" });
      const answers = await Promise.all([
        client.callTool("transfer", TRANSFER),
        client.state(),
        client.callTool("transfer", TRANSFER),
        client.state(),
      ]);
      expect((answers[0] as { observation: { tool_name: string } }).observation.tool_name).toBe("transfer");
      expect(answers[1]).toMatchObject({ step_count: 1 });
      expect(answers[3]).toMatchObject({ step_count: 2 });
    } finally {
      await client.close();
    }
  });

  it("server errors are thrown with OpenEnv's code; the connection goes on", async () => {
    const client = await OpenEnvClient.connect(`${open.url}/openenv`);
    try {
      const noEpisode = await client.callTool("transfer", TRANSFER).catch((error: unknown) => error);
      expect(noEpisode).toBeInstanceOf(OpenEnvClientError);
      expect(noEpisode).toMatchObject({ openenvCode: "EXECUTION_ERROR" });
      const badAction = await client.step({ type: "dance" }).catch((error: unknown) => error);
      expect(badAction).toMatchObject({ openenvCode: "VALIDATION_ERROR", code: "INVALID_INPUT" });
      const noTasks = await client.reset({ taskId: "t1" }).catch((error: unknown) => error);
      expect(noTasks).toMatchObject({ openenvCode: "VALIDATION_ERROR" });
      expect((await client.reset({})).done).toBe(false);
    } finally {
      await client.close();
    }
  });

  it("a token is sent on the upgrade; without one the connection is refused as UNAUTHORIZED", async () => {
    await expect(OpenEnvClient.connect(`${secured.url}/openenv`)).rejects.toMatchObject({
      openenvCode: "UNAUTHORIZED",
    });
    const client = await OpenEnvClient.connect(`${secured.url}/openenv`, { token: "alpha" });
    expect((await client.reset({})).done).toBe(false);
    await client.close();
  });

  it("a full server's CAPACITY_REACHED reaches the caller", async () => {
    const first = await OpenEnvClient.connect(`${small.url}/openenv`);
    try {
      await first.reset({});
      const second = await OpenEnvClient.connect(`${small.url}/openenv`);
      const refused = await second.reset({}).catch((error: unknown) => error);
      expect(refused).toMatchObject({ openenvCode: "CAPACITY_REACHED", code: "QUOTA_EXCEEDED" });
      await second.close();
    } finally {
      await first.close();
    }
  });

  it("refuses bad options before connecting", async () => {
    await expect(OpenEnvClient.connect(`${open.url}/openenv`, { timeoutMs: 0 })).rejects.toMatchObject({
      openenvCode: "VALIDATION_ERROR",
    });
  });
});
