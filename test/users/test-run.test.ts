import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discoverTestFiles, mentionsScript, runScenarioTests } from "../../src/users/test-run/index.js";
import { elementsNamed, parseXml } from "../helpers/junit-xml.js";

/** `runScenarioTests` as a library: finding test files, the agent's deadline, the order of results. */

let root: string;

function write(relativePath: string, text: string): string {
  const file = join(root, relativePath);
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, text);
  return file;
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "terrarium-test-run-"));
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe("finding test files", () => {
  it("searches subfolders in name order, skips hidden folders and node_modules, notes files without a script", () => {
    write("suite/b.yaml", "id: b\nscript:\n  - user: hi\n");
    write("suite/a.json", JSON.stringify({ id: "a", script: [{ user: "hi" }] }));
    write("suite/deeper/c.yml", "- id: c\n  script:\n    - user: hi\n");
    write("suite/knowledge/policy.yaml", "title: not a test\n");
    write("suite/notes.md", "# not even YAML\n");
    write("suite/.hidden/d.yaml", "id: d\nscript:\n  - user: hi\n");
    write("suite/node_modules/pkg/e.yaml", "id: e\nscript:\n  - user: hi\n");
    const found = discoverTestFiles(["suite"], root);
    expect(found.candidates.map((c) => c.file.slice(root.length + 1))).toEqual([
      join("suite", "a.json"),
      join("suite", "b.yaml"),
      join("suite", "deeper", "c.yml"),
    ]);
    expect(found.candidates.every((c) => !c.given)).toBe(true);
    expect(found.skipped.map((s) => s.file.slice(root.length + 1))).toEqual([
      join("suite", "knowledge", "policy.yaml"),
    ]);
  });

  it("a file named twice (directly and through its folder) is run once", () => {
    const found = discoverTestFiles([join("suite", "b.yaml"), "suite"], root);
    expect(found.candidates.filter((c) => c.file.endsWith("b.yaml"))).toEqual([
      { file: join(root, "suite", "b.yaml"), given: true },
    ]);
  });

  it("refuses a path that does not exist and a given file that is not YAML or JSON", () => {
    expect(() => discoverTestFiles(["missing"], root)).toThrow(/missing: no such test file or folder/);
    expect(() => discoverTestFiles([join("suite", "notes.md")], root)).toThrow(/\.yaml, \.yml or \.json/);
    expect(() => discoverTestFiles([], root)).toThrow(/at least one/);
  });

  it("tells a script key from a mention of the word", () => {
    expect(mentionsScript("id: x\nscript:\n  - user: hi")).toBe(true);
    expect(mentionsScript("- id: x\n  script:\n")).toBe(true);
    expect(mentionsScript('{"id": "x", "script": []}')).toBe(true);
    expect(mentionsScript("goal: ask for the script of the play\ndescription: a script: no")).toBe(false);
  });
});

describe("runScenarioTests", () => {
  it("an agent that never answers errors its test after --agent-timeout; the others pass", async () => {
    write(
      "timeout/hangs.yaml",
      "id: hangs\nscript:\n  - user: hang please\n  - expect_reply: { matches: never }\n",
    );
    write(
      "timeout/quick.yaml",
      "id: quick\nscript:\n  - user: hello\n  - expect_reply: { matches: hello }\n",
    );
    const junit = join(root, "timeout.xml");
    const result = await runScenarioTests(["timeout"], {
      cwd: root,
      agent: ({ message }) => (/hang/.test(message) ? new Promise<string>(() => {}) : `you said ${message}`),
      outDir: "timeout-out",
      junit,
      agentTimeoutMs: 300,
      concurrency: 2,
    });
    expect(result.exitCode).toBe(1);
    expect(result.records.map((r) => [r.id, r.status])).toEqual([
      ["hangs", "error"],
      ["quick", "passed"],
    ]);
    expect(result.records[0]?.failedStep?.message).toMatch(/no answer within 0\.3 s/);
    const xml = parseXml(readFileSync(junit, "utf8"));
    expect(xml.attributes).toMatchObject({ tests: "2", errors: "1", failures: "0" });
    expect(elementsNamed(xml, "error")[0]?.attributes.message).toMatch(/^step 1 user: .*within 0\.3 s/);
    // The run folder: an errored run is an agent_error in its transcript and in the summary.
    const summary = JSON.parse(readFileSync(join(root, "timeout-out", "summary.json"), "utf8"));
    expect(summary.runs.endReasons).toMatchObject({ agent_error: 1 });
    expect(summary.tests).toMatchObject({ total: 2, passed: 1, errored: 1 });
  }, 60_000);
});
