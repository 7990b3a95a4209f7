/**
 * The browser layer's contract (VISTA's UI user): what one observation of a page holds and the actions a
 * simulated user can take on it. The hybrid user, the router, the browser target and the report read
 * these; `src/users/browser/` implements them on playwright-core and Debian's Chromium.
 */

/** The attribute terrarium writes on live elements to name them across steps (one name everywhere). */
export const SEMANTIC_ID_ATTRIBUTE = "data-semantic-id";

/** What an element is for the user: something to type into, to click, or to choose from. */
export type ElementKind = "input" | "clickable" | "select";

/** One visible, actionable element of the page. */
export interface ObservedElement {
  /** Stable semantic id (the value of `data-semantic-id`): the same while the element stays. */
  id: string;
  kind: ElementKind;
  /** Tag name, lower case (`button`, `a`, `input`, `textarea`, `select`, `div`…). */
  tag: string;
  /** What a person reads: label, text, aria-label, title or placeholder (bounded). */
  label: string;
  /** ARIA role or input type, when it has one. */
  role?: string;
  /** The current value of an input or select. */
  value?: string;
  /** A select's options (bounded). */
  options?: string[];
  /** Where it lives: "" for the top document, else the frame path (`iframe#chat`) and/or `shadow` hops. */
  frame: string;
  disabled?: boolean;
  /** Whether a checkbox, radio or switch is checked (only for those). */
  checked?: boolean;
}

export interface TabInfo {
  index: number;
  url: string;
  title: string;
  active: boolean;
}

/** One look at the page after it settled. */
export interface Observation {
  url: string;
  title: string;
  tabs: TabInfo[];
  elements: ObservedElement[];
  /** The page as compact text for a model: headings, text and elements with their ids, frames included. */
  text: string;
  /** The error of the previous action, if it failed ("no element with id …", "element is hidden"…). */
  error?: string;
  /** Path of this step's screenshot, when screenshots are on. */
  screenshot?: string;
}

/** The paper's action space. `target` is a semantic id from the last observation. */
export type UiAction =
  | { type: "click"; target: string }
  | { type: "type"; target: string; text: string; enter?: boolean }
  | { type: "hover"; target: string }
  | { type: "select"; target: string; value: string }
  | { type: "clear"; target: string }
  | { type: "key_press"; key: string; target?: string }
  | { type: "scroll"; direction: "up" | "down"; target?: string; amount?: number }
  | { type: "goto_url"; url: string }
  | { type: "back" }
  | { type: "forward" }
  | { type: "refresh" }
  | { type: "new_tab"; url?: string }
  | { type: "switch_tab"; index: number }
  | { type: "close_tab"; index?: number }
  | { type: "terminate" };

export const UI_ACTION_TYPES = [
  "click",
  "type",
  "hover",
  "select",
  "clear",
  "key_press",
  "scroll",
  "goto_url",
  "back",
  "forward",
  "refresh",
  "new_tab",
  "switch_tab",
  "close_tab",
  "terminate",
] as const satisfies ReadonlyArray<UiAction["type"]>;

/** What an action did: never a throw for a bad target; the error also reaches the next observation. */
export interface ActionResult {
  ok: boolean;
  error?: string;
  /** Milliseconds in the action itself and in waiting for the page to settle after it. */
  actionMs: number;
  settleMs: number;
  /** False when the page was still busy (requests in flight or DOM changing) at the settle cap. */
  settled?: boolean;
}

/**
 * Where a page's chat transcript is: the messages of a chat widget, read after the page settles. Selectors
 * are CSS, evaluated in the frame `frame` selects (a same-origin iframe) or the top document.
 */
export interface ChatLocator {
  /** CSS selector of the iframe that holds the widget, if any. */
  frame?: string;
  /** CSS selector of every message element, in order. */
  message: string;
  /** Attribute whose value says who wrote the message (default `data-chat-role`; values user / agent). */
  roleAttribute?: string;
  /** Attribute of the widget (or any element) holding the agent's session id, for its tool calls. */
  sessionAttribute?: string;
}

/** The default locator: elements marked `data-chat-role="user" | "agent"`, in any same-origin frame. */
export const DEFAULT_CHAT_LOCATOR: ChatLocator = {
  message: "[data-chat-role]",
  roleAttribute: "data-chat-role",
  sessionAttribute: "data-session-id",
};
