/**
 * The demo shop (`terrarium users demo`): static pages from examples/shop with a chat widget in an iframe,
 * a JSON API over the tau2-retail store, the chat agent (terrarium's planner with a model, scripted rules
 * without one), and terrarium's API under /terrarium for the agent's tool calls per chat session.
 */
export {
  type ChatMessage,
  type ChatResponder,
  ChatSessions,
  ChatTurnError,
  DEFAULT_MAX_CHAT_SESSIONS,
  MAX_CONVERSATION_MESSAGES,
  MAX_MESSAGE_CHARS,
} from "./chat.js";
export { ScriptedShopAgent } from "./scripted-agent.js";
export {
  MAX_CHAT_BODY_BYTES,
  SHOP_ENVIRONMENT,
  type ShopDemo,
  type ShopDemoOptions,
  startShopDemo,
  TERRARIUM_PREFIX,
} from "./server.js";
export { lookupStatic, PAGE_SECURITY_HEADERS, type StaticLookup, shopFolder } from "./static.js";
