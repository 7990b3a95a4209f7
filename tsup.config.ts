import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", cli: "src/cli/main.ts" },
  format: ["esm"],
  target: "node20",
  dts: { entry: { index: "src/index.ts" } },
  sourcemap: true,
  clean: true,
  // Dependencies stay in node_modules: optional native ones (node-llama-cpp) must load lazily, not be bundled.
  skipNodeModulesBundle: true,
});
