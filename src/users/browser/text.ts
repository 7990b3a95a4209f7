import type { ElementKind, ObservedElement, TabInfo } from "./types.js";

/** One element as the page script reports it, before the session settles its id. */
export interface RawElement {
  /** The id it already carries (and may keep), or null when it needs a new one. */
  existingId: string | null;
  /** Slug a new id starts from (`send-button`, `chat-message-input`). */
  base: string;
  kind: ElementKind;
  tag: string;
  label: string;
  role?: string;
  value?: string;
  options?: string[];
  checked?: boolean;
  disabled?: boolean;
  /** Shadow hops inside its document (`acme-helper>shadow`), "" outside any shadow root. */
  shadow: string;
  /**
   * When its slug repeats in its document: the slug of the heading that tells it apart (the product
   * card's title), which a new id starts with (`action-camera-view-options-button`).
   */
  context?: string;
}

/** A line of a document's text, in document order: a heading, a text block, or an element. */
export type RawLine =
  | { k: "h"; level: number; text: string }
  | { k: "t"; text: string }
  | { k: "e"; i: number };

/** What the page script's `observe()` returns for one document. */
export interface RawFrameObservation {
  url: string;
  title: string;
  /** Changes when the document is replaced (a navigation or a reload). */
  token: string;
  elements: RawElement[];
  lines: RawLine[];
}

/**
 * Chooses ids for one observation of a whole page (all frames): an element keeps the id it carries unless
 * an earlier element already holds it; the others get their slug (prefixed with their context when the
 * slug repeats in the document), suffixed `-2`, `-3`… until it is unused
 * on the page and was never given to another element of this document (`retired`), so that an id a model
 * saw earlier never comes to name a different element. Returns the ids in the frames' order and the
 * (element index, id) pairs each frame must write; `retired` gains every id in use.
 */
export function assignIds(
  frames: ReadonlyArray<ReadonlyArray<Pick<RawElement, "existingId" | "base" | "context">>>,
  retired: Set<string>,
): { ids: string[][]; writes: Array<Array<[number, string]>> } {
  const taken = new Set<string>();
  const ids: string[][] = frames.map((elements) => elements.map(() => ""));
  const writes: Array<Array<[number, string]>> = frames.map(() => []);
  const fresh: Array<[number, number]> = [];
  frames.forEach((elements, f) => {
    elements.forEach((element, i) => {
      const id = element.existingId;
      if (id && !taken.has(id)) {
        taken.add(id);
        (ids[f] as string[])[i] = id;
      } else fresh.push([f, i]);
    });
  });
  for (const [f, i] of fresh) {
    const element = (frames[f] as ReadonlyArray<Pick<RawElement, "base" | "context">>)[i];
    const base = (element?.context ? `${element.context}-${element.base}` : element?.base) || "element";
    let id = base;
    for (let n = 2; taken.has(id) || retired.has(id); n++) id = `${base}-${n}`;
    taken.add(id);
    (ids[f] as string[])[i] = id;
    (writes[f] as Array<[number, string]>).push([i, id]);
  }
  for (const id of taken) retired.add(id);
  return { ids, writes };
}

/** Joins a frame path and shadow hops into an element's `frame` ("" for the top document's light DOM). */
export function joinFrame(framePath: string, shadow: string): string {
  return [framePath, shadow].filter((part) => part !== "").join(" > ");
}

export function toObservedElement(raw: RawElement, id: string, framePath: string): ObservedElement {
  const element: ObservedElement = {
    id,
    kind: raw.kind,
    tag: raw.tag,
    label: raw.label,
    frame: joinFrame(framePath, raw.shadow),
  };
  if (raw.role) element.role = raw.role;
  if (raw.value !== undefined) element.value = raw.value;
  if (raw.options) element.options = raw.options;
  if (raw.checked !== undefined) element.checked = raw.checked;
  if (raw.disabled) element.disabled = true;
  return element;
}

const quote = (text: string) => JSON.stringify(text);

