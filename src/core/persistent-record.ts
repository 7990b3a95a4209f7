import { adoptImmutable, markImmutable, nullPrototypeObject } from "./immutable-json.js";

/**
 * Large objects of immutable states as persistent (structure-sharing) records.
 *
 * A step that writes one key of a plain frozen object must copy all of its keys: a map that grows by a key
 * per call (a bank's transfers, a shop's orders) makes every write cost the map's size. Above a size
 * (`recordThreshold`) a state's object is held instead as a hash array mapped trie of its entries plus a
 * persistent vector of its keys in insertion order, so a write copies O(log n) small nodes and shares the
 * rest with the state before it.
 *
 * Readers never see the difference: the record is presented through a Proxy as an immutable,
 * null-prototype JSON object (stamped final, so `isImmutableJson` is true): the same keys in the same
 * order, `in`, `Object.hasOwn`, descriptors, spread, for..in, JSON.stringify byte for byte; writes are
 * refused as a frozen object refuses them (a TypeError in strict code). Keys are data: `__proto__` is an
 * entry like any other. What a Proxy cannot fake: `Object.isFrozen` and `Object.isExtensible` answer as
 * for an extensible object (a frozen target would force the Proxy to list the target's own keys), so code
 * that asks whether a state is immutable asks `isImmutableJson`; and `structuredClone` refuses a Proxy.
 *
 * JavaScript lists array-index keys ("0", "17") first, in numeric order, before the others: records hold
 * only objects without such keys (an object with one stays a plain object), so insertion order is the
 * order.
 */

/** Objects with at least this many keys become records when a step writes them. */
let threshold = 32;

/** The size from which a written object becomes a record. */
export function recordThreshold(): number {
  return threshold;
}

/** Changes the size from which objects become records (tests use small sizes to exercise records). */
export function setRecordThreshold(size: number): void {
  threshold = Math.max(1, Math.floor(size));
}

// ---- the trie: key -> entry -------------------------------------------------------------------------

class Entry {
  constructor(
    readonly key: string,
    readonly value: unknown,
    /** Position in insertion order (an index of the order vector). */
    readonly seq: number,
    readonly hash: number,
  ) {}
}

class Branch {
  constructor(
    readonly bitmap: number,
    readonly items: readonly TrieNode[],
  ) {}
}

/** Entries whose 32-bit hashes are equal. */
class Collision {
  constructor(
    readonly hash: number,
    readonly entries: readonly Entry[],
  ) {}
}

type TrieNode = Entry | Branch | Collision;

/** FNV-1a over UTF-16 code units. */
function hashOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

