export { bootstrapState } from "./bootstrap.js";
export { type BuiltEngine, buildEngine, type EngineSetup } from "./build-engine.js";
export {
  type CallOutcome,
  Engine,
  type EngineOptions,
  type SessionExport,
  type SimulatorPolicy,
} from "./engine.js";
export { describePolicy } from "./policy.js";
export {
  type SemanticValidationStatus,
  SemanticValidator,
  type SemanticVerdict,
  semanticValidationOf,
} from "./semantic.js";
export { type ParsedSessionExport, parseSessionExport } from "./session-export.js";
export {
  CodeSimulator,
  type CodeSimulatorOptions,
  DEFAULT_MAX_LIVE_INSTANCES,
} from "./simulators/code.js";
export { LlmSimulator, type LlmSimulatorOptions } from "./simulators/llm.js";
export { type ProxyOptions, ProxySimulator } from "./simulators/proxy.js";
export { SchemaSimulator } from "./simulators/schema.js";
export { fromPattern, type SynthesisOptions, synthesize } from "./synthesize.js";
export { applyTolerantly } from "./tolerant-patch.js";
export {
  isSimulatorName,
  SIMULATOR_NAMES,
  type SimulationContext,
  type SimulationResult,
  type Simulator,
  type SimulatorName,
} from "./types.js";
