export {
  type ConvertOptions,
  convertToOpenApi,
  describeToolsInFile,
  type ToolDescription,
} from "./converter.js";
export {
  type ChecklistItem,
  ChecklistWriter,
  type JudgedCall,
  type JudgedItem,
  type Judgement,
  judgeAttempt,
} from "./feedback.js";
export {
  type Attempt,
  chooseAttempt,
  type GatsOptions,
  type GatsResult,
  gats,
  type TurnResult,
} from "./gats.js";
export { type PlannedCall, type PlannerOptions, type PlannerRun, runPlanner } from "./planner.js";
export { runTaskLine, type TaskLine } from "./run-task.js";
