import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderHtml, type SimulatorSummary } from "../../src/bench/envsim/report.js";
import { type SampleScore, summarise } from "../../src/bench/envsim/score.js";
import type { EnvSimSample } from "../../src/bench/envsim/types.js";
import { need } from "../helpers/requirements.js";

/**
 * The HTML report rendered by a real browser: Debian's chromium through playwright-core (docs/STACK.md).
 * CI installs chromium (.ci/run) and sets TERRARIUM_REQUIRE_BROWSER, so there a missing browser fails the
 * test; on a machine without /usr/bin/chromium the test says it was skipped and why.
 */
const CHROMIUM = need("chromium", "envsim HTML report in headless Chromium");

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Samples over every group and Δ 0..9, with scores that differ between the two simulators. */
function entries(): SimulatorSummary[] {
  const samples: EnvSimSample[] = [];
  for (let i = 0; i < 80; i++) {
    const success = i % 8 !== 0;
    const delta = success ? i % 10 : 0;
    const args = i % 3 === 0 ? {} : { id: `X${i}` };
    samples.push({
      schemaVersion: 1,
      id: `env/t${i % 4}/${i}`,
      envId: "env",
      taskId: `t${i % 4}`,
      step: i + 1,
      call: { name: "act", arguments: args },
      observation: null,
      observationText: "ok",
      before: {},
      after: {},
      changes: [],
      delta,
      success,
      argCount: Object.keys(args).length,
      envCode: "",
      envKind: "typescript",
    });
  }
  const scoresA: SampleScore[] = samples.map((_, i) => ({
    fm: i % 2 === 0,
    cm: i % 3 !== 1,
    runtimeDependent: false,
  }));
  const scoresB: SampleScore[] = samples.map((_, i) => ({
    fm: i % 5 !== 0,
    cm: i % 4 === 0,
    runtimeDependent: false,
  }));
  return [
    { name: "model <a>", summary: summarise(samples, scoresA, { seed: 1, bootstrap: 50 }) },
    { name: "code", summary: summarise(samples, scoresB, { seed: 1, bootstrap: 50 }) },
  ];
}

interface Box {
  left: number;
  width: number;
  top: number;
  height: number;
}

describe.runIf(CHROMIUM)("envsim HTML report in headless Chromium", () => {
  let dir: string;
  let context: BrowserContext;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "envsim-report-browser-"));
    context = await chromium.launchPersistentContext(join(dir, "profile"), {
      executablePath: CHROMIUM as string,
      args: FLAGS,
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("draws every bar with a real width, intervals over their bars, offline", async () => {
    const file = join(dir, "report.html");
    writeFileSync(file, renderHtml(entries(), { mode: "strict" }));
    const page = await context.newPage();
    const problems: string[] = [];
    const requests: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    // The page inlines its libraries: any request beyond the file itself is a bug.
    await context.route(/^(?!file:)/, (route) => {
      requests.push(route.request().url());
      return route.abort();
    });
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector("#chart-delta svg .mark-rect.role-mark path");
    await page.waitForSelector("#chart-group svg .mark-rect.role-mark path");

    expect(await page.textContent("p.note")).toContain("Scoring: strict mode");
    for (const [chart, categories] of [
      ["#chart-delta", 10],
      ["#chart-group", 6],
    ] as const) {
      expect(await page.textContent(chart)).not.toContain("Chart failed");
      // Screen boxes: every transform of the facets and layers applied.
      const bars: Box[] = await page.$$eval(`${chart} .mark-rect.role-mark path`, (paths) =>
        paths.map((path) => {
          const box = path.getBoundingClientRect();
          return { left: box.left, width: box.width, top: box.top, height: box.height };
        }),
      );
      // FM and CM rows, two simulators, one bar per category each.
      expect(bars).toHaveLength(2 * 2 * categories);
      // The chart is 640 px wide: a bar of two in a category's band is far wider than a hairline.
      const widths = bars.map((bar) => bar.width);
      expect(Math.min(...widths)).toBeGreaterThan(10);
      expect(Math.max(...widths) - Math.min(...widths)).toBeLessThan(0.5);
      expect(bars.some((bar) => bar.height > 10)).toBe(true);
      // Each interval rule stands inside a bar of its row, not at the edge of its band.
      const rules: Box[] = await page.$$eval(`${chart} .mark-rule.role-mark line`, (lines) =>
        lines.map((line) => {
          const box = line.getBoundingClientRect();
          return { left: box.left, width: box.width, top: box.top, height: box.height };
        }),
      );
      expect(rules.length).toBeGreaterThan(0);
      for (const rule of rules) {
        const x = rule.left + rule.width / 2;
        const bar = bars.find((b) => x > b.left + 1 && x < b.left + b.width - 1);
        expect(bar, `interval at x=${x} over no bar`).toBeDefined();
      }
    }
    expect(problems).toEqual([]);
    expect(requests).toEqual([]);
    await page.close();
  }, 60_000);
});
