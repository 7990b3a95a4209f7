import type { Models } from "../../models/hub.js";
import type { AgentReply } from "../conversation.js";
import type { Scenario } from "../scenario/index.js";
import type { HttpAgentConfig } from "./http-config.js";

/** What a target knows about the run a session serves. */
export interface AgentSessionContext {
  runId: string;
  seed: string;
  scenario: Scenario;
  signal?: AbortSignal;
}

/** One conversation with the agent under test (one run). */
export interface AgentSession {
  /** The id passed through to the agent (http targets) or the engine session id (planner/openai-compatible). */
  readonly sessionId: string;
  /** The agent's answer to one user message; throws TerrariumError("AGENT_ERROR") when the target fails. */
  send(userMessage: string): Promise<AgentReply>;
  /** The state of the agent's tools at the end, when terrarium simulates them (for the goal judge). */
  finalState(): Promise<unknown>;
  close(): Promise<void>;
}

export type AgentKind = "planner" | "openai-compatible" | "http" | "module";

/** The agent under test, from an `--agent` spec. */
export interface AgentTarget {
  readonly spec: string;
  readonly kind: AgentKind;
  /** Every tool the agent has (TDE's N); [] when unknown. */
  readonly tools: string[];
  /** One session per run; sessions never share mutable state. */
  open(context: AgentSessionContext): Promise<AgentSession>;
  close(): Promise<void>;
}

/** An `--agent` spec taken apart. */
export type ParsedAgentSpec =
  | { kind: "planner"; model: string }
  | { kind: "openai-compatible"; baseURL: string; model: string }
  | { kind: "http"; url: string }
  | { kind: "module"; path: string; exportName: string };

export interface CreateAgentTargetOptions {
  models: Models;
  /** The agent's tools: an environment name (tau2-retail) or tool definition files (`--agent-tools`). */
  agentTools?: string[];
  /** The http target's config: a YAML/JSON file, or the config itself (`--http-config`). */
  httpConfig?: string | HttpAgentConfig;
  /** Where relative paths (module, tool files, http config) are resolved; the process's by default. */
  cwd?: string;
  seed?: string;
  /** Model/tool rounds per user message for the planner and openai-compatible targets (default 12). */
  maxToolSteps?: number;
  /** Per request (default 60 s). */
  timeoutMs?: number;
}
