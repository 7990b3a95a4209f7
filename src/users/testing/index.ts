/**
 * Scenario tests: scripted and simulated conversations with assertions (`users test`, `terrarium/testing`).
 */
// What a test file needs besides the runner: models for simulate and judge steps, from terrarium.config.yaml.
export { loadConfig, parseConfig } from "../../models/config.js";
export { Models } from "../../models/hub.js";
export { FUNCTION_AGENT_SPEC, isScenarioTestAgent, openScenarioTestAgent } from "./agent.js";
export {
  containsDeep,
  isScenarioTest,
  loadScenarioTests,
  parseScenarioTest,
  runScenarioTest,
  scenarioTestTranscriptLines,
} from "./run.js";
export { parseScript, SCRIPT_LIMITS, SCRIPT_STEP_KINDS, stepKind } from "./script.js";
export type * from "./types.js";
