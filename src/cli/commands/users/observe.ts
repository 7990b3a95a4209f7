import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import { TerrariumError } from "../../../core/errors.js";
import { checkUrl, launchBrowser } from "../../../users/browser/index.js";
import type { CliIo } from "../../io.js";

/** A URL as typed: http(s) and file URLs as they are, anything without a scheme as a local file path. */
export function resolvePageArgument(argument: string): string {
  if (/^[a-z][a-z0-9+.-]+:/i.test(argument)) {
    const checked = checkUrl(argument);
    if ("error" in checked)
      throw new TerrariumError("INVALID_INPUT", `cannot observe ${argument}: ${checked.error}`);
    return checked.url;
  }
  const path = resolve(argument);
  if (!existsSync(path))
    throw new TerrariumError("FILE_UNREADABLE", `no such page: ${argument}`, { where: { file: argument } });
  return pathToFileURL(path).href;
}

/** `terrarium users observe <url>`: what a simulated UI user would see of a page, to debug it before a run. */
export function registerUsersObserveCommand(users: Command, io: CliIo): void {
  users
    .command("observe <url>")
    .description(
      "open a page in headless Chromium and print one observation as a simulated UI user sees it: its text with element ids (frames and shadow roots included), or the observation as JSON",
    )
    .option("--json", "print the observation as JSON (elements, tabs, text)")
    .option("--screenshot <file>", "also save a screenshot of the page (PNG)")
    .option("--chromium <path>", "Chromium executable (default: $TERRARIUM_CHROMIUM, else /usr/bin/chromium)")
    .addHelpText(
      "after",
      `
Examples:
  terrarium users observe examples/users/pages/observe-demo.html
  terrarium users observe examples/users/pages/observe-demo.html --json --screenshot observe-demo.png

<url> is an http(s) or file URL, or a path to a local page. Needs Debian's Chromium (apt-get install -y chromium).
`,
    )
    .action(async (url: string, options: { json?: boolean; screenshot?: string; chromium?: string }) => {
      const target = resolvePageArgument(url);
      const driver = await launchBrowser(options.chromium ? { executablePath: options.chromium } : {});
      try {
        const session = await driver.newSession();
        await session.goto(target);
        const observation = await session.observe();
        if (options.screenshot) await session.screenshot(options.screenshot);
        io.stdout.write(options.json ? `${JSON.stringify(observation, null, 2)}\n` : `${observation.text}\n`);
        if (options.screenshot) io.stderr.write(`screenshot: ${options.screenshot}\n`);
      } finally {
        await driver.close();
      }
    });
}