function popcount(bits: number): number {
  let n = bits - ((bits >>> 1) & 0x55555555);
  n = (n & 0x33333333) + ((n >>> 2) & 0x33333333);
  return (Math.imul((n + (n >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) as number;
}

function lookup(node: TrieNode | undefined, hash: number, key: string): Entry | undefined {
  let shift = 0;
  while (node !== undefined) {
    if (node instanceof Branch) {
      const bit = 1 << ((hash >>> shift) & 31);
      if ((node.bitmap & bit) === 0) return undefined;
      node = node.items[popcount(node.bitmap & (bit - 1))];
      shift += 5;
    } else if (node instanceof Entry) return node.key === key ? node : undefined;
    else {
      if (node.hash !== hash) return undefined;
      for (const entry of node.entries) if (entry.key === key) return entry;
      return undefined;
    }
  }
  return undefined;
}

/** A node holding two entries with different keys, from `shift` down. */
function pair(a: Entry, b: Entry, shift: number): TrieNode {
  if (a.hash === b.hash) return new Collision(a.hash, [a, b]);
  const bitA = 1 << ((a.hash >>> shift) & 31);
  const bitB = 1 << ((b.hash >>> shift) & 31);
  if (bitA === bitB) return new Branch(bitA, [pair(a, b, shift + 5)]);
  return new Branch(bitA | bitB, bitA >>> 0 < bitB >>> 0 ? [a, b] : [b, a]);
}

/** The trie with `entry` stored (replacing the entry of the same key, if any). */
function insert(node: TrieNode | undefined, entry: Entry, shift: number): TrieNode {
  if (node === undefined) return entry;
  if (node instanceof Entry) return node.key === entry.key ? entry : pair(node, entry, shift);
  if (node instanceof Collision) {
    if (node.hash !== entry.hash) return pair2(node, entry, shift);
    const entries = node.entries.slice();
    const at = entries.findIndex((old) => old.key === entry.key);
    if (at >= 0) entries[at] = entry;
    else entries.push(entry);
    return new Collision(node.hash, entries);
  }
  const bit = 1 << ((entry.hash >>> shift) & 31);
  const index = popcount(node.bitmap & (bit - 1));
  const items = node.items.slice();
  if ((node.bitmap & bit) === 0) {
    items.splice(index, 0, entry);
    return new Branch(node.bitmap | bit, items);
  }
  items[index] = insert(items[index], entry, shift + 5);
  return new Branch(node.bitmap, items);
}

/** A collision node and an entry of another hash, from `shift` down. */
function pair2(collision: Collision, entry: Entry, shift: number): TrieNode {
  const bitA = 1 << ((collision.hash >>> shift) & 31);
  const bitB = 1 << ((entry.hash >>> shift) & 31);
  if (bitA === bitB) return new Branch(bitA, [pair2(collision, entry, shift + 5)]);
  return new Branch(bitA | bitB, bitA >>> 0 < bitB >>> 0 ? [collision, entry] : [entry, collision]);
}

/** The trie without `key` (which it holds). */
function remove(node: TrieNode, hash: number, key: string, shift: number): TrieNode | undefined {
  if (node instanceof Entry) return undefined;
  if (node instanceof Collision) {
    const entries = node.entries.filter((entry) => entry.key !== key);
    return entries.length === 1 ? entries[0] : new Collision(node.hash, entries);
  }
  const bit = 1 << ((hash >>> shift) & 31);
  const index = popcount(node.bitmap & (bit - 1));
  const child = remove(node.items[index] as TrieNode, hash, key, shift + 5);
  const items = node.items.slice();
  if (child === undefined) {
    items.splice(index, 1);
    if (items.length === 0) return undefined;
    // A branch left with one entry collapses into it (a sub-branch cannot move up: its bits are deeper).
    if (items.length === 1 && !((items[0] as TrieNode) instanceof Branch)) return items[0];
    return new Branch(node.bitmap & ~bit, items);
  }
  items[index] = child;
  return new Branch(node.bitmap, items);
}

// ---- the order: a persistent vector of keys by position (undefined where a key was deleted) ----------

type VectorNode = unknown[];

class Order {
  constructor(
    readonly root: VectorNode,
    /** Bits above the leaf level: 0 when the root is a leaf. */
    readonly shift: number,
    readonly count: number,
  ) {}
}

const EMPTY_ORDER = new Order([], 0, 0);

function orderSet(node: VectorNode, shift: number, index: number, value: unknown): VectorNode {
  const copy = node.slice();
  const slot = (index >>> shift) & 31;
  copy[slot] = shift === 0 ? value : orderSet((node[slot] as VectorNode) ?? [], shift - 5, index, value);
  return copy;
}

function orderPush(order: Order, value: unknown): Order {
  const { root, shift, count } = order;
  if (count === 2 ** (shift + 5)) {
    // Full: a new root over the old one, one level taller.
    return new Order(orderSet([root], shift + 5, count, value), shift + 5, count + 1);
  }
  return new Order(orderSet(root, shift, count, value), shift, count + 1);
}

function orderWith(order: Order, index: number, value: unknown): Order {
  return new Order(orderSet(order.root, order.shift, index, value), order.shift, order.count);
}

function orderKeys(node: VectorNode, shift: number, out: string[]): void {
  if (shift === 0) {
    for (let i = 0; i < node.length; i++) {
      const key = node[i];
      if (key !== undefined) out.push(key as string);
    }
  } else for (let i = 0; i < node.length; i++) orderKeys(node[i] as VectorNode, shift - 5, out);
}

// ---- records ------------------------------------------------------------------------------------------

/** One version of a record's content. */
class Content {
  constructor(
    readonly trie: TrieNode | undefined,
    readonly order: Order,
    readonly size: number,
  ) {}
}

function contentGet(content: Content, key: string): Entry | undefined {
  return lookup(content.trie, hashOf(key), key);
}

function contentSet(content: Content, key: string, value: unknown): Content {
  const hash = hashOf(key);
  const old = lookup(content.trie, hash, key);
  if (old !== undefined) {
    if (old.value === value) return content;
    return new Content(
      insert(content.trie, new Entry(key, value, old.seq, hash), 0),
      content.order,
      content.size,
    );
  }
  const seq = content.order.count;
  const trie = insert(content.trie, new Entry(key, value, seq, hash), 0);
  return new Content(trie, orderPush(content.order, key), content.size + 1);
}

function contentDelete(content: Content, key: string): Content {
  const hash = hashOf(key);
  const old = lookup(content.trie, hash, key);
  if (old === undefined) return content;
  const trie = content.size === 1 ? undefined : remove(content.trie as TrieNode, hash, key, 0);
  const next = new Content(trie, orderWith(content.order, old.seq, undefined), content.size - 1);
  // Deleted keys leave holes in the order; once they outnumber the keys, the order is rebuilt (amortised).
  const holes = next.order.count - next.size;
  return holes > 32 && holes > next.size ? compacted(next) : next;
}

function contentKeys(content: Content): string[] {
  const keys: string[] = [];
  orderKeys(content.order.root, content.order.shift, keys);
  return keys;
}

function compacted(content: Content): Content {
  let fresh = new Content(undefined, EMPTY_ORDER, 0);
  for (const key of contentKeys(content))
    fresh = contentSet(fresh, key, (contentGet(content, key) as Entry).value);
  return fresh;
}

/** Whether JavaScript orders `key` as an array index (first, numerically) rather than by insertion. */
export function isArrayIndexKey(key: string): boolean {
  const first = key.charCodeAt(0);
  if (!(first >= 48 && first <= 57)) return false;
  const n = Number(key);
  return Number.isInteger(n) && n <= 4294967294 && String(n) === key;
}

/** The target behind a record's proxy: its content (and, while writable, the symbol keys put on it). */
class Holder {
  constructor(
    public content: Content,
    readonly writable: boolean,
  ) {}
  symbols: Map<symbol, unknown> | undefined;
  /** The keys in order, listed once (an immutable record's content never changes). */
  keys: string[] | undefined;

  /** `console.log` and `util.inspect` show a Proxy's target: show the object it stands for. */
  [Symbol.for("nodejs.util.inspect.custom")](
    _depth: number,
    options: object,
    inspect: (value: unknown, options: object) => string,
  ): string {
    // Called with the proxy as `this` (Node looks the method up on the target).
    const holder = Brand.holderOf(this) ?? this;
    return inspect(plainCopy(holder.content), options);
  }
}

/** Returns the object it is given, so that a subclass's field initialisers run on that object. */
class Stamp {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the point: `new Brand(proxy, holder)` stamps the proxy
    return target;
  }
}

/**
 * The mark of a record's proxy, carrying its holder: a private field (on the proxy itself, out of reach
 * of its traps) answers "is this a record, and what is in it" in about a property read.
 */
class Brand extends Stamp {
  #holder: Holder;

  constructor(proxy: object, holder: Holder) {
    super(proxy);
    this.#holder = holder;
  }

  static holderOf(value: object): Holder | undefined {
    return #holder in value ? (value as unknown as Brand).#holder : undefined;
  }
}

function plainCopy(content: Content): Record<string, unknown> {
  const copy = nullPrototypeObject(content.size);
  for (const key of contentKeys(content)) copy[key] = (contentGet(content, key) as Entry).value;
  return copy;
}

/** What both kinds of record answer alike: no defined properties, no prototype, never made non-extensible. */
const shapeTraps: ProxyHandler<Holder> = {
  defineProperty() {
    return false;
  },
  getPrototypeOf() {
    return null;
  },
  setPrototypeOf(_holder, prototype) {
    return prototype === null;
  },
  preventExtensions() {
    return false;
  },
};

const frozenTraps: ProxyHandler<Holder> = {
  get(holder, key) {
    if (typeof key === "symbol") return undefined;
    return contentGet(holder.content, key)?.value;
  },
  has(holder, key) {
    return typeof key === "string" && contentGet(holder.content, key) !== undefined;
  },
  ownKeys(holder) {
    // The Proxy copies what its trap returns, so one list serves every reader.
    if (holder.keys === undefined) holder.keys = contentKeys(holder.content);
    return holder.keys;
  },
  getOwnPropertyDescriptor(holder, key) {
    if (typeof key === "symbol") return undefined;
    const entry = contentGet(holder.content, key);
    // configurable: a Proxy may only call a property non-configurable when its target has it so.
    return entry === undefined
      ? undefined
      : { value: entry.value, writable: false, enumerable: true, configurable: true };
  },
  set() {
    return false;
  },
  deleteProperty() {
    return false;
  },
  ...shapeTraps,
};

/** The draft's copy: the same reads, and writes that make a new content (O(log n) each). */
const writableTraps: ProxyHandler<Holder> = {
  get(holder, key) {
    if (typeof key === "symbol") return holder.symbols?.get(key);
    return contentGet(holder.content, key)?.value;
  },
  has(holder, key) {
    if (typeof key === "symbol") return holder.symbols?.has(key) === true;
    return contentGet(holder.content, key) !== undefined;
  },
  ownKeys(holder) {
    const keys: Array<string | symbol> = contentKeys(holder.content);
    if (holder.symbols !== undefined) for (const key of holder.symbols.keys()) keys.push(key);
    return keys;
  },
  getOwnPropertyDescriptor(holder, key) {
    let found: boolean;
    let value: unknown;
    if (typeof key === "symbol") {
      found = holder.symbols?.has(key) === true;
      value = holder.symbols?.get(key);
    } else {
      const entry = contentGet(holder.content, key);
      found = entry !== undefined;
      value = entry?.value;
    }
    return found ? { value, writable: true, enumerable: true, configurable: true } : undefined;
  },
  set(holder, key, value) {
    if (typeof key === "symbol") {
      if (holder.symbols === undefined) holder.symbols = new Map();
      holder.symbols.set(key, value);
    } else if (isArrayIndexKey(key))
      return false; // the draft makes the record a plain object first
    else holder.content = contentSet(holder.content, key, value);
    return true;
  },
  deleteProperty(holder, key) {
    if (typeof key === "symbol") holder.symbols?.delete(key);
    else holder.content = contentDelete(holder.content, key);
    return true;
  },
  ...shapeTraps,
};

function present(content: Content, writable: boolean): Record<string, unknown> {
  const holder = new Holder(content, writable);
  const proxy = new Proxy(holder, writable ? writableTraps : frozenTraps) as unknown as Record<
    string,
    unknown
  >;
  new Brand(proxy, holder);
  return proxy;
}

/** Whether `value` is a record (immutable or a draft's writable copy). */
export function isRecord(value: unknown): boolean {
  return typeof value === "object" && value !== null && Brand.holderOf(value) !== undefined;
}

/** Whether `value` is a draft's writable copy of a record. */
export function isWritableRecord(value: unknown): boolean {
  return typeof value === "object" && value !== null && Brand.holderOf(value)?.writable === true;
}

/**
 * A writable record holding `source`'s keys and values in its order, for a draft's copy of it: O(1) when
 * `source` is an immutable record, O(n) for a plain object. Undefined when `source` has an array-index key
 * (it stays a plain object).
 */
export function writableRecordOf(
  source: object,
  keys?: readonly string[],
): Record<string, unknown> | undefined {
  const holder = Brand.holderOf(source);
  if (holder !== undefined) return present(holder.content, true);
  const names = keys ?? Object.keys(source);
  for (const key of names) if (isArrayIndexKey(key)) return undefined;
  let content = new Content(undefined, EMPTY_ORDER, 0);
  for (const key of names) content = contentSet(content, key, (source as Record<string, unknown>)[key]);
  return present(content, true);
}

/**
 * The immutable form of a draft's writable record: a record (O(1)), or a plain null-prototype object when
 * it has shrunk well below the threshold. The caller vouches that its values are immutable JSON; symbol
 * keys are dropped. Stamped final; a plain result is frozen.
 */
export function freezeRecord(writable: object): object {
  const holder = Brand.holderOf(writable) as Holder;
  if (holder.content.size < threshold / 2) return adoptImmutable(plainCopy(holder.content));
  return markImmutable(present(holder.content, false));
}

/** The position of `key` in a record's order (for sorting keys as the record lists them). */
export function recordPosition(record: object, key: string): number {
  const holder = Brand.holderOf(record) as Holder;
  return contentGet(holder.content, key)?.seq ?? Number.POSITIVE_INFINITY;
}

/** An immutable record of a plain object's content (tests and tools that build large states at once). */
export function immutableRecordOf(source: object): object | undefined {
  const writable = writableRecordOf(source);
  if (writable === undefined) return undefined;
  return markImmutable(present((Brand.holderOf(writable) as Holder).content, false));
}

/** The 32-bit hash a record files `key` under (exported for tests that need colliding keys). */
export const recordKeyHash = hashOf;
