export {
  ATTRIBUTE_LIMITS,
  type AttributeCategories,
  type AttributeCategoriesInput,
  type AttributeValue,
  loadAttributeCategories,
  parseAttributeCategories,
  sampleAttributes,
  sampleSpace,
} from "./attributes.js";
export {
  documentSlugs,
  GENERATION_STRATEGIES,
  type GeneratedScenario,
  type GenerateScenariosOptions,
  type GenerationProgress,
  type GenerationResult,
  type GenerationStrategy,
  generateScenarios,
  MAX_GENERATED_SCENARIOS,
  type PlannedScenario,
  readDocuments,
} from "./generate.js";
export {
  MAX_PROMPT_DOCUMENT_CHARS,
  type PromptInput,
  SCENARIO_DRAFT_SCHEMA,
  type ScenarioDraft,
  type ScenarioStrategy,
  scenarioMessages,
} from "./prompt.js";
export { goalSimilarity, goalTokens } from "./similarity.js";
export {
  existingScenarioFiles,
  KNOWLEDGE_FOLDER,
  refuseExisting,
  type ScenarioFileTarget,
  type WriteScenariosOptions,
  type WrittenScenarios,
  writeScenarios,
} from "./write.js";