/** `[id] kind tag "label" (role; value "…"; options …; disabled)`: one element as a model reads it. */
export function elementLine(element: ObservedElement, shadow = ""): string {
  const notes: string[] = [];
  if (element.role && element.role !== element.tag) notes.push(element.role);
  if (element.value !== undefined && element.value !== "") notes.push(`value ${quote(element.value)}`);
  else if (element.kind === "input") notes.push("empty");
  if (element.options?.length) notes.push(`options: ${element.options.map(quote).join(", ")}`);
  if (element.checked !== undefined) notes.push(element.checked ? "checked" : "not checked");
  if (element.disabled) notes.push("disabled");
  if (shadow) notes.push(`in ${shadow}`);
  const label = element.label ? ` ${quote(element.label)}` : "";
  return `[${element.id}] ${element.kind} ${element.tag}${label}${notes.length ? ` (${notes.join("; ")})` : ""}`;
}

/** One frame's part of the observation text. */
export interface FrameText {
  /** "" for the top document, else the frame path (`iframe#chat`). */
  path: string;
  url: string;
  lines: RawLine[];
  elements: ObservedElement[];
  shadows: string[];
}

export const DEFAULT_MAX_TEXT_CHARS = 12_000;

/**
 * The observation as compact text: title, url, tabs and the previous action's error first; then each
 * frame's headings, text blocks and elements in document order. Over `maxChars`, text blocks are left
 * out first (elements are what a model acts on), then elements, and a marker says how many.
 */
export function renderObservationText(input: {
  title: string;
  url: string;
  tabs: TabInfo[];
  error?: string;
  notes?: string[];
  frames: FrameText[];
  maxChars?: number;
}): string {
  const maxChars = input.maxChars ?? DEFAULT_MAX_TEXT_CHARS;
  const head: string[] = [];
  if (input.error) head.push(`ERROR (previous action): ${input.error}`);
  head.push(`Page: ${input.title || "(untitled)"}`, `URL: ${input.url}`);
  if (input.tabs.length > 1)
    head.push(
      `Tabs: ${input.tabs
        .map((tab) => `[${tab.index}] ${tab.title || tab.url}${tab.active ? " (active)" : ""}`)
        .join(" | ")}`,
    );
  for (const note of input.notes ?? []) head.push(`Note: ${note}`);

  type Line = { text: string; kind: "frame" | "text" | "element" };
  const body: Line[] = [];
  for (const frame of input.frames) {
    const items: Line[] = [];
    for (const line of frame.lines) {
      if (line.k === "h")
        items.push({ text: `${"#".repeat(Math.min(6, line.level))} ${line.text}`, kind: "text" });
      else if (line.k === "t") items.push({ text: line.text, kind: "text" });
      else {
        const element = frame.elements[line.i];
        if (element) items.push({ text: elementLine(element, frame.shadows[line.i]), kind: "element" });
      }
    }
    if (frame.path !== "") {
      if (items.length === 0) continue;
      body.push({ text: "", kind: "frame" }, { text: `Frame ${frame.path} (${frame.url}):`, kind: "frame" });
    } else body.push({ text: "", kind: "frame" });
    body.push(...items);
  }

  const headText = head.join("\n");
  const total = headText.length + body.reduce((sum, line) => sum + line.text.length + 1, 0);
  if (total <= maxChars) return [headText, ...body.map((line) => line.text)].join("\n");

  // Over the budget: elements and frame headers first, text blocks with what is left, in order.
  const reserve = 200;
  let budget = maxChars - headText.length - reserve;
  const keep = new Set<number>();
  body.forEach((line, i) => {
    if (line.kind !== "text" && budget - line.text.length - 1 >= 0) {
      keep.add(i);
      budget -= line.text.length + 1;
    }
  });
  body.forEach((line, i) => {
    if (line.kind === "text" && budget - line.text.length - 1 >= 0) {
      keep.add(i);
      budget -= line.text.length + 1;
    }
  });
  const droppedText = body.filter((line, i) => line.kind === "text" && !keep.has(i)).length;
  const droppedElements = body.filter((line, i) => line.kind === "element" && !keep.has(i)).length;
  const kept = body.filter((_, i) => keep.has(i)).map((line) => line.text);
  const parts = [
    droppedText ? `${droppedText} text lines` : "",
    droppedElements ? `${droppedElements} elements` : "",
  ].filter(Boolean);
  return [
    headText,
    ...kept,
    `[… truncated: ${parts.join(" and ")} left out to stay under ${maxChars} characters]`,
  ].join("\n");
}
