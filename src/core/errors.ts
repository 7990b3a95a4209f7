/**
 * The one error class of terrarium. Codes are stable strings that callers can branch on; `where` says
 * which file and which place inside it (a JSON Pointer, a line number) the problem is about, so a CLI
 * can print one clear line instead of a stack trace.
 */
export type ErrorCode =
  | "FILE_UNREADABLE"
  | "PARSE_ERROR"
  | "UNKNOWN_FORMAT"
  | "INVALID_OPENAPI"
  | "INVALID_TOOL"
  | "DUPLICATE_TOOL"
  | "REF_UNRESOLVED"
  | "REF_CIRCULAR"
  | "SCHEMA_COMPILE"
  | "SCHEMA_INVALID"
  | "SCHEMA_TOO_DEEP"
  | "CATALOG_INCOMPLETE"
  | "UNKNOWN_TOOL"
  | "INVALID_INPUT"
  | "INVALID_POINTER"
  | "CONFIG_INVALID"
  | "MODEL_UNKNOWN_PROVIDER"
  | "MODEL_MISSING_KEY"
  | "MODEL_UNAVAILABLE"
  | "MODEL_CALL_FAILED"
  | "MODEL_TIMEOUT"
  | "MODEL_OUTPUT_INVALID"
  | "MODEL_BUDGET_EXCEEDED"
  | "MODEL_NO_ROLE"
  | "UNKNOWN_SESSION"
  /** The agent under test failed (user simulation). */
  | "AGENT_ERROR"
  /** The work was stopped by a signal (Ctrl-C, SIGTERM) before it finished; nothing of it was recorded. */
  | "INTERRUPTED"
  /** A dependency (the session store, the queue) does not answer now; the same request may succeed later. */
  | "STORE_UNAVAILABLE"
  /** The server is draining for shutdown; send the request again (to another replica). */
  | "SHUTTING_DOWN"
  /** A per-token limit (open sessions, MCP sessions, replays in flight) is reached. */
  | "QUOTA_EXCEEDED"
  /** A value (a tool result, a history, a spec) is larger or deeper than the configured limit. */
  | "TOO_LARGE"
  | "INTERNAL";

export interface ErrorLocation {
  /** File the problem is in, when it came from a file. */
  file?: string;
  /** JSON Pointer into that file's document. */
  pointer?: string;
  /** 1-based line, for line-oriented inputs such as JSONL. */
  line?: number;
}

export class TerrariumError extends Error {
  override readonly name = "TerrariumError";
  readonly code: ErrorCode;
  readonly where: ErrorLocation;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { where?: ErrorLocation; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.where = options.where ?? {};
    this.details = options.details;
  }

  /** Same error, located in `where` (fields already set win: the innermost location is the most precise). */
  locatedIn(where: ErrorLocation): TerrariumError {
    const merged: ErrorLocation = { ...where };
    for (const [key, value] of Object.entries(this.where) as Array<[keyof ErrorLocation, never]>) {
      if (value !== undefined) merged[key] = value;
    }
    return new TerrariumError(this.code, this.message, {
      where: merged,
      details: this.details,
      cause: this.cause,
    });
  }

  /** `file:line#/pointer: message [CODE]`, the form the CLI prints. */
  describe(): string {
    const place = formatLocation(this.where);
    return `${place ? `${place}: ` : ""}${this.message} [${this.code}]`;
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, where: this.where, details: this.details };
  }
}

export function formatLocation(where: ErrorLocation): string {
  let text = where.file ?? "";
  if (where.line !== undefined) text += `${text ? ":" : "line "}${where.line}`;
  if (where.pointer !== undefined && where.pointer !== "") text += `#${where.pointer}`;
  return text;
}

export function isTerrariumError(error: unknown): error is TerrariumError {
  return error instanceof TerrariumError;
}

/** Wraps anything thrown into a TerrariumError, keeping TerrariumErrors as they are. */
export function toTerrariumError(error: unknown, code: ErrorCode = "INTERNAL"): TerrariumError {
  if (error instanceof TerrariumError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new TerrariumError(code, message, { cause: error });
}
