import { TerrariumError } from "../core/errors.js";
import {
  adoptImmutable,
  isImmutableJson,
  nullPrototypeObject,
  toImmutableJsonAt,
} from "../core/immutable-json.js";
import { diffJson, type JsonChange } from "../core/json-diff.js";
import { escapeToken } from "../core/json-pointer.js";
import {
  freezeRecord,
  isArrayIndexKey,
  isRecord,
  recordPosition,
  recordThreshold,
  writableRecordOf,
} from "../core/persistent-record.js";

/**
 * Copy-on-write drafts of immutable JSON states, for TypeScript tool code.
 *
 * A tool changes its draft as if it owned the state. Reading a container gives a draft of it; the first
 * write to a draft copies that one container (and its parents, once each); nothing else is copied. When
 * the tool returns, `finish` turns the copies into the new immutable state (only the copies and the values
 * the tool wrote are frozen; every untouched subtree is shared with the old state) and each draft
 * remembers which keys it wrote, so `changes` lists the JSON Patch-style changes by visiting those keys
 * only, not by walking the state: a step costs what it touched.
 *
 * Contract kept from the immer drafts this replaces: the input state is never changed, a dropped draft
 * (a guard's `fail`, a crash) leaves no trace, the result is what `toImmutableJson` would make of the
 * draft's final content (JSON's rules: undefined members dropped, non-finite numbers null, cycles and
 * excessive depth refused), and its key order is the order the draft shows.
 */

/** The draft behind a proxy (a symbol lookup misses on every other object at the cost of one property read). */
const DRAFT = Symbol("terrarium.draft");

type Container = Record<string, unknown> & unknown[];

/** Past this many, a draft's children and written keys are also indexed (a Map, a Set); below, a scan is cheaper. */
const SCAN_LIMIT = 8;

interface Draft {
  readonly base: Container;
  readonly array: boolean;
  readonly parent: Draft | undefined;
  /** The key of `base` in the parent's container (unused for the root). */
  readonly key: string;
  /** Depth of `base` in the document (the root is 0), for the depth limit on what tools write. */
  readonly depth: number;
  readonly scope: DraftScope;
  proxy: object;
  /** The writable copy, made by the first write; undefined while the draft is unchanged. */
  copy: Container | undefined;
  /** Whether `copy` is a writable persistent record (see `persistent-record.ts`). */
  record: boolean;
  /**
   * `Object.keys(base)`, kept from making a plain copy (objects): the order changes are reported in. A
   * record's copy (see below) has none: its positions give the order.
   */
  baseKeys: string[] | undefined;
  /** Drafts handed out for members of `base` (each knows its key), in the order they were made. */
  children: Draft[] | undefined;
  /** `children` by key, once there are more than SCAN_LIMIT of them. */
  childIndex: Map<string, Draft> | undefined;
  /** Keys the tool assigned or deleted (objects), in the order first written. */
  written: Array<string | symbol> | undefined;
  /** `written` as a set, once it holds more than SCAN_LIMIT keys. */
  writtenIndex: Set<string | symbol> | undefined;
  /** The immutable result, once finished. */
  final: unknown;
  finishing: boolean;
}

/** One step's drafts: closed when the step ends, after which its drafts refuse to be used. */
interface DraftScope {
  open: boolean;
}

function closed(): never {
  throw new TerrariumError("INVALID_INPUT", "a state draft was used after its step ended");
}

function draftOf(value: unknown): Draft | undefined {
  const draft = (value as { [DRAFT]?: Draft })[DRAFT];
  // Only the proxy itself: an object that merely inherits from one (a tool set its `__proto__` to a
  // draft) would otherwise be taken for that draft and end as its content.
  return draft !== undefined && draft.proxy === value ? draft : undefined;
}

function childAt(draft: Draft, key: string): Draft | undefined {
  if (draft.childIndex !== undefined) return draft.childIndex.get(key);
  const children = draft.children;
  if (children === undefined) return undefined;
  for (let i = 0; i < children.length; i++) {
    const child = children[i] as Draft;
    if (child.key === key) return child;
  }
  return undefined;
}

