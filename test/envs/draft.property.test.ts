import fc from "fast-check";
import { Immer } from "immer";
import { describe, expect, it } from "vitest";
import { randomValidCall } from "../../src/bench/envsim/collect.js";
import { isImmutableJson } from "../../src/core/immutable-json.js";
import {
  createRandom,
  diffEnvSim,
  diffJson,
  envSimFromJsonChanges,
  toImmutableJson,
} from "../../src/core/index.js";
import {
  immutableRecordOf,
  isRecord,
  recordThreshold,
  setRecordThreshold,
} from "../../src/core/persistent-record.js";
import { StateDraft } from "../../src/envs/draft.js";
import { BUILTIN_ENVIRONMENTS, makeTransition } from "../../src/envs/index.js";

/**
 * The step path computes one change format from its own copy-on-write drafts and derives the other on
 * demand. These tests hold it to what the old path gave (immer drafts, `toImmutableJson` over the result,
 * both formats diffed from the whole states): the same `after` (key order included), the same `changes`,
 * the same `envChanges`, byte for byte.
 */

const reference = new Immer({ autoFreeze: false });

const jsonOf = (keys: string[], maxKeys: number) =>
  fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      fc.constantFrom(null, true, false),
      fc.integer({ min: -3, max: 3 }),
      fc.constantFrom("x", "y"),
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(fc.constantFrom(...keys), tie("value"), { maxKeys }),
    ),
  })).value;

const json = jsonOf(["a", "b", "c", "7", "1", "e/f", "g.h", "__proto__"], 5);
/** Wider objects, mostly without array-index keys: the ones that become records at a small threshold. */
const wide = fc.dictionary(
  fc.constantFrom("a", "b", "c", "d", "e/f", "g.h", "__proto__", "7"),
  jsonOf(["a", "b", "c", "d", "e", "__proto__", "1"], 6),
  { maxKeys: 7 },
);

/** One edit a tool might make; `at` picks the container, `key` the member (both taken modulo what exists). */
const edit = fc.record({
  kind: fc.constantFrom(
    "set",
    "set",
    "delete",
    "push",
    "splice",
    "sort",
    "move",
    "wrap",
    "same",
    "undefined",
    "nan",
    "read",
    "bump",
  ),
  at: fc.array(fc.nat(7), { maxLength: 4 }),
  key: fc.nat(9),
  value: json,
});
type Edit = typeof edit extends fc.Arbitrary<infer T> ? T : never;

type Node = Record<string, unknown> | unknown[];
const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null;

/** Follows `at` through the draft's containers as far as they go. */
function locate(root: unknown, at: number[]): Node | undefined {
  if (!isNode(root)) return undefined;
  let node: Node = root;
  for (const step of at) {
    const keys = Object.keys(node);
    const children = keys.filter((key) => isNode((node as Record<string, unknown>)[key]));
    if (children.length === 0) break;
    node = (node as Record<string, Node>)[children[step % children.length] as string] as Node;
  }
  return node;
}

function keyIn(node: Node, seed: number, fresh: boolean): string {
  const keys = Object.keys(node);
  if (fresh || keys.length === 0)
    return Array.isArray(node) ? String(node.length) : (["n", "a", "__proto__", "9"][seed % 4] as string);
  return keys[seed % keys.length] as string;
}

