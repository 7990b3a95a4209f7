import { describe, expect, it } from "vitest";
import { loadCatalog, loadToolFile } from "../../src/catalog/index.js";
import { TerrariumError } from "../../src/core/index.js";
import { CallValidator } from "../../src/validate/index.js";
import { cli } from "../helpers/cli.js";
import { TOOL_FIXTURES, toolFixture } from "../helpers/paths.js";

function errorOf(action: () => unknown): TerrariumError {
  try {
    action();
  } catch (error) {
    if (error instanceof TerrariumError) return error;
    throw error;
  }
  throw new Error("expected a TerrariumError");
}

const load = (name: string) => () => new CallValidator().prepare(loadCatalog([toolFixture(`bad/${name}`)]));

/** Each bad input gives one TerrariumError with a code, the file, and the place inside it. */
const CASES: Array<{ name: string; code: string; pointer?: string; line?: number; message: RegExp }> = [
  { name: "missing.json", code: "FILE_UNREADABLE", message: /cannot read the file \(no such file\)/ },
  { name: "not-json.json", code: "PARSE_ERROR", line: 1, message: /^invalid JSON: / },
  { name: "not-yaml.yaml", code: "PARSE_ERROR", line: 3, message: /^invalid YAML: / },
  {
    name: "bad-version.yaml",
    code: "INVALID_OPENAPI",
    pointer: "/openapi",
    message: /unsupported "openapi" version "2.5.0"/,
  },
  {
    name: "swagger.json",
    code: "INVALID_OPENAPI",
    pointer: "/swagger",
    message: /Swagger 2.0 is not supported/,
  },
  {
    name: "bad-operation.json",
    code: "INVALID_OPENAPI",
    pointer: "/paths/~1a/get",
    message: /operation GET \/a must be an object/,
  },
  {
    name: "circular.yaml",
    code: "REF_CIRCULAR",
    pointer: "/components/schemas/Node/properties/children/items",
    message: /circular \$ref: #\/components\/schemas\/Node -> #\/components\/schemas\/Node/,
  },
  {
    name: "external-ref.json",
    code: "REF_UNRESOLVED",
    pointer: "/paths/~1a/post/requestBody/content/application~1json/schema",
    message: /points outside this document/,
  },
  {
    name: "missing-ref.json",
    code: "REF_UNRESOLVED",
    pointer: "/paths/~1a/get/parameters/0",
    message: /points to nothing/,
  },
  {
    name: "uncompilable.json",
    code: "SCHEMA_COMPILE",
    pointer: "/0",
    message:
      /input schema of "find" cannot be compiled: invalid regular expression "\(\[a-z" at \/properties\/q\/pattern/,
  },
  {
    name: "unknown-format.json",
    code: "UNKNOWN_FORMAT",
    pointer: "/tools/1",
    message: /not a tool definition/,
  },
  { name: "duplicate.json", code: "DUPLICATE_TOOL", pointer: "/1", message: /two tools are named "same"/ },
  {
    name: "array-args.json",
    code: "INVALID_TOOL",
    pointer: "/0/parameters/type",
    message: /must be described by an object schema/,
  },
];

describe("bad tool sources", () => {
  for (const testCase of CASES) {
    it(`${testCase.name}: ${testCase.code}`, () => {
      const error = errorOf(load(testCase.name));
      expect(error.code).toBe(testCase.code);
      expect(error.message).toMatch(testCase.message);
      expect(error.where.file).toBe(toolFixture(`bad/${testCase.name}`));
      if (testCase.pointer !== undefined) expect(error.where.pointer).toBe(testCase.pointer);
      if (testCase.line !== undefined) expect(error.where.line).toBe(testCase.line);
    });
  }

  it("a directory is not a tool source", () => {
    expect(errorOf(() => loadToolFile(TOOL_FIXTURES)).message).toBe("is a directory, not a file");
  });

  it("the CLI prints one line naming file and place, never a stack trace, and exits with 2", async () => {
    for (const testCase of CASES) {
      const run = await cli(["tools", "list", toolFixture(`bad/${testCase.name}`)]);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe("");
      const lines = run.stderr.trimEnd().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(`^terrarium: .*bad/${testCase.name.replace(".", "\\.")}.*\\[${testCase.code}\\]$`),
      );
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
