import { afterEach, describe, expect, it } from "vitest";
import { applyPredictedChangesPaper, applyPredictedChangesStrict } from "../../src/bench/envsim/score.js";
import { canonicalJson, jsonEqual } from "../../src/core/canonical-json.js";
import { isImmutableJson, toImmutableJson } from "../../src/core/immutable-json.js";
import { diffJson, same } from "../../src/core/json-diff.js";
import {
  isRecord,
  recordKeyHash,
  recordThreshold,
  setRecordThreshold,
} from "../../src/core/persistent-record.js";
import { StateDraft } from "../../src/envs/draft.js";
import { jsonDepth, jsonSize } from "../../src/sim/limits.js";

/**
 * Large objects of states are persistent records behind a Proxy (src/core/persistent-record.ts). These
 * tests hold a record to the plain frozen object it stands for, reader by reader, and hold a write into a
 * large object to the cost of one into a small one.
 */

const defaultThreshold = recordThreshold();
afterEach(() => setRecordThreshold(defaultThreshold));

type Dict = Record<string, unknown>;

/** Runs one step of tool code over `before`: the new state and its changes. */
function step(before: unknown, tool: (state: Dict) => void) {
  const draft = new StateDraft(before);
  tool(draft.state as Dict);
  return draft.finish();
}

/** Written through a variable: a literal `__proto__` key is what linters flag, not what is tested. */
const PROTO: string = "__proto__";
const HOSTILE = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "toJSON", "", "e/f~0"];

/** A state whose `m` has `n` keys (hostile ones among them), and that state after `m` was written. */
function largeState(n: number) {
  const m: Dict = Object.create(null);
  for (let i = 0; i < n; i++) m[`k${i}`] = { i, tags: [i % 3] };
  for (const key of HOSTILE) m[key] = key === "toJSON" ? "not a function" : { hostile: key };
  const before = toImmutableJson({ m, other: { a: 1 } }) as { m: Dict };
  const { after } = step(before, (state) => {
    (state.m as Dict).added = { i: -1 };
  });
  return { plain: before.m, after: after as { m: Dict } };
}

/** `m` with a key added, as a plain object would hold it. */
function plainWithAdded(plain: Dict): Dict {
  const copy: Dict = Object.create(null);
  for (const key of Object.keys(plain)) copy[key] = plain[key];
  copy.added = { i: -1 };
  return copy;
}