/** Applies the edits to a draft, the way tool code would (the same code runs on both kinds of draft). */
function play(root: unknown, edits: Edit[]): unknown {
  let seen: unknown = null;
  for (const e of edits) {
    const node = locate(root, e.at);
    if (node === undefined) continue;
    const record = node as Record<string, unknown>;
    const key = keyIn(node, e.key, e.kind === "set" && e.key % 3 === 0);
    switch (e.kind) {
      case "set":
        if (Array.isArray(node) && Number(key) > node.length) break;
        record[key] = structuredClone(e.value);
        break;
      case "delete":
        if (!Array.isArray(node)) delete record[key];
        break;
      case "push":
        if (Array.isArray(node)) node.push(structuredClone(e.value), node[0]);
        break;
      case "splice":
        if (Array.isArray(node)) node.splice(e.key % (node.length + 1), 1);
        break;
      case "sort":
        if (Array.isArray(node)) node.reverse();
        break;
      case "move": {
        // Another container of the draft, stored under a second name.
        const other = locate(root, [...e.at].reverse());
        if (other !== undefined && other !== node) record[key] = other;
        break;
      }
      case "wrap": {
        const other = locate(root, e.at.slice(1));
        if (other !== undefined && other !== node && !Array.isArray(node))
          // A copy, as every other edit stores: the edits run on both drafts and shrinking replays them.
          record[key] = { inner: other, v: structuredClone(e.value) };
        break;
      }
      case "same":
        if (Object.hasOwn(record, key)) {
          // Writing back what was read (a draft of the member, for containers) changes nothing.
          const current = record[key];
          record[key] = current;
        }
        break;
      case "undefined":
        if (!Array.isArray(node)) record[key] = undefined;
        break;
      case "nan":
        record[key] = Number.NaN;
        break;
      case "read":
        seen = JSON.stringify(record[key]);
        break;
      case "bump": {
        const value = record[key];
        if (typeof value === "number") {
          record[key] = value + 1;
          record[key] = value;
        }
        break;
      }
    }
  }
  return seen;
}

