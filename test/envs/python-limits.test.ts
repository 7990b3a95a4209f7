import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Catalog } from "../../src/catalog/index.js";
import { PythonProcess } from "../../src/envs/python/bridge.js";
import { loadPythonEnvironment, type PythonEnvironment } from "../../src/envs/python/environment.js";
import { CodeSimulator, Engine } from "../../src/sim/index.js";

/**
 * A Python tool whose result is 50 MB is refused by size inside the bridge, before the result crosses the
 * pipe: the call fails with TOO_LARGE, its changes are undone, and the environment keeps working. A
 * bridge answer longer than the reader's limit is never held whole: the process is stopped, the request
 * fails with TOO_LARGE, and the next request gets a fresh process.
 */
const SOURCE = `
class BigEnv:
    """Returns results of any size."""

    def __init__(self, config=None):
        self.count = 0
        self.note = (config or {}).get("note", "")

    def bump(self) -> int:
        """Adds one."""
        self.count += 1
        return self.count

    def huge(self, megabytes: int = 50) -> str:
        """A result of the given size, after a change that must be undone when it is refused."""
        self.count += 100
        return "x" * (megabytes * 1024 * 1024)
`;

let dir: string;
let environment: PythonEnvironment;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "terrarium-python-limits-"));
  writeFileSync(join(dir, "big_env.py"), SOURCE);
  writeFileSync(
    join(dir, "big.yaml"),
    "kind: python\nname: big\nfile: big_env.py\nclass: BigEnv\ntimeoutMs: 20000\n",
  );
  environment = await loadPythonEnvironment(join(dir, "big.yaml"));
});
afterAll(async () => {
  await environment?.close();
});

describe("Python results by size", () => {
  it("refuses a 50 MB result with TOO_LARGE, undoes the call's changes, and goes on", async () => {
    const instance = await environment.create({ seed: 1 });
    expect((await instance.step({ name: "bump" })).observation).toBe(1);
    const error = await instance.step({ name: "huge", arguments: { megabytes: 50 } }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({
      code: "TOO_LARGE",
      message: expect.stringMatching(
        /^huge: the call's result is \d+ bytes of JSON, more than the limit of 10485760 \(maxResultBytes\)$/,
      ),
    });
    expect(await instance.state()).toEqual({ count: 1, note: "" });
    const next = await instance.step({ name: "bump" });
    expect(next.observation).toBe(2);
    // A result under the limit still passes.
    const small = await instance.step({ name: "huge", arguments: { megabytes: 1 } });
    expect(small.success).toBe(true);
    expect((small.observation as string).length).toBe(1024 * 1024);
    await instance.close();
  }, 60_000);

  it("records the refused call as a failed call in a session, state untouched", async () => {
    const engine = new Engine({
      catalog: new Catalog(environment.tools),
      simulators: [new CodeSimulator(environment, "t")],
      initialState: await environment.initialState(),
      seed: 1,
    });
    const session = await engine.createSession();
    expect((await engine.call(session.id, { name: "bump" })).status).toBe("ok");
    const refused = await engine.call(session.id, { name: "huge", arguments: { megabytes: 50 } });
    expect(refused).toMatchObject({
      status: "error",
      changes: [],
      errors: [{ rule: "TOO_LARGE", message: expect.stringContaining("more than the limit of 10485760") }],
    });
    expect(await engine.state(session.id)).toEqual({ count: 1, note: "" });
    const after = await engine.call(session.id, { name: "bump" });
    expect(after).toMatchObject({ status: "ok", observation: 2 });
    expect((await engine.history(session.id)).map((entry) => entry.result.status)).toEqual([
      "ok",
      "error",
      "ok",
    ]);
    // The engine keeps no instance of its own here: closing it would close the shared environment.
  }, 60_000);
});

describe("the bridge's answers by length", () => {
  it("stops a process whose answer is longer than the limit, fails that request with TOO_LARGE, and starts afresh", async () => {
    const bridge = new PythonProcess(undefined, undefined, 64 * 1024);
    try {
      const first = await bridge.request("ping", {}, 20_000);
      const loaded = await bridge.request(
        "load",
        { env: "big", class: "BigEnv", file: join(dir, "big_env.py") },
        20_000,
      );
      expect(loaded.tools).toBeDefined();
      const generation = bridge.generation;
      // The state comes back in the answer: with a 1 MB note it is far past 64 KB.
      const error = await bridge
        .request(
          "create",
          {
            env: "big",
            instance: "one",
            init: { method: "__init__", config: { note: "n".repeat(1024 * 1024) } },
          },
          20_000,
        )
        .then(
          () => undefined,
          (caught: unknown) => caught,
        );
      expect(error).toMatchObject({
        code: "TOO_LARGE",
        message: "the Python bridge's answer to create is longer than 64 KB; the process was stopped",
      });
      expect(bridge.alive).toBe(false);
      const again = await bridge.request("ping", {}, 20_000);
      expect(bridge.generation).toBe(generation + 1);
      expect(again.pid).not.toBe(first.pid);
    } finally {
      await bridge.close();
    }
  }, 60_000);
});