describe("persistent records", () => {
  it("are indistinguishable from the plain frozen object to every reader", () => {
    const { plain, after } = largeState(600);
    const record = after.m;
    const expected = plainWithAdded(plain);
    expect(isRecord(record)).toBe(true);
    expect(isImmutableJson(record)).toBe(true);
    expect(toImmutableJson(record)).toBe(record);
    expect(Object.getPrototypeOf(record)).toBe(null);
    expect(Array.isArray(record)).toBe(false);
    expect(Object.keys(record)).toEqual(Object.keys(expected));
    expect(Reflect.ownKeys(record)).toEqual(Reflect.ownKeys(expected));
    expect(Object.entries(record)).toEqual(Object.entries(expected));
    expect(Object.values(record)).toEqual(Object.values(expected));
    const forIn: string[] = [];
    for (const key in record) forIn.push(key);
    expect(forIn).toEqual(Object.keys(expected));
    expect(JSON.stringify(after)).toBe(JSON.stringify({ m: expected, other: { a: 1 } }));
    expect(JSON.stringify({ ...record })).toBe(JSON.stringify(expected));
    expect(JSON.stringify(Object.assign(Object.create(null), record))).toBe(JSON.stringify(expected));
    for (const key of [...HOSTILE, "k0", "k599", "added", "missing", "__defineGetter__"]) {
      expect(record[key]).toEqual(expected[key]);
      if (key !== "added") expect(record[key]).toBe(plain[key]);
      expect(key in record).toBe(key in expected);
      expect(Object.hasOwn(record, key)).toBe(Object.hasOwn(expected, key));
      const descriptor = Object.getOwnPropertyDescriptor(record, key);
      expect(descriptor?.value).toEqual(expected[key]);
      expect(descriptor?.enumerable).toBe(Object.hasOwn(expected, key) ? true : undefined);
      if (descriptor !== undefined) expect(descriptor.writable).toBe(false);
    }
    expect(record[Symbol.iterator as never]).toBeUndefined();
    expect(Object.prototype.toString.call(record)).toBe("[object Object]");
    // The readers states go through: equality, diffs, canonical text, the engine's limits.
    expect(same(record, expected)).toBe(true);
    expect(jsonEqual(record, expected)).toBe(true);
    expect(canonicalJson(record)).toBe(canonicalJson(expected));
    expect(diffJson(expected, record)).toEqual([]);
    expect(jsonDepth(after, 100)).toBe(jsonDepth({ m: expected, other: { a: 1 } }, 100));
    expect(jsonSize(after, 1e9)).toBe(jsonSize({ m: expected, other: { a: 1 } }, 1e9));
  });

  it("are copied where structuredClone would refuse a Proxy (EnvSim scoring of a state)", () => {
    const { after } = largeState(600);
    expect(() => structuredClone(after)).toThrow();
    const change = { path: "m.k1", type: "modified", after: { i: 1 } } as never;
    const strict = applyPredictedChangesStrict(after, [change]);
    expect(strict.ok).toBe(true);
    const paper = applyPredictedChangesPaper(after, [change]) as { m: Dict };
    expect(paper.m.k1).toEqual({ i: 1 });
    expect(Object.keys(paper.m)).toEqual(Object.keys(after.m));
  });

  it("refuse writes as a frozen object does, and keep hostile keys as data", () => {
    const { after } = largeState(600);
    const record = after.m;
    const refused = [
      () => {
        record.k0 = 1;
      },
      () => {
        record.fresh = 1;
      },
      () => {
        delete record.k0;
      },
      () => {
        record[PROTO] = { polluted: true };
      },
      () => Object.defineProperty(record, "x", { value: 1 }),
      () => Object.setPrototypeOf(record, {}),
    ];
    for (const write of refused) expect(write).toThrow(TypeError);
    expect(Reflect.set(record, "k0", 1)).toBe(false);
    expect(Reflect.deleteProperty(record, "k0")).toBe(false);
    expect(Reflect.setPrototypeOf(record, null)).toBe(true);
    expect(record.k0).toEqual({ i: 0, tags: [0] });
    expect(record.fresh).toBeUndefined();
    expect(record[PROTO]).toEqual({ hostile: "__proto__" });
    expect(Object.getPrototypeOf(record)).toBe(null);
    expect(({} as Dict).polluted).toBeUndefined();
    expect(({} as Dict).hostile).toBeUndefined();
  });

  it("are written by drafts as plain objects are: order, re-added keys, hostile keys, nested drafts", () => {
    const { plain, after } = largeState(600);
    const expected = plainWithAdded(plain);
    const tool = (m: Dict) => {
      m.k5 = { replaced: true }; // keeps its place
      delete m.k6;
      m.k6 = { readded: true }; // goes to the end
      delete m["constructor" as string];
      m[PROTO] = { proto: "data" };
      (m.k7 as { tags: number[] }).tags.push(9);
      m.k8 = undefined; // dropped, as JSON drops it
      m.z1 = { n: 1 };
      m.z0 = { n: 0 };
    };
    const fromRecord = step(after, (state) => tool(state.m as Dict));
    const fromPlain = step(toImmutableJson({ m: expected, other: { a: 1 } }), (state) =>
      tool(state.m as Dict),
    );
    expect(isRecord((fromRecord.after as { m: unknown }).m)).toBe(true);
    expect(JSON.stringify(fromRecord.after)).toBe(JSON.stringify(fromPlain.after));
    expect(JSON.stringify(fromRecord.changes)).toBe(JSON.stringify(fromPlain.changes));
    expect(JSON.stringify(fromRecord.changes)).toBe(JSON.stringify(diffJson(after, fromRecord.after)));
    // The state before is untouched, and what the step did not write is shared.
    expect(JSON.stringify(after.m)).toBe(JSON.stringify(expected));
    expect((fromRecord.after as { m: Dict }).m.k9).toBe(after.m.k9);
    expect((fromRecord.after as { other: unknown }).other).toBe((after as unknown as Dict).other);
  });

  it("turn into plain objects on an array-index key, and when they shrink well below the threshold", () => {
    const { plain, after } = largeState(600);
    const indexed = step(after, (state) => {
      (state.m as Dict)["17"] = "seventeen";
      (state.m as Dict)["3"] = "three";
    });
    const m = (indexed.after as { m: Dict }).m;
    expect(isRecord(m)).toBe(false);
    expect(Object.isFrozen(m)).toBe(true);
    expect(Object.keys(m).slice(0, 3)).toEqual(["3", "17", "k0"]);
    expect(JSON.stringify(indexed.changes)).toBe(JSON.stringify(diffJson(after, indexed.after)));
    const shrunk = step(after, (state) => {
      for (const key of Object.keys(plain)) if (key !== "k1") delete (state.m as Dict)[key];
    });
    const small = (shrunk.after as { m: Dict }).m;
    expect(isRecord(small)).toBe(false);
    expect(Object.isFrozen(small)).toBe(true);
    expect(JSON.stringify(small)).toBe(JSON.stringify({ k1: plain.k1, added: { i: -1 } }));
  });

  it("keep insertion order through many deletions and re-additions (the order is compacted)", () => {
    setRecordThreshold(8);
    let state: unknown = toImmutableJson({ m: {} });
    const mirror: Dict = Object.create(null);
    let next = 0;
    for (let round = 0; round < 60; round++) {
      const { after, changes } = step(state, (s) => {
        const m = s.m as Dict;
        for (let i = 0; i < 7; i++) {
          const key = `key${(next * 7919) % 97}`;
          next++;
          if (key in m && next % 3 !== 0) {
            delete m[key];
            delete mirror[key];
          } else {
            m[key] = next;
            mirror[key] = next;
          }
        }
      });
      expect(JSON.stringify(changes)).toBe(JSON.stringify(diffJson(state, after)));
      state = after;
      expect(Object.keys((state as { m: Dict }).m)).toEqual(Object.keys(mirror));
      expect(JSON.stringify((state as { m: Dict }).m)).toBe(JSON.stringify(mirror));
    }
  });

  it("hold keys whose hashes collide", () => {
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; pair === undefined; i++) {
      const key = `c${i}`;
      const hash = recordKeyHash(key);
      const other = seen.get(hash);
      if (other !== undefined) pair = [other, key];
      else seen.set(hash, key);
    }
    setRecordThreshold(2);
    const [a, b] = pair;
    let state = step(toImmutableJson({ m: { x: 0, y: 0 } }), (s) => {
      (s.m as Dict)[a] = 1;
      (s.m as Dict)[b] = 2;
    }).after as { m: Dict };
    expect(isRecord(state.m)).toBe(true);
    expect([state.m[a], state.m[b]]).toEqual([1, 2]);
    state = step(state, (s) => {
      (s.m as Dict)[a] = 3;
      delete (s.m as Dict).x;
    }).after as { m: Dict };
    expect(JSON.stringify(state.m)).toBe(JSON.stringify({ y: 0, [a]: 3, [b]: 2 }));
    state = step(state, (s) => {
      delete (s.m as Dict)[b];
    }).after as { m: Dict };
    expect(JSON.stringify(state.m)).toBe(JSON.stringify({ y: 0, [a]: 3 }));
    expect(b in state.m).toBe(false);
  });

  it("make a write into a 50,000-key object cost about what one into a 500-key object does", () => {
    const make = (n: number) => {
      const m: Dict = {};
      for (let i = 0; i < n; i++) m[`TRF-${i}`] = { amount: i, status: "done" };
      // One step writes it: from then on it is what a session holds (a record, when large).
      return step(toImmutableJson({ m, other: {} }), (s) => {
        (s.m as Dict).first = { amount: 0 };
      }).after;
    };
    const states = { small: make(500), large: make(50_000) };
    let written = 0;
    /** One step adding a key and deleting one (the size stays put); microseconds. */
    const once = (name: "small" | "large") => {
      const begin = performance.now();
      const { after } = step(states[name], (s) => {
        const m = s.m as Dict;
        m[`new-${written}`] = { amount: written, status: "pending" };
        delete m[`TRF-${written}`];
        written++;
      });
      states[name] = after;
      return performance.now() - begin;
    };
    const rounds: Record<"small" | "large", number[]> = { small: [], large: [] };
    // Alternating rounds of 20 steps each: both sizes see the same machine load.
    for (let round = 0; round < 15; round++)
      for (const name of ["small", "large"] as const) {
        let total = 0;
        for (let i = 0; i < 20; i++) total += once(name);
        rounds[name].push(total);
      }
    const median = (values: number[]) => [...values].sort((x, y) => x - y)[values.length >> 1] as number;
    // Copying every key made this ratio about 100; a persistent record's write costs O(log n).
    const ratio = median(rounds.large) / median(rounds.small);
    expect(ratio, `50,000 keys vs 500: ${ratio.toFixed(2)}x`).toBeLessThan(4);
    expect(isRecord((states.large as { m: unknown }).m)).toBe(true);
  });
});
