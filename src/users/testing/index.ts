/**
 * Scenario tests: scripted and simulated conversations with assertions (`users test`, `terrarium/testing`).
 */
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
