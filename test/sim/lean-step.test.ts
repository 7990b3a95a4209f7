import { afterEach, describe, expect, it, vi } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { isoTime, parseTime } from "../../src/core/clock.js";
import { createRandom } from "../../src/core/random.js";
import { BUILTIN_ENVIRONMENTS } from "../../src/envs/index.js";
import { MemoryStore } from "../../src/sessions/index.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";
import { CallValidator } from "../../src/validate/validator.js";

/** What a call on a code environment does once that it used to do twice or more. */
const bank = BUILTIN_ENVIRONMENTS.bank;
if (!bank) throw new Error("the bank environment is missing");

async function bankEngine(): Promise<{ engine: Engine; session: string }> {
  const engine = new Engine({
    catalog: new Catalog(bank?.tools),
    store: new MemoryStore(),
    simulators: [new CodeSimulator(bank as NonNullable<typeof bank>, "1")],
    initialState: await bank?.initialState(),
    seed: 1,
  });
  return { engine, session: (await engine.createSession()).id };
}

const transfer = {
  name: "transfer",
  arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: 1 },
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a call on a code environment under the engine", () => {
  it("validates its arguments once: the environment takes the engine's verdict on its own schema", async () => {
    const { engine, session } = await bankEngine();
    const validate = vi.spyOn(CallValidator.prototype, "validate");
    const outcome = await engine.call(session, transfer);
    expect(outcome.status).toBe("ok");
    expect(validate).toHaveBeenCalledTimes(1);
    // Invalid arguments never reach the environment; the engine's verdict and words are the answer.
    validate.mockClear();
    const invalid = await engine.call(session, { name: "transfer", arguments: { from_account: 1 } });
    expect(invalid.status).toBe("invalid");
    expect(invalid.simulator).toBe("validator");
    expect(validate).toHaveBeenCalledTimes(1);
    await engine.close();
  });

  it("still validates a direct step, and one whose caller checked another schema", async () => {
    const instance = await (bank as NonNullable<typeof bank>).create({ seed: 1 });
    const bad = {
      name: "transfer",
      arguments: { from_account: "ACC-1001", to_account: "ACC-1002", amount: -1 },
    };
    const direct = await instance.step(bad);
    expect(direct.success).toBe(false);
    expect(direct.observation).toMatchObject({ error: "invalid call" });
    // A schema that is not the tool's own (equal text, another object) proves nothing: validated again.
    const tool = bank?.tools.find((each) => each.name === "transfer");
    const copy = JSON.parse(JSON.stringify(tool?.inputSchema));
    const step = instance.step as (
      call: unknown,
      options: { checkedAgainst?: object },
    ) => ReturnType<typeof instance.step>;
    const checkedElsewhere = await step.call(instance, bad, { checkedAgainst: copy });
    expect(checkedElsewhere.observation).toEqual(direct.observation);
    // Arguments as a JSON string are parsed and validated, whatever the caller says it checked.
    const text = await step.call(
      instance,
      { name: "transfer", arguments: JSON.stringify(bad.arguments) },
      {
        checkedAgainst: tool?.inputSchema as object,
      },
    );
    expect(text.observation).toEqual(direct.observation);
  });

  it("formats and reads times exactly as Date does, whatever was asked before", () => {
    const instants = [0, 1, -1, 1735689600000, 1735689600000, 1735689600001, 8.64e15, -8.64e15, 1.5, -0];
    for (const ms of instants) {
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      const text = new Date(ms).toISOString();
      expect(parseTime(text)).toBe(Date.parse(text));
    }
    for (const text of ["2025-01-01T00:00:00.000Z", "nonsense", "2025-01-01T00:00:00.000Z", "", "2025"])
      expect(Object.is(parseTime(text), Date.parse(text))).toBe(true);
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
    // Instants of one day after another (formatted by arithmetic from the day's text), days apart, and
    // far from each other, in every order: each the text Date gives.
    let ms = Date.UTC(2025, 0, 1, 23, 59, 58, 990);
    const seen: number[] = [];
    for (let i = 0; i < 3000; i++) {
      ms += [1, 7, 999, 1000, 59_999, 3_600_000, 86_399_999][i % 7] as number;
      seen.push(ms);
    }
    for (let i = 0; i < 2000; i++) seen.push(Math.floor((Math.random() * 2 - 1) * 8.64e15));
    seen.push(8.64e15, -8.64e15, -8.64e15 + 1, 8.64e15 - 1, -1, 0, 999, -62198755200000);
    for (const instant of [...seen, ...seen.reverse()])
      expect(isoTime(instant)).toBe(new Date(instant).toISOString());
    isoTime(8.64e15 - 5);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });

  it("makes a random source without hashing its seed: only the first draw does", () => {
    // Made and derived from, never drawn from (a call's source, an instance's), against made and drawn
    // from once: the hash is the whole difference. Rounds alternate so both see the same load.
    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
    const made: number[] = [];
    const drawn: number[] = [];
    let n = 0;
    for (let round = 0; round < 9; round++) {
      let started = performance.now();
      for (let i = 0; i < 500; i++) createRandom(`s:${n++}`).derive("ids");
      made.push(performance.now() - started);
      started = performance.now();
      for (let i = 0; i < 500; i++) createRandom(`s:${n++}`).derive("ids").next();
      drawn.push(performance.now() - started);
    }
    expect(median(made) * 3).toBeLessThan(median(drawn));
  });
});
