export {
  type ChecklistItem,
  DEFAULT_STOP_TOKENS,
  DEFAULT_TEST_MAX_TURNS,
  type KnowledgeEntry,
  knowledgeDocuments,
  knowledgeText,
  loadScenarioFile,
  loadScenarios,
  type ParseScenarioOptions,
  parseScenario,
  parseScenarios,
  type Scenario,
  type ScenarioIssue,
  type UserToolDeclaration,
} from "./load.js";
export { profileText } from "./profile.js";
export {
  type ProfileAttributes,
  type ProfileAttributeValue,
  type RawScenario,
  RawScenarioSchema,
  SCENARIO_KEYS,
  SCENARIO_LIMITS,
  SCENARIO_SCHEMA_VERSION,
  scenarioJsonSchema,
  USER_TOOL_NAME,
} from "./schema.js";
