import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BrowserDriver,
  type BrowserSession,
  launchBrowser,
  type Observation,
  type ObservedElement,
  UI_ACTION_TYPES,
} from "../../src/users/browser/index.js";
import { need } from "../helpers/requirements.js";

/**
 * The browser UI module against real pages in Debian's Chromium: a support page with a chat widget in a
 * same-origin iframe (its reply comes after a delayed request), a custom element with an open shadow
 * root, a select, a link opening a new tab, hidden and disabled elements. CI sets
 * TERRARIUM_REQUIRE_BROWSER=1, so there a missing browser fails; elsewhere these tests are skipped.
 */
const CHROMIUM = need("chromium", "users/browser tests on real pages");

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "users-browser");
const REPLY_DELAY_MS = 400;

function startServer(): Promise<{ server: Server; base: string; replies: () => number }> {
  let replies = 0;
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    if (url.pathname === "/api/hang") return; // never answers
    if (url.pathname === "/api/reply") {
      replies++;
      const q = url.searchParams.get("q") ?? "";
      setTimeout(() => {
        response.setHeader("content-type", "application/json");
        response.end(
          JSON.stringify({
            reply: `You said: ${q}`,
            ...(/track/i.test(q) ? { link: "/help.html" } : {}),
          }),
        );
      }, REPLY_DELAY_MS);
      return;
    }
    const name = url.pathname === "/" ? "index.html" : url.pathname.slice(1);
    const file = join(FIXTURES, name);
    if (!/^[\w-]+\.html$/.test(name) || !existsSync(file)) {
      response.statusCode = 404;
      response.end("not found");
      return;
    }
    response.setHeader("content-type", extname(file) === ".html" ? "text/html; charset=utf-8" : "text/plain");
    response.end(readFileSync(file));
  });
  return new Promise((done) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      done({ server, base: `http://127.0.0.1:${port}`, replies: () => replies });
    });
  });
}

const byLabel = (observation: Observation, label: string, frame?: string): ObservedElement => {
  const found = observation.elements.find(
    (element) => element.label === label && (frame === undefined || element.frame === frame),
  );
  if (!found) throw new Error(`no element labelled ${label} in ${JSON.stringify(observation.elements)}`);
  return found;
};

