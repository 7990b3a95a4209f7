export { LocalJobQueue, type LocalJobQueueOptions } from "./local.js";
export { describeWaiting, isRedisUrl, openJobQueue, openRedisQueue, parseQueueUrl } from "./open.js";
export { type QueueWorker, RedisJobQueue, type RedisJobQueueOptions, type WorkOptions } from "./redis.js";
export {
  countProgress,
  type ItemResult,
  type JobKind,
  type JobQueue,
  type JobRunner,
  type RunOutcome,
  type RunProgress,
  type RunSubmission,
  type SubmitOptions,
  type WorkItem,
} from "./types.js";
