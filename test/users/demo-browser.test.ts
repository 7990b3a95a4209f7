import { once } from "node:events";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Models } from "../../src/models/hub.js";
import { DEFAULT_CHAT_LOCATOR } from "../../src/users/browser/types.js";
import { type ShopDemo, startShopDemo } from "../../src/users/demo/index.js";
import { need } from "../helpers/requirements.js";

/**
 * The demo shop in a real browser: Debian's chromium through playwright-core. CI sets
 * TERRARIUM_REQUIRE_BROWSER, so there a missing browser fails the test; elsewhere it is skipped, saying why.
 */
const CHROMIUM = need("chromium", "users demo in headless Chromium");

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
];

describe.runIf(CHROMIUM)("users demo in headless Chromium", () => {
  let demo: ShopDemo;
  let models: Models;
  let browser: Browser;

  beforeAll(async () => {
    models = new Models();
    demo = await startShopDemo({ port: 0, models, seed: "browser" });
    browser = await chromium.launch({ executablePath: CHROMIUM as string, args: FLAGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
    await models?.close();
  });

  /** Messages of the widget as the default chat locator reads them. */
  const transcript = (page: Page) =>
    page
      .frameLocator("iframe#chat")
      .locator(DEFAULT_CHAT_LOCATOR.message)
      .evaluateAll(
        (elements, attribute) => elements.map((e) => [e.getAttribute(attribute), e.textContent]),
        DEFAULT_CHAT_LOCATOR.roleAttribute ?? "data-chat-role",
      );

  it("chats through the widget in the iframe; the session id is on the widget and survives navigation", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    await page.goto(demo.url);
    await page.waitForSelector("#products article.product");
    expect(await page.locator("#products article.product").count()).toBe(50);

    const widget = page.frameLocator("iframe#chat");
    await expect.poll(() => widget.locator("#chat-mode").textContent()).toBe("scripted answers");
    const input = widget.locator("#chat-input");
    expect(await input.getAttribute("placeholder")).toBeTruthy();
    await input.fill(
      "Hi, I want to return the headphones from order #W2378156. My email is yusuf.rossi7301@example.com.",
    );
    // The answer is held back a moment, so the typing indicator can be seen while the widget waits.
    await page.route("**/api/chat", async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      await route.continue();
    });
    await input.press("Enter");
    await widget.locator("#chat-typing").waitFor({ state: "visible" });
    expect(await widget.locator('[data-chat-role="user"]').count()).toBe(1);
    const reply = widget.locator('[data-chat-role="agent"]').first();
    await reply.waitFor({ timeout: 15_000 });
    expect(await reply.textContent()).toMatch(/To confirm: return Headphones/);
    const root = widget.locator("#chat-root");
    const sessionId = await root.getAttribute(DEFAULT_CHAT_LOCATOR.sessionAttribute ?? "data-session-id");
    expect(sessionId).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(await widget.locator("#chat-typing").isHidden()).toBe(true);
    await page.unroute("**/api/chat");

    // The Send button works too, and the agent's tool calls are the session's history.
    await input.fill("yes");
    await widget.locator("#chat-send").click();
    await widget.locator('[data-chat-role="agent"]').nth(1).waitFor({ timeout: 15_000 });
    const history = (await (
      await fetch(new URL(`/terrarium/sessions/${sessionId}/history`, demo.url))
    ).json()) as any[];
    expect(history.map((entry) => entry.request.name)).toContain("return_delivered_order_items");

    // Another page of the shop: the widget reloads the same conversation, and the order page shows the return.
    await page.goto(new URL("/order.html?id=%23W2378156", demo.url).href);
    await page.waitForSelector(".order-status");
    expect(await page.locator(".order-status").textContent()).toBe("return requested");
    await expect.poll(() => transcript(page)).toHaveLength(4);
    expect((await transcript(page)).map(([role]) => role)).toEqual(["user", "agent", "user", "agent"]);
    expect(await page.frameLocator("iframe#chat").locator("#chat-root").getAttribute("data-session-id")).toBe(
      sessionId,
    );
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it("sends the returns form to the chat", async () => {
    const page = await browser.newPage();
    await page.goto(new URL("/returns.html", demo.url).href);
    await page.fill("#return-order", "#W2378156");
    await page.click("#return-load");
    await page.waitForSelector('#return-item option[value="9408160950"]', { state: "attached" });
    await page.fill("#return-email", "yusuf.rossi7301@example.com");
    await page.selectOption("#return-item", "9408160950");
    await page.selectOption("#return-reason", "defective");
    await page.click("#return-submit");
    const widget = page.frameLocator("iframe#chat");
    const reply = widget.locator('[data-chat-role="agent"]').last();
    await reply.waitFor({ timeout: 15_000 });
    expect(await reply.textContent()).toMatch(/Smart Watch \(item 9408160950\)/);
    expect(await widget.locator('[data-chat-role="user"]').last().textContent()).toMatch(
      /return the Smart Watch \(item 9408160950\) from order #W2378156/,
    );
    await page.close();
  }, 60_000);

  it("'New chat' ends the conversation on the server; past the cap the widget says to come back later", async () => {
    // One live chat at most: the next only opens because "New chat" freed the first.
    const small = await startShopDemo({ port: 0, models, maxChatSessions: 1 });
    try {
      const page = await browser.newPage();
      await page.goto(small.url);
      const widget = page.frameLocator("iframe#chat");
      const input = widget.locator("#chat-input");
      await input.fill("hello");
      await input.press("Enter");
      await widget.locator('[data-chat-role="agent"]').first().waitFor({ timeout: 15_000 });
      const first = await widget.locator("#chat-root").getAttribute("data-session-id");
      const engineId = small.chats.engineSession(first as string) as string;
      const closed = once(small.chats, "closed");
      await widget.locator("#chat-reset").click();
      expect(await closed).toEqual([{ id: first, reason: "closed" }]);
      expect(await small.engine.store.getSession(engineId)).toBeUndefined();
      await input.fill("hello again");
      await input.press("Enter");
      await widget.locator('[data-chat-role="agent"]').first().waitFor({ timeout: 15_000 });
      expect(await widget.locator("#chat-root").getAttribute("data-session-id")).not.toBe(first);

      // Another tab is another visitor: the one chat allowed is taken.
      const other = await browser.newPage();
      await other.goto(small.url);
      const second = other.frameLocator("iframe#chat");
      await second.locator("#chat-input").fill("hello");
      await second.locator("#chat-input").press("Enter");
      await second.locator("#chat-error").waitFor({ state: "visible", timeout: 15_000 });
      expect(await second.locator("#chat-error").textContent()).toMatch(/too many customers right now/);
      expect(await second.locator('[data-chat-role="agent"]').count()).toBe(0);
      await other.close();
      await page.close();
    } finally {
      await small.close();
    }
  }, 60_000);
});