describe.runIf(CHROMIUM)("users/browser: a session on real pages", () => {
  let driver: BrowserDriver;
  let server: Server;
  let base: string;
  let replies: () => number;
  let dir: string;

  beforeAll(async () => {
    ({ server, base, replies } = await startServer());
    driver = await launchBrowser({ executablePath: CHROMIUM as string });
    dir = mkdtempSync(join(tmpdir(), "users-browser-"));
  }, 60_000);

  afterAll(async () => {
    await driver?.close();
    server?.closeAllConnections();
    await new Promise((done) => server?.close(done));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function open(options: Parameters<BrowserDriver["newSession"]>[0] = {}): Promise<BrowserSession> {
    const session = await driver.newSession(options);
    await session.goto(`${base}/index.html`);
    return session;
  }

  it("observes the iframe and the open shadow root, each visible element in exactly one kind", async () => {
    const session = await open();
    try {
      const observation = await session.observe();
      const { elements } = observation;
      expect(observation.title).toBe("Acme Support");
      expect(observation.tabs).toEqual([
        { index: 0, url: `${base}/index.html`, title: "Acme Support", active: true },
      ]);

      // Ids are unique over the whole page (all frames) and each element has one kind.
      expect(new Set(elements.map((element) => element.id)).size).toBe(elements.length);
      const kinds = (kind: string) => elements.filter((element) => element.kind === kind).map((e) => e.label);
      expect(kinds("input")).toEqual(["Search", "Notes", "Coupon code", "Chat message"]);
      expect(kinds("select")).toEqual(["Topic"]);
      expect(kinds("clickable")).toEqual([
        "Search",
        "Send me news",
        "Premium plan details",
        "Checkout",
        "Hide details",
        "Order details",
        "Menu",
        "View options",
        "View options",
        "Open help center",
        "Go to page two",
        "Apply",
        "Rate us",
        "Send",
      ]);

      // Ids are slugs of what a person reads, with the kind; frames and shadow hops are named.
      expect(byLabel(observation, "Search", "")).toMatchObject({
        kind: "input",
        id: "search-input",
        role: "search",
      });
      expect(elements.find((e) => e.kind === "clickable" && e.label === "Search")?.id).toBe("search-button");
      expect(byLabel(observation, "Chat message")).toMatchObject({
        id: "chat-message-input",
        frame: "iframe#chat",
        tag: "input",
      });
      expect(byLabel(observation, "Send")).toMatchObject({ id: "send-button", frame: "iframe#chat" });
      expect(byLabel(observation, "Coupon code")).toMatchObject({
        id: "coupon-code-input",
        frame: "acme-helper>shadow",
      });
      expect(byLabel(observation, "Apply")).toMatchObject({
        id: "apply-button",
        frame: "acme-helper>shadow",
      });
      expect(byLabel(observation, "Topic")).toMatchObject({
        id: "topic-select",
        value: "Billing",
        options: ["Billing", "Shipping", "Returns"],
      });
      expect(byLabel(observation, "Send me news")).toMatchObject({ role: "checkbox", checked: false });
      expect(byLabel(observation, "Checkout")).toMatchObject({ disabled: true });
      expect(byLabel(observation, "Open help center")).toMatchObject({
        id: "open-help-center-link",
        tag: "a",
      });
      expect(byLabel(observation, "Premium plan details")).toMatchObject({ tag: "div", kind: "clickable" });

      // A label that repeats takes the heading that tells its element apart.
      expect(elements.filter((e) => e.label === "View options").map((e) => e.id)).toEqual([
        "red-mug-view-options-button",
        "blue-mug-view-options-button",
      ]);

      // Hidden ones are not observed: display:none, aria-hidden, visibility:hidden, zero size, the menu.
      for (const hidden of ["Secret", "Ghost", "Invisible", "Tiny", "Settings"])
        expect(elements.some((element) => element.label === hidden)).toBe(false);

      // The text: title, headings, text blocks and elements, grouped by frame.
      const text = observation.text;
      expect(text).toContain("Page: Acme Support");
      expect(text).toContain("# Acme Support");
      expect(text).toContain("## Coupons");
      expect(text).toContain("Welcome to Acme. Ask our assistant anything about your orders.");
      expect(text).toContain('[search-button] clickable button "Search"');
      expect(text).toContain(
        '[topic-select] select select "Topic" (value "Billing"; options: "Billing", "Shipping", "Returns")',
      );
      expect(text).toContain('[apply-button] clickable button "Apply" (in acme-helper>shadow)');
      expect(text).toContain('[checkout-button] clickable button "Checkout" (disabled)');
      expect(text).toMatch(
        /Frame iframe#chat \(http:\/\/127\.0\.0\.1:\d+\/chat\.html\):\n\[chat-message-input\]/,
      );
      expect(text).not.toContain("Secret");
      expect(observation.error).toBeUndefined();
    } finally {
      await session.close();
    }
  });

  it("keeps ids across steps and gives new ids only to new elements", async () => {
    const session = await open();
    try {
      const first = await session.observe();
      const second = await session.observe();
      expect(second.elements).toEqual(first.elements);

      // A reply with a link adds one clickable in the iframe; every other element keeps its id.
      const result = await session.act({
        type: "type",
        target: "chat-message-input",
        text: "track my order",
        enter: true,
      });
      expect(result).toMatchObject({ ok: true, settled: true });
      const third = await session.observe();
      // Elements keyed by where they are and what they say (with the occurrence, for repeated labels).
      const keys = (elements: ObservedElement[]) => {
        const seen = new Map<string, number>();
        return elements.map((element) => {
          const key = `${element.frame}|${element.kind}|${element.label}`;
          seen.set(key, (seen.get(key) ?? 0) + 1);
          return `${key}|${seen.get(key)}`;
        });
      };
      const before = new Map(keys(first.elements).map((key, i) => [key, first.elements[i]?.id]));
      const thirdKeys = keys(third.elements);
      const added = third.elements.filter((_, i) => !before.has(thirdKeys[i] as string));
      expect(added).toEqual([
        { id: "track-order-link", kind: "clickable", tag: "a", label: "Track order", frame: "iframe#chat" },
      ]);
      third.elements.forEach((element, i) => {
        if (!added.includes(element)) expect(element.id).toBe(before.get(thirdKeys[i] as string));
      });

      // A second reply's link is a new element with the same label: a new id, the first keeps its own.
      await session.act({ type: "type", target: "chat-message-input", text: "track it again", enter: true });
      const fourth = await session.observe();
      expect(fourth.elements.filter((e) => e.label === "Track order").map((e) => e.id)).toEqual([
        "track-order-link",
        "track-order-link-2",
      ]);

      // An element cloned by the page copies the attribute; the clone is told apart and named anew.
      await session.page.evaluate(
        `document.getElementById("toggle").after(document.getElementById("toggle").cloneNode(true))`,
      );
      const fifth = await session.observe();
      expect(fifth.elements.filter((e) => e.label === "Hide details").map((e) => e.id)).toEqual([
        "hide-details-button",
        "hide-details-button-2",
      ]);

      // A reload is a new document: the same page gets the same ids again.
      await session.act({ type: "refresh" });
      const reloaded = await session.observe();
      expect(reloaded.elements.map((e) => e.id)).toEqual(first.elements.map((e) => e.id));
    } finally {
      await session.close();
    }
  });

  it("settles on the delayed reply without fixed sleeps, and reads the chat in order with roles", async () => {
    const session = await open();
    try {
      await session.observe();
      const repliesBefore = replies();
      const result = await session.act({
        type: "type",
        target: "chat-message-input",
        text: "hello there",
        enter: true,
      });
      expect(result.ok).toBe(true);
      expect(result.settled).toBe(true);
      // It waited for the request (REPLY_DELAY_MS) and the widget's own delay, and no longer than needed.
      expect(result.settleMs).toBeGreaterThanOrEqual(REPLY_DELAY_MS);
      expect(result.settleMs).toBeLessThan(2500);
      expect(replies()).toBe(repliesBefore + 1);
      // The reply is on the page right after act returns.
      const chat = await session.readChat();
      expect(chat).toEqual({
        messages: [
          { role: "user", content: "hello there" },
          { role: "agent", content: "You said: hello there" },
        ],
        sessionId: "sess-42",
      });
      const observation = await session.observe();
      expect(observation.text).toContain("(user) hello there\n(agent) You said: hello there");

      // Clicking Send works as well, and the frame selector of a locator narrows the reading.
      await session.act({ type: "type", target: "chat-message-input", text: "second" });
      const click = await session.act({ type: "click", target: "send-button" });
      expect(click.ok).toBe(true);
      const narrowed = await session.readChat({ frame: "iframe#chat", message: "[data-chat-role]" });
      expect(narrowed.messages.map((m) => `${m.role}: ${m.content}`)).toEqual([
        "user: hello there",
        "agent: You said: hello there",
        "user: second",
        "agent: You said: second",
      ]);
      expect(narrowed.sessionId).toBeUndefined();

      // A shadow root written a few characters at a time after its request: settle waits for the last write.
      await session.act({ type: "type", target: "coupon-code-input", text: "SAVE10" });
      const applied = await session.act({ type: "click", target: "apply-button" });
      expect(applied).toMatchObject({ ok: true, settled: true });
      expect(applied.settleMs).toBeGreaterThanOrEqual(REPLY_DELAY_MS + 400);
      expect(applied.settleMs).toBeLessThan(3000);
      expect(await session.page.locator("acme-helper .out").textContent()).toBe("Coupon SAVE10 applied");

      // settle on a quiet page returns after the quiet window, far under the cap.
      const quiet = await session.settle();
      expect(quiet.settled).toBe(true);
      expect(quiet.ms).toBeLessThan(1000);
    } finally {
      await session.close();
    }
  });

  it("does every action type, in the iframe and the shadow root too", { timeout: 60_000 }, async () => {
    const session = await open();
    const page = () => session.page;
    const done: string[] = [];
    const ok = async (action: Parameters<BrowserSession["act"]>[0]) => {
      const result = await session.act(action);
      expect(result, JSON.stringify(action)).toMatchObject({ ok: true });
      expect(result.error).toBeUndefined();
      done.push(action.type);
      return result;
    };
    try {
      await session.observe();
      // type (+ enter), clear, click, select, hover, key_press, scroll
      await ok({ type: "type", target: "search-input", text: "shoes" });
      await ok({ type: "click", target: "search-button" });
      expect(await page().textContent("#results")).toBe("Results for shoes");
      await ok({ type: "clear", target: "search-input" });
      expect(await page().inputValue("#search")).toBe("");

      await ok({ type: "type", target: "notes-input", text: "call me back" });
      expect(await page().textContent("#notes")).toBe("call me back");
      expect(byLabel(await session.observe(), "Notes")).toMatchObject({
        tag: "div",
        kind: "input",
        value: "call me back",
      });
      await ok({ type: "clear", target: "notes-input" });
      expect(await page().textContent("#notes")).toBe("");

      await ok({ type: "type", target: "coupon-code-input", text: "SAVE10" });
      await ok({ type: "click", target: "apply-button" });
      let observation = await session.observe();
      expect(observation.text).toContain("Coupon SAVE10 applied");
      expect(byLabel(observation, "Coupon code").value).toBe("SAVE10");

      // A closed shadow root is reached too (its root was kept when the page created it).
      expect(byLabel(observation, "Rate us")).toMatchObject({
        id: "rate-us-button",
        frame: "acme-rating>shadow",
      });
      await ok({ type: "click", target: "rate-us-button" });
      expect((await session.observe()).text).toContain("Thanks for rating");

      await ok({ type: "select", target: "topic-select", value: "shipping" });
      expect(await page().inputValue("#topic")).toBe("shipping");
      await ok({ type: "select", target: "topic-select", value: "Billing" });
      expect(await page().inputValue("#topic")).toBe("billing");

      await ok({ type: "click", target: "send-me-news-checkbox" });
      expect(byLabel(await session.observe(), "Send me news").checked).toBe(true);

      await ok({ type: "hover", target: "menu-button" });
      observation = await session.observe();
      expect(byLabel(observation, "Settings")).toMatchObject({
        kind: "clickable",
        tag: "a",
        id: "settings-link",
      });

      await ok({ type: "type", target: "chat-message-input", text: "via key press" });
      await ok({ type: "key_press", key: "Enter", target: "chat-message-input" });
      expect((await session.readChat()).messages.at(-1)).toEqual({
        role: "agent",
        content: "You said: via key press",
      });
      await ok({ type: "click", target: "search-input" });
      await ok({ type: "key_press", key: "a" });
      expect(await page().inputValue("#search")).toBe("a");

      await ok({ type: "scroll", direction: "down" });
      expect(await page().evaluate("window.scrollY")).toBe(300);
      await ok({ type: "scroll", direction: "down", amount: 500 });
      await ok({ type: "scroll", direction: "up", amount: 100 });
      expect(await page().evaluate("window.scrollY")).toBe(700);

      // Links: a new tab opened by the page is tracked and becomes active.
      await ok({ type: "click", target: "open-help-center-link" });
      observation = await session.observe();
      expect(observation.tabs.map((tab) => [tab.index, tab.title, tab.active])).toEqual([
        [0, "Acme Support", false],
        [1, "Help center", true],
      ]);
      expect(observation.title).toBe("Help center");
      expect(observation.text).toContain("Tabs: [0] Acme Support | [1] Help center (active)");
      await ok({ type: "switch_tab", index: 0 });
      expect((await session.observe()).title).toBe("Acme Support");
      await ok({ type: "close_tab", index: 1 });
      expect((await session.observe()).tabs).toHaveLength(1);

      await ok({ type: "new_tab", url: `${base}/page2.html` });
      observation = await session.observe();
      expect(observation.tabs.map((tab) => tab.active)).toEqual([false, true]);
      expect(observation.title).toBe("Page two");
      await ok({ type: "close_tab" });
      expect((await session.observe()).title).toBe("Acme Support");

      // Navigation in the tab: goto_url (relative too), back, forward, refresh.
      await ok({ type: "goto_url", url: "/page2.html" });
      expect((await session.observe()).title).toBe("Page two");
      await ok({ type: "back" });
      expect((await session.observe()).title).toBe("Acme Support");
      await ok({ type: "forward" });
      expect((await session.observe()).title).toBe("Page two");
      await ok({ type: "refresh" });
      expect((await session.observe()).url).toBe(`${base}/page2.html`);
      await ok({ type: "goto_url", url: `${base}/index.html` });
      await session.observe();

      // Scroll inside the chat's message list: the nearest scrollable container of a target in the iframe.
      for (const text of ["track one", "two", "three", "four", "five"])
        await ok({ type: "type", target: "chat-message-input", text, enter: true });
      expect(byLabel(await session.observe(), "Track order").id).toBe("track-order-link");
      const chatFrame = page()
        .frames()
        .find((frame) => frame.url().endsWith("/chat.html"));
      await chatFrame?.evaluate(`document.getElementById("messages").scrollTop = 0`);
      await ok({ type: "scroll", direction: "down", target: "track-order-link", amount: 50 });
      expect(await chatFrame?.evaluate(`document.getElementById("messages").scrollTop`)).toBe(50);
      expect(await page().evaluate("window.scrollY")).toBe(0);

      await ok({ type: "terminate" });
      expect(session.done).toBe(true);
      const after = await session.act({ type: "click", target: "search-button" });
      expect(after.ok).toBe(false);
      expect(after.error).toMatch(/ended/);
      expect(new Set(done)).toEqual(new Set(UI_ACTION_TYPES));
    } finally {
      await session.close();
    }
  });

  it("returns errors instead of throwing, and reports them at the top of the next observation", async () => {
    const session = await open({ actionTimeoutMs: 1000 });
    const fails = async (action: Parameters<BrowserSession["act"]>[0], pattern: RegExp) => {
      const result = await session.act(action);
      expect(result.ok, JSON.stringify(action)).toBe(false);
      expect(result.error).toMatch(pattern);
      expect(result.settleMs).toBe(0);
      const observation = await session.observe();
      expect(observation.error).toBe(`${action.type} failed: ${result.error}`);
      expect(observation.text.split("\n")[0]).toBe(`ERROR (previous action): ${observation.error}`);
      // Reported once: the observation after is clean.
      expect((await session.observe()).error).toBeUndefined();
    };
    try {
      await session.observe();
      await fails({ type: "click", target: "no-such-button" }, /no element with id "no-such-button"/);
      await fails({ type: "click", target: "" }, /needs a target/);
      await session.act({ type: "click", target: "hide-details-button" });
      await fails(
        { type: "click", target: "order-details-button" },
        /element "order-details-button" is hidden/,
      );
      await fails({ type: "click", target: "checkout-button" }, /element "checkout-button" is disabled/);
      await fails(
        { type: "select", target: "topic-select", value: "Refunds" },
        /has no option "Refunds" \(options: "Billing", "Shipping", "Returns"\)/,
      );
      await fails(
        { type: "select", target: "topic-select", value: "returns" },
        /option "Returns" of "topic-select" is disabled/,
      );
      await fails({ type: "select", target: "search-input", value: "x" }, /not a select/);
      await fails({ type: "type", target: "search-button", text: "x" }, /not an input/);
      await fails({ type: "switch_tab", index: 3 }, /no tab 3 \(open tabs: 0\)/);
      expect(await session.act({ type: "switch_tab", index: "0" as never })).toMatchObject({ ok: true });
      await fails({ type: "close_tab", index: -1 }, /no tab -1/);
      await fails({ type: "close_tab" }, /cannot close the last tab/);
      await fails({ type: "goto_url", url: "javascript:alert(1)" }, /javascript: URLs are not allowed/);
      await fails({ type: "new_tab", url: "data:text/html,hi" }, /data: URLs are not allowed/);
      await fails({ type: "goto_url", url: "file:///etc/passwd" }, /file: URLs are allowed only when/);
      await session.act({ type: "new_tab" });
      await fails({ type: "back" }, /no earlier page/);
      await fails({ type: "forward" }, /no later page/);
      await session.act({ type: "close_tab" });
      await fails({ type: "key_press", key: "NotAKey" }, /Unknown key/);
      await fails({ type: "scroll", direction: "sideways" } as never, /direction/);
      await fails({ type: "fly" } as never, /unknown action "fly"/);
      await fails({ type: "goto_url", url: "http://127.0.0.1:1/" }, /net::ERR_/);
      expect((await session.observe()).tabs).toHaveLength(1);

      // A target covered by another element: the reason from Playwright's log, in one line.
      await session.act({ type: "goto_url", url: `${base}/index.html` });
      await session.observe();
      await session.page.evaluate(
        `document.body.insertAdjacentHTML("beforeend", '<div id="overlay" style="position:fixed;inset:0;background:#0003"></div>')`,
      );
      await fails(
        { type: "click", target: "search-button" },
        /Timeout 1000ms exceeded\. \(.*intercepts pointer events\)$/,
      );

      // A dialog does not block the page: it is accepted and mentioned in the next observation.
      await session.page.evaluate(`alert("Saved!")`);
      expect((await session.observe()).text).toContain(
        'Note: the page opened a dialog (alert): "Saved!" (accepted)',
      );
    } finally {
      await session.close();
    }
  });

  it("reads and drives a chat widget from another origin", async () => {
    const other = await startServer();
    const session = await driver.newSession();
    try {
      await session.goto(`${base}/cross-origin.html?chat=${encodeURIComponent(`${other.base}/chat.html`)}`);
      const observation = await session.observe();
      expect(byLabel(observation, "Chat message")).toMatchObject({
        id: "chat-message-input",
        frame: "iframe#widget",
      });
      const sent = await session.act({ type: "type", target: "chat-message-input", text: "hi", enter: true });
      expect(sent).toMatchObject({ ok: true, settled: true });
      expect(other.replies()).toBe(1);
      expect(await session.readChat()).toEqual({
        messages: [
          { role: "user", content: "hi" },
          { role: "agent", content: "You said: hi" },
        ],
        sessionId: "sess-42",
      });
      expect(
        (await session.readChat({ frame: "#widget", message: "[data-chat-role=agent]" })).messages,
      ).toEqual([{ role: "agent", content: "You said: hi" }]);
    } finally {
      await session.close();
      await new Promise((done) => other.server.close(done));
    }
  });

  it("gives up at the cap and says the page was still busy", async () => {
    const session = await open();
    try {
      await session.page.evaluate(
        `setInterval(() => { document.title = String(Date.now()); document.body.dataset.tick = document.title; }, 50)`,
      );
      const busy = await session.settle({ timeoutMs: 600 });
      expect(busy).toMatchObject({ settled: false, pendingRequests: 0 });
      expect(busy.ms).toBeGreaterThanOrEqual(600);
      expect(busy.ms).toBeLessThan(1500);

      await session.goto(`${base}/page2.html`);
      await session.page.evaluate(`fetch("/api/hang").catch(() => {}); undefined`);
      const waiting = await session.settle({ timeoutMs: 500 });
      expect(waiting).toMatchObject({ settled: false, pendingRequests: 1 });
    } finally {
      await session.close();
    }
  });

  it("walks frames inside frames and leaves out hidden ones", async () => {
    const session = await driver.newSession();
    try {
      await session.goto(`${base}/nested.html`);
      const observation = await session.observe();
      expect(observation.elements.map((e) => [e.id, e.frame])).toEqual([
        ["deep-button", 'iframe#outer > iframe[name="inner"]'],
        ["plain-frame-link", "iframe:nth-of-type(1)"],
      ]);
      expect(observation.text).toContain("Outer frame");
      expect(observation.text).not.toContain("hidden frame");
      expect(await session.act({ type: "click", target: "deep-button" })).toMatchObject({ ok: true });
      expect(byLabel(await session.observe(), "Pressed")).toMatchObject({ id: "deep-button" });
    } finally {
      await session.close();
    }
  });

  it("saves a screenshot per observation when asked", async () => {
    const shots = join(dir, "shots");
    const session = await driver.newSession({ screenshotsDir: shots, viewport: { width: 800, height: 600 } });
    try {
      await session.goto(`${base}/index.html`);
      const first = await session.observe();
      const second = await session.observe();
      expect(first.screenshot).toBe(join(shots, "step-1.png"));
      expect(second.screenshot).toBe(join(shots, "step-2.png"));
      expect(readdirSync(shots).sort()).toEqual(["step-1.png", "step-2.png"]);
      const png = readFileSync(join(shots, "step-1.png"));
      expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
      expect(png.readUInt32BE(16)).toBe(800);
    } finally {
      await session.close();
    }
  });

  it("runs concurrent sessions in their own contexts", async () => {
    const [a, b] = await Promise.all([open(), open()]);
    try {
      await Promise.all([a.observe(), b.observe()]);
      await Promise.all([
        a.act({ type: "type", target: "chat-message-input", text: "from a", enter: true }),
        b.act({ type: "type", target: "chat-message-input", text: "from b", enter: true }),
      ]);
      await a.page.evaluate(`localStorage.setItem("who", "a")`);
      expect((await a.readChat()).messages.map((m) => m.content)).toEqual(["from a", "You said: from a"]);
      expect((await b.readChat()).messages.map((m) => m.content)).toEqual(["from b", "You said: from b"]);
      expect(await b.page.evaluate(`localStorage.getItem("who")`)).toBeNull();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe("users/browser: launching", () => {
  it("refuses a missing executable with the path and the Debian package", async () => {
    const error = await launchBrowser({ executablePath: "/nonexistent/chromium" }).catch((caught) => caught);
    expect(error).toMatchObject({ name: "TerrariumError", code: "INVALID_INPUT" });
    expect(error.message).toContain("/nonexistent/chromium");
    expect(error.message).toContain("apt-get install -y chromium");
  });

  it("takes the executable from TERRARIUM_CHROMIUM", async () => {
    const saved = process.env.TERRARIUM_CHROMIUM;
    process.env.TERRARIUM_CHROMIUM = "/nowhere/chromium-from-env";
    try {
      const error = await launchBrowser().catch((caught) => caught);
      expect(error.message).toContain("/nowhere/chromium-from-env");
    } finally {
      if (saved === undefined) delete process.env.TERRARIUM_CHROMIUM;
      else process.env.TERRARIUM_CHROMIUM = saved;
    }
  });
});
