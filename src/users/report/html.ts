/**
 * The small, careful pieces of the users report's HTML: escaping, anchors derived from untrusted ids,
 * truncation with a marker, JSON for display, and the page shell (inline CSS, one static script allowed
 * by its hash, a Content-Security-Policy that forbids any network access).
 *
 * Everything that comes from a run folder (messages, tool arguments and results, reasons, ids, even the
 * numbers of a summary read from disk) is treated as hostile: it only ever reaches the page through
 * {@link escapeHtml}, and never inside a `<script>`.
 */
import { createHash } from "node:crypto";

/** Text for HTML element content and double- or single-quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;")
    .replaceAll("\u0000", "\uFFFD");
}

/**
 * A fragment identifier derived from any string: letters, digits and `_` are kept, every other character
 * (the `-` used as the escape included) becomes `-<hex code point>-`, so different ids never meet on the
 * same anchor and the result is safe in an attribute and a URL fragment without further escaping.
 */
export function anchorPart(id: unknown): string {
  let out = "";
  for (const char of String(id)) {
    if (/^[A-Za-z0-9_]$/.test(char)) out += char;
    else out += `-${(char.codePointAt(0) ?? 0).toString(16)}-`;
  }
  return out === "" ? "-" : out;
}

export function runAnchor(runId: unknown): string {
  return `run-${anchorPart(runId)}`;
}

export function turnAnchor(runId: unknown, turn: unknown): string {
  return `run-${anchorPart(runId)}-turn-${anchorPart(turn)}`;
}

export function scenarioAnchor(scenarioId: unknown): string {
  return `scenario-${anchorPart(scenarioId)}`;
}

export function failureAnchor(failureId: unknown): string {
  return `failure-${anchorPart(failureId)}`;
}

/** The text cut at `max` characters, with `… (N more chars)` saying how much was left out. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max;
  // Never split a surrogate pair.
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return `${text.slice(0, cut)}… (${text.length - cut} more chars)`;
}

/** Any value as readable text: strings as they are, the rest as indented JSON (never throws). */
export function displayValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "undefined";
  try {
    const text = JSON.stringify(
      value,
      (_key, item) => (typeof item === "bigint" ? item.toString() : item),
      2,
    );
    return text ?? String(value);
  } catch {
    return String(value);
  }
}

/** A finite number, or null for anything else (a summary read from disk may hold anything). */
export function finite(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** A number with fixed decimals, or `n/a`. */
export function fixed(value: unknown, digits: number): string {
  const number = finite(value);
  return number === null ? "n/a" : number.toFixed(digits);
}

/** Own entries of a record read from disk (anything that is not a plain object gives none). */
export function entriesOf(value: unknown): Array<[string, unknown]> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [];
  return Object.entries(value as Record<string, unknown>);
}

export function arrayOf<T = unknown>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

/** The one script of a page: opens the `<details>` around the element a link points to. Static text. */
const PAGE_SCRIPT = `function openTarget(){var id=decodeURIComponent(location.hash.slice(1));var el=id&&document.getElementById(id);while(el){if(el.tagName==="DETAILS")el.open=true;el=el.parentElement;}}
function setAll(open){document.querySelectorAll("details").forEach(function(d){d.open=open;});}
window.addEventListener("hashchange",openTarget);window.addEventListener("DOMContentLoaded",function(){openTarget();document.querySelectorAll("[data-set-all]").forEach(function(b){b.addEventListener("click",function(){setAll(b.getAttribute("data-set-all")==="open");});});});`;

const PAGE_CSS = `
:root{--user:#e3efff;--user-b:#7aa7e8;--agent:#e6f5e6;--agent-b:#74b874;--bad:#fde2e1;--bad-b:#d9534f;--muted:#666;--line:#ddd}
*{box-sizing:border-box}
.shot img{max-width:100%;border:1px solid var(--line);margin-top:.3rem}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:1rem 1.5rem 4rem;color:#222;line-height:1.4}
h1{font-size:1.5rem}h2{font-size:1.25rem;border-bottom:1px solid var(--line);padding-bottom:.2rem;margin-top:2rem}h3{font-size:1.1rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.92rem}
th,td{border:1px solid var(--line);padding:.25rem .5rem;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
thead th{background:#f5f5f5}
.best{font-weight:700;background:#fff6d5}
.scroll{overflow-x:auto}
th .muted{font-weight:400;font-size:.8rem;max-width:22rem;overflow-wrap:anywhere}
.muted{color:var(--muted)}
.pass{color:#1a7f37;font-weight:600}.fail{color:#c62828;font-weight:600}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.5rem 0}
dl.meta dt{font-weight:600}dl.meta dd{margin:0}
details{margin:.4rem 0}
details>summary{cursor:pointer}
details.run{border:1px solid var(--line);border-radius:6px;padding:.4rem .8rem}
details.run[open]{background:#fcfcfc}
.turn{border-top:1px dashed var(--line);padding:.5rem 0;margin-top:.5rem}
.turn-head{font-size:.85rem;color:var(--muted)}
.bubble{border-radius:10px;padding:.5rem .75rem;margin:.35rem 0;max-width:85%;white-space:pre-wrap;overflow-wrap:anywhere}
.bubble.user{background:var(--user);border:1px solid var(--user-b);margin-right:auto}
.bubble.agent{background:var(--agent);border:1px solid var(--agent-b);margin-left:auto}
.bubble.error{background:var(--bad);border:1px solid var(--bad-b)}
.row-user{display:flex;flex-direction:column;align-items:flex-start}
.row-agent{display:flex;flex-direction:column;align-items:flex-end}
.side{font-size:.85rem;max-width:85%;width:100%}
.row-agent .side{margin-left:auto}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:.4rem .6rem;border-radius:4px;margin:.2rem 0;font-size:.82rem;max-height:24rem;overflow:auto}
.flagged{background:var(--bad)}
.tag{display:inline-block;border-radius:4px;padding:0 .35rem;font-size:.8rem;background:#eee;margin-right:.25rem}
.tag.bad{background:var(--bad);color:#8a1f1b}
ul.verdicts{list-style:none;padding-left:0;margin:.2rem 0}
.toolbar button{margin-right:.5rem}
`;

/** A whole self-contained page: inline CSS, no external resource, network forbidden by the CSP. */
export function page(title: string, body: string, options: { script?: boolean } = {}): string {
  const script = options.script ?? true;
  const hash = createHash("sha256").update(PAGE_SCRIPT).digest("base64");
  const csp = `default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src ${script ? `'sha256-${hash}'` : "'none'"}; base-uri 'none'; form-action 'none'`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${PAGE_CSS}</style>
${script ? `<script>${PAGE_SCRIPT}</script>\n` : ""}</head>
<body>
${body}
</body>
</html>
`;
}
