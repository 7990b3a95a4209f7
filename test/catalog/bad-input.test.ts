import { describe, expect, it } from "vitest";
import { loadCatalog, loadToolFile } from "../../src/catalog/index.js";
import { TerrariumError } from "../../src/core/index.js";
import { CallValidator } from "../../src/validate/index.js";
import { cli } from "../helpers/cli.js";
import { TOOL_FIXTURES, toolFixture } from "../helpers/paths.js";

async function errorOfAsync(action: () => Promise<unknown>): Promise<TerrariumError> {
  try {
    await action();
  } catch (error) {
    if (error instanceof TerrariumError) return error;
    throw error;
  }
  throw new Error("expected a TerrariumError");
}

/** A file that cannot be read at all gives one TerrariumError with a code, the file and the place. */
const FATAL: Array<{ name: string; code: string; pointer?: string; line?: number; message: RegExp }> = [
  { name: "missing.json", code: "FILE_UNREADABLE", message: /cannot read the file \(no such file\)/ },
  { name: "not-json.json", code: "PARSE_ERROR", line: 1, message: /^invalid JSON: / },
  { name: "not-yaml.yaml", code: "PARSE_ERROR", line: 3, message: /^invalid YAML: / },
  {
    name: "bad-version.yaml",
    code: "INVALID_OPENAPI",
    pointer: "/openapi",
    message: /unsupported "openapi" version "2.5.0"/,
  },
];

