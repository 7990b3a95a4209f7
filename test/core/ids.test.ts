import { describe, expect, it } from "vitest";
import { createIdGenerator } from "../../src/core/ids.js";
import { createRandom } from "../../src/core/random.js";

/** Seeded ids are part of exact replay: however `next` draws, it must give the ids `random.int` gave. */
describe("seeded ids", () => {
  it("are the letters random.int(0, 31) picks, in order, with the prefix", () => {
    const alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
    const ids = createIdGenerator(createRandom("ids-seed"));
    const reference = createRandom("ids-seed");
    for (let n = 0; n < 200; n++) {
      let expected = "";
      for (let i = 0; i < 12; i++) expected += alphabet[reference.int(0, 31)];
      expect(ids.next(n % 2 === 0 ? "ses" : undefined)).toBe(n % 2 === 0 ? `ses_${expected}` : expected);
    }
    expect(createIdGenerator(createRandom(7)).next()).toBe(createIdGenerator(createRandom(7)).next());
  });
});
