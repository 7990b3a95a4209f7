import type { ScriptStep } from "./scripted-llm-server.js";

/**
 * Scripted answers for every structured-output role around a GATS run, always agreeing: a one-item
 * checklist, a judge that marks it done, a simulated call that succeeds, a validator that passes and an
 * empty bootstrapped state. Undefined for anything else (the planner's own turns).
 */
export function approvingReply(schema: string | undefined): ScriptStep | undefined {
  const json = (value: unknown): ScriptStep => ({ reply: { content: JSON.stringify(value) } });
  if (schema === "checklist") return json({ items: [{ description: "done" }] });
  if (schema === "judgement")
    return json({ items: [{ description: "done", status: "success", reasoning: "ok" }] });
  if (schema === "simulated_call") return json({ status: "ok", observation: { ok: true }, changes: [] });
  if (schema === "semantic_verdict") return json({ valid: true, problems: [] });
  if (schema === "initial_state") return json({ state: { runtime_state: {} } });
  return undefined;
}
