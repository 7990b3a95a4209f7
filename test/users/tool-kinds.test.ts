import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Scenario } from "../../src/users/scenario/index.js";
import { USER_TOOL_KINDS, UserToolFactory, userToolKindSummaries } from "../../src/users/simulator/index.js";
import { cli } from "../helpers/cli.js";

/**
 * User-tool kinds live in one registry (users/simulator/toolbox.ts): the factory checks and builds
 * through it, and the docs' table lists exactly its kinds, in its order.
 */
describe("user-tool kinds", () => {
  it("are the rows of docs/users.md's table, in order, each with a summary", () => {
    const docs = readFileSync(join(import.meta.dirname, "..", "..", "docs", "users.md"), "utf8");
    const start = docs.indexOf("## The user's tools");
    const section = docs.slice(start, docs.indexOf("\n## ", start + 1));
    const rows = [...section.matchAll(/^\| `([a-z]+)`/gm)].map((match) => match[1]);
    expect(rows).toEqual(USER_TOOL_KINDS);
    const summaries = userToolKindSummaries();
    for (const kind of USER_TOOL_KINDS) expect(summaries[kind].length).toBeGreaterThan(10);
  });

  it("refuse an unknown kind when a run's toolbox is made, not only when checked (no silent mock)", async () => {
    const scenario = {
      id: "s",
      userTools: [{ name: "ask_oracle", kind: "telepathy" }],
      source: {},
    } as unknown as Scenario;
    await expect(new UserToolFactory().toolbox(scenario, "seed")).rejects.toThrow(
      /user_tools\/0 \(ask_oracle\): unknown kind "telepathy"; use one of retrieval, mock, memory, web, environment/,
    );
    // A kind named like an Object.prototype member is no kind either.
    const inherited = { ...scenario, userTools: [{ name: "x", kind: "toString" }] } as unknown as Scenario;
    expect(() => new UserToolFactory().check([inherited])).toThrow(/unknown kind "toString"/);
    // Only a string names a kind (an array holding one would be turned into the same key).
    const listed = { ...scenario, userTools: [{ name: "x", kind: ["mock"] }] } as unknown as Scenario;
    expect(() => new UserToolFactory().check([listed])).toThrow(/unknown kind \["mock"\]/);
    expect(Object.isFrozen(USER_TOOL_KINDS)).toBe(true);
  });

  it("are listed with their summaries in `users run --help`", async () => {
    const help = await cli(["users", "run", "--help"]);
    expect(help.code).toBe(0);
    for (const [kind, summary] of Object.entries(userToolKindSummaries()))
      expect(help.stdout).toMatch(
        new RegExp(`^  ${kind} +${summary.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"),
      );
  });
});
