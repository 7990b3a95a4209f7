/**
 * Limits on JSON documents and values that more than one layer must agree on. The server refuses request
 * bodies (a session import among them) nested deeper than `DEFAULT_MAX_JSON_DEPTH`; the engine refuses to
 * store anything that would make a session's export deeper than that, so every stored session can be
 * exported and imported back.
 */

/** How deeply a JSON document crossing terrarium's API (a request body, a session export) may nest. */
export const DEFAULT_MAX_JSON_DEPTH = 256;

/** The largest tool result (its JSON text) the engine stores, unless configured otherwise: 10 MiB. */
export const DEFAULT_MAX_RESULT_BYTES = 10 * 1024 * 1024;

/** A size for messages: "12.5 MB", "800 KB", "512 bytes" (binary units). */
export function formatSize(bytes: number): string {
  const MiB = 1024 * 1024;
  if (bytes >= MiB) return `${Number((bytes / MiB).toFixed(1))} MB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toFixed(1))} KB`;
  return `${bytes} bytes`;
}