function viaReference(before: unknown, edits: Edit[]) {
  const draftable = isNode(before);
  const draft = draftable ? reference.createDraft(before as object) : before;
  try {
    play(draft, edits);
    const after = toImmutableJson(draftable ? reference.finishDraft(draft) : draft);
    return { after, changes: diffJson(before, after), envChanges: diffEnvSim(before, after) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function viaDraft(before: unknown, edits: Edit[]) {
  const draft = new StateDraft(before);
  try {
    play(draft.state, edits);
    const { after, changes } = draft.finish();
    return { after, changes, envChanges: envSimFromJsonChanges(before, after, changes) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Immutable state: frozen, or a persistent record (immutable but not frozen: see persistent-record.ts). */
function isImmutableState(value: unknown): boolean {
  return isImmutableJson(value) && (isRecord(value) || Object.isFrozen(value));
}

/** `value` with every object of at least `recordThreshold()` keys (and no array-index key) a record. */
function withRecords(value: unknown): unknown {
  if (!isNode(value)) return value;
  if (Array.isArray(value)) return toImmutableJson(value.map(withRecords));
  const plain = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value)) plain[key] = withRecords(value[key]);
  if (Object.keys(plain).length < recordThreshold()) return toImmutableJson(plain);
  return immutableRecordOf(plain) ?? toImmutableJson(plain);
}

let withRecordsSeen = 0;

function hasRecord(value: unknown): boolean {
  if (!isNode(value)) return false;
  return isRecord(value) || Object.values(value).some(hasRecord);
}

/**
 * The edits on a plain mutable copy of the state (no drafts at all), then made immutable: what a draft
 * stands for. The oracle where immer cannot answer: it trips over its own revoked proxies when a tool's
 * object holds a draft and is not one immer finalises (its prototype changed), and on cycles.
 */
function viaMutableCopy(before: unknown, edits: Edit[]) {
  // Null-prototype objects, as a state's are: `__proto__` written to them is data, not a prototype.
  const copy = JSON.parse(JSON.stringify(before) ?? "null", (_key, value) =>
    isNode(value) && !Array.isArray(value) ? Object.assign(Object.create(null), value) : value,
  ) as unknown;
  try {
    play(copy, edits);
    const after = toImmutableJson(copy);
    return { after, changes: diffJson(before, after), envChanges: diffEnvSim(before, after) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/**
 * Whether the edits may give an ordinary object (one the tool made) a container as its prototype: a move
 * or wrap stores a container, and `__proto__` is among the keys an empty object is given.
 */
function prototypeWritten(edits: Edit[]): boolean {
  return edits.some((e) => (e.kind === "move" || e.kind === "wrap") && e.key % 4 === 2);
}

/** The draft path with plain objects only (no records, however large). */
function viaPlainDraft(before: unknown, edits: Edit[]) {
  const threshold = recordThreshold();
  setRecordThreshold(Number.MAX_SAFE_INTEGER);
  try {
    return viaDraft(toImmutableJson(JSON.parse(JSON.stringify(before) ?? "null")), edits);
  } finally {
    setRecordThreshold(threshold);
  }
}

/**
 * The draft path against the reference for one program of edits on `before`. With `records`, where immer
 * trips over its own revoked proxies (a tool's object given a draft as prototype, a cycle), the draft over
 * records must do exactly what the draft over plain objects does.
 */
function check(before: unknown, edits: Edit[], records = false): void {
  const snapshot = JSON.stringify(before);
  const expected = viaReference(before, edits);
  const actual = viaDraft(before, edits);
  if (records && "error" in expected && /revoked/.test(String(expected.error)))
    expect(JSON.stringify(actual)).toBe(JSON.stringify(viaPlainDraft(before, edits)));
  // Where immer trips over its revoked proxies, the edits on a plain mutable copy say what is right: a
  // cycle fails (the draft names it), anything else is the copy's result. The copy also decides where
  // immer answers but JavaScript disagrees: a tool object given a draft as its prototype (`__proto__`
  // written on an ordinary object) has no own members, so JSON writes it as {}, while immer's result
  // holds the prototype's members (seed -1687127878 of the records case found one).
  else if ("error" in expected && /revoked|cycle/.test(String(expected.error)))
    expect(JSON.stringify(actual)).toBe(JSON.stringify(viaMutableCopy(before, edits)));
  else if (!("error" in expected) && prototypeWritten(edits)) {
    const truth = JSON.stringify(viaMutableCopy(before, edits));
    const reference = JSON.stringify(expected);
    expect(JSON.stringify(actual)).toBe(reference === truth ? reference : truth);
  } else expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
  expect(JSON.stringify(before)).toBe(snapshot);
  if ("after" in actual && "after" in expected) {
    if (isNode(actual.after)) expect(isImmutableState(actual.after)).toBe(true);
    // The result is final: converting it again gives it back, not a copy.
    expect(toImmutableJson(actual.after)).toBe(actual.after);
    // What the old path shared with `before` (every untouched member) is shared here too.
    if (isNode(before) && isNode(expected.after) && isNode(actual.after))
      for (const key of Object.keys(before)) {
        const kept =
          (expected.after as Record<string, unknown>)[key] === (before as Record<string, unknown>)[key];
        if (kept)
          expect((actual.after as Record<string, unknown>)[key]).toBe(
            (before as Record<string, unknown>)[key],
          );
      }
  }
}

describe("state drafts", () => {
  it("give the old path's state, changes and EnvSimBench changes for random edits, byte for byte", () => {
    fc.assert(
      fc.property(json, fc.array(edit, { maxLength: 8 }), (plain, edits) => {
        check(toImmutableJson(plain), edits);
      }),
      { numRuns: 1500 },
    );
  });

  it("do the same over large objects held as persistent records (a threshold of 3 keys)", () => {
    const threshold = recordThreshold();
    setRecordThreshold(3);
    try {
      fc.assert(
        fc.property(wide, fc.array(edit, { maxLength: 8 }), fc.boolean(), (plain, edits, twice) => {
          // Records in the state before (as earlier steps leave them), and records made by the step.
          const before = withRecords(toImmutableJson(plain));
          if (hasRecord(before)) withRecordsSeen++;
          check(before, edits, true);
          // A second step over the first one's result: records written again.
          if (twice) {
            const first = viaDraft(before, edits);
            if ("after" in first) check(first.after, [...edits].reverse(), true);
          }
        }),
        { numRuns: 1500 },
      );
    } finally {
      setRecordThreshold(threshold);
    }
    // Many programs ran over records (about 40%: the generator's objects are wide, mostly without index keys).
    expect(withRecordsSeen).toBeGreaterThan(400);
  });

  it("copy nothing for a read, and refuse use after the step", () => {
    const before = toImmutableJson({ a: { b: [1, { c: 2 }] }, d: 1 });
    const draft = new StateDraft(before);
    const state = draft.state as { a: { b: [number, { c: number }] } };
    expect(state.a.b[1].c).toBe(2);
    expect(state.a).toBe(state.a);
    const { after, changes } = draft.finish();
    expect(after).toBe(before);
    expect(changes).toEqual([]);
    expect(() => state.a).toThrow(/after its step ended/);
  });

  it("refuse a cycle, as toImmutableJson does", () => {
    const draft = new StateDraft(toImmutableJson({ a: { b: 1 } }));
    const state = draft.state as { a: Record<string, unknown> };
    state.a.self = state.a;
    expect(() => draft.finish()).toThrow(/cycle/);
  });
});

describe("EnvSimBench changes derived from JSON Patch-style changes", () => {
  it("equal diffEnvSim for random documents", () => {
    fc.assert(
      fc.property(json, json, (before, after) => {
        const derived = envSimFromJsonChanges(before, after, diffJson(before, after));
        expect(JSON.stringify(derived)).toBe(JSON.stringify(diffEnvSim(before, after)));
      }),
      { numRuns: 2000 },
    );
  });

  it("equal the eagerly computed ones on every built-in environment's transitions", async () => {
    let compared = 0;
    for (const environment of Object.values(BUILTIN_ENVIRONMENTS)) {
      const large = JSON.stringify(await environment.initialState()).length > 100_000;
      const random = createRandom(`lazy-${environment.name}`);
      const instance = await environment.create({ seed: 3 });
      for (let step = 0; step < (large ? 10 : 40); step++) {
        const transition = await instance.step(
          randomValidCall(environment.tools, await instance.state(), random),
        );
        expect(JSON.stringify(transition.changes)).toBe(
          JSON.stringify(diffJson(transition.before, transition.after)),
        );
        expect(JSON.stringify(transition.envChanges)).toBe(
          JSON.stringify(diffEnvSim(transition.before, transition.after)),
        );
        expect(transition.delta).toBe(transition.envChanges.length);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(200);
  });
});

describe("transition records", () => {
  it("keep their keys and JSON, and share one pair of accessors (one hidden class, no per-step functions)", () => {
    const before = toImmutableJson({ a: [1], b: { c: 1 } });
    const after = toImmutableJson({ a: [1, 2], b: { c: 2 } });
    const first = makeTransition({ name: "t", arguments: {} }, true, null, before, after);
    const second = makeTransition({ name: "t", arguments: {} }, true, null, after, before);
    const accessor = (t: object) => Object.getOwnPropertyDescriptor(t, "envChanges")?.get;
    expect(accessor(first)).toBeTypeOf("function");
    expect(accessor(first)).toBe(accessor(second));
    expect(Object.keys(first)).toEqual([
      "call",
      "success",
      "observation",
      "before",
      "after",
      "changes",
      "envChanges",
      "delta",
    ]);
    expect(JSON.stringify(first)).toBe(
      JSON.stringify({
        call: first.call,
        success: true,
        observation: null,
        before,
        after,
        changes: diffJson(before, after),
        envChanges: diffEnvSim(before, after),
        delta: 2,
      }),
    );
    // Read once, a derived member is plain data in its place; it can also be set.
    expect(Object.getOwnPropertyDescriptor(first, "envChanges")?.value).toEqual(diffEnvSim(before, after));
    second.delta = 7;
    expect(second.delta).toBe(7);
    expect(Object.keys(second)).toEqual(Object.keys(first));
  });
});
