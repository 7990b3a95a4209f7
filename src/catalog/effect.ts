import type { ToolEffect } from "./tool.js";

/** Verbs that name reads: calling such a tool is not expected to change anything. */
const READ_VERBS = new Set(
  "get list search find fetch read query lookup look show view check count calculate calc compute estimate convert describe retrieve load download is has can validate verify analyze analyse predict recommend translate detect parse lookup browse explore filter sort grep cat ls pwd du wc diff compare display preview summarize summarise status info stat peek inspect poll watch track monitor test evaluate measure resolve locate scan solve simulate".split(
    " ",
  ),
);

/** Verbs that name writes: calling such a tool creates, changes or removes something, or acts on the world. */
const WRITE_VERBS = new Set(
  "create add insert update set put patch delete remove drop post send book cancel modify edit upload move copy write save register reserve purchase buy sell order transfer pay refund submit schedule assign approve reject mkdir rm rmdir touch mv cp echo make start stop restart launch deploy install uninstall enable disable open close lock unlock archive restore publish share invite join leave follow unfollow like unlike reply comment mark tag rename replace clear reset apply charge subscribe unsubscribe block unblock mute unmute activate deactivate exchange return change upgrade downgrade release merge push commit revert fill lift turn press adjust toggle allocate grant revoke".split(
    " ",
  ),
);

/** Splits `soccer.getLastMatch` / `get_last-match` into lower-case words. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word.toLowerCase());
}

/** Infers a tool's effect from the first verb in its name (`soccer.get_last_match` -> read). */
export function effectFromName(name: string): ToolEffect {
  for (const word of nameWords(name)) {
    if (READ_VERBS.has(word)) return "read";
    if (WRITE_VERBS.has(word)) return "write";
  }
  return "unknown";
}

/** Infers an OpenAPI operation's effect: safe methods read; others write unless the name says otherwise. */
export function effectFromHttp(method: string, name: string): ToolEffect {
  const upper = method.toUpperCase();
  if (upper === "GET" || upper === "HEAD" || upper === "OPTIONS") return "read";
  if (upper === "PUT" || upper === "PATCH" || upper === "DELETE") return "write";
  // POST is used for both (search endpoints, RPC-style APIs): let the name decide, and say so when it can't.
  return effectFromName(name);
}
