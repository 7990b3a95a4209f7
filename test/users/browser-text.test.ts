import { describe, expect, it } from "vitest";
import {
  assignIds,
  checkUrl,
  elementLine,
  type FrameText,
  PAGE_SCRIPT,
  pageCall,
  renderObservationText,
  SEMANTIC_ID_ATTRIBUTE,
} from "../../src/users/browser/index.js";

/** The browser module's pure parts: id assignment over frames, the observation text, URL checks. */
describe("users/browser: ids", () => {
  it("keeps carried ids, names new elements from their slug, unique over every frame", () => {
    const retired = new Set<string>();
    const { ids, writes } = assignIds(
      [
        [
          { existingId: "send-button", base: "send-button" },
          { existingId: null, base: "send-button" },
          { existingId: null, base: "search-input" },
        ],
        [
          { existingId: null, base: "send-button" },
          // Carried by an earlier element already (a copy): named anew.
          { existingId: "send-button", base: "send-button" },
        ],
      ],
      retired,
    );
    expect(ids).toEqual([
      ["send-button", "send-button-2", "search-input"],
      ["send-button-3", "send-button-4"],
    ]);
    expect(writes).toEqual([
      [
        [1, "send-button-2"],
        [2, "search-input"],
      ],
      [
        [0, "send-button-3"],
        [1, "send-button-4"],
      ],
    ]);
    expect([...retired].sort()).toEqual(
      ["search-input", "send-button", "send-button-2", "send-button-3", "send-button-4"].sort(),
    );
  });

  it("never gives an id that named another element of the document to a new element", () => {
    const retired = new Set(["send-button"]);
    const { ids } = assignIds([[{ existingId: null, base: "send-button" }]], retired);
    expect(ids).toEqual([["send-button-2"]]);
  });
});

describe("users/browser: observation text", () => {
  const frame = (over: Partial<FrameText> = {}): FrameText => ({
    path: "",
    url: "http://x/",
    lines: [
      { k: "h", level: 1, text: "Shop" },
      { k: "t", text: "Welcome" },
      { k: "e", i: 0 },
    ],
    elements: [{ id: "go-button", kind: "clickable", tag: "button", label: "Go", frame: "" }],
    shadows: [""],
    ...over,
  });

  it("puts the previous error first, then page, tabs, and each frame's lines", () => {
    const text = renderObservationText({
      title: "Shop",
      url: "http://x/",
      error: 'click failed: no element with id "nope"',
      tabs: [
        { index: 0, url: "http://x/", title: "Shop", active: true },
        { index: 1, url: "http://y/", title: "", active: false },
      ],
      frames: [
        frame(),
        frame({
          path: "iframe#chat",
          url: "http://x/chat",
          lines: [{ k: "e", i: 0 }],
          elements: [
            {
              id: "msg-input",
              kind: "input",
              tag: "textarea",
              label: "Message",
              frame: "iframe#chat",
              value: "",
            },
          ],
        }),
        frame({ path: "iframe#empty", lines: [] }),
      ],
    });
    expect(text).toBe(
      [
        'ERROR (previous action): click failed: no element with id "nope"',
        "Page: Shop",
        "URL: http://x/",
        "Tabs: [0] Shop (active) | [1] http://y/",
        "",
        "# Shop",
        "Welcome",
        '[go-button] clickable button "Go"',
        "",
        "Frame iframe#chat (http://x/chat):",
        '[msg-input] input textarea "Message" (empty)',
      ].join("\n"),
    );
  });

  it("describes values, options, checked, disabled and shadow hops on the element's line", () => {
    expect(
      elementLine({
        id: "size-select",
        kind: "select",
        tag: "select",
        label: "Size",
        frame: "",
        value: "M",
        options: ["S", "M"],
        disabled: true,
      }),
    ).toBe('[size-select] select select "Size" (value "M"; options: "S", "M"; disabled)');
    expect(
      elementLine(
        {
          id: "news-checkbox",
          kind: "clickable",
          tag: "input",
          label: "News",
          role: "checkbox",
          frame: "x",
          checked: true,
        },
        "my-form>shadow",
      ),
    ).toBe('[news-checkbox] clickable input "News" (checkbox; checked; in my-form>shadow)');
  });

  it("stays under the bound: text blocks go first, elements stay, and a marker says so", () => {
    const lines: FrameText["lines"] = [];
    const elements: FrameText["elements"] = [];
    for (let i = 0; i < 200; i++) {
      lines.push({ k: "t", text: `paragraph ${i} ${"lorem ipsum ".repeat(8)}` });
      lines.push({ k: "e", i });
      elements.push({
        id: `item-${i}-button`,
        kind: "clickable",
        tag: "button",
        label: `Item ${i}`,
        frame: "",
      });
    }
    const text = renderObservationText({
      title: "Long",
      url: "http://x/",
      tabs: [],
      frames: [{ path: "", url: "http://x/", lines, elements, shadows: elements.map(() => "") }],
      maxChars: 12_000,
    });
    expect(text.length).toBeLessThanOrEqual(12_000);
    for (let i = 0; i < 200; i++) expect(text).toContain(`[item-${i}-button]`);
    expect(text).toContain("paragraph 0 ");
    expect(text).toMatch(/\[… truncated: \d+ text lines left out to stay under 12000 characters\]$/);
  });
});

describe("users/browser: URLs and the page script", () => {
  it("accepts http(s) and file URLs (relative ones against the page) and refuses the rest", () => {
    expect(checkUrl("https://example.com/a")).toEqual({ url: "https://example.com/a" });
    expect(checkUrl("file:///tmp/page.html")).toEqual({ url: "file:///tmp/page.html" });
    expect(checkUrl("/b?x=1", "http://h:8/a/")).toEqual({ url: "http://h:8/b?x=1" });
    for (const bad of ["javascript:alert(1)", "data:text/html,hi", "chrome://settings", "about:blank"])
      expect(checkUrl(bad)).toEqual({ error: expect.stringContaining("not allowed") });
    expect(checkUrl("")).toEqual({ error: "the url is empty" });
    // Actions open local files only inside the folder of the local page the session opened.
    expect(checkUrl("file:///site/sub/b.html", undefined, "/site")).toEqual({
      url: "file:///site/sub/b.html",
    });
    expect(checkUrl("../etc/passwd", "file:///site/a.html", "/site")).toEqual({
      error: "file: URLs are allowed only inside /site, the folder of the page the session opened",
    });
    expect(checkUrl("file:///site2/x.html", undefined, "/site")).toHaveProperty("error");
    expect(checkUrl("file:///etc/passwd", undefined, null)).toEqual({
      error: "file: URLs are allowed only when the session opened a local page",
    });
    expect(checkUrl("not a url")).toEqual({ error: '"not a url" is not a URL' });
  });

  it("writes and reads the one attribute, and parses as JavaScript", () => {
    expect(PAGE_SCRIPT).toContain(JSON.stringify(SEMANTIC_ID_ATTRIBUTE));
    expect(PAGE_SCRIPT).not.toContain("__ATTR__");
    expect(() => new Function(`return ${pageCall("probe", 'a"b')};`)).not.toThrow();
  });
});
