import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadToolFile } from "../../src/catalog/index.js";
import { createRandom } from "../../src/core/index.js";
import { fromPattern, synthesize } from "../../src/sim/synthesize.js";
import { SchemaCompiler } from "../../src/validate/index.js";
import { BFCL_DIR } from "../helpers/bfcl.js";
import { toolFixture } from "../helpers/paths.js";

const compiler = new SchemaCompiler();
const options = (seed: number, idSeed = "tool|{}") => ({ random: createRandom(seed), idSeed });

describe("schema synthesis", () => {
  it("produces values valid against every output and input schema of the fixtures and BFCL docs", () => {
    const tools = [
      ...readdirSync(join(BFCL_DIR, "multi_turn_func_doc")).flatMap((file) =>
        loadToolFile(join(BFCL_DIR, "multi_turn_func_doc", file)),
      ),
      ...[
        "petstore.openapi.yaml",
        "orders.openapi.json",
        "mcp-tools.json",
        "functions.json",
        "anthropic-tools.json",
      ].flatMap((f) => loadToolFile(toolFixture(f))),
    ];
    const schemas = tools.flatMap((tool) => [
      tool.inputSchema,
      ...(tool.outputSchema !== undefined ? [tool.outputSchema] : []),
    ]);
    expect(schemas.length).toBeGreaterThan(250);
    const failures: string[] = [];
    for (const [index, schema] of schemas.entries()) {
      const validate = compiler.compile(schema);
      for (let seed = 0; seed < 5; seed++) {
        const value = synthesize(schema, options(seed, `t${index}`));
        if (!validate(value))
          failures.push(
            `${index}/${seed}: ${JSON.stringify(value).slice(0, 120)} ${JSON.stringify(validate.errors?.[0])}`,
          );
      }
    }
    expect(failures).toEqual([]);
  });

  it("is deterministic for a seed, and derives identifiers from the call", () => {
    const schema = {
      type: "object",
      properties: { order_id: { type: "string" }, total: { type: "number" } },
      required: ["order_id", "total"],
    };
    expect(synthesize(schema, options(3, "a"))).toEqual(synthesize(schema, options(3, "a")));
    const first = synthesize(schema, options(1, 'create_order|{"sku":1}')) as { order_id: string };
    const second = synthesize(schema, options(2, 'create_order|{"sku":1}')) as { order_id: string };
    const other = synthesize(schema, options(1, 'create_order|{"sku":2}')) as { order_id: string };
    expect(first.order_id).toBe(second.order_id);
    expect(first.order_id).not.toBe(other.order_id);
    expect(first.order_id).toMatch(/^orde_[0-9a-z]{10}$/);
  });

  it("builds strings for common API patterns", () => {
    const random = createRandom(5);
    for (const pattern of [
      "^#W[0-9]{7}$",
      "^[A-Z]{3}$",
      "^\\d{3}-\\d{4}$",
      "^(sm|md|lg)$",
      "^[a-z0-9_-]{3,8}$",
      "^v\\d+\\.\\d+$",
    ]) {
      for (let i = 0; i < 20; i++) expect(fromPattern(pattern, random)).toMatch(new RegExp(pattern));
    }
    expect(fromPattern("^(?=lookahead)$", random)).toBeUndefined();
  });
});
