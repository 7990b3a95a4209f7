import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // Tests import the library's subpath as users do; it resolves to the source, so no build is needed.
  resolve: {
    alias: {
      "terrarium/testing": fileURLToPath(new URL("./src/users/testing/index.ts", import.meta.url)),
    },
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
  },
});
