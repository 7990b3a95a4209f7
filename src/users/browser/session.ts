import { mkdirSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, ElementHandle, Frame, Page, Request } from "playwright-core";
import { TerrariumError } from "../../core/errors.js";
import { pageCall } from "./page-script.js";
import {
  assignIds,
  DEFAULT_MAX_TEXT_CHARS,
  type FrameText,
  type RawFrameObservation,
  renderObservationText,
  toObservedElement,
} from "./text.js";
import {
  type ActionResult,
  type ChatLocator,
  DEFAULT_CHAT_LOCATOR,
  type Observation,
  type ObservedElement,
  type TabInfo,
  UI_ACTION_TYPES,
  type UiAction,
} from "./types.js";

export interface SettleOptions {
  /** How long the page must stay quiet (no request in flight, no DOM change). Default 150 ms. */
  quietMs?: number;
  /** The cap: settle gives up waiting after this long. Default 5000 ms. */
  timeoutMs?: number;
}

export interface SettleResult {
  /** How long it waited. */
  ms: number;
  /** False when the cap was reached while the page was still busy. */
  settled: boolean;
  /** Requests still in flight when it returned. */
  pendingRequests: number;
}

export interface BrowserSessionOptions {
  /** Where `observe()` saves `step-<n>.png`. */
  screenshotsDir?: string;
  viewport?: { width: number; height: number };
  /** How long an action may wait for its target to accept it. Default 5000 ms. */
  actionTimeoutMs?: number;
  /** Navigation timeout. Default 30000 ms. */
  navigationTimeoutMs?: number;
  /** Defaults of every settle. */
  settle?: SettleOptions;
  /** Bound of `observation.text`. Default 12000 characters. */
  maxTextChars?: number;
  /** The page's chat: its role attribute marks who wrote each message in the text (default data-chat-role). */
  chat?: ChatLocator;
}

export interface ChatTranscript {
  messages: Array<{ role: "user" | "agent"; content: string }>;
  sessionId?: string;
}

const DEFAULT_QUIET_MS = 150;
const DEFAULT_SETTLE_CAP_MS = 5000;
const POLL_MS = 40;
/** A request in flight longer than this is long-lived (long polling, streaming) and no longer waited for. */
const LONG_LIVED_REQUEST_MS = 10_000;
const EVALUATE_TIMEOUT_MS = 5000;
const DEFAULT_SCROLL = 300;

interface Tab {
  page: Page;
  inflight: Map<Request, number>;
  lastNetwork: number;
  /** The top document the ids below belong to, and every id given out in it. */
  token: string;
  retired: Set<string>;
}

/** An action's target: its frame, a handle on the element, what the page script knows of it. */
interface Target {
  frame: Frame;
  locator: ElementHandle;
  probe: Probe;
}

interface FrameEntry {
  frame: Frame;
  path: string;
}

interface Probe {
  found: number;
  visible?: boolean;
  tag?: string;
  kind?: string | null;
  disabled?: boolean;
  options?: Array<{ value: string; label: string; disabled: boolean }>;
  multiple?: boolean;
}

/** How an iframe is named in its parent document (id, name, title, src, else its position among its siblings) and whether it shows; runs on the iframe element. */
const FRAME_SEGMENT = new Function(
  "el",
  `var s = getComputedStyle(el); var r = el.getBoundingClientRect();
   var visible = s.display !== "none" && s.visibility !== "hidden" && r.width > 0 && r.height > 0 &&
     (typeof el.checkVisibility !== "function" || el.checkVisibility({ checkVisibilityCSS: true }));
   var tag = el.localName; var q = function (v) { return JSON.stringify(v); };
   var seg;
   if (el.id) seg = tag + "#" + (/^[A-Za-z][\\w-]*$/.test(el.id) ? el.id : "[id=" + q(el.id) + "]");
   else if (el.getAttribute("name")) seg = tag + "[name=" + q(el.getAttribute("name")) + "]";
   else if (el.getAttribute("title")) seg = tag + "[title=" + q(el.getAttribute("title")) + "]";
   else if (el.getAttribute("src") && el.getAttribute("src").length <= 120) seg = tag + "[src=" + q(el.getAttribute("src")) + "]";
   else { var n = 1; for (var p = el.previousElementSibling; p; p = p.previousElementSibling) if (p.localName === tag) n++;
     seg = tag + ":nth-of-type(" + n + ")"; }
   return { seg: seg, visible: visible };`,
) as (el: unknown) => { seg: string; visible: boolean };

