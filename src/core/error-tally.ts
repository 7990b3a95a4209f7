import { TerrariumError } from "./errors.js";

/** One kind of error among a batch's items: how many items had it, and the first one's id and message. */
export interface BatchErrorKind {
  kind: string;
  /** Items with at least one error of this kind. */
  count: number;
  firstId: string;
  firstMessage: string;
}

/** How many items errored, and each kind of error among them. */
export interface ErrorCounts {
  errored: number;
  errorKinds: readonly BatchErrorKind[];
}

/**
 * The errors of a batch's items (benchmark items, dataset tasks, samples), by kind, so that a batch
 * command can say how many items errored and why, and fail unless that many were allowed.
 */
export class ErrorTally {
  private readonly byKind = new Map<string, BatchErrorKind & { ids: Set<string> }>();
  private readonly ids = new Set<string>();

  add(id: string, kind: string, message: string): void {
    this.ids.add(id);
    const entry = this.byKind.get(kind);
    if (!entry)
      this.byKind.set(kind, { kind, count: 1, firstId: id, firstMessage: message, ids: new Set([id]) });
    else if (!entry.ids.has(id)) {
      entry.ids.add(id);
      entry.count++;
    }
  }

  /** Items with at least one error. */
  get errored(): number {
    return this.ids.size;
  }

  /** Each kind with its count and first message, in the order the kinds first appeared. */
  kinds(): BatchErrorKind[] {
    return [...this.byKind.values()].map(({ kind, count, firstId, firstMessage }) => ({
      kind,
      count,
      firstId,
      firstMessage,
    }));
  }

  counts(): ErrorCounts {
    return { errored: this.errored, errorKinds: this.kinds() };
  }
}

/** A short, stable name for an error: a terrarium error's code in lower case (`model_timeout`), else `fallback`. */
export function errorKindOf(error: unknown, fallback: string): string {
  return error instanceof TerrariumError ? error.code.toLowerCase() : fallback;
}

/** What a batch command makes of its errored items: whether they fail it, and the lines that say so. */
export interface ErrorVerdict {
  failed: boolean;
  errored: number;
  lines: string[];
}

/**
 * One line per kind of error (its count and first message), then how many of the items errored against
 * what `--max-errors` allows. No lines when nothing errored.
 */
export function errorVerdict(
  errors: ErrorCounts,
  options: { total: number; maxErrors: number; noun: string },
): ErrorVerdict {
  const { errored } = errors;
  const failed = errored > options.maxErrors;
  if (errored === 0) return { failed, errored, lines: [] };
  const lines = errors.errorKinds.map(
    (kind) => `${kind.kind}: ${kind.count} (first, ${kind.firstId}: ${oneLine(kind.firstMessage)})`,
  );
  lines.push(
    `${errored} of ${options.total} ${options.noun} errored; --max-errors allows ${options.maxErrors}${failed ? "" : ", so this passes"}`,
  );
  return { failed, errored, lines };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}
