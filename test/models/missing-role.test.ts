import { describe, expect, it } from "vitest";
import { parseConfig, withCommandLineModel } from "../../src/models/config.js";
import { Models } from "../../src/models/hub.js";
import { cli } from "../helpers/cli.js";
import { withoutConfig } from "../helpers/no-config.js";

const HINT =
  "set roles.judge or roles.default in terrarium.config.yaml (e.g. roles: { default: openai:gpt-4.1-mini })";

describe("a role with no model", () => {
  it("names the configuration only, or also the flags its command has (modelFlags)", () => {
    const config = parseConfig({});
    expect(() => new Models({ config }).modelFor("judge")).toThrow(
      new RegExp(
        `^no model is configured for the "judge" role: ${HINT.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`,
      ),
    );
    const models = new Models({
      config,
      modelFlags: ["--user-model <provider:model>", "--judge-model <provider:model>"],
    });
    expect(() => models.modelFor("judge")).toThrow(
      `no model is configured for the "judge" role: ${HINT}, or pass --user-model <provider:model> or --judge-model <provider:model> (a model given on the command line serves every role the configuration leaves unset)`,
    );
    // A run's view keeps the flags.
    expect(() => models.forRun().modelFor("judge")).toThrow(/or pass --user-model/);
  });

  it("a model given on the command line serves the roles the configuration leaves unset", () => {
    const bare = parseConfig({});
    expect(new Models({ config: withCommandLineModel(bare, "a:m") }).modelFor("checklist")).toBe("a:m");
    const configured = parseConfig({ roles: { judge: "c:j" } });
    const models = new Models({ config: withCommandLineModel(configured, "a:m") });
    expect([models.modelFor("judge"), models.modelFor("planner")]).toEqual(["c:j", "a:m"]);
    // A configured default is the configuration's answer for every unset role.
    const withDefault = parseConfig({ roles: { default: "c:d" } });
    expect(withCommandLineModel(withDefault, "a:m")).toBe(withDefault);
  });

  it("envsim collect names its --model", async () => {
    await withoutConfig("http://127.0.0.1:9/v1", async () => {
      const collect = await cli(["envsim", "collect", "bank", "--source", "agent", "--out", "x.jsonl"]);
      expect(collect.code).toBe(2);
      expect(collect.stderr).toContain(
        'no model is configured for the "explorer" role: set roles.explorer or roles.default in terrarium.config.yaml (e.g. roles: { default: openai:gpt-4.1-mini }), or pass --model <provider:model>',
      );
    });
  });
});