/** One bad operation or definition is skipped and reported (file, pointer, why); the rest loads. */
const SKIPPED: Array<{ name: string; code: string; pointer: string; message: RegExp; loaded: string[] }> = [
  {
    name: "bad-operation.json",
    code: "INVALID_OPENAPI",
    pointer: "/paths/~1a/get",
    message: /operation GET \/a must be an object/,
    loaded: [],
  },
  {
    name: "missing-ref.json",
    code: "INVALID_OPENAPI",
    pointer: "/paths/~1a/get/parameters/0",
    message: /this one is empty: an unresolved \$ref/,
    loaded: [],
  },
  {
    name: "unknown-format.json",
    code: "UNKNOWN_FORMAT",
    pointer: "/tools/1",
    message: /not a tool definition/,
    loaded: ["ok"],
  },
  {
    name: "duplicate.json",
    code: "DUPLICATE_TOOL",
    pointer: "/1",
    message: /two tools are named "same" \(the first, kept, is at .*duplicate\.json#\/0\)/,
    loaded: ["same"],
  },
  {
    name: "array-args.json",
    code: "INVALID_TOOL",
    pointer: "/0/parameters/type",
    message: /must be described by an object schema/,
    loaded: [],
  },
];

/** What used to stop a file now loads, with a warning that says what was read how. */
const WARNED: Array<{ name: string; code: string; pointer: string; message: RegExp; loaded: string[] }> = [
  {
    name: "external-ref.json",
    code: "REF_EXTERNAL",
    pointer: "/paths/~1a/post/requestBody/content/application~1json/schema",
    message: /points outside this document.*accepts any value/,
    loaded: ["a"],
  },
  {
    name: "missing-ref.json",
    code: "REF_UNRESOLVED",
    pointer: "/paths/~1a/get/parameters/0",
    message: /points to nothing in this document/,
    loaded: [],
  },
  {
    name: "uncompilable.json",
    code: "PATTERN_DROPPED",
    pointer: "/inputSchema/properties/q/pattern",
    message: /pattern "\(\[a-z" has no JavaScript equivalent .*dropped/,
    loaded: ["find"],
  },
  {
    name: "swagger.json",
    code: "NO_OPERATIONS",
    pointer: "/paths",
    message: /no operations/,
    loaded: [],
  },
];

describe("bad tool sources", () => {
  for (const testCase of FATAL) {
    it(`${testCase.name}: ${testCase.code}`, async () => {
      for (const strict of [false, true]) {
        const error = await errorOfAsync(() =>
          loadCatalog([toolFixture(`bad/${testCase.name}`)], { strict }),
        );
        expect(error.code).toBe(testCase.code);
        expect(error.message).toMatch(testCase.message);
        expect(error.where.file).toBe(toolFixture(`bad/${testCase.name}`));
        if (testCase.pointer !== undefined) expect(error.where.pointer).toBe(testCase.pointer);
        if (testCase.line !== undefined) expect(error.where.line).toBe(testCase.line);
      }
    });
  }

  for (const testCase of SKIPPED) {
    it(`${testCase.name}: skipped as ${testCase.code}, or a failure with --strict`, async () => {
      const file = toolFixture(`bad/${testCase.name}`);
      const catalog = await loadCatalog([file]);
      new CallValidator().prepare(catalog);
      expect(catalog.names).toEqual(testCase.loaded);
      const note = catalog.report.skipped.find((skip) => skip.code === testCase.code);
      expect(note).toMatchObject({ file, pointer: testCase.pointer });
      expect(note?.message).toMatch(testCase.message);
      expect(catalog.summary()).toMatch(new RegExp(`operations? skipped: 1 ${testCase.code}`));

      const error = await errorOfAsync(() => loadCatalog([file], { strict: true }));
      expect(error.code).toBe("CATALOG_INCOMPLETE");
      expect(error.message).toMatch(/skipped \(strict mode\)/);
      expect(error.message).toContain(`${file}#${testCase.pointer}`);
      expect(error.where).toMatchObject({ file, pointer: testCase.pointer });
    });
  }

  for (const testCase of WARNED) {
    it(`${testCase.name}: loads with a ${testCase.code} warning`, async () => {
      const file = toolFixture(`bad/${testCase.name}`);
      const catalog = await loadCatalog([file]);
      new CallValidator().prepare(catalog);
      expect(catalog.names).toEqual(testCase.loaded);
      const note = catalog.report.warnings.find((warning) => warning.code === testCase.code);
      expect(note).toMatchObject({ file, pointer: testCase.pointer });
      expect(note?.message).toMatch(testCase.message);
    });
  }

  it("a directory is not a tool source", async () => {
    expect((await errorOfAsync(() => loadToolFile(TOOL_FIXTURES))).message).toBe(
      "is a directory, not a file",
    );
  });

  it("the CLI prints one line naming file and place, never a stack trace, and exits with 2", async () => {
    for (const testCase of FATAL) {
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

  it("the CLI lists what loaded, ends with the summary and each skip, and fails only with --strict", async () => {
    const files = [toolFixture("bad/unknown-format.json"), toolFixture("bad/uncompilable.json")];
    const run = await cli(["tools", "list", ...files]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\bok\b/);
    expect(run.stdout).toMatch(/\bfind\b/);
    const lines = run.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe("2 tools; 1 operation skipped: 1 UNKNOWN_FORMAT; 1 warning (1 PATTERN_DROPPED)");
    expect(lines[1]).toMatch(
      /^ {2}skipped .*unknown-format\.json#\/tools\/1: UNKNOWN_FORMAT: not a tool definition/,
    );
    expect(lines[2]).toBe("  (--warnings lists the warnings)");

    const verbose = await cli(["tools", "list", ...files, "--warnings"]);
    expect(verbose.stderr).toMatch(
      / {2}warning .*uncompilable\.json#\/inputSchema\/properties\/q\/pattern \(find\): PATTERN_DROPPED/,
    );

    const json = await cli(["tools", "list", ...files, "--json"]);
    const parsed = JSON.parse(json.stdout) as {
      report: { schemaVersion: number; skipped: unknown[]; warnings: unknown[] };
    };
    expect(parsed.report.schemaVersion).toBe(1);
    expect(parsed.report.skipped).toHaveLength(1);
    expect(parsed.report.warnings).toHaveLength(1);

    const strict = await cli(["tools", "list", ...files, "--strict"]);
    expect(strict.code).toBe(2);
    expect(strict.stdout).toBe("");
    expect(strict.stderr).toMatch(/\[CATALOG_INCOMPLETE\]/);
    expect(strict.stderr).toContain("unknown-format.json#/tools/1");
  });
});
