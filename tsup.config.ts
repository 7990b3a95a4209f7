import { defineConfig } from "tsup";

export default defineConfig({
  // The sandbox's worker thread is its own entry: pool.ts starts dist/sandbox-worker.js beside the bundle.
  entry: {
    index: "src/index.ts",
    cli: "src/cli/main.ts",
    "sandbox-worker": "src/envs/sandbox/worker.ts",
    // terrarium/openenv: the OpenEnv client alone, for rollout code that needs nothing else.
    openenv: "src/rl/openenv/client.ts",
    // terrarium/testing: scenario tests (runScenarioTest) for vitest, jest or node:test.
    testing: "src/users/testing/index.ts",
  },
  format: ["esm"],
  target: "node20",
  dts: {
    entry: {
      index: "src/index.ts",
      openenv: "src/rl/openenv/client.ts",
      testing: "src/users/testing/index.ts",
    },
  },
  sourcemap: true,
  clean: true,
  // Dependencies stay in node_modules: optional native ones (node-llama-cpp) must load lazily, not be bundled.
  skipNodeModulesBundle: true,
});
