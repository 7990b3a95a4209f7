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
