import { describe, expect, it } from "vitest";
import { checkCall, checkItem, type FunctionDoc } from "../../src/bench/bfcl/ast-checker.js";
import { bfclCategory, groundTruthCalls } from "../helpers/bfcl.js";

/** The AST checker agrees with BFCL's rules on the shipped subset. */
describe("BFCL AST checker", () => {
  it("passes every ground-truth call built from the possible answers (bar two broken annotations)", () => {
    const failures: Record<string, string> = {};
    let items = 0;
    for (const category of ["simple", "multiple", "parallel"]) {
      for (const { question, answer } of bfclCategory(category)) {
        items++;
        const result = checkItem(
          category,
          question.function as FunctionDoc[],
          answer.ground_truth,
          groundTruthCalls(answer),
        );
        if (!result.valid) failures[question.id] = result.errorType;
      }
    }
    expect(items).toBe(800);
    // Same two items the validator rejects: a required parameter absent from the answer, and a wrong name.
    expect(failures).toEqual({
      simple_200: "simple_function_checker:missing_required",
      // BFCL checks a simple item against its first doc, "restaurant_search.find_closest", whatever name the
      // answer gives ("find_closest"), so the call built from the answer has the wrong name.
      simple_363: "simple_function_checker:wrong_func_name",
    });
  });

  const [first] = bfclCategory("simple");
  const functions = first?.question.function as FunctionDoc[];
  const expected = first?.answer.ground_truth[0] as Record<string, Record<string, unknown[]>>;
  const base = { name: "calculate_triangle_area", arguments: { base: 10, height: 5 } };

  it("fails hand-made wrong calls for the right reason", () => {
    expect(checkCall(functions, expected, base)).toEqual({ valid: true });
    expect(checkCall(functions, expected, { ...base, arguments: { base: 10, height: 6 } })).toMatchObject({
      valid: false,
      errorType: "value_error:others",
    });
    expect(
      checkCall(functions, expected, { ...base, arguments: { base: 10, height: 5, color: "red" } }),
    ).toMatchObject({
      valid: false,
      errorType: "simple_function_checker:unexpected_param",
    });
    expect(checkCall(functions, expected, { ...base, arguments: { base: 10 } })).toMatchObject({
      errorType: "simple_function_checker:missing_required",
    });
    expect(checkCall(functions, expected, { ...base, arguments: { base: "10", height: 5 } })).toMatchObject({
      errorType: "type_error:simple",
    });
    expect(checkCall(functions, expected, { name: "area", arguments: {} })).toMatchObject({
      errorType: "simple_function_checker:wrong_func_name",
    });
    // Strings compare without case, spaces and punctuation; "units" is the optional's acceptable value.
    expect(
      checkCall(functions, expected, { ...base, arguments: { base: 10, height: 5, unit: " Un-its." } }),
    ).toEqual({ valid: true });
  });

  it("fails a missing optional parameter that has no default", () => {
    const doc: FunctionDoc[] = [
      {
        name: "f",
        parameters: { properties: { a: { type: "integer" }, b: { type: "string" } }, required: ["a"] },
      },
    ];
    expect(checkCall(doc, { f: { a: [1], b: ["x"] } }, { name: "f", arguments: { a: 1 } })).toMatchObject({
      errorType: "simple_function_checker:missing_optional",
    });
    expect(checkCall(doc, { f: { a: [1], b: ["x", ""] } }, { name: "f", arguments: { a: 1 } })).toEqual({
      valid: true,
    });
    // An int is accepted where a float is documented; not the other way round.
    const floats: FunctionDoc[] = [
      { name: "g", parameters: { properties: { x: { type: "float" }, n: { type: "integer" } } } },
    ];
    expect(checkCall(floats, { g: { x: [2.0], n: ["", 1] } }, { name: "g", arguments: { x: 2 } })).toEqual({
      valid: true,
    });
    expect(
      checkCall(floats, { g: { x: [2.0], n: [1] } }, { name: "g", arguments: { x: 2, n: 1.5 } }),
    ).toMatchObject({ errorType: "type_error:simple" });
  });

  it("matches parallel calls in any order, and rejects any call on an irrelevance item", () => {
    const [item] = bfclCategory("parallel");
    const calls = groundTruthCalls(item?.answer as never);
    expect(calls.length).toBeGreaterThan(1);
    const reversed = [...calls].reverse();
    expect(
      checkItem("parallel", item?.question.function as FunctionDoc[], item?.answer.ground_truth, reversed),
    ).toEqual({ valid: true });
    expect(
      checkItem(
        "parallel",
        item?.question.function as FunctionDoc[],
        item?.answer.ground_truth,
        calls.slice(1),
      ),
    ).toMatchObject({ errorType: "parallel_function_checker_no_order:wrong_count" });
    expect(checkItem("irrelevance", functions, undefined, [])).toEqual({ valid: true });
    expect(checkItem("irrelevance", functions, undefined, [base])).toMatchObject({
      errorType: "irrelevance_error:decoder_success",
    });
  });
});

describe("terrarium bench bfcl score", () => {
  it("scores a results file per category and explains each failure", async () => {
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { cli } = await import("../helpers/cli.js");
    const { BFCL_DIR } = await import("../helpers/bfcl.js");
    const items = bfclCategory("simple").slice(0, 4);
    const lines = items.map(({ question, answer }, index) =>
      JSON.stringify({
        id: question.id,
        calls:
          index === 0
            ? []
            : groundTruthCalls(answer).map((c) => ({ ...c, arguments: JSON.stringify(c.arguments) })),
      }),
    );
    const results = join(mkdtempSync(join(tmpdir(), "terrarium-bfcl-")), "results.jsonl");
    writeFileSync(results, lines.join("\n"));
    const run = await cli([
      "bench",
      "bfcl",
      "score",
      "--data",
      BFCL_DIR,
      "--categories",
      "simple",
      "--results",
      results,
      "--json",
    ]);
    const score = JSON.parse(run.stdout);
    expect(score.categories.simple).toEqual({ items: 400, correct: 3, errored: 0, accuracy: 3 / 400 });
    expect(score.items[0]).toEqual({
      id: "simple_0",
      category: "simple",
      valid: false,
      errorType: "simple_function_checker:wrong_count",
      error: "expected exactly one call, got 0",
    });
    const table = await cli([
      "bench",
      "bfcl",
      "score",
      "--data",
      BFCL_DIR,
      "--categories",
      "simple",
      "--results",
      results,
    ]);
    expect(table.stdout).toMatch(/│ simple\s+│ 400\s+│ 3\s+│ 0\s+│ 0\.75%/);
    expect(table.stdout).toContain(
      "simple_0: simple_function_checker:wrong_count: expected exactly one call, got 0",
    );
  });
});
