import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isImmutableJson } from "../../src/core/immutable-json.js";
import { loadEnvironment } from "../../src/envs/index.js";
import { loadModuleAgent } from "../../src/users/agents/module.js";

/**
 * A TypeScript environment file loads into the running process's own module graph: the states it makes
 * carry the same immutable brand the engine and the stores check, so they are shared as they are, not
 * converted again at every step (a private copy of terrarium's modules, as a separately namespaced
 * loader gives, made each step cost a copy of the whole state).
 */
const dir = mkdtempSync(join(tmpdir(), "terrarium-module-graph-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const define = pathToFileURL(join(import.meta.dirname, "..", "..", "src", "envs", "define.ts")).href;
const SOURCE = `import { defineEnvironment } from ${JSON.stringify(define)};
export default defineEnvironment({
  name: "tally",
  description: "A tally.",
  initialState: { count: 0, log: {} as Record<string, number> },
  tools: {
    add: {
      description: "Add one.",
      effect: "write",
      run: ({ state }) => {
        state.count += 1;
        state.log[\`n\${state.count}\`] = state.count;
        return { count: state.count };
      },
    },
  },
});
`;

describe("a TypeScript environment module", () => {
  it("makes states the engine recognises as immutable (one module graph, not a private copy)", async () => {
    const file = join(dir, "tally.ts");
    writeFileSync(file, SOURCE);
    const environment = await loadEnvironment(file);
    const instance = await environment.create({ seed: 1 });
    const transition = await instance.step({ name: "add", arguments: {} });
    expect(transition.success).toBe(true);
    expect(transition.after).toEqual({ count: 1, log: { n1: 1 } });
    expect(isImmutableJson(transition.after)).toBe(true);
    expect(isImmutableJson(await instance.state())).toBe(true);
  });
});

describe("a TypeScript agent module", () => {
  it("loads into the same module graph (what it imports from terrarium is the process's own)", async () => {
    const immutable = pathToFileURL(
      join(import.meta.dirname, "..", "..", "src", "core", "immutable-json.ts"),
    ).href;
    const file = join(dir, "agent.ts");
    writeFileSync(
      file,
      `import { isImmutableJson } from ${JSON.stringify(immutable)};
const probe = (globalThis as Record<string, unknown>).terrariumModuleGraphProbe;
export default (input: { message: string }): string => \`\${input.message}: \${isImmutableJson === probe}\`;
`,
    );
    (globalThis as Record<string, unknown>).terrariumModuleGraphProbe = isImmutableJson;
    try {
      const agent = await loadModuleAgent(file, "default");
      // The very function this test imported, not a private copy's.
      expect(await agent({ message: "same" } as never)).toBe("same: true");
    } finally {
      delete (globalThis as Record<string, unknown>).terrariumModuleGraphProbe;
    }
  });
});
