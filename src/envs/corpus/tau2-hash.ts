import { createHash } from "node:crypto";
import { isImmutableJson } from "../../core/immutable-json.js";

/**
 * tau2-bench's database hash for the retail domain, computed from a terrarium state: the SHA-256 of the
 * text Python's `json.dumps(db.model_dump(), sort_keys=True, default=str)` writes. tau2 rewards a
 * conversation by comparing this hash after the agent's calls with the one after the gold actions, so a
 * state that hashes the same here is the same database to tau2.
 *
 * `model_dump` writes every field of the pydantic models, so an order's optional fields (a cancel reason,
 * exchange and return details) appear as null until a tool sets them, and money fields (typed float) are
 * written as Python floats (`100.0`, never `100`).
 */
export function tau2RetailDbHash(state: unknown): string {
  return createHash("sha256")
    .update(pythonJsonDumps(retailModelDump(state)))
    .digest("hex");
}

/** The fields of tau2's Order model that default to None. */
const ORDER_OPTIONAL_FIELDS = [
  "cancel_reason",
  "exchange_items",
  "exchange_new_items",
  "exchange_payment_method_id",
  "exchange_price_difference",
  "return_items",
  "return_payment_method_id",
];

/** Fields the retail models type as float: a number there is written as a Python float. */
const FLOAT_FIELDS = new Set(["price", "balance", "amount", "exchange_price_difference"]);

/** A number Python holds as an int even in a float-typed field. */
export class PythonInt {
  constructor(readonly value: number) {}
}

/** The shape `RetailDB.model_dump()` gives: every optional order field present. */
export function retailModelDump(state: unknown): unknown {
  const db = state as { orders?: Record<string, Record<string, unknown>> };
  if (!db || typeof db !== "object" || !db.orders) return state;
  const orders: Record<string, unknown> = {};
  for (const [id, order] of Object.entries(db.orders)) orders[id] = orderModelDump(order);
  return { ...(state as object), orders };
}

const ORDER_DUMPS = new WeakMap<object, Record<string, unknown>>();

/** One order as model_dump writes it; kept for frozen orders (immutable states), so hashing is incremental. */
function orderModelDump(order: Record<string, unknown>): Record<string, unknown> {
  const known = ORDER_DUMPS.get(order);
  if (known) return known;
  const filled: Record<string, unknown> = { ...order };
  for (const field of ORDER_OPTIONAL_FIELDS) if (filled[field] === undefined) filled[field] = null;
  // An exchange of no items leaves tau2's price difference as round(0, 2), the int 0: the field is
  // assigned without validation, so it stays an int (any other difference is a float).
  if (Array.isArray(filled.exchange_items) && filled.exchange_items.length === 0)
    filled.exchange_price_difference = new PythonInt(filled.exchange_price_difference as number);
  if (!isImmutable(order)) return filled;
  Object.freeze(filled);
  ORDER_DUMPS.set(order, filled);
  return filled;
}

/**
 * Python's `json.dumps(value, sort_keys=True)`: ", " and ": " separators, keys sorted by code point,
 * non-ASCII and control characters escaped (ensure_ascii), floats as `repr` writes them. A number is a
 * float when its field is typed float (`FLOAT_FIELDS`) or when it is not an integer.
 */
export function pythonJsonDumps(value: unknown, floatField = false): string {
  if (value === null || value === undefined) return "null";
  // States are immutable trees that share what a step did not touch: a frozen subtree's text is kept.
  if (typeof value === "object" && !(value instanceof PythonInt) && isImmutable(value)) {
    const cache = floatField ? FLOAT_TEXT : TEXT;
    let text = cache.get(value);
    if (text === undefined) {
      text = dumps(value, floatField);
      cache.set(value, text);
    }
    return text;
  }
  return dumps(value, floatField);
}

/** Frozen, or immutable without being frozen (a state's large object held as a persistent record). */
function isImmutable(value: object): boolean {
  return Object.isFrozen(value) || isImmutableJson(value);
}

const TEXT = new WeakMap<object, string>();
const FLOAT_TEXT = new WeakMap<object, string>();

function dumps(value: unknown, floatField: boolean): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (value instanceof PythonInt) return String(value.value);
  if (typeof value === "number")
    return floatField || !Number.isInteger(value) ? pythonFloatRepr(value) : String(value);
  if (typeof value === "string") return pythonString(value);
  if (Array.isArray(value)) return `[${value.map((item) => pythonJsonDumps(item, floatField)).join(", ")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, member]) => member !== undefined)
    .sort(([a], [b]) => compareCodePoints(a, b));
  return `{${entries
    .map(([key, member]) => `${pythonString(key)}: ${pythonJsonDumps(member, FLOAT_FIELDS.has(key))}`)
    .join(", ")}}`;
}

function compareCodePoints(a: string, b: string): number {
  // Without surrogates, UTF-16 order is code point order.
  if (!SURROGATE.test(a) && !SURROGATE.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  const left = [...a];
  const right = [...b];
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const difference = (left[i]?.codePointAt(0) ?? 0) - (right[i]?.codePointAt(0) ?? 0);
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}

const SURROGATE = /[\ud800-\udfff]/;

/** A JSON string as Python writes it with ensure_ascii: everything outside space..~ escaped. */
function pythonString(text: string): string {
  return JSON.stringify(text).replace(
    /[^\x20-\x7e]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * Python's `repr(float)`: the shortest digits that read back as the same double (as JavaScript's), in
 * fixed notation when the decimal exponent is from -5 to 15 (with ".0" for integral values), otherwise
 * in scientific notation with a signed, at least two-digit exponent (`1e-05`, `1e+16`).
 */
export function pythonFloatRepr(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const [mantissa, exponentText] = value.toExponential().split("e") as [string, string];
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) {
    const sign = exponent < 0 ? "-" : "+";
    return `${mantissa}e${sign}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  let text: string;
  if (exponent >= 0) {
    const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
    const fraction = digits.slice(exponent + 1);
    text = `${whole}.${fraction || "0"}`;
  } else {
    text = `0.${"0".repeat(-exponent - 1)}${digits}`;
  }
  return negative ? `-${text}` : text;
}
