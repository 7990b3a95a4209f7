import { TerrariumError } from "../core/errors.js";
import {
  budgetSpentMessage,
  countProgress,
  errorMessage,
  type ItemResult,
  type JobKind,
  type JobQueue,
  type RunOutcome,
  type RunSubmission,
  type SubmitOptions,
} from "./types.js";

export interface LocalJobQueueOptions {
  /** Items processed at once. Default 4. */
  concurrency?: number;
}

/**
 * The in-process queue: a pool of `concurrency` loops over a run's items. Results live as long as the
 * queue does, so submitting a run again in the same process skips what it finished.
 */
export class LocalJobQueue implements JobQueue {
  readonly description = "in-process";
  private readonly kinds = new Map<string, JobKind>();
  private readonly runs = new Map<
    string,
    { total: number; spentUsd: number; results: Map<string, ItemResult<unknown>> }
  >();
  private readonly concurrency: number;

  constructor(options: LocalJobQueueOptions = {}) {
    this.concurrency = Math.max(1, options.concurrency ?? 4);
  }

  register(...kinds: JobKind[]): void {
    for (const kind of kinds) this.kinds.set(kind.kind, kind);
  }

  async submit<C, P, R>(run: RunSubmission<C, P>, options: SubmitOptions<R> = {}): Promise<RunOutcome<R>> {
    const kind = this.kinds.get(run.kind);
    if (!kind)
      throw new TerrariumError("INVALID_INPUT", `no handler is registered for jobs of kind ${run.kind}`);
    let state = this.runs.get(run.runId);
    if (!state) {
      state = { total: 0, spentUsd: 0, results: new Map() };
      this.runs.set(run.runId, state);
    }
    state.total = run.items.length;
    const results = state.results as Map<string, ItemResult<R>>;
    const wanted = new Set(run.items.map((item) => item.id));
    for (const id of [...results.keys()]) if (!wanted.has(id) || !results.get(id)?.ok) results.delete(id);
    const spending = state;
    const progress = () => countProgress(run.items.length, results.values(), spending.spentUsd);
    const outcome: RunOutcome<R> = { results: new Map(), earlier: 0 };
    for (const result of results.values()) {
      outcome.results.set(result.id, result);
      outcome.earlier++;
      await options.onResult?.(result, progress());
    }
    const todo = run.items.filter((item) => !results.has(item.id));
    if (todo.length === 0) return outcome;
    const attempts = Math.max(1, run.attempts ?? 3);
    const runner = await kind.open(run.context);
    let next = 0;
    const loop = async () => {
      while (next < todo.length) {
        const item = todo[next++] as (typeof todo)[number];
        let result: ItemResult<R> | undefined;
        const context = {
          spend: (usd: number) => {
            spending.spentUsd += usd;
          },
        };
        if (run.budgetUsd !== undefined && spending.spentUsd >= run.budgetUsd)
          result = {
            id: item.id,
            ok: false,
            error: budgetSpentMessage(run.budgetUsd, spending.spentUsd),
            attempts: 0,
            worker: "local",
          };
        for (let attempt = 1; !result; attempt++) {
          try {
            const value = (await runner.process(item, context)) as R;
            result = { id: item.id, ok: true, value, attempts: attempt, worker: "local" };
          } catch (error) {
            if (attempt >= attempts)
              result = {
                id: item.id,
                ok: false,
                error: errorMessage(error),
                attempts: attempt,
                worker: "local",
              };
          }
        }
        results.set(item.id, result);
        outcome.results.set(item.id, result);
        await options.onResult?.(result, progress());
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(this.concurrency, todo.length) }, loop));
    } finally {
      await runner.close();
    }
    return outcome;
  }

  async progress(runId: string) {
    const state = this.runs.get(runId);
    return countProgress(state?.total ?? 0, state?.results.values() ?? [], state?.spentUsd ?? 0);
  }

  async results<R = unknown>(runId: string): Promise<Map<string, ItemResult<R>>> {
    return new Map((this.runs.get(runId)?.results ?? []) as Map<string, ItemResult<R>>);
  }

  async discard(runId: string): Promise<void> {
    this.runs.delete(runId);
  }

  async close(): Promise<void> {
    this.runs.clear();
  }
}
