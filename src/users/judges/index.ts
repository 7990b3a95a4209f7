/**
 * The judges of user simulation (VISTA, seed 003): realism of the simulated user's messages, per-answer
 * failure scores of the agent, consolidation of failures across runs, goal success, and all per-run
 * judges together.
 */
export {
  type ConsolidationOptions,
  consolidateFailures,
  FAILURE_SEVERITIES,
  FAILURE_TYPES,
  type FailureOccurrence,
  type FailureSeverity,
  type FailureType,
  type UniqueFailure,
} from "./consolidate.js";
export {
  type DimensionScore,
  FAILURE_DIMENSIONS,
  FAILURE_MAX_SCORE,
  FAILURE_THRESHOLD,
  type FailureDimension,
  type FailureItem,
  type FailureJudgeOptions,
  failureItems,
  flaggedDimensions,
  judgeFailures,
  type ResponseScore,
} from "./failures.js";
export {
  checklistTask,
  GOAL_MAX_CALLS,
  type GoalJudgeOptions,
  type GoalVerdict,
  judgeGoal,
} from "./goal.js";
export {
  judgeRealism,
  REALISM_ASPECTS,
  type RealismAspect,
  type RealismJudgement,
  type RealismOptions,
  type RealismSummary,
  type RealismVerdict,
  realismFlags,
  realismReference,
  realismSummary,
} from "./realism.js";
export {
  isJudgeError,
  type JudgeError,
  judgeRun,
  RUN_JUDGES,
  type RunJudgement,
  type RunJudgeName,
  type RunJudgeOptions,
} from "./run.js";
export { clip, dataBlock, JUDGE_LIMITS, type JudgeCallOptions, transcriptText } from "./shared.js";
