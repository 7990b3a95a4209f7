/**
 * One observe → decide → act step of the UI user on the demo shop in headless Chromium, split into
 * observation, model call (the scripted OpenAI-compatible server, a real HTTP round trip through the
 * model layer) and action (typing into the chat widget's iframe and waiting for the agent's reply by
 * watching requests and the DOM). The baseline is UXAgent's step measured in the same run: the same
 * observation, model call and action without terrarium's settle, followed by its fixed 2 s sleep.
 */
import { existsSync } from "node:fs";
import { Models, parseConfig } from "../src/models/index.js";
import { launchBrowser, resolveChromiumPath } from "../src/users/browser/index.js";
import { startShopDemo } from "../src/users/demo/index.js";
import { UI_ACTION_SCHEMA } from "../src/users/hybrid/schemas.js";
import { startScriptedLlmServer } from "../test/helpers/scripted-llm-server.js";
import { type BenchResult, median } from "./report.js";

/** UXAgent sleeps this long after every action. */
const UXAGENT_SLEEP_MS = 2000;
const STEPS = 12;

export async function benchBrowser(): Promise<BenchResult> {
  const name = "browser: one observe + act step of the UI user on the demo shop (headless Chromium)";
  if (!existsSync(resolveChromiumPath())) {
    return {
      name,
      lines: [`skipped: ${resolveChromiumPath()} is absent (apt-get install -y chromium)`],
      report: { skipped: true },
    };
  }
  const action = {
    type: "type",
    target: "",
    text: "Where is my order?",
    enter: true,
    value: null,
    key: null,
    direction: null,
    url: null,
    index: null,
  };
  const server = await startScriptedLlmServer([], { repeat: { reply: { content: JSON.stringify(action) } } });
  const shop = await startShopDemo({ port: 0, seed: "bench" });
  const driver = await launchBrowser();
  const models = new Models({
    config: parseConfig({
      providers: {
        scripted: { type: "openai-compatible", baseURL: server.baseURL, structuredOutputs: true },
      },
    }),
    cache: null,
  });
  try {
    const session = await driver.newSession();
    await session.goto(shop.url);
    const observeMs: number[] = [];
    const modelMs: number[] = [];
    const actMs: number[] = [];
    const settleMs: number[] = [];
    for (let step = 0; step < STEPS; step++) {
      let started = performance.now();
      const observation = await session.observe();
      observeMs.push(performance.now() - started);
      const input = observation.elements.find((element) => element.kind === "input" && element.frame !== "");
      if (!input) throw new Error("the demo shop's chat input was not observed");
      started = performance.now();
      await models.generateObject({
        model: "scripted:user",
        messages: [{ role: "user", content: observation.text }],
        schema: UI_ACTION_SCHEMA,
        schemaName: "ui_action",
      });
      modelMs.push(performance.now() - started);
      started = performance.now();
      const result = await session.act({
        type: "type",
        target: input.id,
        text: `Where is order #W${2378156 + step}?`,
        enter: true,
      });
      if (!result.ok) throw new Error(`the step's action failed: ${result.error}`);
      actMs.push(performance.now() - started);
      settleMs.push(result.settleMs);
    }
    await session.close();
    const observe = median(observeMs);
    const model = median(modelMs);
    const act = median(actMs);
    const settle = median(settleMs);
    const step = observe + model + act;
    // UXAgent: the same work, but a fixed sleep instead of watching the page settle.
    const uxagent = observe + model + (act - settle) + UXAGENT_SLEEP_MS;
    const pass = step < uxagent / 2;
    const row = (label: string, ms: number, note = "") => `| ${label} | ${ms.toFixed(1)} ms | ${note} |`;
    return {
      name,
      lines: [
        `${STEPS} steps, each typing a message into the chat widget's iframe and waiting for the agent's reply`,
        "| part (median per step) | time | |",
        "|---|---|---|",
        row("observation (every frame and shadow root)", observe),
        row("model call (scripted server, through the model layer)", model),
        row("action incl. settle", act, `settle ${settle.toFixed(1)} ms: requests idle and DOM quiet`),
        row("terrarium step", step),
        row("baseline: UXAgent step (fixed 2 s sleep after the action)", uxagent),
        `terrarium's step is ${(uxagent / step).toFixed(1)}× faster; target: under half of UXAgent's: ${pass ? "met" : "MISSED"}`,
      ],
      report: {
        steps: STEPS,
        observeMs: observe,
        modelMs: model,
        actMs: act,
        settleMs: settle,
        stepMs: step,
        uxagentStepMs: uxagent,
      },
      pass,
    };
  } finally {
    await driver.close();
    await shop.close();
    await models.close();
    await server.close();
  }
}
