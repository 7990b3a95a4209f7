/**
 * The job queue: a run is a batch of JSON work items of one kind; workers process them with the handler
 * registered for that kind, and each item's result is kept under the run. `LocalJobQueue` processes runs
 * in this process (the default); `RedisJobQueue` puts them on Redis (BullMQ) for `terrarium worker`s.
 */

/** One unit of work. The id is stable across submissions of a run: it is what resuming skips by. */
export interface WorkItem<P = unknown> {
  id: string;
  payload: P;
}

/** What one item came to. `attempts` counts starts, those of workers that died included. */
export type ItemResult<R = unknown> =
  | { id: string; ok: true; value: R; attempts: number; worker: string }
  | { id: string; ok: false; error: string; attempts: number; worker: string };

/** Where a run stands, seen from any process. */
export interface RunProgress {
  total: number;
  /** Items that finished with a value. */
  succeeded: number;
  /** Items whose every attempt failed. */
  failed: number;
  /** Neither yet: waiting, or being processed. */
  pending: number;
  /** Money the run's items reported spending (`ItemContext.spend`), over every worker. */
  spentUsd: number;
}

/** A batch of work: items of one kind under a run id. Submitting the same run again resumes it. */
export interface RunSubmission<C = unknown, P = unknown> {
  runId: string;
  kind: string;
  /** JSON shared by every item of the run (given once to each worker's `JobKind.open`). */
  context: C;
  items: ReadonlyArray<WorkItem<P>>;
  /** Starts per item before it counts as failed (a worker that dies mid-item uses one up). Default 3. */
  attempts?: number;
  /**
   * Money the run may spend over all its workers (what items report with `ItemContext.spend`). Checked
   * before each item starts: once it is spent, the items not yet started fail with a budget error
   * instead of running (items already running finish, so a run can overshoot by what they cost).
   */
  budgetUsd?: number;
}

/** What a runner may tell the queue about the item it is processing. */
export interface ItemContext {
  /** Adds to the run's spending (model calls), which the run's budget is checked against. */
  spend(usd: number): void;
}

export interface SubmitOptions<R = unknown> {
  /**
   * Called once per item with its result, in the order results arrive, including items a submission of
   * the same run finished before this one (those come first).
   */
  onResult?: (result: ItemResult<R>, progress: RunProgress) => void | Promise<void>;
  /**
   * Called while a run waits with no result arriving: once at the start when no worker is connected,
   * then after every `RedisJobQueue` `waitingNoticeMs` without a result. `workers` is the number of
   * workers connected to the queue (undefined when Redis does not say).
   */
  onWaiting?: (info: { workers: number | undefined; idleMs: number }) => void;
}

export interface RunOutcome<R = unknown> {
  /** Every item's result, by item id. */
  results: Map<string, ItemResult<R>>;
  /** Items an earlier submission of the run had already finished. */
  earlier: number;
}

/** How items of one kind are processed: opened once per run in each process that works on it. */
export interface JobKind<C = unknown, P = unknown, R = unknown> {
  readonly kind: string;
  open(context: C): Promise<JobRunner<P, R>>;
}

export interface JobRunner<P = unknown, R = unknown> {
  /** Processes one item; a throw is a failed attempt (retried while attempts remain). */
  process(item: WorkItem<P>, context: ItemContext): Promise<R>;
  close(): Promise<void>;
}

export interface JobQueue {
  /** What the queue is, for messages (a Redis URL never shows its password). */
  readonly description: string;
  /** Handlers for kinds of work: `LocalJobQueue` runs submissions with them, `RedisJobQueue`'s workers too. */
  register(...kinds: JobKind[]): void;
  /**
   * Submits a run and resolves when every item has a result. Items the run already finished are not
   * processed again; items that failed before are.
   */
  submit<C, P, R>(run: RunSubmission<C, P>, options?: SubmitOptions<R>): Promise<RunOutcome<R>>;
  /** Where a run stands (zero items when the queue knows nothing of it). */
  progress(runId: string): Promise<RunProgress>;
  /** The results a run has so far, by item id. */
  results<R = unknown>(runId: string): Promise<Map<string, ItemResult<R>>>;
  /** Forgets a run's results, so that submitting it again starts over. */
  discard(runId: string): Promise<void>;
  close(): Promise<void>;
}

export function countProgress(
  total: number,
  results: Iterable<ItemResult<unknown>>,
  spentUsd = 0,
): RunProgress {
  let succeeded = 0;
  let failed = 0;
  for (const result of results) {
    if (result.ok) succeeded++;
    else failed++;
  }
  return { total, succeeded, failed, pending: Math.max(0, total - succeeded - failed), spentUsd };
}

/** The error of an item that did not start because its run's budget was spent. */
export function budgetSpentMessage(budgetUsd: number, spentUsd: number): string {
  return `MODEL_BUDGET_EXCEEDED: the run's budget of $${budgetUsd.toFixed(4)} is spent ($${spentUsd.toFixed(4)} used over all workers); this item was not started`;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
