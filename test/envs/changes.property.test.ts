import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { randomValidCall } from "../../src/bench/envsim/collect.js";
import {
  applyChanges,
  applyEnvSimChanges,
  canonicalJson,
  createRandom,
  diffEnvSim,
  diffJson,
} from "../../src/core/index.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";

/** JSON values over a small key pool, so that two of them overlap and their diff is interesting. */
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false),
    fc.integer({ min: -5, max: 5 }),
    fc.constantFrom("x", "y", "long text"),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom("a", "b", "c", "d", "e/f", "g~h"), tie("value"), { maxKeys: 5 }),
  ),
})).value;

describe("change formats", () => {
  it("applying either format's changes to `before` gives `after` exactly", () => {
    fc.assert(
      fc.property(json, json, (before, after) => {
        const patched = applyChanges(before, diffJson(before, after));
        const envSim = applyEnvSimChanges(before, diffEnvSim(before, after));
        expect(canonicalJson(patched)).toBe(canonicalJson(after));
        expect(canonicalJson(envSim)).toBe(canonicalJson(after));
      }),
      { numRuns: 500 },
    );
  });

  it("never modifies its input, and an unchanged document has no changes", () => {
    fc.assert(
      fc.property(json, json, (before, after) => {
        const snapshot = canonicalJson(before);
        applyChanges(before, diffJson(before, after));
        expect(canonicalJson(before)).toBe(snapshot);
        expect(diffJson(before, structuredClone(before))).toEqual([]);
        expect(diffEnvSim(before, structuredClone(before))).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it("counts a changed list as one EnvSimBench change and walks into objects", () => {
    const before = { a: { b: [1, 2], c: 1 }, d: "x" };
    const after = { a: { b: [1, 2, 3], c: 2 }, e: true };
    expect(diffEnvSim(before, after)).toEqual([
      { path: "a.b", type: "modified", before: [1, 2], after: [1, 2, 3] },
      { path: "a.c", type: "modified", before: 1, after: 2 },
      { path: "d", type: "removed", before: "x" },
      { path: "e", type: "added", after: true },
    ]);
    expect(diffJson(before, after)).toEqual([
      { op: "add", path: "/a/b/2", after: 3 },
      { op: "replace", path: "/a/c", before: 1, after: 2 },
      { op: "remove", path: "/d", before: "x" },
      { op: "add", path: "/e", after: true },
    ]);
  });
});

describe("environment transitions", () => {
  it("for random states and random valid calls on every built-in, both formats of changes rebuild `after`", async () => {
    let checked = 0;
    let changed = 0;
    for (const environment of Object.values(BUILTIN_ENVIRONMENTS)) {
      // Each step copies and diffs the whole state: keep the run short for large states (tau2 retail).
      const large = JSON.stringify(await environment.initialState()).length > 100_000;
      for (let run = 0; run < (large ? 1 : 3); run++) {
        const random = createRandom(`${environment.name}-${run}`);
        const instance = await environment.create({ seed: run });
        for (let step = 0; step < (large ? 12 : 40); step++) {
          const transition = await instance.step(
            randomValidCall(environment.tools, await instance.state(), random),
          );
          const viaPatch = applyChanges(transition.before, transition.changes);
          const viaEnvSim = applyEnvSimChanges(transition.before, transition.envChanges);
          expect(canonicalJson(viaPatch)).toBe(canonicalJson(transition.after));
          expect(canonicalJson(viaEnvSim)).toBe(canonicalJson(transition.after));
          expect(transition.delta).toBe(transition.envChanges.length);
          if (!transition.success) expect(transition.delta).toBe(0);
          checked++;
          if (transition.delta > 0) changed++;
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(changed).toBeGreaterThan(5);
  });
});
