import { createHash } from "node:crypto";

/**
 * What a bearer token is known by once received: the first 32 hex digits of its SHA-256. Sessions store
 * their owner this way, and every door (HTTP, the fast path, MCP, OpenEnv's WebSocket, the demo shop)
 * compares tokens through it, so a token itself is never kept.
 */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex").slice(0, 32);
}
