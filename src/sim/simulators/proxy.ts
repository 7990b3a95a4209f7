import type { Tool } from "../../catalog/tool.js";
import { TerrariumError } from "../../core/errors.js";
import type { SimulationContext, SimulationResult, Simulator } from "../types.js";

export interface ProxyOptions {
  /** Base URL of the real API; defaults to each tool's first OpenAPI server. */
  baseUrl?: string;
  /** Extra headers for every real request (authorization, for instance). */
  headers?: Record<string, string>;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * The `proxy` simulator: forwards the call to the real API (rebuilding the HTTP request from the tool's
 * OpenAPI binding) and folds the real result into the session's state under
 * `runtime_state.real_results`, so later simulated calls are conditioned on what the real system said.
 * Used for hybrid policies such as `read: proxy, write: llm`.
 */
export class ProxySimulator implements Simulator {
  readonly name = "proxy" as const;
  readonly readsHistory = false;

  constructor(private readonly options: ProxyOptions = {}) {}

  handles(tool: Tool): boolean {
    return (
      tool.origin.http !== undefined &&
      (this.options.baseUrl !== undefined || (tool.origin.http.servers?.length ?? 0) > 0)
    );
  }

  async simulate(context: SimulationContext): Promise<SimulationResult> {
    const binding = context.tool.origin.http;
    const base = this.options.baseUrl ?? binding?.servers?.[0];
    if (!binding || !base) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `${context.tool.name} has no HTTP binding or server to forward to`,
      );
    }
    const args = context.arguments;
    let path = binding.path;
    const query = new URLSearchParams();
    const headers: Record<string, string> = { accept: "application/json", ...(this.options.headers ?? {}) };
    for (const parameter of binding.parameters) {
      const value = args[parameter.name];
      if (value === undefined) continue;
      if (parameter.in === "path")
        path = path.replace(`{${parameter.name}}`, encodeURIComponent(String(value)));
      else if (parameter.in === "query")
        query.set(parameter.name, typeof value === "string" ? value : JSON.stringify(value));
      else if (parameter.in === "header") headers[parameter.name] = String(value);
    }
    let body: string | undefined;
    if (binding.body === "merged") {
      const names = new Set(binding.parameters.map((p) => p.name));
      body = JSON.stringify(Object.fromEntries(Object.entries(args).filter(([name]) => !names.has(name))));
    } else if (
      binding.body === "argument" &&
      binding.bodyArgument &&
      args[binding.bodyArgument] !== undefined
    ) {
      body = JSON.stringify(args[binding.bodyArgument]);
    }
    if (body !== undefined) headers["content-type"] = binding.contentType ?? "application/json";
    const url = `${base.replace(/\/$/, "")}${path}${query.size > 0 ? `?${query}` : ""}`;
    const response = await (this.options.fetch ?? fetch)(url, {
      method: binding.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
    });
    const text = await response.text();
    let observation: unknown = text;
    try {
      observation = text === "" ? null : JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    const ok = response.status < 400;
    const record = {
      tool: context.tool.name,
      arguments: args,
      status: response.status,
      result: observation,
      at: context.now,
    };
    const state = (context.state ?? {}) as { runtime_state?: { real_results?: unknown[] } };
    const changes = state.runtime_state?.real_results
      ? [{ op: "add" as const, path: "/runtime_state/real_results/-", after: record }]
      : [{ op: "add" as const, path: "/runtime_state/real_results", after: [record] }];
    return {
      status: ok ? "ok" : "tool_error",
      observation: ok
        ? observation
        : { error: `the real API answered ${response.status}`, body: observation },
      changes,
      usage: { realRequest: `${binding.method} ${url}`, httpStatus: response.status },
    };
  }
}
