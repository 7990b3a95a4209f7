import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  JUNIT_MAX_MESSAGE_CHARS,
  type JUnitReport,
  renderJUnitXml,
  xmlAttribute,
  xmlText,
} from "../../src/users/test-run/junit.js";
import { childNamed, elementsNamed, parseXml } from "../helpers/junit-xml.js";

const report = (overrides: Partial<JUnitReport> = {}): JUnitReport => ({
  name: "terrarium users test",
  timestamp: "2026-11-27T03:00:00.000Z",
  suites: [
    {
      name: "tests/refund.yaml",
      file: "tests/refund.yaml",
      cases: [
        { name: "refund", classname: "tests/refund.yaml", seconds: 0.25, outcome: { status: "passed" } },
      ],
    },
    {
      name: "tests/cancel.yaml",
      properties: [{ name: "cancel.passHatK.2", value: "0.5" }],
      cases: [
        {
          name: "cancel (run 1)",
          classname: "tests/cancel.yaml",
          seconds: 1.5,
          outcome: {
            status: "failed",
            type: "expect_reply",
            message: 'step 2 expect_reply: the reply does not match /cancel+ed/ ("<ok> & done")',
            details: "expected: /cancel+ed/\nactual: <ok> & done",
          },
          systemOut: "transcript: /tmp/out/transcripts/cancel.1.jsonl",
        },
        {
          name: "cancel (run 2)",
          classname: "tests/cancel.yaml",
          seconds: 0.001,
          outcome: { status: "error", type: "agent_error", message: "the agent module threw: boom" },
        },
      ],
    },
  ],
  ...overrides,
});

describe("JUnit XML", () => {
  it("counts on every level, times in seconds, one testcase per case, failure and error bodies", () => {
    const root = parseXml(renderJUnitXml(report()));
    expect(root.name).toBe("testsuites");
    expect(root.attributes).toMatchObject({
      tests: "3",
      failures: "1",
      errors: "1",
      skipped: "0",
      time: "1.751",
    });
    const suites = elementsNamed(root, "testsuite");
    expect(
      suites.map((s) => [s.attributes.name, s.attributes.tests, s.attributes.failures, s.attributes.errors]),
    ).toEqual([
      ["tests/refund.yaml", "1", "0", "0"],
      ["tests/cancel.yaml", "2", "1", "1"],
    ]);
    expect(suites[1]?.attributes.time).toBe("1.501");
    const cases = elementsNamed(root, "testcase");
    expect(cases.map((c) => c.attributes.name)).toEqual(["refund", "cancel (run 1)", "cancel (run 2)"]);
    expect(cases[0]?.children).toEqual([]);
    const failure = childNamed(cases[1] as never, "failure");
    expect(failure?.attributes.type).toBe("expect_reply");
    expect(failure?.attributes.message).toBe(
      'step 2 expect_reply: the reply does not match /cancel+ed/ ("<ok> & done")',
    );
    expect(failure?.text).toBe("expected: /cancel+ed/\nactual: <ok> & done");
    expect(childNamed(cases[1] as never, "system-out")?.text).toBe(
      "transcript: /tmp/out/transcripts/cancel.1.jsonl",
    );
    const error = childNamed(cases[2] as never, "error");
    expect(error?.attributes).toMatchObject({ type: "agent_error", message: "the agent module threw: boom" });
    expect(elementsNamed(root, "skipped")).toEqual([]);
    expect(elementsNamed(root, "property")[0]?.attributes).toEqual({
      name: "cancel.passHatK.2",
      value: "0.5",
    });
  });

  it("a given wall-clock time wins over the sum of the cases", () => {
    const root = parseXml(renderJUnitXml(report({ seconds: 0.9 })));
    expect(root.attributes.time).toBe("0.900");
  });

  it("keeps line breaks and tabs in attributes, and makes characters XML 1.0 cannot hold visible", () => {
    const message = "line one\nline\ttwo\r\n\u001b[31mred\u001b[0m \u0000 \uFFFF \uD800 'q' \"dq\" ]]>";
    const xml = renderJUnitXml({
      name: "n",
      suites: [
        {
          name: "s",
          cases: [
            {
              name: message,
              classname: "c",
              seconds: 0,
              outcome: { status: "failed", type: "expect_reply", message, details: message },
              systemOut: message,
            },
          ],
        },
      ],
    });
    expect(xml).not.toMatch(/]]>/);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: checking none is left
    expect(xml).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/);
    const root = parseXml(xml);
    const expected = "line one\nline\ttwo\r\n\\u001b[31mred\\u001b[0m \\u0000 \\uffff \\ud800 'q' \"dq\" ]]>";
    const testcase = elementsNamed(root, "testcase")[0];
    expect(testcase?.attributes.name).toBe(expected);
    expect(childNamed(testcase as never, "failure")?.attributes.message).toBe(expected);
    expect(childNamed(testcase as never, "failure")?.text).toBe(expected);
    expect(childNamed(testcase as never, "system-out")?.text).toBe(expected);
  });

  it("caps a long message attribute and says how much was left out; the body keeps more", () => {
    const long = "x".repeat(JUNIT_MAX_MESSAGE_CHARS + 500);
    const root = parseXml(
      renderJUnitXml({
        name: "n",
        suites: [
          {
            name: "s",
            cases: [
              {
                name: "t",
                classname: "c",
                seconds: 0,
                outcome: { status: "error", type: "e", message: long },
              },
            ],
          },
        ],
      }),
    );
    const error = elementsNamed(root, "error")[0];
    expect(error?.attributes.message).toBe(`${"x".repeat(JUNIT_MAX_MESSAGE_CHARS)}… (500 more characters)`);
    expect(error?.text).toBe(long);
  });

  it("any string survives as an attribute and as text (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (value) => {
        const root = parseXml(`<a v="${xmlAttribute(value)}">${xmlText(value)}</a>`);
        const shown = value.replace(
          // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters made visible
          /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
          (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
        );
        expect(root.attributes.v).toBe(shown);
        expect(root.text).toBe(shown);
      }),
      { numRuns: 150 },
    );
  });

  // A real XML parser (Python's expat) as a second opinion, when Python is on the machine.
  const python = spawnSync("python3", ["-c", "import xml.etree.ElementTree"], { encoding: "utf8" });
  it.skipIf(python.status !== 0)("Python's XML parser reads the file and the same counts", () => {
    const xml = renderJUnitXml(
      report({
        suites: [
          ...report().suites,
          {
            name: "odd \u0007\u001b names",
            cases: [{ name: "\u0001", classname: "<&>", seconds: 2, outcome: { status: "passed" } }],
          },
        ],
      }),
    );
    const read = spawnSync(
      "python3",
      [
        "-c",
        "import sys, xml.etree.ElementTree as E; r = E.fromstring(sys.stdin.buffer.read()); print(r.get('tests'), r.get('failures'), r.get('errors'), len(r.findall('.//testcase')), r.findall('.//testcase')[-1].get('classname'))",
      ],
      { input: xml, encoding: "utf8" },
    );
    expect(read.stderr).toBe("");
    expect(read.stdout.trim()).toBe("4 1 1 4 <&>");
  });
});