/** Keeps `child` as the draft of its key (in place of `replaced`, a draft of what the key held before). */
function keepChild(draft: Draft, child: Draft, replaced: Draft | undefined): void {
  const children = draft.children;
  if (children === undefined) {
    draft.children = [child];
    return;
  }
  if (replaced !== undefined) children[children.indexOf(replaced)] = child;
  else children.push(child);
  if (draft.childIndex !== undefined) draft.childIndex.set(child.key, child);
  else if (children.length > SCAN_LIMIT) draft.childIndex = new Map(children.map((each) => [each.key, each]));
}

function noteWritten(draft: Draft, key: string | symbol): void {
  const written = draft.written;
  if (written === undefined) {
    draft.written = [key];
    return;
  }
  if (draft.writtenIndex !== undefined) {
    if (!draft.writtenIndex.has(key)) {
      draft.writtenIndex.add(key);
      written.push(key);
    }
  } else if (!written.includes(key)) {
    written.push(key);
    if (written.length > SCAN_LIMIT) draft.writtenIndex = new Set(written);
  }
}

function wasWritten(draft: Draft, key: string): boolean {
  if (draft.writtenIndex !== undefined) return draft.writtenIndex.has(key);
  return draft.written?.includes(key) === true;
}

function childFor(draft: Draft, key: string, value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  const known = childAt(draft, key);
  if (known !== undefined && known.base === value) return known.proxy;
  // What the tool stored itself (a fresh value or another draft) is handed back as it is.
  if (!isImmutableJson(value)) return value;
  const child = createDraft(value as Container, draft, key, draft.scope);
  keepChild(draft, child, known);
  return child.proxy;
}

/**
 * Copies the draft's container (and its parents' containers, which will hold the new one). A large object
 * is not copied key by key: its copy is a writable persistent record (`persistent-record.ts`) that shares
 * the base's content, and each write to it costs O(log n). A plain object that reaches the threshold
 * becomes one when first written (one O(n) copy, as before), and stays one in the states that follow.
 */
function markChanged(draft: Draft): void {
  let current: Draft | undefined = draft;
  while (current !== undefined && current.copy === undefined) {
    const base = current.base;
    if (current.array) current.copy = base.slice() as Container;
    else if (isRecord(base)) {
      current.copy = writableRecordOf(base) as Container;
      current.record = true;
    } else {
      const keys = Object.keys(base);
      const record = keys.length >= recordThreshold() ? writableRecordOf(base, keys) : undefined;
      current.baseKeys = keys;
      if (record !== undefined) {
        current.copy = record as Container;
        current.record = true;
      } else {
        const copy = nullPrototypeObject<Container>(keys.length);
        // A null-prototype object has no `__proto__` setter: every key is stored as data.
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i] as string;
          copy[key] = base[key];
        }
        current.copy = copy;
      }
    }
    current = current.parent;
  }
}

/** A plain null-prototype copy of a writable record, symbol keys included. */
function plainCopyOf(record: Container): Container {
  const keys = Reflect.ownKeys(record);
  const copy = nullPrototypeObject<Record<string | symbol, unknown>>(keys.length);
  for (const key of keys) copy[key] = record[key as never];
  return copy as Container;
}

function store(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}

