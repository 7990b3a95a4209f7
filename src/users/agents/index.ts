/**
 * The agent under test in `terrarium users run`, behind one `AgentTarget` interface (`--agent <spec>`):
 * - `planner:<provider:model>` with `--agent-tools`: terrarium's planner as a chat agent; its tools run
 *   on an engine built like `serve` (an environment's code, or tool files simulated), one engine session
 *   per run; the reply's tool calls are that session's history entries added during the reply.
 * - `openai-compatible:<baseURL>#<model>`: a chat-completions endpoint (bearer from
 *   TERRARIUM_AGENT_API_KEY); with `--agent-tools` its tool calls are simulated by terrarium the same way.
 * - `http:<url>` with `--http-config`: any HTTP agent, the request shaped by a body template and the
 *   reply read at a path; with `terrariumServer` the tools are on a terrarium server and the calls and
 *   final state come from its session.
 * - `module:<path>[#<export>]`: a function (or an object with `respond`) in this process; `.js`, `.mjs`
 *   and `.cjs` load with Node's import, `.ts` and `.mts` through tsx.
 * Bad input is refused by `createAgentTarget` before any model call; a target that fails mid-run throws
 * a TerrariumError with code AGENT_ERROR from `send`.
 */
export { createAgentTarget } from "./create.js";
export { HttpTarget, TerrariumServerClient } from "./http.js";
export {
  DEFAULT_HTTP_BODY,
  type HttpAgentConfig,
  loadHttpConfig,
  parseHttpConfig,
  parseResponsePath,
} from "./http-config.js";
export {
  loadModuleAgent,
  type ModuleAgentFunction,
  type ModuleAgentInput,
  type ModuleAgentOutput,
  ModuleTarget,
} from "./module.js";
export { AGENT_API_KEY_ENV, OpenAiCompatibleTarget } from "./openai-compatible.js";
export { PLANNER_AGENT_PROMPT, PlannerTarget } from "./planner.js";
export {
  AGENT_ERROR,
  agentError,
  DEFAULT_MAX_TOOL_STEPS,
  DEFAULT_TIMEOUT_MS,
  MAX_BODY_BYTES,
  MAX_REPLY_BYTES,
} from "./shared.js";
export { AGENT_SPEC_FORMS, parseAgentSpec } from "./spec.js";
export type {
  AgentKind,
  AgentSession,
  AgentSessionContext,
  AgentTarget,
  CreateAgentTargetOptions,
  ParsedAgentSpec,
} from "./types.js";
