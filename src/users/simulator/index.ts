/**
 * The simulated user of VISTA's API mode: its prompt, its toolbox built from the scenario, one turn
 * (plan → tools → message) and the conversation loop with the stop contract, anti-repetition and budget.
 */
export { type AgentEndpoint, type ConversationResult, simulateConversation } from "./conversation-loop.js";
export { INLINE_KNOWLEDGE_CHARS, userSystemPrompt } from "./prompts.js";
export { USER_TOOL_KINDS, UserToolFactory, type UserToolKindName, userToolKindSummaries } from "./toolbox.js";
export { SimulatedUser, type SimulatedUserOptions, seedNumber, type UserTurnOutput } from "./user.js";