const objectTraps: ProxyHandler<Draft> = {
  get(draft, key) {
    if (key === DRAFT) return draft;
    if (!draft.scope.open) closed();
    if (typeof key === "symbol") return undefined;
    return childFor(draft, key, (draft.copy ?? draft.base)[key]);
  },
  set(draft, key, value) {
    if (!draft.scope.open) closed();
    let copy = draft.copy;
    if (copy === undefined) {
      if (typeof key !== "symbol") {
        const current = draft.base[key];
        // Writing back what is there changes nothing (and copies nothing).
        if (Object.is(current, value) && (current !== undefined || Object.hasOwn(draft.base, key)))
          return true;
        if (typeof value === "object" && value !== null) {
          const child = childAt(draft, key);
          if (child !== undefined && child.proxy === value && child.base === current) return true;
        }
      }
      markChanged(draft);
      copy = draft.copy as Container;
    }
    if (typeof key === "symbol") (copy as unknown as Record<symbol, unknown>)[key] = value;
    else {
      // A record holds no array-index keys (JavaScript lists those first): meeting one, it becomes plain.
      if (draft.record && isArrayIndexKey(key)) {
        copy = plainCopyOf(copy);
        draft.copy = copy;
        draft.record = false;
      }
      (copy as Record<string, unknown>)[key] = value;
    }
    noteWritten(draft, key);
    return true;
  },
  deleteProperty(draft, key) {
    if (!draft.scope.open) closed();
    if (!Object.hasOwn(draft.copy ?? draft.base, key)) return true;
    markChanged(draft);
    delete (draft.copy as Record<string | symbol, unknown>)[key];
    noteWritten(draft, key);
    return true;
  },
  has(draft, key) {
    if (key === DRAFT) return true;
    if (!draft.scope.open) closed();
    return key in (draft.copy ?? draft.base);
  },
  ownKeys(draft) {
    if (!draft.scope.open) closed();
    return Reflect.ownKeys(draft.copy ?? draft.base);
  },
  getOwnPropertyDescriptor(draft, key) {
    if (!draft.scope.open) closed();
    const source = draft.copy ?? draft.base;
    const descriptor = Reflect.getOwnPropertyDescriptor(source, key);
    if (descriptor === undefined) return undefined;
    return { value: descriptor.value, writable: true, enumerable: descriptor.enumerable, configurable: true };
  },
  getPrototypeOf(draft) {
    return Object.getPrototypeOf(draft.base);
  },
  defineProperty() {
    throw new TerrariumError("INVALID_INPUT", "a tool cannot define properties on its state; assign them");
  },
  setPrototypeOf() {
    throw new TerrariumError("INVALID_INPUT", "a tool cannot change the prototype of its state");
  },
  preventExtensions() {
    return false;
  },
};

/** Arrays: the proxy's target is `[draft]`, so that `Array.isArray` sees an array. */
const arrayTraps: ProxyHandler<[Draft]> = {
  get(target, key) {
    const draft = target[0];
    if (key === DRAFT) return draft;
    if (!draft.scope.open) closed();
    const source = draft.copy ?? draft.base;
    const value = (source as unknown as Record<string | symbol, unknown>)[key];
    // Methods and `length` come as they are; only members (indexes) can be containers.
    if (typeof key === "symbol" || typeof value !== "object" || value === null) return value;
    return childFor(draft, key, value);
  },
  set(target, key, value) {
    const draft = target[0];
    if (!draft.scope.open) closed();
    if (draft.copy === undefined) {
      const current = (draft.base as unknown as Record<string | symbol, unknown>)[key];
      if (Object.is(current, value) && Object.hasOwn(draft.base, key)) return true;
      const child = typeof key === "string" ? childAt(draft, key) : undefined;
      if (child !== undefined && child.proxy === value && child.base === current) return true;
      markChanged(draft);
    }
    const copy = draft.copy as unknown as Record<string | symbol, unknown>;
    if (key === "__proto__") store(copy as Record<string, unknown>, key, value);
    else copy[key] = value;
    return true;
  },
  deleteProperty(target, key) {
    const draft = target[0];
    if (!draft.scope.open) closed();
    if (!Object.hasOwn(draft.copy ?? draft.base, key)) return true;
    markChanged(draft);
    delete (draft.copy as unknown as Record<string | symbol, unknown>)[key];
    return true;
  },
  has(target, key) {
    if (key === DRAFT) return true;
    const draft = target[0];
    if (!draft.scope.open) closed();
    return key in (draft.copy ?? draft.base);
  },
  ownKeys(target) {
    const draft = target[0];
    if (!draft.scope.open) closed();
    return Reflect.ownKeys(draft.copy ?? draft.base);
  },
  getOwnPropertyDescriptor(target, key) {
    const draft = target[0];
    if (!draft.scope.open) closed();
    const source = draft.copy ?? draft.base;
    const descriptor = Reflect.getOwnPropertyDescriptor(source, key);
    if (descriptor === undefined) return undefined;
    // `length` must stay non-configurable, as it is on the target.
    const isLength = key === "length";
    return {
      value: descriptor.value,
      writable: true,
      enumerable: descriptor.enumerable,
      configurable: !isLength,
    };
  },
  getPrototypeOf(target) {
    return Object.getPrototypeOf(target[0].base);
  },
  defineProperty() {
    throw new TerrariumError("INVALID_INPUT", "a tool cannot define properties on its state; assign them");
  },
  setPrototypeOf() {
    throw new TerrariumError("INVALID_INPUT", "a tool cannot change the prototype of its state");
  },
  preventExtensions() {
    return false;
  },
};

