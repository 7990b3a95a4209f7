import { TerrariumError } from "../../core/errors.js";
import { interruptedError, interruptible } from "../../core/interrupt.js";
import type { Models } from "../../models/hub.js";
import { TerrariumServerClient } from "../agents/http.js";
import { recordsFromHistory } from "../agents/shared.js";
import { launchBrowser } from "../browser/index.js";
import type { ChatLocator } from "../browser/types.js";
import type { AgentToolCallRecord } from "../conversation.js";
import { type ShopDemo, startShopDemo } from "../demo/index.js";
import type { PageSession } from "./browser-user.js";

const OPENING_INTERRUPTED = "the run was interrupted while its page was opening";

/** What a browser target needs of a browser (the driver of `src/users/browser` fits). */
export interface BrowserLauncher {
  newSession(options: {
    screenshotsDir?: string;
  }): Promise<PageSession & { goto(url: string): Promise<unknown>; close(): Promise<void> }>;
  close(): Promise<void>;
}

/** `browser:<page url>`: the agent is a web page with a chat widget, used by a simulated user in a browser. */
export interface BrowserTarget {
  readonly spec: string;
  readonly kind: "browser";
  readonly pageUrl: string;
  /** The agent's tools (TDE's N): from the terrarium server behind the page, else []. */
  readonly tools: string[];
  readonly chat?: ChatLocator;
  /**
   * One browser context per run, on the page. With `signal` aborted (the run was interrupted) it throws
   * `INTERRUPTED` at once, even mid-navigation, and leaves no context open.
   */
  openPage(context: {
    runId: string;
    screenshotsDir?: string;
    signal?: AbortSignal;
  }): Promise<PageSession & { close(): Promise<void> }>;
  /** The agent's tool calls in its session, from the terrarium server serving its tools. */
  agentCalls?(sessionId: string): Promise<AgentToolCallRecord[]>;
  /** The final state of that session, for the goal judge. */
  finalState?(sessionId: string): Promise<unknown>;
  close(): Promise<void>;
}

/** `terrarium:<url>` in `--agent-tools`: the terrarium server that serves the page's agent its tools. */
export const TERRARIUM_SERVER_PREFIX = "terrarium:";

/** `browser:demo`: terrarium's demo shop, started for the run on a free loopback port. */
export const DEMO_SPEC = "browser:demo";

/**
 * The browser target of an `--agent browser:…` spec, with Chromium launched: a page URL, or `browser:demo`,
 * which starts the demo shop (scripted answers, or the planner on `roles.agent` / `roles.default`) and
 * reads its agent's tool calls from the shop's terrarium API. Closing the target closes both.
 */
export async function openBrowserTarget(
  spec: string,
  options: { models?: Models; agentTools?: string[]; seed?: string },
): Promise<BrowserTarget> {
  if (spec !== DEMO_SPEC) {
    parseBrowserSpec(spec);
    return createBrowserTarget(spec, {
      launcher: await launchBrowser(),
      ...(options.agentTools ? { agentTools: options.agentTools } : {}),
    });
  }
  if (options.agentTools?.length)
    throw new TerrariumError(
      "INVALID_INPUT",
      `--agent ${DEMO_SPEC} brings its own tools; leave out --agent-tools`,
    );
  const launcher = await launchBrowser();
  let shop: ShopDemo;
  try {
    shop = await startShopDemo({
      port: 0,
      ...(options.models ? { models: options.models } : {}),
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
    });
  } catch (error) {
    await launcher.close();
    throw error;
  }
  const target = await createBrowserTarget(`browser:${shop.url}`, {
    launcher,
    agentTools: [`${TERRARIUM_SERVER_PREFIX}${shop.url}terrarium`],
  }).catch(async (error) => {
    await Promise.all([launcher.close(), shop.close()]);
    throw error;
  });
  return {
    ...target,
    spec: DEMO_SPEC,
    close: async () => {
      await target.close();
      await shop.close();
    },
  };
}

/** The page URL of a `browser:` spec, checked (http, https or file). */
export function parseBrowserSpec(spec: string): string {
  const url = spec.slice("browser:".length);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TerrariumError(
      "INVALID_INPUT",
      `--agent "${spec}": "${url}" is not a URL (browser:<http(s) or file URL of the page>)`,
    );
  }
  if (!["http:", "https:", "file:"].includes(parsed.protocol))
    throw new TerrariumError(
      "INVALID_INPUT",
      `--agent "${spec}": the page must be an http, https or file URL`,
    );
  return parsed.href;
}

/**
 * The browser target. `agentTools` may name the terrarium server behind the page (`terrarium:<url>`):
 * then its tool list is read now (refused before any run when the server does not answer), and each
 * run's agent tool calls and final state come from the session the chat widget shows in its
 * `data-session-id` (or the locator's session attribute).
 */
export async function createBrowserTarget(
  spec: string,
  options: { launcher: BrowserLauncher; agentTools?: string[]; chat?: ChatLocator; timeoutMs?: number },
): Promise<BrowserTarget> {
  const pageUrl = parseBrowserSpec(spec);
  const servers = (options.agentTools ?? []).filter((source) => source.startsWith(TERRARIUM_SERVER_PREFIX));
  const others = (options.agentTools ?? []).filter((source) => !source.startsWith(TERRARIUM_SERVER_PREFIX));
  if (others.length > 0 || servers.length > 1) {
    throw new TerrariumError(
      "INVALID_INPUT",
      `--agent-tools with a browser: agent names the terrarium server behind the page, once: terrarium:<url> (got ${(options.agentTools ?? []).join(", ")})`,
    );
  }
  const serverUrl = servers[0]?.slice(TERRARIUM_SERVER_PREFIX.length);
  const client = serverUrl
    ? new TerrariumServerClient(serverUrl, {
        config: { response: { message: "" } },
        timeoutMs: options.timeoutMs ?? 60_000,
      })
    : undefined;
  let tools: string[] = [];
  if (client) {
    try {
      tools = await client.toolNames();
    } catch (error) {
      throw new TerrariumError(
        "INVALID_INPUT",
        `--agent-tools ${servers[0]}: the terrarium server does not answer (${error instanceof Error ? error.message : String(error)})`,
      );
    }
  }
  return {
    spec,
    kind: "browser",
    pageUrl,
    tools,
    ...(options.chat ? { chat: options.chat } : {}),
    async openPage(context) {
      const { signal } = context;
      if (signal?.aborted) throw interruptedError(OPENING_INTERRUPTED);
      const session = await options.launcher.newSession(
        context.screenshotsDir ? { screenshotsDir: context.screenshotsDir } : {},
      );
      try {
        await interruptible(session.goto(pageUrl), signal, OPENING_INTERRUPTED);
      } catch (error) {
        await session.close().catch(() => undefined);
        // The navigation failed because the browser was closed under an interrupted run: say so.
        if (signal?.aborted) throw interruptedError(OPENING_INTERRUPTED);
        throw error;
      }
      if (signal?.aborted) {
        await session.close().catch(() => undefined);
        throw interruptedError(OPENING_INTERRUPTED);
      }
      return session;
    },
    ...(client
      ? {
          agentCalls: async (sessionId: string) => recordsFromHistory(await client.history(sessionId)),
          finalState: (sessionId: string) => client.state(sessionId),
        }
      : {}),
    close: () => options.launcher.close(),
  };
}
