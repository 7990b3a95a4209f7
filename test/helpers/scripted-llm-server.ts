import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

/**
 * A scripted OpenAI-compatible chat-completions server on 127.0.0.1, so tests exercise the real provider
 * code over real HTTP. Each request takes the next step of the script; what was asked is recorded.
 */
export interface ScriptedReply {
  content?: string | null;
  toolCalls?: Array<{ name: string; arguments: unknown; id?: string }>;
  usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  finishReason?: string;
}

export interface ScriptStep {
  /** HTTP status (default 200). */
  status?: number;
  headers?: Record<string, string>;
  /** Wait this long before answering (for timeouts). */
  delayMs?: number;
  /** A normal chat completion. */
  reply?: ScriptedReply;
  /** An OpenAI-style error body (with a non-200 status). */
  error?: { message: string; type?: string };
  /** A raw body sent as it is. */
  raw?: string;
}

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: any;
}

export interface ScriptedLlmServer {
  /** Base URL including `/v1`. */
  baseURL: string;
  requests: RecordedRequest[];
  /** Adds steps to the end of the script. */
  push(...steps: ScriptStep[]): void;
  /** Steps not yet used. */
  remaining(): number;
  /** Most requests that were being answered at the same time. */
  peakInFlight(): number;
  close(): Promise<void>;
}

export async function startScriptedLlmServer(
  steps: ScriptStep[] = [],
  options: {
    repeat?: ScriptStep;
    /** Answers requests the script does not cover, from the request body. */
    respond?: (body: any) => ScriptStep;
    /** Report prompt tokens as the request's message characters / 4, so prompt sizes can be compared. */
    countPromptTokens?: boolean;
  } = {},
): Promise<ScriptedLlmServer> {
  const script = [...steps];
  const requests: RecordedRequest[] = [];
  let counter = 0;
  let inFlight = 0;
  let peak = 0;

  const server: Server = createServer((req, res) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    res.on("close", () => inFlight--);
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: any;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      requests.push({ path: req.url ?? "", headers: req.headers, body });
      let step = script.shift() ?? options.repeat ?? options.respond?.(body);
      if (step && options.countPromptTokens && step.reply) {
        const characters = JSON.stringify(body?.messages ?? []).length;
        step = {
          ...step,
          reply: {
            ...step.reply,
            usage: {
              prompt_tokens: Math.ceil(characters / 4),
              completion_tokens: Math.ceil((step.reply.content ?? "").length / 4),
            },
          },
        };
      }
      if (!step) {
        send(
          res,
          500,
          {},
          JSON.stringify({ error: { message: "the test script has no step left", type: "script" } }),
        );
        return;
      }
      const answer = () => respond(res, step, body, ++counter);
      if (step.delayMs) setTimeout(answer, step.delayMs);
      else answer();
    });
  });
  // Tests close the server while a timed-out request may still be waiting on its delay.
  const sockets = new Set<import("node:net").Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    push: (...more) => script.push(...more),
    remaining: () => script.length,
    peakInFlight: () => peak,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function respond(res: ServerResponse, step: ScriptStep, body: any, n: number): void {
  if (res.destroyed) return;
  const status = step.status ?? (step.error ? 500 : 200);
  if (step.raw !== undefined) {
    send(res, status, step.headers, step.raw);
    return;
  }
  if (step.error) {
    send(res, status, step.headers, JSON.stringify({ error: { type: "error", ...step.error } }));
    return;
  }
  const reply = step.reply ?? { content: "" };
  const toolCalls = (reply.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `call_${n}_${i}`,
    type: "function",
    function: {
      name: call.name,
      arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
  const usage = reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  const completion = {
    id: `chatcmpl-${n}`,
    object: "chat.completion",
    created: 1_700_000_000,
    model: body?.model ?? "scripted",
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: reply.content ?? null,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: reply.finishReason ?? (toolCalls.length ? "tool_calls" : "stop"),
      },
    ],
    usage: {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
      ...(usage.cached_tokens !== undefined
        ? { prompt_tokens_details: { cached_tokens: usage.cached_tokens } }
        : {}),
    },
  };
  send(res, status, step.headers, JSON.stringify(completion));
}

function send(res: ServerResponse, status: number, headers: Record<string, string> = {}, body: string): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(body);
}

/**
 * Writes a terrarium.config.yaml in `dir` that names the scripted server as provider `scripted` (with
 * native structured outputs, no cache), optionally mapping roles to its models; returns the file's path.
 */
export function writeScriptedConfig(
  dir: string,
  baseURL: string,
  roles: Record<string, string> = {},
): string {
  const file = join(dir, "terrarium.config.yaml");
  const roleLines = Object.entries(roles)
    .map(([role, model]) => `  ${role}: ${model}\n`)
    .join("");
  writeFileSync(
    file,
    `providers:\n  scripted:\n    type: openai-compatible\n    baseURL: ${baseURL}\n    structuredOutputs: true\n` +
      (roleLines ? `roles:\n${roleLines}` : "") +
      "cache:\n  mode: off\n",
  );
  return file;
}
