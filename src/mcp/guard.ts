import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  type JSONRPCMessage,
  McpError,
  type MessageExtraInfo,
  type RequestInfo,
} from "@modelcontextprotocol/sdk/types.js";
import { TerrariumError } from "../core/errors.js";
import { paramsError } from "./messages.js";

/** Where a `tools/call`'s arguments as sent travel to its handler (beside the SDK's parse of them). */
const RAW_ARGUMENTS = Symbol("terrarium.rawArguments");

/**
 * An MCP server whose transport, whatever it is (stdio, streamable HTTP), is wrapped in `CheckedTransport`:
 * requests whose params do not fit their method are answered -32602 in words before the SDK sees them, and
 * `tools/call` handlers can read the arguments exactly as sent (`rawArgumentsOf`).
 */
export class CheckedServer extends Server {
  override async connect(transport: Transport): Promise<void> {
    await super.connect(new CheckedTransport(transport));
  }
}

/**
 * The arguments of a `tools/call` as the client sent them. The SDK hands handlers its zod parse of the
 * request, which rebuilds `arguments` and silently drops a key named `__proto__`; the engine must see it,
 * so that MCP refuses it as an unknown argument exactly as REST does.
 */
export function rawArgumentsOf(extra: { requestInfo?: RequestInfo }): unknown {
  return (extra.requestInfo as { [RAW_ARGUMENTS]?: unknown } | undefined)?.[RAW_ARGUMENTS];
}

/** Delegates to a transport, checking each request's params on the way in. */
class CheckedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  constructor(private readonly inner: Transport) {}

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  async start(): Promise<void> {
    // Callbacks someone set on the transport before are kept, as the SDK's connect keeps them.
    const { onclose, onerror, onmessage } = this.inner;
    this.inner.onclose = () => {
      onclose?.();
      this.onclose?.();
    };
    this.inner.onerror = (error) => {
      onerror?.(error);
      this.onerror?.(error);
    };
    this.inner.onmessage = (message, extra) => {
      onmessage?.(message, extra);
      this.receive(message, extra);
    };
    await this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private receive(message: JSONRPCMessage, extra: MessageExtraInfo | undefined): void {
    if (!("method" in message) || !("id" in message)) {
      this.onmessage?.(message, extra);
      return;
    }
    const { id, method, params } = message;
    const error = paramsError(method, params);
    if (error) {
      this.inner
        .send({ jsonrpc: "2.0", id, error }, { relatedRequestId: id })
        .catch((failure: Error) => this.onerror?.(failure));
      return;
    }
    if (method !== "tools/call") {
      this.onmessage?.(message, extra);
      return;
    }
    const requestInfo = { headers: {}, ...extra?.requestInfo, [RAW_ARGUMENTS]: params?.arguments };
    this.onmessage?.(message, { ...extra, requestInfo });
  }
}

/**
 * A JSON-RPC error a handler throws: the SDK answers with its `code`, `message` and `data` (unlike
 * `McpError`, the message is not prefixed with "MCP error <code>:").
 */
export class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/**
 * A failure of a tool call as a JSON-RPC error: terrarium's errors keep their code (`data.code`) and
 * message, bad input is -32602; anything else is -32603 with a reference, its text logged, never sent.
 */
export function rpcErrorOf(error: unknown, log: (line: string) => void): Error {
  if (error instanceof McpError || error instanceof RpcFailure) return error;
  if (error instanceof TerrariumError && error.code !== "INTERNAL")
    return new RpcFailure(error.code === "INVALID_INPUT" ? ErrorCode.InvalidParams : -32000, error.message, {
      code: error.code,
    });
  const reference = randomUUID().slice(0, 8);
  log(`terrarium mcp: internal error ${reference}: ${(error as Error)?.message ?? String(error)}`);
  return new RpcFailure(ErrorCode.InternalError, `internal error (reference ${reference})`, {
    code: "INTERNAL",
    reference,
  });
}
