/**
 * A sandboxed tool's code run on a plain JSON copy of the state in this thread: what the sandbox must
 * match. As sandboxed tools always did, the new state's top-level keys that were there before keep their
 * places (the new state is merged into the old one there) and new ones follow; below the top level the
 * order is the tool's. Both results are JSON text.
 */
export function runOnPlainCopy(code: string, state: unknown): { state: string; observation: string } {
  const tool = new Function(`"use strict"; return (${code});`)() as (ctx: { state: unknown }) => unknown;
  const before = JSON.parse(JSON.stringify(state)) as Record<string, unknown>;
  const ctx = { state: JSON.parse(JSON.stringify(state)) as unknown, args: {} };
  const observation = tool(ctx);
  const after = JSON.parse(JSON.stringify(ctx.state)) as Record<string, unknown>;
  const merged: Record<string, unknown> = {};
  const put = (key: string, value: unknown) =>
    Object.defineProperty(merged, key, { value, enumerable: true, writable: true, configurable: true });
  for (const key of Object.keys(before)) if (Object.hasOwn(after, key)) put(key, after[key]);
  for (const key of Object.keys(after)) if (!Object.hasOwn(before, key)) put(key, after[key]);
  return { state: JSON.stringify(merged), observation: JSON.stringify(observation ?? null) };
}
