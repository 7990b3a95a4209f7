import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import type { JsonObjectSchema } from "../../src/catalog/tool.js";
import { CallValidator } from "../../src/validate/index.js";
import { bfclCategory, groundTruthCalls } from "../helpers/bfcl.js";

/**
 * The validator as a data verifier on BFCL v3 (simple, multiple, parallel): ground-truth calls built from
 * the possible answers pass, and calls broken in four ways are all caught with the right rule and path.
 */

// BFCL annotations that break their own schemas; the validator is right to reject them.
const KNOWN_BAD_ANNOTATIONS: Record<string, string> = {
  // The tool requires fuel_efficiency; the possible answer never gives it.
  simple_200: "required",
  // The answer calls "find_closest"; the only tool is "restaurant_search.find_closest".
  simple_363: "unknown_tool",
};

const CATEGORIES = ["simple", "multiple", "parallel"] as const;
const validator = new CallValidator();

function samples() {
  return CATEGORIES.flatMap((category) =>
    bfclCategory(category).map(({ question, answer }) => ({
      id: question.id,
      catalog: Catalog.fromDocument(question.function),
      calls: groundTruthCalls(answer),
    })),
  );
}

describe("BFCL ground truth", () => {
  it("accepts every ground-truth call except the known bad annotations", () => {
    const rejected: Record<string, string> = {};
    let calls = 0;
    for (const sample of samples()) {
      for (const call of sample.calls) {
        calls++;
        const result = validator.validate(sample.catalog, call);
        if (!result.valid) rejected[sample.id] = result.errors.map((e) => e.rule).join(",");
      }
    }
    expect(calls).toBe(400 + 200 + 538);
    expect(rejected).toEqual(KNOWN_BAD_ANNOTATIONS);
  });
});

interface Mutation {
  kind: string;
  call: { name: string; arguments: Record<string, unknown> };
  rule: string;
  path: string;
}

/** A value of a JSON type the schema does not allow. */
function wrongTypeValue(schema: JsonObjectSchema): unknown {
  const types = new Set(Array.isArray(schema.type) ? schema.type : [schema.type]);
  if (!types.has("string")) return "not-a-valid-type";
  if (!types.has("boolean")) return true;
  return { unexpected: "object" };
}

function mutations(catalog: Catalog, call: { name: string; arguments: Record<string, unknown> }): Mutation[] {
  const tool = catalog.get(call.name);
  if (!tool) return [];
  const schema = tool.inputSchema;
  const properties = (schema.properties ?? {}) as Record<string, JsonObjectSchema>;
  const required = (schema.required ?? []) as string[];
  const out: Mutation[] = [];
  const withArgs = (args: Record<string, unknown>) => ({ name: call.name, arguments: args });

  const requiredPresent = required.find((name) => name in call.arguments);
  if (requiredPresent) {
    const { [requiredPresent]: _removed, ...rest } = call.arguments;
    out.push({
      kind: "missing required",
      call: withArgs(rest),
      rule: "required",
      path: `/${requiredPresent}`,
    });
  }
  out.push({
    kind: "unknown argument",
    call: withArgs({ ...call.arguments, not_a_parameter: 1 }),
    rule: "unknown_argument",
    path: "/not_a_parameter",
  });
  const typed = Object.keys(call.arguments).find((name) => properties[name]?.type !== undefined);
  if (typed) {
    out.push({
      kind: "wrong type",
      call: withArgs({ ...call.arguments, [typed]: wrongTypeValue(properties[typed] as JsonObjectSchema) }),
      rule: "type",
      path: `/${typed}`,
    });
  }
  for (const [name, property] of Object.entries(properties)) {
    const items = property.items as JsonObjectSchema | undefined;
    if (Array.isArray(property.enum) && property.type === "string") {
      out.push({
        kind: "outside enum",
        call: withArgs({ ...call.arguments, [name]: "zz-not-allowed" }),
        rule: "enum",
        path: `/${name}`,
      });
      break;
    }
    if (property.type === "array" && items && Array.isArray(items.enum)) {
      out.push({
        kind: "outside enum",
        call: withArgs({ ...call.arguments, [name]: ["zz-not-allowed"] }),
        rule: "enum",
        path: `/${name}/0`,
      });
      break;
    }
  }
  return out;
}

describe("BFCL mutated calls", () => {
  it("rejects 100% of mutated calls, each with the violated rule at the right path", () => {
    const counts: Record<string, { total: number; rejected: number }> = {};
    const misses: string[] = [];
    for (const sample of samples()) {
      if (sample.id in KNOWN_BAD_ANNOTATIONS) continue;
      for (const call of sample.calls) {
        for (const mutation of mutations(sample.catalog, call)) {
          const entry = counts[mutation.kind] ?? { total: 0, rejected: 0 };
          counts[mutation.kind] = entry;
          entry.total++;
          const result = validator.validate(sample.catalog, mutation.call);
          const hit = result.errors.some((e) => e.rule === mutation.rule && e.path === mutation.path);
          if (!result.valid && hit) entry.rejected++;
          else misses.push(`${sample.id} ${mutation.kind}: ${JSON.stringify(result.errors)}`);
        }
      }
    }
    expect(misses).toEqual([]);
    for (const entry of Object.values(counts)) expect(entry.rejected).toBe(entry.total);
    // Every kind of mutation was actually exercised, many times.
    expect(Object.keys(counts).sort()).toEqual([
      "missing required",
      "outside enum",
      "unknown argument",
      "wrong type",
    ]);
    for (const entry of Object.values(counts)) expect(entry.total).toBeGreaterThan(100);
  });

  it("reports an enum violation by its rule, without choosing a value for the caller", () => {
    const catalog = Catalog.fromDocument({
      name: "set_unit",
      parameters: { type: "dict", properties: { unit: { type: "string", enum: ["celsius", "kelvin"] } } },
    });
    const result = validator.validate(catalog, { name: "set_unit", arguments: { unit: "fahrenheit" } });
    expect(result.errors).toEqual([
      {
        path: "/unit",
        rule: "enum",
        message: '"unit" must be one of "celsius" or "kelvin", got "fahrenheit"',
      },
    ]);
  });
});
