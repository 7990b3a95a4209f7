/**
 * VISTA's UI module: a real browser (Debian's Chromium through playwright-core) that a simulated user
 * observes and acts on. Observations read every frame and open shadow root, name elements with stable
 * semantic ids, and describe the page as compact text; actions are the paper's action space; the page is
 * waited for by watching its requests and DOM, never by fixed sleeps.
 */
export {
  type BrowserDriver,
  CHROMIUM_FLAGS,
  DEFAULT_CHROMIUM_PATH,
  type LaunchBrowserOptions,
  launchBrowser,
  resolveChromiumPath,
} from "./launch.js";
export { PAGE_SCRIPT, pageCall } from "./page-script.js";
export {
  BrowserSession,
  type BrowserSessionOptions,
  type ChatTranscript,
  checkUrl,
  type SettleOptions,
  type SettleResult,
} from "./session.js";
export {
  assignIds,
  DEFAULT_MAX_TEXT_CHARS,
  elementLine,
  type FrameText,
  joinFrame,
  type RawElement,
  type RawFrameObservation,
  type RawLine,
  renderObservationText,
  toObservedElement,
} from "./text.js";
export {
  type ActionResult,
  type ChatLocator,
  DEFAULT_CHAT_LOCATOR,
  type ElementKind,
  type Observation,
  type ObservedElement,
  SEMANTIC_ID_ATTRIBUTE,
  type TabInfo,
  UI_ACTION_TYPES,
  type UiAction,
} from "./types.js";
