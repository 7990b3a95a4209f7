import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JUDGE_ROLES, usersRunRoles } from "../../src/cli/commands/users/run.js";
import { cli } from "../helpers/cli.js";
import {
  type ScriptedLlmServer,
  startScriptedLlmServer,
  writeScriptedConfig,
} from "../helpers/scripted-llm-server.js";
import { scriptedUsersResponder } from "../helpers/scripted-users.js";

const SCENARIOS = join(import.meta.dirname, "..", "..", "examples", "users", "scenarios");

describe("users run: one model flag serves every role the config leaves unset", () => {
  it("the user's model, else the judges', else a planner agent's, fills the unset roles", () => {
    const judges = (model: string) => Object.fromEntries(JUDGE_ROLES.map((role) => [role, model]));
    expect(usersRunRoles({}, { userModel: "a:u", agent: "module:x.mjs" })).toEqual({
      user: "a:u",
      ...judges("a:u"),
    });
    expect(usersRunRoles({}, { judgeModel: "a:j", agent: "module:x.mjs" })).toEqual({
      user: "a:j",
      ...judges("a:j"),
    });
    expect(usersRunRoles({}, { agent: "planner:a:p" })).toEqual({ user: "a:p", ...judges("a:p") });
    // Configured roles are kept; roles.default serves the rest as before.
    expect(usersRunRoles({ judge: "c:j" }, { userModel: "a:u", agent: "module:x.mjs" })).toMatchObject({
      user: "a:u",
      judge: "c:j",
      realism: "a:u",
    });
    expect(usersRunRoles({ default: "c:d" }, { userModel: "a:u", agent: "module:x.mjs" })).toEqual({
      default: "c:d",
      user: "a:u",
    });
  });

  describe("through the CLI", () => {
    let server: ScriptedLlmServer;
    let dir: string;
    beforeAll(async () => {
      // One model name serves every role here: the request's shape says which role is asking.
      const respond = scriptedUsersResponder();
      const userSchemas = [undefined, "user_turn_plan", "route_decision", "ui_action"];
      server = await startScriptedLlmServer([], {
        respond: (body: any) =>
          respond({
            ...body,
            model: userSchemas.includes(body?.response_format?.json_schema?.name) ? "user" : "judge",
          }),
      });
      dir = mkdtempSync(join(tmpdir(), "users-roles-"));
    });
    afterAll(async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("--user-model alone serves the user and the judges with a config that names no role", async () => {
      const config = writeScriptedConfig(dir, server.baseURL);
      const out = join(dir, "out");
      const run = await cli([
        "--config",
        config,
        "users",
        "run",
        "--scenarios",
        join(SCENARIOS, "retail-return.yaml"),
        "--agent",
        "module:examples/users/rule-agent.mjs#reply",
        "--user-model",
        "scripted:any",
        "--out",
        out,
      ]);
      expect(run.stderr).not.toContain("no model is configured");
      expect(run.code).toBe(0);
      expect(JSON.parse(readFileSync(join(out, "run.json"), "utf8")).userModel).toBe("scripted:any");
      const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
      expect(summary.metrics.success).toBe(1);
    });

    it("with no model at all, the message names the flags users run has", async () => {
      const config = writeScriptedConfig(dir, server.baseURL);
      const run = await cli([
        "--config",
        config,
        "users",
        "run",
        "--scenarios",
        join(SCENARIOS, "retail-return.yaml"),
        "--agent",
        "module:examples/users/rule-agent.mjs#reply",
        "--out",
        join(dir, "none"),
      ]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("or pass --user-model <provider:model> or --judge-model <provider:model>");
      expect(run.stderr).not.toContain("--model ");
    });
  });
});
