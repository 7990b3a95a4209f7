/**
 * JUnit XML, the report format CI systems read for test results (GitHub Actions reporters, GitLab, Jenkins,
 * Azure): `<testsuites>` holding one `<testsuite>` per test file, one `<testcase>` per test and run. A
 * failed test has a `<failure>` (its failing step's message, the step's kind as `type`), a test that could
 * not run an `<error>`, and `<system-out>` says where its transcript is. Times are in seconds.
 *
 * Everything is escaped for XML 1.0: markup characters as entities, line breaks and tabs inside attributes
 * as character references (so a parser does not fold them into spaces), and the characters XML 1.0 cannot
 * hold at all (control characters other than tab, line feed and carriage return, U+FFFE, U+FFFF and
 * unpaired surrogates) written out as `\uXXXX`, so an agent's ANSI colours cannot make the file unreadable.
 */

/** How one test case ended. `skipped` is only for a test that really was not run. */
export type JUnitOutcome =
  | { status: "passed" }
  | { status: "failed"; type: string; message: string; details?: string }
  | { status: "error"; type: string; message: string; details?: string }
  | { status: "skipped"; message?: string };

export interface JUnitTestCase {
  name: string;
  /** The group CI shows the case under (here: the test file, relative to the working directory). */
  classname: string;
  /** The test file (GitLab and others link it). */
  file?: string;
  seconds: number;
  outcome: JUnitOutcome;
  systemOut?: string;
  systemErr?: string;
}

export interface JUnitTestSuite {
  name: string;
  file?: string;
  /** When the suite started (ISO 8601). */
  timestamp?: string;
  /** Wall-clock seconds (default: the sum of its cases'). */
  seconds?: number;
  /** Name/value pairs shown with the suite (pass^k here). */
  properties?: Array<{ name: string; value: string }>;
  cases: JUnitTestCase[];
}

export interface JUnitReport {
  name: string;
  timestamp?: string;
  /** Wall-clock seconds of the whole run (default: the sum of the suites'). */
  seconds?: number;
  suites: JUnitTestSuite[];
}

/** Longest `message` attribute kept (the whole text is in the element's body). */
export const JUNIT_MAX_MESSAGE_CHARS = 2000;
/** Longest body of a failure, error or system-out element. */
export const JUNIT_MAX_TEXT_CHARS = 64 * 1024;

// Characters XML 1.0 does not allow anywhere, even as character references.
const FORBIDDEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly what must be replaced
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function visible(text: string): string {
  return text.replace(FORBIDDEN, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function cap(text: string, max: number): string {
  if (text.length <= max) return text;
  // Cut on a code point boundary, and say how much was left out.
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${text.slice(0, end)}… (${text.length - end} more characters)`;
}

/** Text content: markup escaped (`>` too, so `]]>` never appears), forbidden characters made visible. */
export function xmlText(text: string): string {
  return visible(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/\r/g, "&#13;");
}

/** An attribute value (double-quoted): as text, plus quotes, and whitespace kept as references. */
export function xmlAttribute(value: string): string {
  return xmlText(value)
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;")
    .replace(/\n/g, "&#10;")
    .replace(/\t/g, "&#9;");
}

function seconds(value: number | undefined): string {
  return (Number.isFinite(value) && (value as number) > 0 ? (value as number) : 0).toFixed(3);
}

function attributes(pairs: Array<[string, string | number | undefined]>): string {
  return pairs
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => ` ${name}="${xmlAttribute(String(value))}"`)
    .join("");
}

interface Counts {
  tests: number;
  failures: number;
  errors: number;
  skipped: number;
}

function countsOf(cases: readonly JUnitTestCase[]): Counts {
  const counts: Counts = { tests: cases.length, failures: 0, errors: 0, skipped: 0 };
  for (const { outcome } of cases) {
    if (outcome.status === "failed") counts.failures++;
    else if (outcome.status === "error") counts.errors++;
    else if (outcome.status === "skipped") counts.skipped++;
  }
  return counts;
}

function caseXml(test: JUnitTestCase): string {
  const open = `    <testcase${attributes([
    ["name", test.name],
    ["classname", test.classname],
    ["file", test.file],
    ["time", seconds(test.seconds)],
  ])}`;
  const body: string[] = [];
  const { outcome } = test;
  if (outcome.status === "failed" || outcome.status === "error") {
    const element = outcome.status === "failed" ? "failure" : "error";
    const details = cap(outcome.details ?? outcome.message, JUNIT_MAX_TEXT_CHARS);
    body.push(
      `      <${element}${attributes([
        ["message", cap(outcome.message, JUNIT_MAX_MESSAGE_CHARS)],
        ["type", outcome.type],
      ])}>${xmlText(details)}</${element}>`,
    );
  } else if (outcome.status === "skipped")
    body.push(
      `      <skipped${attributes([["message", outcome.message && cap(outcome.message, JUNIT_MAX_MESSAGE_CHARS)]])}/>`,
    );
  if (test.systemOut !== undefined)
    body.push(`      <system-out>${xmlText(cap(test.systemOut, JUNIT_MAX_TEXT_CHARS))}</system-out>`);
  if (test.systemErr !== undefined)
    body.push(`      <system-err>${xmlText(cap(test.systemErr, JUNIT_MAX_TEXT_CHARS))}</system-err>`);
  return body.length === 0 ? `${open}/>` : `${open}>\n${body.join("\n")}\n    </testcase>`;
}

function suiteSeconds(suite: JUnitTestSuite): number {
  return (
    suite.seconds ??
    suite.cases.reduce((sum, test) => sum + (Number.isFinite(test.seconds) ? test.seconds : 0), 0)
  );
}

function suiteXml(suite: JUnitTestSuite, id: number): string {
  const counts = countsOf(suite.cases);
  const open = `  <testsuite${attributes([
    ["name", suite.name],
    ["id", id],
    ["tests", counts.tests],
    ["failures", counts.failures],
    ["errors", counts.errors],
    ["skipped", counts.skipped],
    ["time", seconds(suiteSeconds(suite))],
    ["timestamp", suite.timestamp],
    ["file", suite.file],
  ])}>`;
  const properties =
    suite.properties && suite.properties.length > 0
      ? [
          "    <properties>",
          ...suite.properties.map(
            (p) =>
              `      <property${attributes([
                ["name", p.name],
                ["value", p.value],
              ])}/>`,
          ),
          "    </properties>",
        ]
      : [];
  return [open, ...properties, ...suite.cases.map(caseXml), "  </testsuite>"].join("\n");
}

/** The whole report as a JUnit XML document (UTF-8). Counts on every level are computed from the cases. */
export function renderJUnitXml(report: JUnitReport): string {
  const all = report.suites.flatMap((suite) => suite.cases);
  const counts = countsOf(all);
  const total = report.seconds ?? report.suites.reduce((sum, suite) => sum + suiteSeconds(suite), 0);
  const open = `<testsuites${attributes([
    ["name", report.name],
    ["tests", counts.tests],
    ["failures", counts.failures],
    ["errors", counts.errors],
    ["skipped", counts.skipped],
    ["time", seconds(total)],
    ["timestamp", report.timestamp],
  ])}>`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    open,
    ...report.suites.map((suite, index) => suiteXml(suite, index)),
    "</testsuites>",
    "",
  ].join("\n");
}
