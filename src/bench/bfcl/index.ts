export {
  type AstCall,
  type BfclLanguage,
  type CheckOptions,
  type CheckResult,
  checkCall,
  checkItem,
  type FunctionDoc,
  languageOf,
  normaliseString,
  type PossibleAnswer,
} from "./ast-checker.js";
export {
  BFCL_BACKEND_MODULES,
  BFCL_STATELESS_CLASSES,
  BfclBackendHost,
  type BfclBackendOptions,
  type BfclCall,
  type BfclExecution,
  type BfclStateComparison,
  type BfclWorld,
  type BfclWorldSpec,
} from "./backends.js";
export {
  callToArguments,
  docParameterOrder,
  type ParameterOrder,
  type PythonCall,
  parseCallString,
  parsePythonCall,
  pythonToJson,
  splitCallList,
} from "./call-syntax.js";
export {
  assertSupportedCategories,
  type BfclItem,
  loadBfcl,
  SINGLE_TURN_CATEGORIES,
} from "./data.js";
export {
  checkMultiTurn,
  collectMultiTurnResults,
  type ModelCall,
  type ModelTurn,
  type MultiTurnErrorType,
  type MultiTurnItemScore,
  type MultiTurnScore,
  type MultiTurnVerdict,
  missingResults,
  normaliseModelTurns,
  scoreMultiTurn,
  type TurnExecution,
} from "./multi-turn-checker.js";
export {
  allFunctions,
  BFCL_FUNC_DOC_FILES,
  type BfclMultiTurnItem,
  isMultiTurnCategory,
  type LoadMultiTurnOptions,
  loadBfclMultiTurn,
  MULTI_TURN_CATEGORIES,
  type MultiTurnCategory,
  worldSpecOf,
} from "./multi-turn-data.js";
export {
  backendsRequiredError,
  type MultiTurnBudgetResult,
  type MultiTurnBudgetVerdict,
  type MultiTurnCall,
  type MultiTurnItemRun,
  type MultiTurnRunOptions,
  NEW_FUNCTIONS_MESSAGE,
  runBfclMultiTurnItem,
} from "./multi-turn-run.js";
export { JsonFloat, parseArgumentsPreservingFloats, parseJsonPreservingFloats } from "./py-values.js";
export {
  type BfclRunSummary,
  type BudgetResult,
  type BudgetSummary,
  budgetLabel,
  type ItemRun,
  runBfclItem,
  runErrors,
  summariseRuns,
} from "./run.js";
export { type BfclScore, ERRORED_TYPES, type ItemScore, scoreBfcl } from "./score.js";
