import { existsSync, realpathSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { extname, isAbsolute, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { TerrariumError } from "../../core/errors.js";

/**
 * The demo shop's pages live in `examples/shop/` of the package. From source this module is
 * `src/users/demo/static.ts` (three folders down); bundled by tsup it is `dist/cli.js` or `dist/index.js`
 * (one folder down; package.json's `files` ships `examples`).
 */
export function shopFolder(): string {
  const here = fileURLToPath(new URL(".", import.meta.url));
  const fromSource = /[\\/]src[\\/]users[\\/]demo[\\/]?$/.test(here);
  // Only the candidate that fits where this module is, so a bundle never finds some other project's folder.
  const candidate = fileURLToPath(
    new URL(fromSource ? "../../../examples/shop/" : "../examples/shop/", import.meta.url),
  );
  if (existsSync(resolve(candidate, "index.html"))) return realpathSync(candidate);
  throw new TerrariumError(
    "INVALID_INPUT",
    `the demo shop's pages are missing (no index.html in ${candidate}); reinstall terrarium`,
  );
}

/** Content types of the files the shop serves; any other extension is not served. */
export const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
};

/** Scripts and styles from the shop itself only; the chat frame may be embedded by the shop's pages only. */
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'; object-src 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

export type StaticLookup =
  | { kind: "file"; path: string; contentType: string }
  | { kind: "refused"; reason: string }
  | { kind: "missing" };

/**
 * The file a URL path names inside `root`, or why not. The path is percent-decoded once; encoded slashes,
 * backslashes, NUL, `..` segments and dot-files are refused, and the resolved file (symbolic links
 * followed) must still be inside `root`. `/` and folder paths serve their `index.html`.
 */
export function lookupStatic(root: string, urlPath: string): StaticLookup {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return { kind: "refused", reason: "the path is not valid percent-encoding" };
  }
  if (decoded.includes("\0") || decoded.includes("\\"))
    return { kind: "refused", reason: "the path holds a NUL or a backslash" };
  const segments = decoded.split("/").filter((segment) => segment !== "");
  if (segments.some((segment) => segment === ".." || segment === "."))
    return { kind: "refused", reason: "the path leaves the shop's folder" };
  if (segments.some((segment) => segment.startsWith(".")))
    return { kind: "refused", reason: "hidden files are not served" };
  if (decoded.endsWith("/") || segments.length === 0) segments.push("index.html");
  const candidate = resolve(root, ...segments);
  if (!inside(root, candidate)) return { kind: "refused", reason: "the path leaves the shop's folder" };
  const contentType = CONTENT_TYPES[extname(candidate).toLowerCase()];
  if (!contentType) return { kind: "missing" };
  let real: string;
  try {
    real = realpathSync(candidate);
    if (!statSync(real).isFile()) return { kind: "missing" };
  } catch {
    return { kind: "missing" };
  }
  if (!inside(root, real)) return { kind: "refused", reason: "the path leaves the shop's folder" };
  return { kind: "file", path: real, contentType };
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== "" && !rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel);
}

/** The response for a static file (HEAD: headers only). */
export async function staticResponse(
  file: { path: string; contentType: string },
  method: string,
): Promise<Response> {
  const body = await readFile(file.path);
  const headers: Record<string, string> = {
    "content-type": file.contentType,
    "content-length": String(body.length),
    ...(file.contentType.startsWith("text/html")
      ? PAGE_SECURITY_HEADERS
      : { "x-content-type-options": "nosniff", "cache-control": "no-store" }),
  };
  return new Response(method === "HEAD" ? null : body, { status: 200, headers });
}
