import { existsSync } from "node:fs";
import type { Browser } from "playwright-core";
import { TerrariumError } from "../../core/errors.js";
import { BrowserSession, type BrowserSessionOptions } from "./session.js";

/** Debian's Chromium, the only browser terrarium drives (it never downloads one). */
export const DEFAULT_CHROMIUM_PATH = "/usr/bin/chromium";

/** Flags for a quiet, sandbox-free headless Chromium in containers and CI. */
export const CHROMIUM_FLAGS: readonly string[] = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

export interface LaunchBrowserOptions {
  /** The Chromium executable: default `$TERRARIUM_CHROMIUM`, else /usr/bin/chromium. */
  executablePath?: string;
  /** Default true. */
  headless?: boolean;
}

/** One Chromium process; every session opens its own browser context in it (nothing shared). */
export interface BrowserDriver {
  readonly executablePath: string;
  newSession(options?: BrowserSessionOptions): Promise<BrowserSession>;
  close(): Promise<void>;
}

/** The executable `launchBrowser` would use for these options. */
export function resolveChromiumPath(options: LaunchBrowserOptions = {}): string {
  const fromEnv = process.env.TERRARIUM_CHROMIUM?.trim();
  return options.executablePath ?? (fromEnv ? fromEnv : DEFAULT_CHROMIUM_PATH);
}

function missingBrowser(path: string, detail?: string): TerrariumError {
  return new TerrariumError(
    "INVALID_INPUT",
    `no Chromium at ${path}${detail ? ` (${detail})` : ""}: install Debian's package with \`apt-get install -y chromium\`, or point TERRARIUM_CHROMIUM at a Chromium executable (terrarium never downloads a browser)`,
  );
}

/** Starts Chromium through playwright-core. Refuses, before starting anything, when it is missing. */
export async function launchBrowser(options: LaunchBrowserOptions = {}): Promise<BrowserDriver> {
  const executablePath = resolveChromiumPath(options);
  if (!existsSync(executablePath)) throw missingBrowser(executablePath);
  const { chromium } = await import("playwright-core");
  let browser: Browser;
  try {
    browser = await chromium.launch({
      executablePath,
      headless: options.headless ?? true,
      args: [...CHROMIUM_FLAGS],
      // The command decides what a signal means (stop new work, keep what is unfinished for --resume);
      // Playwright's own handlers would close the browser under the runs still in flight.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  } catch (error) {
    const first = String((error as Error)?.message ?? error).split("\n")[0];
    throw missingBrowser(executablePath, `it did not start: ${first}`);
  }
  const sessions = new Set<BrowserSession>();
  return {
    executablePath,
    async newSession(sessionOptions = {}) {
      const session = await BrowserSession.open(browser, sessionOptions);
      sessions.add(session);
      session.onClose(() => sessions.delete(session));
      return session;
    },
    async close() {
      await Promise.allSettled([...sessions].map((session) => session.close()));
      await browser.close().catch(() => undefined);
    },
  };
}
