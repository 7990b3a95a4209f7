import { describe, expect, it } from "vitest";
import { isImmutableJson, toImmutableJson } from "../../src/core/immutable-json.js";
import { diffJson } from "../../src/core/json-diff.js";
import { isRecord, recordThreshold } from "../../src/core/persistent-record.js";
import { StateDraft } from "../../src/envs/draft.js";

/**
 * The copies a step makes: small objects (fast-mode in V8), medium ones (dictionaries), and objects of
 * `recordThreshold()` keys or more (persistent records, so that a map written at every step, such as a
 * bank's transfers, costs no copy of its keys). Whatever the form, readers see the same frozen,
 * null-prototype JSON, hostile keys as data, and the changes diffJson would list.
 */

type Dict = Record<string, unknown>;

/** Written through a variable: a literal `__proto__` key is what linters flag, not what is tested. */
const PROTO: string = "__proto__";
const CONSTRUCTOR: string = "constructor";

function objectOf(size: number, withIndexKey = false): Dict {
  const m: Dict = Object.create(null);
  for (let i = 0; i < size; i++) m[`k${i}`] = { i };
  m[PROTO] = { hostile: true };
  m[CONSTRUCTOR] = "not a function";
  if (withIndexKey) m["7"] = "seven";
  return m;
}

function step(before: unknown, tool: (state: Dict) => void) {
  const draft = new StateDraft(before);
  tool(draft.state as Dict);
  return draft.finish();
}

describe("the copies a step makes", () => {
  it("make a written object of the record threshold's size a record (a map written every step is not copied key by key)", () => {
    expect(recordThreshold()).toBeLessThanOrEqual(64);
    const before = toImmutableJson({ m: objectOf(recordThreshold()), n: objectOf(3) }) as Dict;
    const { after } = step(before, (state) => {
      (state.m as Dict).added = 1;
      (state.n as Dict).added = 1;
    });
    expect(isRecord((after as Dict).m)).toBe(true);
    expect(isRecord((after as Dict).n)).toBe(false);
  });

  for (const size of [3, 15, 16, 17, 24, 40]) {
    for (const withIndexKey of [false, true]) {
      it(`keep every reader's view of a written ${size}-key object${withIndexKey ? " with an array-index key" : ""}`, () => {
        const plain = objectOf(size, withIndexKey);
        const before = toImmutableJson({ m: plain, other: { a: 1 } }) as { m: Dict; other: Dict };
        const { after, changes } = step(before, (state) => {
          const m = state.m as Dict;
          m.k1 = { i: -1 };
          m[PROTO] = { replaced: true };
          delete m.k0;
          m.added = [1, 2];
          (m.k2 as Dict).deep = true;
        });
        const m = (after as { m: Dict }).m;
        const expected: Dict = Object.create(null);
        for (const key of Object.keys(plain)) if (key !== "k0") expected[key] = plain[key];
        expected.k1 = { i: -1 };
        expected[PROTO] = { replaced: true };
        expected.added = [1, 2];
        expected.k2 = { i: 2, deep: true };
        expect(JSON.stringify(m)).toBe(JSON.stringify(expected));
        expect(Object.keys(m)).toEqual(Object.keys(expected));
        expect(Object.getPrototypeOf(m)).toBe(null);
        expect(isImmutableJson(m)).toBe(true);
        if (!isRecord(m)) expect(Object.isFrozen(m)).toBe(true);
        expect(() => {
          m.k5 = 0;
        }).toThrow(TypeError);
        expect(Object.hasOwn(m, PROTO)).toBe(true);
        expect("toString" in m).toBe(false);
        expect(({} as Dict).hostile).toBeUndefined();
        expect(JSON.stringify(changes)).toBe(JSON.stringify(diffJson(before, after)));
        // Untouched members and the untouched sibling are shared, not copied.
        expect(m.k3).toBe(before.m.k3);
        expect((after as { other: unknown }).other).toBe(before.other);
        // The state before is as it was.
        expect(JSON.stringify(before.m)).toBe(JSON.stringify(toImmutableJson(plain)));
      });
    }
  }

  it("list the changes in diffJson's order when a step writes and drafts many members of one object", () => {
    const before = toImmutableJson({ m: objectOf(30) }) as { m: Dict };
    const { after, changes } = step(before, (state) => {
      const m = state.m as Dict;
      // Members drafted and changed, members assigned, in an order unlike the object's.
      for (let i = 29; i >= 0; i -= 2) (m[`k${i}`] as Dict).seen = i;
      for (let i = 0; i < 30; i += 3) m[`k${i}`] = i;
      for (let i = 0; i < 12; i++) m[`new${11 - i}`] = i;
      delete m.k4;
      m[PROTO] = 0;
    });
    expect(JSON.stringify(changes)).toBe(JSON.stringify(diffJson(before, after)));
    expect(changes.length).toBeGreaterThan(30);
  });
});

describe("an object a tool makes that inherits from a draft", () => {
  it("ends as its own members, as JSON reads it, not as the draft it inherits from", () => {
    const before = toImmutableJson([{}, {}, { a: null }]);
    const draft = new StateDraft(before);
    const state = draft.state as Array<Record<string, unknown>>;
    state[3] = {};
    // As a tool assigning `__proto__` on its own object does: the new member inherits from state[2]'s draft.
    Object.setPrototypeOf(state[3], state[2] as object);
    const { after, changes } = draft.finish();
    expect(JSON.stringify(after)).toBe('[{},{},{"a":null},{}]');
    expect(changes).toEqual([{ op: "add", path: "/3", after: {} }]);
  });
});
