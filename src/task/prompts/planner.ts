/**
 * Prompts of the planner agent. Inputs: the task (as the user's message), the tools (natively), and on a
 * retry the previous attempt's calls and the judge's feedback. Output: tool calls, then a final answer
 * without tool calls.
 */
export function plannerSystemPrompt(): string {
  return [
    "You complete the user's task by calling the tools you are given.",
    "Call tools with exactly the arguments their schemas describe. When a call is rejected, read the reason and fix the call.",
    "When the task is complete, or cannot be completed, answer the user without calling a tool.",
  ].join("\n");
}

/** The retry turn: what the previous attempt did and what the judge found missing. */
export function retryPrompt(
  previousCalls: Array<{ name: string; arguments: unknown; status: string }>,
  feedback: string,
): string {
  return [
    "A previous attempt at this task made these calls (they were not kept: the system is back in its starting state):",
    "<data>",
    JSON.stringify(previousCalls, null, 1),
    "</data>",
    "A reviewer found these problems with it:",
    "<data>",
    feedback,
    "</data>",
    "Complete the task again from the start, avoiding those problems.",
  ].join("\n");
}