function createDraft(base: Container, parent: Draft | undefined, key: string, scope: DraftScope): Draft {
  const array = Array.isArray(base);
  const draft: Draft = {
    base,
    array,
    parent,
    key,
    depth: parent === undefined ? 0 : parent.depth + 1,
    scope,
    proxy: undefined as unknown as object,
    copy: undefined,
    record: false,
    baseKeys: undefined,
    children: undefined,
    childIndex: undefined,
    written: undefined,
    writtenIndex: undefined,
    final: undefined,
    finishing: false,
  };
  draft.proxy = array ? new Proxy([draft], arrayTraps) : new Proxy(draft, objectTraps);
  return draft;
}

/** For `toImmutableJsonAt`: a draft met inside a written value ends as its finished form. */
function resolveDraft(value: object): unknown {
  const inner = draftOf(value);
  return inner?.scope.open ? finish(inner) : undefined;
}

/** A member as it will be stored: kept when already immutable, converted (drafts resolved) otherwise. */
function finalMember(member: unknown, depth: number): unknown {
  switch (typeof member) {
    case "string":
    case "boolean":
      return member;
    case "number":
      if (Number.isFinite(member)) return member;
      break;
    case "object":
      if (member !== null && isImmutableJson(member)) return member;
  }
  return toImmutableJsonAt(member, depth, resolveDraft);
}

/** The immutable value a draft ends as (its base when it was never written). */
function finish(draft: Draft): unknown {
  const copy = draft.copy;
  if (copy === undefined) return draft.base;
  if (draft.final !== undefined) return draft.final;
  if (draft.finishing) throw new TerrariumError("INVALID_INPUT", "the value contains a cycle");
  draft.finishing = true;
  // Members drafted and changed in place take their finished form where they still stand.
  const children = draft.children;
  if (children !== undefined) {
    for (let i = 0; i < children.length; i++) {
      const child = children[i] as Draft;
      const key = child.key;
      if (child.copy !== undefined && copy[key as never] === child.base && Object.hasOwn(copy, key))
        (copy as Record<string, unknown>)[key] = finish(child);
    }
  }
  let result: object;
  if (draft.array) {
    const items = new Array<unknown>(copy.length);
    for (let i = 0; i < copy.length; i++) {
      const converted = finalMember(copy[i], draft.depth + 1);
      items[i] = converted === undefined ? null : converted;
    }
    result = adoptImmutable(items);
  } else {
    const record = copy as Record<string | symbol, unknown>;
    const written = draft.written;
    if (written !== undefined) {
      for (let i = 0; i < written.length; i++) {
        const key = written[i] as string | symbol;
        if (typeof key === "symbol") {
          delete record[key];
          continue;
        }
        const member = record[key];
        if (member === undefined && !Object.hasOwn(record, key)) continue;
        const converted = finalMember(member, draft.depth + 1);
        if (converted === undefined) delete record[key];
        else if (converted !== member) record[key] = converted;
      }
    }
    result = draft.record ? freezeRecord(record) : adoptImmutable(record);
  }
  draft.final = result;
  draft.finishing = false;
  return result;
}

/** `path` + "/" + the key as a JSON Pointer token. */
function pathTo(path: string, key: string): string {
  return `${path}/${escapeToken(key)}`;
}

/** Adds the changes of one member from `was` to `now` (different values) at `at`. */
function memberChanges(draft: Draft, key: string, was: unknown, now: unknown, at: string, out: JsonChange[]) {
  if (typeof was !== "object" || was === null || typeof now !== "object" || now === null) {
    // What diffJson says of two values one of which is not a container (states hold no NaN).
    out.push({ op: "replace", path: at, before: was, after: now });
    return;
  }
  const child = childAt(draft, key);
  if (child !== undefined && child.base === was && child.final === now) changesOf(child, now, at, out);
  else for (const change of diffJson(was, now, at)) out.push(change);
}

