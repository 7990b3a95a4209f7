/**
 * The demo shop (`terrarium users demo`): static pages from examples/shop with a chat widget in an iframe,
 * a JSON API over the tau2-retail store, the chat agent (terrarium's planner with a model, scripted rules
 * without one), and the part of terrarium's API under /terrarium that reads a chat's tool calls and state.
 * It answers only its own host names, takes bearer tokens for /terrarium, and frees closed or idle chats.
 */
export {
  type ChatCloseReason,
  type ChatMessage,
  type ChatResponder,
  ChatSessions,
  type ChatSessionsOptions,
  ChatTurnError,
  chatLimits,
  DEFAULT_CHAT_IDLE_MS,
  DEFAULT_MAX_CHAT_SESSIONS,
  MAX_CONVERSATION_MESSAGES,
  MAX_MESSAGE_CHARS,
  newChatId,
} from "./chat.js";
export { ScriptedShopAgent } from "./scripted-agent.js";
export {
  allowedHostNames,
  canonicalHost,
  hostOfHeader,
  LOOPBACK_HOSTS,
  MAX_CHAT_BODY_BYTES,
  SHOP_ENVIRONMENT,
  type ShopDemo,
  type ShopDemoOptions,
  startShopDemo,
  TERRARIUM_PREFIX,
  TERRARIUM_ROUTES,
} from "./server.js";
export { lookupStatic, PAGE_SECURITY_HEADERS, type StaticLookup, shopFolder } from "./static.js";
