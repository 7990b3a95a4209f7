/**
 * The UI-only and hybrid users (VISTA): the browser conversation loop with its router, the answers'
 * schemas, and the `browser:` target (a page URL, or `browser:demo` for the demo shop).
 */
export {
  type BrowserConversationOptions,
  type BrowserConversationResult,
  type BrowserMode,
  type BrowserStep,
  type PageSession,
  simulateBrowserConversation,
} from "./browser-user.js";
export {
  ROUTE_SCHEMA,
  type RouteDecision,
  toUiAction,
  UI_ACTION_SCHEMA,
  type UiActionAnswer,
} from "./schemas.js";
export {
  type BrowserLauncher,
  type BrowserTarget,
  createBrowserTarget,
  DEMO_SPEC,
  openBrowserTarget,
  parseBrowserSpec,
  TERRARIUM_SERVER_PREFIX,
} from "./target.js";
