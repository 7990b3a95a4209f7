import { TerrariumError } from "./errors.js";

/** The error interrupted work ends with (Ctrl-C, SIGTERM): nothing of it is a finished result. */
export function interruptedError(what = "interrupted before it finished"): TerrariumError {
  return new TerrariumError("INTERRUPTED", what);
}

/**
 * `work`, or `INTERRUPTED` as soon as `signal` is aborted. The work is abandoned, not cancelled (a model
 * call or a page's settle wait runs out on its own, or fails when the browser closes), and its failure
 * is ignored.
 */
export function interruptible<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  what?: string,
): Promise<T> {
  if (!signal) return work;
  work.catch(() => undefined);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(interruptedError(what));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
