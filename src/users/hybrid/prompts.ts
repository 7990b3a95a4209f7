import type { Scenario } from "../scenario/index.js";
import { userSystemPrompt } from "../simulator/prompts.js";

/** What the user is told about the page and its channels, added to its usual system prompt. */
export function browserSystemPrompt(
  scenario: Scenario,
  options: { mode: "hybrid" | "ui-only"; hasRetrieval: boolean; toolNames: string[] },
): string {
  const base = userSystemPrompt(scenario, {
    hasTools: options.mode === "hybrid" && options.toolNames.length > 0,
    hasRetrieval: options.hasRetrieval,
  });
  const lines = [
    base,
    "",
    "## The web page",
    "You are on the company's website in a browser. The support agent answers in the chat widget on the page.",
    "Each step you get a description of the page: its elements with their [id]s, grouped by frame. You act on",
    "the page one action at a time (click, type, select, scroll, navigate, …). To talk to the agent, type your",
    "message into the chat input and send it (type with enter, or click the send button); wait for its answer",
    "before writing again. You can also use the website itself: look at products, your orders, forms.",
    "When you are done, use the terminate action, or end your last chat message with the stop token.",
  ];
  if (options.mode === "hybrid" && options.toolNames.length > 0) {
    lines.push(
      "",
      `Besides the page you have your own tools (${options.toolNames.join(", ")}): use them when they are quicker or`,
      "more reliable than clicking through pages, e.g. to look up a detail you should already know.",
    );
  }
  return lines.join("\n");
}

/** The step's user message: the page, the plan, what happened, and what to decide. */
export function stepPrompt(input: {
  observation: string;
  plan: string;
  recent: string[];
  notes: string[];
  ask: string;
}): string {
  return [
    "## The page now",
    input.observation,
    "",
    "## Your plan",
    input.plan,
    "",
    "## Your last actions",
    input.recent.length > 0 ? input.recent.map((line) => `- ${line}`).join("\n") : "(none yet)",
    ...(input.notes.length > 0 ? ["", "## Note", ...input.notes] : []),
    "",
    input.ask,
  ].join("\n");
}

export const PLAN_ASK =
  "Update your private plan: what you know that matters, what you still need to reach your goal, and your next step.";
export const ROUTE_ASK =
  "Choose how to take your next step: on the web page (ui) or with one of your own tools (api). Prefer the tool when it gives you a fact you need faster or more reliably; use the page to talk to the agent or to do what only the page can do.";
export const UI_ASK =
  "Choose your next action on the page. Use the ids shown in [brackets]; set the fields the action does not use to null.";
export const API_ASK = "Call the one tool of yours that serves your next step.";
