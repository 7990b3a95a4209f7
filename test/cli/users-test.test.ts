import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, spawnCli, waitForStderr } from "../helpers/cli.js";
import { childNamed, elementsNamed, parseXml, type XmlElement } from "../helpers/junit-xml.js";
import { startScriptedLlmServer, writeScriptedConfig } from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";

/**
 * `terrarium users test` end to end, as CI runs it: a folder of tests run against a module agent that acts
 * on tau2-retail through the tools handle (`--agent-tools tau2-retail`), the JUnit file parsed and
 * checked, the run folder, the exit codes. No model is configured anywhere: scripted steps need none.
 */

const ORDER = "#W2974929"; // pending in tau2-retail's database

// The agent under test: looks orders up and cancels them through `tools.call`, throws on "crash", and
// waits forever on "hang" (after saying so on stderr, for the interrupt test).
const AGENT = `
export async function reply({ message, tools }) {
  if (/crash/.test(message)) throw new Error("the agent fell over");
  if (/hang/.test(message)) {
    process.stderr.write("agent: hanging\\n");
    return new Promise(() => {});
  }
  const orderId = message.match(/#W\\d{7}/)?.[0];
  if (!orderId) return "Hello! Which order is this about?";
  const details = await tools.call("get_order_details", { order_id: orderId });
  if (details.status !== "ok") return "I could not find order " + orderId + ".";
  if (/cancel/i.test(message)) {
    const done = await tools.call("cancel_pending_order", { order_id: orderId, reason: "no longer needed" });
    return done.status === "ok" ? "Order " + orderId + " is cancelled." : "It cannot be cancelled.";
  }
  return "Order " + orderId + " is " + details.observation.status + ".";
}
`;

const TESTS: Record<string, string> = {
  "greet.yaml": `id: greet
script:
  - user: Hello there
  - expect_reply: { matches: "Which order" }
  - expect_no_tool_call: get_order_details
`,
  // Fails on expect_reply; the state check before it also proves each test has its own session (the
  // cancel test, run at the same time, cancels the same order in its own).
  "wrong-reply.yaml": `id: wrong-reply
script:
  - user: "What is the status of order ${ORDER}?"
  - expect_state: { pointer: "/orders/${ORDER}/status", equals: pending }
  - expect_reply: { matches: "delivered" }
  - expect_no_tool_call: cancel_pending_order
`,
  "retail/cancel.yaml": `id: cancel
description: the agent cancels a pending order; the store's state shows it
script:
  - user: "Please cancel order ${ORDER}, I no longer need it."
  - expect_tool_call:
      name: cancel_pending_order
      arguments: { order_id: "${ORDER}" }
  - expect_state: { pointer: "/orders/${ORDER}/status", equals: cancelled }
  - expect_reply: { matches: "cancelled" }
  - stop
`,
  // Not a test: a folder may hold plain scenarios; they are skipped with a note.
  "retail/plain-scenario.yaml": `id: plain
profile: You are a customer.
goal: Ask about an order.
knowledge: Your order is ${ORDER}.
max_turns: 2
`,
};

let root: string;
let agentSpec: string;

function write(relativePath: string, text: string): string {
  const file = join(root, relativePath);
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, text);
  return file;
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "terrarium-users-test-"));
  agentSpec = `module:${write("agent.mjs", AGENT)}#reply`;
  for (const [name, text] of Object.entries(TESTS)) write(join("tests", name), text);
  write(
    "broken/crash.yaml",
    "id: crash\nscript:\n  - user: please crash\n  - expect_reply: { matches: x }\n",
  );
  write("hang/hang.yaml", "id: hang\nscript:\n  - user: please hang\n");
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

const testcases = (xml: XmlElement) => elementsNamed(xml, "testcase");