/** A Playwright error in one line: its first line, plus the call log's reason when it has one. */
function firstLine(error: unknown): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: Playwright colours its call log.
  const message = String((error as Error)?.message ?? error).replace(/\u001b\[[0-9;]*m/g, "");
  const lines = message.split("\n");
  const head = (lines[0] ?? message)
    .replace(/^(locator|page|frame|keyboard|elementHandle)\.\w+: /, "")
    .trim();
  const reason = lines
    .map((line) => line.trim().replace(/^- /, ""))
    .filter((line) =>
      /intercepts pointer events|is not visible|is not enabled|is not editable|not stable|outside of the viewport/.test(
        line,
      ),
    )
    .at(-1);
  return reason && !head.includes(reason) ? `${head} (${reason.slice(0, 200)})` : head;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  promise.catch(() => undefined);
  return new Promise<T>((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    timer.unref?.();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolvePromise(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

const wait = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** A tab index as a model may write it: a number, or digits in a string. */
function tabIndex(value: unknown): unknown {
  return typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : value;
}

const ALLOWED_SCHEMES = new Set(["http:", "https:", "file:"]);

/**
 * The URL an action or `goto` may open: http(s) and file URLs only (never `javascript:`, `data:`,
 * `chrome:`…); a relative URL is resolved against the current page. With `fileRoot`, a file URL must lie
 * inside that folder (the simulated user may browse a local site, not the machine's files).
 */
export function checkUrl(
  url: string,
  base?: string,
  fileRoot?: string | null,
): { url: string } | { error: string } {
  if (typeof url !== "string" || url.trim() === "") return { error: "the url is empty" };
  let parsed: URL;
  try {
    parsed = base && /^(https?|file):/.test(base) ? new URL(url.trim(), base) : new URL(url.trim());
  } catch {
    return { error: `${JSON.stringify(url)} is not a URL` };
  }
  if (!ALLOWED_SCHEMES.has(parsed.protocol))
    return { error: `${parsed.protocol} URLs are not allowed (only http, https and file)` };
  if (parsed.protocol === "file:" && fileRoot !== undefined) {
    let path = "";
    try {
      path = parsed.host === "" ? resolve(fileURLToPath(parsed)) : "";
    } catch {
      path = "";
    }
    if (fileRoot === null || path === "" || !(path === fileRoot || path.startsWith(`${fileRoot}${sep}`)))
      return {
        error:
          fileRoot === null
            ? "file: URLs are allowed only when the session opened a local page"
            : `file: URLs are allowed only inside ${fileRoot}, the folder of the page the session opened`,
      };
  }
  return { url: parsed.href };
}

/**
 * One simulated user's browser: its own context (cookies, storage and cache of its own), its tabs, and the
 * observe → act loop of VISTA's UI module. Bad targets and bad arguments never throw: the action's result
 * says what went wrong and the next observation repeats it at the top, for the model to read.
 */
export class BrowserSession {
  private readonly tabs: Tab[] = [];
  private activeIndex = 0;
  private step = 0;
  private pendingError: string | undefined;
  private notes: string[] = [];
  private closed = false;
  private terminated = false;
  /** The folder of the local page `goto` opened: actions may open file URLs inside it only. */
  private fileRoot: string | null = null;
  private readonly closeHandlers: Array<() => void> = [];
  /** Element handles taken by the current action, released when it ends. */
  private handles: ElementHandle[] = [];
  private readonly actionTimeoutMs: number;
  private readonly navigationTimeoutMs: number;

  private constructor(
    private readonly context: BrowserContext,
    private readonly options: BrowserSessionOptions,
  ) {
    this.actionTimeoutMs = options.actionTimeoutMs ?? 5000;
    this.navigationTimeoutMs = options.navigationTimeoutMs ?? 30_000;
  }

  /** Opens a session with a fresh browser context on `browser` (use `BrowserDriver.newSession`). */
  static async open(browser: Browser, options: BrowserSessionOptions = {}): Promise<BrowserSession> {
    const context = await browser.newContext({
      viewport: options.viewport ?? { width: 1280, height: 800 },
      acceptDownloads: false,
    });
    await context.addInitScript({ content: pageCall("token") });
    const session = new BrowserSession(context, options);
    context.on("page", (page) => session.addTab(page, true));
    session.addTab(await context.newPage(), true);
    return session;
  }

  /** True once `terminate` was acted (the user is done) or the session was closed. */
  get done(): boolean {
    return this.terminated || this.closed;
  }

  /** The active tab's page (for callers that need Playwright itself). */
  get page(): Page {
    return this.activeTab().page;
  }

  onClose(handler: () => void): void {
    this.closeHandlers.push(handler);
  }

  private addTab(page: Page, activate: boolean): void {
    let index = this.tabs.findIndex((tab) => tab.page === page);
    if (index < 0) {
      const tab: Tab = { page, inflight: new Map(), lastNetwork: Date.now(), token: "", retired: new Set() };
      const ignored = (request: Request) => {
        const type = request.resourceType();
        return type === "websocket" || type === "eventsource";
      };
      page.on("request", (request) => {
        if (ignored(request)) return;
        tab.inflight.set(request, Date.now());
        tab.lastNetwork = Date.now();
      });
      const finished = (request: Request) => {
        tab.inflight.delete(request);
        tab.lastNetwork = Date.now();
      };
      page.on("requestfinished", finished);
      page.on("requestfailed", finished);
      // Dialogs never block the page: alerts and "leave this page?" are accepted, confirm and prompt
      // dismissed (the cautious answer); the next observation says so.
      page.on("dialog", (dialog) => {
        const accept = dialog.type() === "alert" || dialog.type() === "beforeunload";
        this.notes.push(
          `the page opened a dialog (${dialog.type()}): ${JSON.stringify(dialog.message().slice(0, 300))} (${accept ? "accepted" : "dismissed"})`,
        );
        (accept ? dialog.accept() : dialog.dismiss()).catch(() => undefined);
      });
      page.on("close", () => this.removeTab(page));
      page.setDefaultTimeout(this.actionTimeoutMs);
      page.setDefaultNavigationTimeout(this.navigationTimeoutMs);
      this.tabs.push(tab);
      index = this.tabs.length - 1;
    }
    if (activate) this.activeIndex = index;
  }

  private removeTab(page: Page): void {
    const index = this.tabs.findIndex((tab) => tab.page === page);
    if (index < 0) return;
    this.tabs.splice(index, 1);
    if (this.activeIndex > index || this.activeIndex >= this.tabs.length)
      this.activeIndex = Math.max(0, this.activeIndex - 1);
  }

  private activeTab(): Tab {
    const tab = this.tabs[this.activeIndex] ?? this.tabs[0];
    if (!tab) throw new TerrariumError("INVALID_INPUT", "the browser session has no open tab");
    return tab;
  }

  /** A blank tab when the page closed the last one, so the session always has somewhere to be. */
  private async ensureTab(): Promise<Tab> {
    if (this.tabs.length === 0) this.addTab(await this.context.newPage(), true);
    return this.activeTab();
  }

  /** Opens `url` (http(s), file, or a relative URL) in the active tab and waits for it to settle. */
  async goto(url: string): Promise<SettleResult> {
    this.assertOpen();
    const tab = await this.ensureTab();
    const checked = checkUrl(url, tab.page.url());
    if ("error" in checked) throw new TerrariumError("INVALID_INPUT", `cannot open ${url}: ${checked.error}`);
    if (checked.url.startsWith("file:")) {
      try {
        this.fileRoot = dirname(resolve(fileURLToPath(checked.url)));
      } catch {
        throw new TerrariumError("INVALID_INPUT", `cannot open ${url}: not a local file URL`);
      }
    }
    try {
      await tab.page.goto(checked.url, { waitUntil: "domcontentloaded" });
    } catch (error) {
      throw new TerrariumError("INVALID_INPUT", `could not open ${checked.url}: ${firstLine(error)}`);
    }
    return this.settle();
  }

  private assertOpen(): void {
    if (this.closed) throw new TerrariumError("INVALID_INPUT", "the browser session is closed");
  }

  /** Every frame of the page worth reading, top first, depth first; frames inside hidden iframes skipped. */
  private async frames(page: Page): Promise<FrameEntry[]> {
    const out: FrameEntry[] = [];
    const visit = async (frame: Frame, path: string): Promise<void> => {
      out.push({ frame, path });
      for (const child of frame.childFrames()) {
        if (child.isDetached()) continue;
        let segment: { seg: string; visible: boolean };
        let handle: ElementHandle | undefined;
        try {
          handle = await withTimeout(child.frameElement(), EVALUATE_TIMEOUT_MS, "frame lookup");
          segment = await withTimeout(handle.evaluate(FRAME_SEGMENT), EVALUATE_TIMEOUT_MS, "frame lookup");
        } catch {
          continue;
        } finally {
          handle?.dispose().catch(() => undefined);
        }
        if (!segment.visible) continue;
        await visit(child, path ? `${path} > ${segment.seg}` : segment.seg);
      }
    };
    await visit(page.mainFrame(), "");
    return out;
  }

  private async evaluateHandle(frame: Frame, expression: string): Promise<ElementHandle | null> {
    const handle = await withTimeout(
      frame.evaluateHandle(expression),
      EVALUATE_TIMEOUT_MS,
      "the page script",
    );
    const element = handle.asElement();
    if (!element) {
      await handle.dispose().catch(() => undefined);
      return null;
    }
    this.handles.push(element);
    return element as ElementHandle;
  }

  private async evaluate<T>(frame: Frame, expression: string): Promise<T> {
    return withTimeout(frame.evaluate(expression) as Promise<T>, EVALUATE_TIMEOUT_MS, "the page script");
  }

  /** Looks at the active tab: every frame's visible elements with stable ids, and the page as text. */
  async observe(): Promise<Observation> {
    this.assertOpen();
    const tab = await this.ensureTab();
    const page = tab.page;
    const entries = await this.frames(page);
    const roleAttribute = this.options.chat?.roleAttribute ?? DEFAULT_CHAT_LOCATOR.roleAttribute;
    const looked = await Promise.all(
      entries.map((entry) =>
        this.evaluate<RawFrameObservation | null>(entry.frame, pageCall("observe", { roleAttribute })).then(
          (raw) => (raw ? { entry, raw } : null),
          // A frame that navigated or went away while we looked: it is read at the next step.
          () => null,
        ),
      ),
    );
    const results = looked.filter(
      (result): result is { entry: FrameEntry; raw: RawFrameObservation } => result !== null,
    );
    const top = results.find((result) => result.entry.path === "")?.raw;
    if (top && top.token !== tab.token) {
      tab.token = top.token;
      tab.retired.clear();
    }
    const { ids, writes } = assignIds(
      results.map((result) => result.raw.elements),
      tab.retired,
    );
    await Promise.all(
      results.map(async (result, f) => {
        const pairs = writes[f] ?? [];
        if (pairs.length === 0) return;
        await this.evaluate(result.entry.frame, pageCall("assign", pairs)).catch(() => undefined);
      }),
    );

    const elements: ObservedElement[] = [];
    const frameTexts: FrameText[] = results.map((result, f) => {
      const observed = result.raw.elements.map((raw, i) =>
        toObservedElement(raw, ids[f]?.[i] ?? raw.base, result.entry.path),
      );
      elements.push(...observed);
      return {
        path: result.entry.path,
        url: result.raw.url,
        lines: result.raw.lines,
        elements: observed,
        shadows: result.raw.elements.map((raw) => raw.shadow),
      };
    });

    const tabs = await this.tabInfo();
    const title = top?.title ?? (await page.title().catch(() => ""));
    const url = page.url();
    const error = this.pendingError;
    const notes = this.notes;
    this.pendingError = undefined;
    this.notes = [];
    const observation: Observation = {
      url,
      title,
      tabs,
      elements,
      text: renderObservationText({
        title,
        url,
        tabs,
        frames: frameTexts,
        ...(error ? { error } : {}),
        ...(notes.length ? { notes } : {}),
        maxChars: this.options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS,
      }),
    };
    if (error) observation.error = error;
    this.step += 1;
    if (this.options.screenshotsDir) {
      const file = resolve(join(this.options.screenshotsDir, `step-${this.step}.png`));
      try {
        await this.screenshot(file);
        observation.screenshot = file;
      } catch {
        // A page that cannot be painted still gives its observation.
      }
    }
    return observation;
  }

  private async tabInfo(): Promise<TabInfo[]> {
    return Promise.all(
      this.tabs.map(async (tab, index) => ({
        index,
        url: tab.page.url(),
        title: await withTimeout(tab.page.title(), 2000, "title").catch(() => ""),
        active: index === this.activeIndex,
      })),
    );
  }

  /** Saves a screenshot of the active tab's viewport. */
  async screenshot(file: string): Promise<string> {
    this.assertOpen();
    const tab = await this.ensureTab();
    mkdirSync(dirname(resolve(file)), { recursive: true });
    await tab.page.screenshot({ path: file, timeout: 10_000 });
    return file;
  }

  /**
   * Waits until the active tab is quiet: no request in flight (any frame) and no DOM change (any frame,
   * shadow roots included) for `quietMs`, counted from the call at the earliest; gives up at `timeoutMs`.
   * No fixed sleeps: it returns as soon as the page is quiet.
   */
  async settle(options: SettleOptions = {}): Promise<SettleResult> {
    const quietMs = options.quietMs ?? this.options.settle?.quietMs ?? DEFAULT_QUIET_MS;
    const cap = options.timeoutMs ?? this.options.settle?.timeoutMs ?? DEFAULT_SETTLE_CAP_MS;
    const start = Date.now();
    let pending = 0;
    for (;;) {
      if (this.closed || this.tabs.length === 0)
        return { ms: Date.now() - start, settled: true, pendingRequests: 0 };
      const tab = this.activeTab();
      const now = Date.now();
      pending = 0;
      for (const [request, since] of tab.inflight) {
        if (now - since > LONG_LIVED_REQUEST_MS) tab.inflight.delete(request);
        else pending++;
      }
      let lastChange = Math.max(start, tab.lastNetwork);
      if (pending === 0 && Date.now() - lastChange >= quietMs) {
        const times = await Promise.all(
          tab.page
            .frames()
            .map((frame) =>
              withTimeout(frame.evaluate(pageCall("lastMutation")) as Promise<number>, 1000, "settle").catch(
                () => Date.now(),
              ),
            ),
        );
        for (const time of times) if (typeof time === "number") lastChange = Math.max(lastChange, time);
        if (Date.now() - lastChange >= quietMs) break;
      }
      const elapsed = Date.now() - start;
      if (elapsed >= cap) return { ms: elapsed, settled: false, pendingRequests: pending };
      await wait(Math.min(POLL_MS, cap - elapsed));
    }
    return { ms: Date.now() - start, settled: true, pendingRequests: 0 };
  }

  /**
   * Finds a target by semantic id in every frame (shadow roots included, closed ones too): its frame, a
   * handle on the element (released after the action) and what the page script knows of it.
   */
  private async locate(id: unknown): Promise<Target | string> {
    if (typeof id !== "string" || id.trim() === "") return "the action needs a target: an element id";
    const tab = this.activeTab();
    let hidden: Probe | undefined;
    for (const entry of await this.frames(tab.page)) {
      let probe: Probe;
      try {
        probe = await this.evaluate<Probe>(entry.frame, pageCall("probe", id));
      } catch {
        continue;
      }
      if (!probe || probe.found === 0) continue;
      if (!probe.visible) {
        hidden ??= probe;
        continue;
      }
      const handle = await this.evaluateHandle(entry.frame, pageCall("element", id));
      if (!handle) continue;
      return { frame: entry.frame, locator: handle, probe };
    }
    if (hidden) return `element "${id}" is hidden (not visible on the page)`;
    return `no element with id "${id}" on the page (use an id from the latest observation)`;
  }

  private async target(
    id: unknown,
    need: "any" | "input" | "select",
    options: { enabled?: boolean } = {},
  ): Promise<Target | string> {
    const found = await this.locate(id);
    if (typeof found === "string") return found;
    const { probe } = found;
    if (options.enabled !== false && probe.disabled) return `element "${String(id)}" is disabled`;
    if (need === "input" && probe.kind !== "input")
      return `element "${String(id)}" is ${probe.kind ? `a ${probe.kind}` : "not an input"} (${probe.tag}), not an input: only inputs can be typed into or cleared`;
    if (need === "select" && probe.tag !== "select")
      return `element "${String(id)}" is a ${probe.kind ?? "plain element"} (${probe.tag}), not a select`;
    return found;
  }

  /**
   * Does one action on the active tab, then settles. Never throws for a bad action: `ok: false` and the
   * error (repeated at the top of the next observation).
   */
  async act(action: UiAction): Promise<ActionResult> {
    const started = Date.now();
    let error: string | undefined;
    if (this.closed) error = "the browser session is closed";
    else if (this.terminated) error = "the session has ended (terminate was already acted)";
    else {
      try {
        await this.ensureTab();
        error = await this.perform(action);
      } catch (caught) {
        error = firstLine(caught);
      } finally {
        const handles = this.handles;
        this.handles = [];
        await Promise.all(handles.map((handle) => handle.dispose().catch(() => undefined)));
      }
    }
    const actionMs = Date.now() - started;
    const busy = !error && !this.closed && action?.type !== "terminate";
    const settled = busy ? await this.settle() : { ms: 0, settled: true, pendingRequests: 0 };
    if (error) this.pendingError = `${String(action?.type ?? "action")} failed: ${error}`;
    const result: ActionResult = { ok: !error, actionMs, settleMs: settled.ms, settled: settled.settled };
    if (error) result.error = error;
    return result;
  }

  private async perform(action: UiAction): Promise<string | undefined> {
    if (!action || typeof action !== "object" || !UI_ACTION_TYPES.includes(action.type))
      return `unknown action ${JSON.stringify((action as { type?: unknown })?.type ?? action)}; actions are ${UI_ACTION_TYPES.join(", ")}`;
    const tab = this.activeTab();
    const page = tab.page;
    switch (action.type) {
      case "click": {
        const found = await this.target(action.target, "any");
        if (typeof found === "string") return found;
        await found.locator.click({ timeout: this.actionTimeoutMs });
        return undefined;
      }
      case "hover": {
        const found = await this.target(action.target, "any", { enabled: false });
        if (typeof found === "string") return found;
        await found.locator.hover({ timeout: this.actionTimeoutMs });
        return undefined;
      }
      case "type": {
        if (typeof action.text !== "string") return "type needs a text";
        const found = await this.target(action.target, "input");
        if (typeof found === "string") return found;
        await found.locator.fill(action.text, { timeout: this.actionTimeoutMs });
        if (action.enter) await found.locator.press("Enter", { timeout: this.actionTimeoutMs });
        return undefined;
      }
      case "clear": {
        const found = await this.target(action.target, "input");
        if (typeof found === "string") return found;
        await found.locator.fill("", { timeout: this.actionTimeoutMs });
        return undefined;
      }
      case "select": {
        const found = await this.target(action.target, "select");
        if (typeof found === "string") return found;
        const options = found.probe.options ?? [];
        const wanted = String(action.value ?? "");
        const norm = (text: string) => text.trim().toLowerCase();
        const index =
          [
            options.findIndex((option) => option.value === wanted),
            options.findIndex((option) => option.label === wanted),
            options.findIndex(
              (option) => norm(option.label) === norm(wanted) || norm(option.value) === norm(wanted),
            ),
          ].find((i) => i >= 0) ?? -1;
        const option = options[index];
        if (!option)
          return `select "${action.target}" has no option ${JSON.stringify(wanted)} (options: ${options
            .slice(0, 30)
            .map((o) => JSON.stringify(o.label))
            .join(", ")})`;
        if (option.disabled)
          return `option ${JSON.stringify(option.label)} of "${action.target}" is disabled`;
        await found.locator.selectOption({ index }, { timeout: this.actionTimeoutMs });
        return undefined;
      }
      case "key_press": {
        if (typeof action.key !== "string" || action.key === "") return "key_press needs a key (e.g. Enter)";
        if (action.target !== undefined) {
          const found = await this.target(action.target, "any");
          if (typeof found === "string") return found;
          await found.locator.press(action.key, { timeout: this.actionTimeoutMs });
        } else await page.keyboard.press(action.key);
        return undefined;
      }
      case "scroll": {
        if (action.direction !== "up" && action.direction !== "down")
          return `scroll needs a direction "up" or "down", not ${JSON.stringify(action.direction)}`;
        const amount = Math.min(
          Math.max(Math.abs(Number(action.amount ?? DEFAULT_SCROLL)) || DEFAULT_SCROLL, 1),
          20_000,
        );
        const dy = action.direction === "down" ? amount : -amount;
        if (action.target !== undefined) {
          const found = await this.target(action.target, "any", { enabled: false });
          if (typeof found === "string") return found;
          await this.evaluate(found.frame, pageCall("scroll", action.target, dy));
        } else await this.evaluate(page.mainFrame(), pageCall("scroll", null, dy));
        return undefined;
      }
      case "goto_url": {
        const checked = checkUrl(action.url, page.url(), this.fileRoot);
        if ("error" in checked) return checked.error;
        await page.goto(checked.url, { waitUntil: "domcontentloaded" });
        return undefined;
      }
      case "back":
      case "forward": {
        const before = page.url();
        const response =
          action.type === "back"
            ? await page.goBack({ waitUntil: "domcontentloaded" })
            : await page.goForward({ waitUntil: "domcontentloaded" });
        if (response === null && page.url() === before)
          return action.type === "back"
            ? "there is no earlier page in this tab's history"
            : "there is no later page in this tab's history";
        return undefined;
      }
      case "refresh":
        await page.reload({ waitUntil: "domcontentloaded" });
        return undefined;
      case "new_tab": {
        let url: string | undefined;
        if (action.url !== undefined && action.url !== "") {
          const checked = checkUrl(action.url, page.url(), this.fileRoot);
          if ("error" in checked) return checked.error;
          url = checked.url;
        }
        const created = await this.context.newPage();
        this.addTab(created, true);
        if (url) await created.goto(url, { waitUntil: "domcontentloaded" });
        return undefined;
      }
      case "switch_tab": {
        const index = tabIndex(action.index);
        const problem = this.badTab(index);
        if (problem) return problem;
        this.activeIndex = index as number;
        await this.activeTab().page.bringToFront();
        return undefined;
      }
      case "close_tab": {
        const index = tabIndex(action.index ?? this.activeIndex);
        const problem = this.badTab(index);
        if (problem) return problem;
        if (this.tabs.length === 1) return "cannot close the last tab";
        const closing = this.tabs[index as number] as Tab;
        await closing.page.close();
        this.removeTab(closing.page);
        return undefined;
      }
      case "terminate":
        this.terminated = true;
        return undefined;
    }
  }

  private badTab(index: unknown): string | undefined {
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= this.tabs.length)
      return `no tab ${JSON.stringify(index)} (open tabs: ${this.tabs.length === 1 ? "0" : `0 to ${this.tabs.length - 1}`})`;
    return undefined;
  }

  /**
   * The chat transcript of the active tab: the locator's messages, in order, from the frame it names (a
   * CSS selector of the iframe) or from every frame; roles from the role attribute (`user` / `agent`;
   * `assistant` and `bot` read as agent), and the session id from `sessionAttribute` when present.
   */
  async readChat(locator: ChatLocator = DEFAULT_CHAT_LOCATOR): Promise<ChatTranscript> {
    this.assertOpen();
    const tab = await this.ensureTab();
    const roleAttribute = locator.roleAttribute ?? "data-chat-role";
    let frames: Frame[];
    if (locator.frame) {
      const handle = await tab.page
        .locator(locator.frame)
        .first()
        .elementHandle({ timeout: this.actionTimeoutMs })
        .catch(() => null);
      const frame = handle ? await handle.contentFrame() : null;
      if (!frame)
        throw new TerrariumError(
          "INVALID_INPUT",
          `no iframe matches the chat frame selector ${locator.frame}`,
        );
      frames = [frame];
    } else frames = (await this.frames(tab.page)).map((entry) => entry.frame);
    const transcript: ChatTranscript = { messages: [] };
    for (const frame of frames) {
      let part: { messages?: ChatTranscript["messages"]; sessionId?: string | null; error?: string };
      try {
        part = await this.evaluate(
          frame,
          pageCall("readChat", locator.message, roleAttribute, locator.sessionAttribute),
        );
      } catch {
        continue;
      }
      if (part.error) throw new TerrariumError("INVALID_INPUT", part.error);
      transcript.messages.push(...(part.messages ?? []));
      if (transcript.sessionId === undefined && typeof part.sessionId === "string" && part.sessionId !== "")
        transcript.sessionId = part.sessionId;
    }
    return transcript;
  }

  /** Closes the session's context (all its tabs). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.context.close().catch(() => undefined);
    for (const handler of this.closeHandlers) handler();
  }
}
