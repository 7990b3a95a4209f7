export {
  type AstCall,
  type CheckResult,
  checkCall,
  checkItem,
  type FunctionDoc,
  normaliseString,
  type PossibleAnswer,
} from "./ast-checker.js";
export { type BfclItem, loadBfcl, SINGLE_TURN_CATEGORIES } from "./data.js";
export { type BudgetResult, type ItemRun, runBfclItem, summariseRuns } from "./run.js";
export { type BfclScore, type ItemScore, scoreBfcl } from "./score.js";
