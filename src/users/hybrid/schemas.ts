import { UI_ACTION_TYPES, type UiAction } from "../browser/types.js";

/**
 * The answers the hybrid user's models give as structured output: the router's choice of channel, and a
 * UI action. Every property is required (null where it does not apply), so the schemas work with strict
 * structured output; {@link toUiAction} turns an answer into a checked {@link UiAction}.
 */

/** The router's decision for one step. */
export interface RouteDecision {
  channel: "ui" | "api";
  reason: string;
}

export const ROUTE_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    channel: {
      enum: ["ui", "api"],
      description: "ui: act on the web page; api: call one of your own tools",
    },
    reason: { type: "string", description: "why this channel is the better one for your next step" },
  },
  required: ["channel", "reason"],
  additionalProperties: false,
} as const);

/** A UI action as a model writes it: one flat object, the fields that do not apply set to null. */
export interface UiActionAnswer {
  type: string;
  target: string | null;
  text: string | null;
  enter: boolean | null;
  value: string | null;
  key: string | null;
  direction: string | null;
  url: string | null;
  index: number | null;
}

const nullable = (schema: Record<string, unknown>, description: string) => ({
  anyOf: [schema, { type: "null" }],
  description,
});

export const UI_ACTION_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    type: { enum: [...UI_ACTION_TYPES], description: "the action" },
    target: nullable({ type: "string" }, "the element's id, as [id] in the page description"),
    text: nullable({ type: "string" }, "type: the text to type"),
    enter: nullable({ type: "boolean" }, "type: press Enter after typing (e.g. to send a chat message)"),
    value: nullable({ type: "string" }, "select: the option to choose"),
    key: nullable({ type: "string" }, "key_press: the key (Enter, Escape, Tab, ArrowDown…)"),
    direction: nullable({ enum: ["up", "down"] }, "scroll: the direction"),
    url: nullable({ type: "string" }, "goto_url, new_tab: the address"),
    index: nullable({ type: "integer" }, "switch_tab, close_tab: the tab's index"),
  },
  required: ["type", "target", "text", "enter", "value", "key", "direction", "url", "index"],
  additionalProperties: false,
} as const);

/** A model's answer as a UI action, or what is missing, worded for the model's next observation. */
export function toUiAction(answer: UiActionAnswer): { action: UiAction } | { error: string } {
  const need = (field: keyof UiActionAnswer) => `action "${answer.type}" needs "${field}"`;
  const target = answer.target ?? undefined;
  switch (answer.type) {
    case "click":
    case "hover":
    case "clear":
      return target ? { action: { type: answer.type, target } } : { error: need("target") };
    case "type":
      if (!target) return { error: need("target") };
      if (answer.text === null) return { error: need("text") };
      return {
        action: { type: "type", target, text: answer.text, ...(answer.enter ? { enter: true } : {}) },
      };
    case "select":
      if (!target) return { error: need("target") };
      return answer.value === null
        ? { error: need("value") }
        : { action: { type: "select", target, value: answer.value } };
    case "key_press":
      return answer.key ? { action: { type: "key_press", key: answer.key } } : { error: need("key") };
    case "scroll":
      return {
        action: {
          type: "scroll",
          direction: answer.direction === "up" ? "up" : "down",
          ...(target ? { target } : {}),
        },
      };
    case "goto_url":
      return answer.url ? { action: { type: "goto_url", url: answer.url } } : { error: need("url") };
    case "new_tab":
      return { action: { type: "new_tab", ...(answer.url ? { url: answer.url } : {}) } };
    case "switch_tab":
      return answer.index === null
        ? { error: need("index") }
        : { action: { type: "switch_tab", index: answer.index } };
    case "close_tab":
      return { action: { type: "close_tab", ...(answer.index !== null ? { index: answer.index } : {}) } };
    case "back":
    case "forward":
    case "refresh":
    case "terminate":
      return { action: { type: answer.type } };
    default:
      return { error: `unknown action "${answer.type}"; use one of ${UI_ACTION_TYPES.join(", ")}` };
  }
}
