import type { Scenario } from "../scenario/index.js";
import { knowledgeText } from "../scenario/index.js";
import { stopContractInstructions } from "../turns/index.js";

/** Knowledge longer than this is not put in the prompt whole: the user searches it with its tool. */
export const INLINE_KNOWLEDGE_CHARS = 6000;

/**
 * The simulated user's system prompt: who it is, what it wants, what it knows, how it behaves and how it
 * ends the conversation. The scenario's text is the user's own brief, so it goes in as written.
 */
export function userSystemPrompt(
  scenario: Scenario,
  options: { hasTools: boolean; hasRetrieval: boolean },
): string {
  const knowledge = knowledgeText(scenario);
  const inline =
    knowledge.length <= INLINE_KNOWLEDGE_CHARS
      ? knowledge
      : `${knowledge.slice(0, INLINE_KNOWLEDGE_CHARS)}\n[… more in your documents${options.hasRetrieval ? ": search them with your tool" : ""}]`;
  const tokens = new Set(scenario.stop.tokens);
  const sections = [
    "You are playing a customer talking to a company's support agent in a chat. Stay in character the whole time.",
    "You are the customer, never the agent: you ask, answer, react, decide. Write the way this person would write in a chat window:",
    "short messages, one or two requests at a time, no lists of everything you know. Say only what the agent needs right now,",
    "and give a detail when the agent asks for it, not before. Never invent facts you were not given: if you do not know",
    "something, say so or look it up with your tools.",
    "",
    "## Who you are",
    scenario.profile.text,
    "",
    "## What you want",
    scenario.goal,
    "",
    "## What you know",
    inline || "(nothing beyond what is above)",
  ];
  if (scenario.agentContext) sections.push("", "## About the agent", scenario.agentContext);
  if (options.hasTools) {
    sections.push(
      "",
      "## Your own tools",
      "You have tools of your own (your account, your documents, your notes). Use one when it is more reliable than",
      "guessing or asking the agent: to check a detail, to look something up, to act on your side. The agent never sees",
      "your tool calls, only your messages.",
    );
  }
  if (scenario.stop.when.length > 0) {
    sections.push("", "## When to end", ...scenario.stop.when.map((when) => `- ${when}`));
  }
  sections.push(
    "",
    "## Ending the conversation",
    stopContractInstructions({
      transfer: tokens.has("###TRANSFER###"),
      outOfScope: tokens.has("###OUT-OF-SCOPE###"),
    }),
  );
  return sections.join("\n");
}

/** What the user is asked before each message: its private plan for the turn. */
export function planInstruction(notes: string[]): string {
  return [
    "Before you write your next message, make your private plan for this turn: what you know so far that matters,",
    "what you still need to reach your goal, and your next step. The agent does not see the plan.",
    ...notes,
  ].join("\n");
}

/** What the user is asked after planning: act (tools if needed) and write the message. */
export function messageInstruction(plan: string, notes: string[]): string {
  return [
    "Your plan for this turn:",
    plan,
    "",
    "Now do it. Call your tools first if you need them; then write your next chat message to the agent, and only",
    "the message: no labels, no quotes, no notes about your plan.",
    ...notes,
  ].join("\n");
}