describe("terrarium users test", () => {
  it("runs a folder of tests with a module agent on tau2-retail and writes JUnit CI can read", async () => {
    const out = join(root, "run");
    const junit = join(root, "reports", "junit.xml");
    const run = await cli([
      "users",
      "test",
      join(root, "tests"),
      "--agent",
      agentSpec,
      "--agent-tools",
      "tau2-retail",
      "--junit",
      junit,
      "--out",
      out,
    ]);
    expect(run.stderr).not.toMatch(/terrarium: /);
    expect(run.code).toBe(1);
    // One line per test, the failing step under its line, a summary.
    expect(run.stdout).toMatch(/^PASS {2}greet {2}\(\d+\.\d\ds\)/m);
    expect(run.stdout).toMatch(/^PASS {2}cancel /m);
    expect(run.stdout).toMatch(/^FAIL {2}wrong-reply .*\n {6}step 3 expect_reply: .*delivered/m);
    expect(run.stdout).toMatch(/^3 tests: 2 passed, 1 failed in /m);
    expect(run.stderr).toMatch(/skipped .*plain-scenario\.yaml: .*script/);

    const xml = parseXml(readFileSync(junit, "utf8"));
    expect(xml.attributes).toMatchObject({ tests: "3", failures: "1", errors: "0", skipped: "0" });
    const cases = testcases(xml);
    expect(cases.map((c) => c.attributes.name).sort()).toEqual(["cancel", "greet", "wrong-reply"]);
    // One suite per file, named by the file.
    expect(elementsNamed(xml, "testsuite").map((s) => s.attributes.name)).toEqual(
      expect.arrayContaining([expect.stringMatching(/retail[/\\]cancel\.yaml$/)]),
    );
    const failed = cases.find((c) => c.attributes.name === "wrong-reply") as XmlElement;
    const failure = childNamed(failed, "failure");
    expect(failure?.attributes.type).toBe("expect_reply");
    expect(failure?.attributes.message).toMatch(/^step 3 expect_reply: .*delivered/);
    expect(failure?.text).toMatch(/is pending/); // what the agent said
    for (const testcase of cases) {
      expect(Number(testcase.attributes.time)).toBeGreaterThanOrEqual(0);
      expect(testcase.attributes.classname).toMatch(/\.yaml$/);
      const transcript = /^transcript: (.+)$/m.exec(childNamed(testcase, "system-out")?.text ?? "")?.[1];
      expect(transcript && existsSync(transcript), `${testcase.attributes.name}: ${transcript}`).toBe(true);
      const header = JSON.parse(readFileSync(transcript as string, "utf8").split("\n")[0] as string);
      expect(header).toMatchObject({ type: "run", scenarioId: testcase.attributes.name, index: 1 });
    }
    const passing = cases.filter((c) => c.attributes.name !== "wrong-reply");
    for (const testcase of passing) {
      expect(childNamed(testcase, "failure")).toBeUndefined();
      expect(childNamed(testcase, "error")).toBeUndefined();
    }

    // The cancellation ran on the store: the agent's call and its result are in the transcript.
    const lines = readFileSync(join(out, "transcripts", "cancel.1.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const end = lines.find((line) => line.type === "end");
    expect(end.agentToolCalls.map((c: { tool: string }) => c.tool)).toEqual([
      "get_order_details",
      "cancel_pending_order",
    ]);
    expect(end.agentToolCalls[1]).toMatchObject({ status: "ok", result: { status: "cancelled" } });

    // The run folder, as users run writes it: summary.json (with the tests) and the HTML report.
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary).toMatchObject({ kind: "terrarium.users.summary", schemaVersion: 1 });
    expect(summary.tests).toMatchObject({ schemaVersion: 1, total: 3, passed: 2, failed: 1, errored: 0 });
    expect(summary.metrics.success).toBeCloseTo(2 / 3);
    const report = readFileSync(join(out, "report.html"), "utf8");
    expect(report).toMatch(/<html/i);
    expect(report).toContain("wrong-reply.1");
    expect(readdirSync(join(out, "transcripts")).filter((f) => f.endsWith(".partial"))).toEqual([]);
    // `users report` reads the folder as a users run.
    const rerender = await cli(["users", "report", out]);
    expect(rerender.code).toBe(0);
  }, 120_000);

  it("--runs 2 names each run, reports pass^k, and replaces an earlier test run in --out", async () => {
    const out = join(root, "run-twice");
    const junit = join(root, "twice.xml");
    const first = await cli([
      "users",
      "test",
      join(root, "tests", "greet.yaml"),
      "--agent",
      agentSpec,
      "--out",
      out,
    ]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^1 test: 1 passed, 0 failed/m);
    const run = await cli([
      "users",
      "test",
      join(root, "tests"),
      "--agent",
      agentSpec,
      "--agent-tools",
      "tau2-retail",
      "--runs",
      "2",
      "--concurrency",
      "3",
      "--junit",
      junit,
      "--out",
      out,
    ]);
    expect(run.code).toBe(1);
    const xml = parseXml(readFileSync(junit, "utf8"));
    expect(xml.attributes).toMatchObject({ tests: "6", failures: "2", errors: "0" });
    expect(
      testcases(xml)
        .map((c) => c.attributes.name)
        .sort(),
    ).toEqual([
      "cancel (run 1)",
      "cancel (run 2)",
      "greet (run 1)",
      "greet (run 2)",
      "wrong-reply (run 1)",
      "wrong-reply (run 2)",
    ]);
    const properties = Object.fromEntries(
      elementsNamed(xml, "property").map((p) => [p.attributes.name, p.attributes.value]),
    );
    expect(properties).toMatchObject({ "cancel.passHatK.2": "1", "wrong-reply.passHatK.2": "0" });
    expect(run.stdout).toMatch(/^6 test runs \(3 tests × 2\): 4 passed, 2 failed/m);
    expect(run.stdout).toMatch(/^ {2}wrong-reply: 0\/2 passed; pass\^1 0\.00, pass\^2 0\.00$/m);
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary.tests.total).toBe(6);
    expect(summary.tests.passHatK["2"]).toBeCloseTo(2 / 3);
    expect(readdirSync(join(out, "transcripts")).sort()).toEqual([
      "cancel.1.jsonl",
      "cancel.2.jsonl",
      "greet.1.jsonl",
      "greet.2.jsonl",
      "wrong-reply.1.jsonl",
      "wrong-reply.2.jsonl",
    ]);
  }, 120_000);

  it("a test whose agent throws is an error (ERROR line, <error> in JUnit), and the command exits 1", async () => {
    const junit = join(root, "broken.xml");
    const run = await cli([
      "users",
      "test",
      join(root, "broken"),
      "--agent",
      agentSpec,
      "--junit",
      junit,
      "--out",
      join(root, "run-broken"),
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^ERROR crash .*\n {6}step 1 user: .*the agent fell over\n/m);
    expect(run.stdout).toMatch(/^1 test: 0 passed, 0 failed, 1 errored/m);
    const xml = parseXml(readFileSync(junit, "utf8"));
    expect(xml.attributes).toMatchObject({ tests: "1", failures: "0", errors: "1" });
    const error = childNamed(testcases(xml)[0] as XmlElement, "error");
    expect(error?.attributes.message).toMatch(/^step 1 user: .*the agent fell over/);
    expect(error?.attributes.type).toBe("user");
    expect(elementsNamed(xml, "skipped")).toEqual([]);
  }, 60_000);

  it("simulate and judge steps use --user-model and --judge-model; without a model such a test errors", async () => {
    const server = await startScriptedLlmServer([], { respond: scriptedUsersResponder() });
    try {
      const dir = join(root, "models");
      mkdirSync(dir, { recursive: true });
      const config = writeScriptedConfig(dir, server.baseURL); // a provider, no roles
      const file = write(
        "simulated/simulated.yaml",
        `id: simulated
profile: You are Yusuf, a teacher.
goal: Return the headphones from order #W2378156.
knowledge: Your email is yusuf.rossi7301@example.com.
script:
  - simulate: 2
  - expect_tool_call: { name: get_order_details, arguments: { order_id: "#W2378156" } }
  - judge: ["The agent found the user's order."]
`,
      );
      const base = [
        "--config",
        config,
        "users",
        "test",
        file,
        "--agent",
        agentSpec,
        "--agent-tools",
        "tau2-retail",
      ];
      const run = await cli([
        ...base,
        "--user-model",
        "scripted:user",
        "--judge-model",
        "scripted:judge",
        "--out",
        join(root, "run-models"),
      ]);
      expect(run.stdout).toMatch(/^PASS {2}simulated /m);
      expect(run.code).toBe(0);
      const models = new Set(server.requests.map((request) => request.body?.model));
      expect(models).toEqual(new Set(["user", "judge"]));

      const without = await cli([...base, "--out", join(root, "run-no-models")]);
      expect(without.code).toBe(1);
      expect(without.stdout).toMatch(/^ERROR simulated .*\n {6}step 1 simulate: .*user model/m);
    } finally {
      await server.close();
    }
  }, 120_000);

  describe("bad input exits 2 before anything runs", () => {
    const refused = async (args: string[], message: RegExp) => {
      const out = join(root, `refused-${Math.random().toString(36).slice(2)}`);
      const junit = `${out}.xml`;
      const run = await cli(["users", "test", ...args, "--out", out, "--junit", junit]);
      expect(run.stderr).toMatch(message);
      expect(run.code).toBe(2);
      expect(existsSync(out), "the run folder was made").toBe(false);
      expect(existsSync(junit), "a JUnit file was written").toBe(false);
      expect(run.stdout).toBe("");
    };

    it("a path that does not exist", () =>
      refused([join(root, "nope"), "--agent", "module:x.mjs#reply"], /nope: no such test file or folder/));

    it("a file named on the command line that is not a test", () =>
      refused(
        [join(root, "tests/retail/plain-scenario.yaml"), "--agent", agentSpec],
        /not a test: .*no script/,
      ));

    it("an invalid step, with its file and line", async () => {
      const file = write(
        "invalid/bad-step.yaml",
        "id: bad\nscript:\n  - user: hi\n  - expect_reply: { matchez: x }\n",
      );
      await refused([file, "--agent", agentSpec], /bad-step\.yaml.*(line 4|:4)/);
    });

    it("two tests with the same id", async () => {
      write("dupes/a.yaml", "id: same\nscript:\n  - user: hi\n");
      write("dupes/b.yaml", "id: same\nscript:\n  - user: hi\n");
      await refused([join(root, "dupes"), "--agent", agentSpec], /"same" is also used in .*a\.yaml/);
    });

    it("an unknown agent spec, a missing module, unknown agent tools", async () => {
      await refused([join(root, "tests"), "--agent", "nope:thing"], /unknown kind "nope"/);
      await refused(
        [join(root, "tests"), "--agent", `module:${join(root, "missing.mjs")}#reply`],
        /does not exist/,
      );
      await refused(
        [join(root, "tests"), "--agent", agentSpec, "--agent-tools", "no-such-environment"],
        /no-such-environment/,
      );
    });

    it("bad flags", async () => {
      await refused([join(root, "tests"), "--agent", agentSpec, "--runs", "0"], /--runs/);
      await refused([join(root, "tests"), "--agent", agentSpec, "--concurrency", "x"], /--concurrency/);
      const run = await cli(["users", "test", join(root, "tests")]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/--agent/);
    });

    it("an --out folder that holds something else is never overwritten", async () => {
      const out = join(root, "precious");
      write("precious/notes.txt", "keep me");
      const run = await cli(["users", "test", join(root, "tests"), "--agent", agentSpec, "--out", out]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/not empty/);
      expect(readdirSync(out)).toEqual(["notes.txt"]);
    });
  });

  it("an interrupt stops the run: exit 130, the unfinished transcript left partial, no summary, report or JUnit", async () => {
    const out = join(root, "run-interrupted");
    const junit = join(root, "interrupted.xml");
    writeFileSync(junit, "<testsuites/>"); // an earlier run's file must not pass for this one
    const child = spawnCli([
      "users",
      "test",
      join(root, "hang"),
      "--agent",
      agentSpec,
      "--junit",
      junit,
      "--out",
      out,
    ]);
    await waitForStderr(child, /agent: hanging/);
    child.child.kill("SIGINT");
    expect(await child.exit).toBe(130);
    expect(child.stderr()).toMatch(/interrupted: 0 of 1 test run finished/);
    expect(existsSync(join(out, "summary.json"))).toBe(false);
    expect(existsSync(join(out, "report.html"))).toBe(false);
    expect(existsSync(junit)).toBe(false);
    expect(readdirSync(join(out, "transcripts"))).toEqual(["hang.1.jsonl.partial"]);
  }, 60_000);
});