/** JSON Patch-style changes from a draft's base to its finished value, visiting only what it wrote. */
function changesOf(draft: Draft, after: unknown, path: string, out: JsonChange[]): void {
  const before = draft.base;
  if (before === after) return;
  if (draft.array || after !== draft.final) {
    for (const change of diffJson(before, after, path)) out.push(change);
    return;
  }
  const record = after as Record<string, unknown>;
  const touched: string[] = [];
  const written = draft.written;
  if (written !== undefined)
    for (let i = 0; i < written.length; i++) {
      const key = written[i];
      if (typeof key === "string") touched.push(key);
    }
  const children = draft.children;
  if (children !== undefined)
    for (let i = 0; i < children.length; i++) {
      const child = children[i] as Draft;
      if (child.copy !== undefined && !wasWritten(draft, child.key)) touched.push(child.key);
    }
  if (touched.length === 1) {
    // One member changed (the usual step): no orders to compare.
    const key = touched[0] as string;
    const at = pathTo(path, key);
    if (Object.hasOwn(before, key)) {
      if (!Object.hasOwn(record, key)) out.push({ op: "remove", path: at, before: before[key as never] });
      else {
        const was = before[key as never] as unknown;
        const now = record[key];
        if (was !== now) memberChanges(draft, key, was, now, at, out);
      }
    } else if (Object.hasOwn(record, key)) out.push({ op: "add", path: at, after: record[key] });
    return;
  }
  let existing: string[] = [];
  const added: string[] = [];
  for (const key of touched) {
    if (Object.hasOwn(before, key)) existing.push(key);
    else if (Object.hasOwn(record, key)) added.push(key);
  }
  // diffJson's order: the old keys in their order, then the new ones in theirs.
  if (existing.length > 1 && draft.baseKeys === undefined && isRecord(before))
    existing.sort((a, b) => recordPosition(before, a) - recordPosition(before, b));
  else if (existing.length > 1) {
    const keys = draft.baseKeys ?? Object.keys(before);
    if (keys.length <= 32) {
      const ordered: string[] = [];
      for (const key of keys) if (existing.includes(key)) ordered.push(key);
      existing = ordered;
    } else {
      const order = new Map(keys.map((key, index) => [key, index]));
      existing.sort((a, b) => (order.get(a) as number) - (order.get(b) as number));
    }
  }
  for (const key of existing) {
    const at = pathTo(path, key);
    if (!Object.hasOwn(record, key)) {
      out.push({ op: "remove", path: at, before: before[key as never] });
      continue;
    }
    const was = before[key as never] as unknown;
    const now = record[key];
    if (was !== now) memberChanges(draft, key, was, now, at, out);
  }
  if (added.length > 1 && isRecord(record))
    added.sort((a, b) => recordPosition(record, a) - recordPosition(record, b));
  else if (added.length > 1) {
    const wanted = new Set(added);
    added.length = 0;
    for (const key of Object.keys(record)) if (wanted.has(key)) added.push(key);
  }
  for (const key of added) out.push({ op: "add", path: pathTo(path, key), after: record[key] });
}

/** A draft of one immutable state, for one step. */
export class StateDraft {
  private readonly scope: DraftScope = { open: true };
  private readonly root: Draft | undefined;
  /** What the tool sees: a draft of containers, the state itself when it is a primitive. */
  readonly state: unknown;

  constructor(readonly base: unknown) {
    if (typeof base === "object" && base !== null) {
      this.root = createDraft(base as Container, undefined, "", this.scope);
      this.state = this.root.proxy;
    } else this.state = base;
  }

  /** The new immutable state and its changes from `base`; the draft is closed afterwards. */
  finish(): { after: unknown; changes: JsonChange[] } {
    try {
      if (this.root === undefined) return { after: this.base, changes: [] };
      const after = finish(this.root);
      const changes: JsonChange[] = [];
      changesOf(this.root, after, "", changes);
      return { after, changes };
    } finally {
      this.scope.open = false;
    }
  }

  /**
   * Drops the draft (the step failed). Its proxies stay readable, as a failure's details may hold some;
   * they can never reach a state.
   */
  discard(): void {}
}

/**
 * The immutable container a draft proxy stands for, when the draft (and so everything under it) is
 * unchanged; undefined for anything else. Lets readers copy a drafted subtree without its traps.
 */
export function unchangedDraftBase(value: object): unknown {
  const draft = draftOf(value);
  return draft !== undefined && draft.copy === undefined && draft.scope.open ? draft.base : undefined;
}
